//! `usdt --threads 2`: two loop threads fire the probe at once, each on its own CPU; every
//! tracer accounts both threads' hits exactly, each thread's samples are kept apart and pooled,
//! and the report splits the per-hit cost per thread.

use rtrace_tests::*;

#[test]
fn two_threads_are_traced_and_accounted_per_run_and_per_thread() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let iterations = 20_000u64;
    let out = bench(&[
        "usdt",
        "--threads",
        "2",
        "--tracer",
        "all",
        "--case",
        "0,1",
        "-n",
        &iterations.to_string(),
        "--rounds",
        "2",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    let v = read_json(&dir.path().join("usdt.json"));
    let cpus = v["config"]["thread_cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 2, "{}", v["config"]);
    assert_ne!(cpus[0], cpus[1]);
    assert_eq!(cpus[0], v["config"]["cpu"]);
    let warmup = v["config"]["warmup"].as_u64().unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert!(runs.len() >= 3, "case 0 and at least two tracers");
    for r in runs {
        let threads = r["per_thread"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "{}", r["tracer"]);
        let counts: Vec<u64> = threads
            .iter()
            .map(|t| t["summary"]["count"].as_u64().unwrap())
            .collect();
        // Each thread runs every iteration; the pooled summary holds both.
        assert_eq!(counts, [iterations, iterations], "{}", r["tracer"]);
        assert_eq!(r["summary"]["count"].as_u64().unwrap(), 2 * iterations);
        assert_eq!(threads[0]["rounds"].as_array().unwrap().len(), 2);
        if r["case"] == 1 {
            let ev = &r["events"];
            // Both threads' hits, warm-up included, in each of the two rounds.
            assert_eq!(
                ev["hits"].as_u64().unwrap(),
                2 * (iterations + 2 * warmup),
                "{r}"
            );
            assert_eq!(
                ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap(),
                ev["hits"].as_u64().unwrap(),
                "{}: {ev}",
                r["tracer"]
            );
        }
    }
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("### Per loop thread"), "{report}");
    assert!(
        report.contains("2 loop threads fired the probe"),
        "{report}"
    );
}

#[test]
fn rate_with_two_threads_fires_the_rate_asked_and_accounts_every_point() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "rate",
        "--tracer",
        "ftrace",
        "--threads",
        "2",
        "--buffer-sizes-kb",
        "8",
        "--duration-ms",
        "200",
        "--start-rate",
        "20000",
        "--max-rate",
        "400000",
        "--flood-ms",
        "500",
        "--bisections",
        "1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    let v = read_json(&dir.path().join("rate.json"));
    assert_eq!(v["config"]["thread_cpus"].as_array().unwrap().len(), 2);
    for s in v["searches"].as_array().unwrap() {
        for p in s["points"].as_array().unwrap() {
            let ev = &p["events"];
            let hits = ev["hits"].as_u64().unwrap();
            // Both threads' firings: 200 ms at the rate asked, split between them, and each
            // thread at least its share of 10 buffer-fulls (`min_hits`).
            let min_hits = p["min_hits"].as_u64().unwrap();
            assert!(min_hits > 0 && hits >= 2 * min_hits, "{p}");
            // The flood point: as fast as both threads fire, for at least --flood-ms.
            let (rate, window) = match p["phase"].as_str() {
                Some("flood") => (p["achieved_hz"].as_f64().unwrap(), 0.5),
                _ => (p["rate_hz"].as_f64().unwrap(), 0.2),
            };
            let expected = (rate * window).max(2.0 * min_hits as f64);
            assert!((hits as f64) < expected * 1.05, "{p}");
            assert!(
                !p["achieved_hz"].as_f64().unwrap().is_nan() && hits > 0,
                "{p}"
            );
            assert_eq!(
                ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap(),
                hits,
                "{p}"
            );
        }
    }
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("2 threads on CPUs"), "{report}");
}
