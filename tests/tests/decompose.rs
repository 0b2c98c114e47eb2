//! `usdt --decompose` end to end: every step of every tracer's staircase runs and accounts
//! exactly (ftrace `off` counting from uprobe_profile, the eBPF floor from its global counter),
//! performance counters are counted or listed with a reason, the report shows the staircase, and
//! no tracing state remains.

use rtrace_tests::*;

#[test]
fn every_step_runs_and_accounts_exactly() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "usdt",
        "--decompose",
        "--rounds",
        "2",
        "-n",
        "20000",
        "--warmup",
        "1000",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    let v = read_json(&dir.path().join("usdt.json"));
    let runs = v["runs"].as_array().unwrap();
    let variant = |r: &serde_json::Value| r["variant"].as_str().unwrap_or("").to_owned();
    let traced = |tracer: &str, v: &str| {
        runs.iter()
            .filter(|r| r["case"] == 1 && r["tracer"] == tracer && variant(r) == v)
            .count()
    };
    for (tracer, modes) in [
        (
            "ebpf",
            &["floor", "count", "aggregate", "record", "record-wakeup"][..],
        ),
        ("ftrace", &["off", "overwrite", "stream"][..]),
        ("lttng", &["tracepoint", "tracef"][..]),
        ("bpftrace", &["aggregate", "record"][..]),
        ("perf", &["overwrite", "stream"][..]),
    ] {
        for m in modes {
            assert_eq!(traced(tracer, m), 1, "{tracer} {m} on usdt");
            if tracer != "lttng" {
                let nop5 = format!("{m}, usdt-nop5");
                assert_eq!(traced(tracer, &nop5), 1, "{tracer} {m} on usdt-nop5");
            }
        }
    }
    // Case 3 only where it is a step (LTTng's dormant tracepoint, and tracef's).
    let case3: Vec<&str> = runs
        .iter()
        .filter(|r| r["case"] == 3)
        .map(|r| r["tracer"].as_str().unwrap())
        .collect();
    assert_eq!(case3, ["lttng", "lttng"], "{case3:?}");
    for r in runs.iter().filter(|r| r["case"] == 1) {
        let ev = &r["events"];
        let sum = ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap();
        // Two rounds of 10,000 timed and 1,000 warm-up iterations.
        assert_eq!(ev["hits"], 22000, "{} {}: {ev}", r["tracer"], r["variant"]);
        assert_eq!(sum, 22000, "{} {}: {ev}", r["tracer"], r["variant"]);
        let c = &r["counters"];
        assert!(c["values"]["task-clock"].as_u64().unwrap() > 0, "{c}");
        for name in ["cycles", "instructions", "cache-misses"] {
            assert!(
                c["values"].get(name).is_some() ^ c["unavailable"].get(name).is_some(),
                "{name}: counted or listed with a reason: {c}"
            );
        }
    }
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    for needle in [
        "### Where the nanoseconds go",
        "ebpf (maps) on usdt",
        "ebpf (ring buffer) on usdt-nop5",
        "ftrace (ring buffer) on usdt-nop5",
        "lttng (tracef) on usdt",
        "bpftrace (count()) on usdt",
        "perf (perf ring) on usdt-nop5",
        "program cost above the eBPF floor on usdt",
    ] {
        assert!(report.contains(needle), "report lacks {needle}");
    }
    assert!(
        !report.contains("bpftrace (count()) on usdt-nop5"),
        "bpftrace traps on usdt-nop5: our floor (a call there) is not its floor"
    );
    // Reported with a plain run of the same machine, each path's sum is checked against it.
    let plain = tempfile::tempdir().unwrap();
    assert_ok(&bench(&[
        "usdt",
        "-t",
        "ebpf",
        "--bpf-mode",
        "aggregate",
        "--rounds",
        "2",
        "-n",
        "20000",
        "-c",
        "0,1",
        "--out",
        plain.path().to_str().unwrap(),
    ]));
    let both = tempfile::tempdir().unwrap();
    let out = bench(&[
        "report",
        dir.path().join("usdt.json").to_str().unwrap(),
        plain.path().join("usdt.json").to_str().unwrap(),
        "--out",
        both.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("ebpf (maps) on usdt:"))
        .expect("the eBPF maps staircase");
    assert!(
        line.contains("ebpf (aggregate) case 1 measured alone in a separate invocation"),
        "{line}"
    );
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
}
