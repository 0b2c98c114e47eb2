//! `rtrace-bench rate` end to end: a short search per tracer, its flood point first, every point
//! accounted exactly, the confirmation and the run above the limit where there is one, nothing
//! left behind.

use rtrace_tests::*;

#[test]
fn short_searches_account_every_point_and_leave_nothing() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "rate",
        "--tracer",
        "ftrace,ebpf",
        "--buffer-sizes-kb",
        "8",
        "--duration-ms",
        "200",
        "--start-rate",
        "20000",
        "--max-rate",
        "2000000",
        "--flood-ms",
        "500",
        "--bisections",
        "2",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    keep_result(&dir.path().join("rate.json"));
    let v = read_json(&dir.path().join("rate.json"));
    let searches = v["searches"].as_array().unwrap();
    assert_eq!(
        searches.len(),
        2,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for s in searches {
        let points = s["points"].as_array().unwrap();
        assert!(!points.is_empty());
        for p in points {
            let ev = &p["events"];
            let hits = ev["hits"].as_u64().unwrap();
            assert!(hits > 0, "{p}");
            assert_eq!(
                ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap(),
                hits,
                "{p}"
            );
            // 200 ms at the rate asked and at least 10 buffer-fulls (a steady state), unless
            // the loop could not keep up.
            let capacity = s["capacity_events"].as_u64().unwrap();
            assert!(capacity >= 8 * 1024 / 16, "{s}");
            assert!(hits >= 10 * capacity, "{p}");
            // The flood point fires as fast as the loop can, for at least --flood-ms.
            let (rate, window) = match p["phase"].as_str() {
                Some("flood") => (p["achieved_hz"].as_f64().unwrap(), 0.5),
                _ => (p["rate_hz"].as_f64().unwrap(), 0.2),
            };
            let expected = (rate * window).max(10.0 * capacity as f64);
            assert!((hits as f64) < expected * 1.05, "{p}");
        }
        // The first point floods; a flood that lost events measured the consumer's drain rate.
        assert_eq!(points[0]["phase"], "flood", "{s}");
        assert!(points[1..].iter().all(|p| p["phase"] != "flood"), "{s}");
        if s["max_lossless_hz"].is_f64() {
            let confirms: Vec<&serde_json::Value> =
                points.iter().filter(|p| p["phase"] == "confirm").collect();
            assert!(confirms.len() >= 3, "{s}");
            if s["confirmed"] == true {
                // Three runs at the rate asked for held (a resumed search may have tried
                // higher rates after them); the rate reported is the slowest of them as fired.
                let at: Vec<&&serde_json::Value> = confirms
                    .iter()
                    .filter(|p| p["rate_hz"] == s["max_lossless_asked_hz"])
                    .collect();
                assert!(at.len() >= 3, "{s}");
                let last = &at[at.len() - 3..];
                assert!(last.iter().all(|p| p["events"]["lost"] == 0), "{s}");
                let fired = last
                    .iter()
                    .map(|p| p["achieved_hz"].as_f64().unwrap())
                    .fold(f64::INFINITY, f64::min);
                assert!(
                    s["max_lossless_hz"].as_f64().unwrap() <= fired,
                    "the rate reported is fired, not asked: {s}"
                );
            }
        }
    }
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        report.contains("sustained and lossless event rate"),
        "{report}"
    );
    assert!(report.contains("sustained rate"), "{report}");
    assert!(dir.path().join("figures/rate-loss-curve.svg").is_file());
    let leftovers = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("point-"))
        .count();
    assert_eq!(
        leftovers, 0,
        "trace data of every point is removed once counted"
    );
}
