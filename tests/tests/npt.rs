//! `rtrace-bench npt` end to end: the run with no tracer first, then each tracer consuming the
//! loop's events, every traced run accounted exactly against the loop's own count of firings,
//! every gap of the loop in one histogram or the other, nothing left behind.

use rtrace_tests::*;

#[test]
fn baseline_and_each_tracer_account_every_event_and_leave_nothing() {
    let before = tracefs_snapshot();
    let bpf_before = bpf_ids("link");
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "npt",
        "--tracer",
        "ftrace,ebpf",
        "--duration-ms",
        "300",
        "--event-rate",
        "20000",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    assert_eq!(bpf_ids("link"), bpf_before, "BPF links left behind");
    let v = read_json(&dir.path().join("npt.json"));
    let runs = v["runs"].as_array().unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["tracer"].as_str().unwrap()).collect();
    assert_eq!(labels.first(), Some(&"none"), "{labels:?}");
    assert!(
        labels.contains(&"ftrace") && labels.contains(&"ebpf"),
        "{labels:?}"
    );
    for r in runs {
        let done = &r["done"];
        let hits = done["hits"].as_u64().unwrap();
        // 300 ms at 20,000 firings a second: 6,000, fewer only if the loop lost the CPU.
        assert!((5_000..=6_001).contains(&hits), "{r}");
        let iterations = done["iterations"].as_u64().unwrap();
        let quiet = r["quiet"]["count"].as_u64().unwrap();
        let fired = r["fired"]["count"].as_u64().unwrap();
        assert_eq!(quiet + fired, iterations, "every gap in one histogram: {r}");
        assert_eq!(fired, hits, "one gap after each firing: {r}");
        assert!(
            iterations > 100 * hits,
            "the loop spins between firings: {r}"
        );
        if r["tracer"] == "none" {
            assert!(r["events"].is_null(), "{r}");
        } else {
            let ev = &r["events"];
            assert_eq!(ev["hits"].as_u64().unwrap(), hits, "{r}");
            assert_eq!(
                ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap(),
                hits,
                "{r}"
            );
            assert!(ev["recorded"].as_u64().unwrap() > 0, "{r}");
        }
    }
    // This kernel has no osnoise tracer: the result says so rather than staying silent.
    assert!(v["osnoise"].is_object(), "{}", v["osnoise"]);
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("npt, gaps of a tight loop"), "{report}");
    assert!(report.contains("rtla osnoise"), "{report}");
    assert!(dir.path().join("figures/npt-gaps.svg").is_file());
}
