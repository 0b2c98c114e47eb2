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
        "ftrace,ebpf,perf",
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
    keep_result(&dir.path().join("npt.json"));
    let v = read_json(&dir.path().join("npt.json"));
    let runs = v["runs"].as_array().unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["tracer"].as_str().unwrap()).collect();
    assert_eq!(labels.first(), Some(&"none"), "{labels:?}");
    assert!(
        labels.contains(&"ftrace") && labels.contains(&"ebpf") && labels.contains(&"perf"),
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

/// As Beamonte ran npt: the probe in every iteration at the loop's full speed; the largest gaps
/// of the firing iterations come back with their times, placed against LTTng's sub-buffer
/// switches and ftrace's page switches, and the report names what happened at the largest.
#[test]
fn probe_in_every_iteration_places_the_largest_gaps_against_switches() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "npt",
        "--tracer",
        "ftrace,lttng",
        "--duration-ms",
        "300",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    let v = read_json(&dir.path().join("npt.json"));
    assert!(v["config"]["event_rate_hz"].is_null(), "{}", v["config"]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
    for r in runs {
        let done = &r["done"];
        let hits = done["hits"].as_u64().unwrap();
        let iterations = done["iterations"].as_u64().unwrap();
        // Every iteration fires but the first, whose gap comes before any firing.
        assert_eq!(hits, iterations - 1, "{r}");
        assert_eq!(r["fired"]["count"].as_u64().unwrap(), hits, "{r}");
        assert_eq!(r["quiet"]["count"].as_u64().unwrap(), 1, "{r}");
        let largest = r["largest"].as_array().unwrap();
        assert_eq!(largest.len(), 256, "{r}");
        let ns: Vec<u64> = largest.iter().map(|g| g["ns"].as_u64().unwrap()).collect();
        assert!(ns.windows(2).all(|w| w[0] >= w[1]), "largest first: {ns:?}");
        // The histogram's max is its bucket's highest equivalent value.
        let max = r["fired"]["max_ns"].as_f64().unwrap();
        assert!(
            ns[0] as f64 <= max && ns[0] as f64 >= 0.99 * max,
            "{} vs {max}",
            ns[0]
        );
        let (start, end) = (
            done["start_mono_ns"].as_u64().unwrap(),
            done["end_mono_ns"].as_u64().unwrap(),
        );
        for g in largest {
            let t = g["end_mono_ns"].as_u64().unwrap();
            assert!((start..=end).contains(&t), "{g} outside {start}..{end}");
            assert!(g["hit"].as_u64().unwrap() < hits, "{g}");
        }
        match r["tracer"].as_str().unwrap() {
            "none" => assert!(r["switches"].is_null(), "{r}"),
            "ftrace" | "lttng" => {
                assert!(
                    r["switches"]["count"].as_u64().unwrap() > 0,
                    "{}",
                    r["switches"]
                );
                let lost = r["events"]["lost"].as_u64().unwrap();
                if r["tracer"] == "lttng" || lost == 0 {
                    // Every gap placed: LTTng by its packets' first hits, ftrace by its
                    // recorded event.
                    assert!(largest.iter().all(|g| g["switched"].is_boolean()), "{r}");
                }
                if r["tracer"] == "ftrace" {
                    // The kernel pages written: a uprobe event of one argument takes 28 bytes
                    // (4 of header, 24 of payload), a page holds 4080 bytes of events, and the
                    // hot loop makes no time extends. The pages read from trace_pipe_raw
                    // outnumber them (a read of the writer's page splits it in two); the
                    // switches counted must not, within 1 %.
                    let recorded = r["events"]["recorded"].as_u64().unwrap();
                    let pages = recorded.div_ceil(4080 / 28);
                    let counted = r["switches"]["count"].as_u64().unwrap();
                    println!("ftrace: {recorded} events, {pages} kernel pages, {counted} switches counted");
                    assert!(
                        counted.abs_diff(pages) * 100 <= pages,
                        "{counted} switches counted for {pages} kernel pages of {recorded} events"
                    );
                }
                // Each switch's iteration looked up among the slow gaps the loop kept (which the
                // result does not carry), from a threshold of at least 1 µs.
                let at = &r["at_switches"];
                let switches = at["switches"].as_u64().unwrap();
                let slow = at["slow_gaps_ns"].as_array().unwrap();
                let threshold = at["slow_ns"].as_u64().unwrap();
                assert!(switches > 0 && slow.len() as u64 <= switches, "{at}");
                assert!(switches <= r["switches"]["count"].as_u64().unwrap(), "{r}");
                assert!(threshold >= 1_000, "{at}");
                assert!(
                    slow.iter().all(|g| g.as_u64().unwrap() >= threshold),
                    "{at}"
                );
                assert!(done["slow"].is_null(), "the slow gaps are not kept: {done}");
            }
            t => panic!("unexpected tracer {t}"),
        }
    }
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("the probe in every iteration"), "{report}");
    assert!(
        report.contains("lttng (tracepoint): largest gap"),
        "{report}"
    );
    assert!(report.contains("ftrace: largest gap"), "{report}");
    assert!(
        report.contains("lttng (tracepoint): the iterations that switched buffers: "),
        "{report}"
    );
}
