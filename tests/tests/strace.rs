//! strace as a column of the events suite (issue #34): `strace -f -o /dev/null -p PID` on the
//! syscall experiments 04 and 05, the others listed as inexpressible, the accounting runs
//! (strace's `-o FILE` lines) exact for the read loop and dd, SystemTap listed with the reason
//! it cannot run here, no strace left; a strace of a dead run is stopped by the next run; the
//! other experiments refuse `--tracer strace`.

use rtrace_tests::*;
use std::process::{Command, Stdio};
use std::time::Duration;

const READS: u64 = 2000;

#[test]
fn strace_cells_run_with_exact_accounting_and_leave_nothing() {
    let before = tracefs_snapshot();
    let straces = pids_named(&["strace"]);
    let dir = tempfile::tempdir().unwrap();
    let reads = READS.to_string();
    let out = bench(&[
        "events",
        "--tracer",
        "strace",
        "--workload",
        "loop,dd",
        "--experiments",
        "1,4,5,6",
        "--reads",
        &reads,
        "--rounds",
        "1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    assert_eq!(pids_named(&["strace"]), straces, "strace left running");
    let v = read_json(&dir.path().join("events.json"));
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2 * 4, "{cells:?}");
    for c in cells {
        assert_eq!(c["tracer"], "strace", "{c}");
        let kind = &c["outcome"]["kind"];
        match c["feature"].as_str().unwrap() {
            "tracepoint-entry" | "tracepoint-return" => {
                assert_eq!(kind, "measured", "{c}");
                let program = c["program"].as_str().unwrap();
                assert!(program.starts_with("strace -f -o /dev/null -p PID"), "{c}");
                for r in c["outcome"]["detail"].as_array().unwrap() {
                    assert_eq!(r["reads"].as_u64(), Some(READS), "{r}");
                }
            }
            _ => assert_eq!(kind, "inexpressible", "{c}"),
        }
    }
    // Entry and exit accounted for both workloads, strace's lines against the reads.
    let checks = v["hook_checks"].as_array().unwrap();
    assert_eq!(checks.len(), 4, "{checks:?}");
    for c in checks {
        let startup = c["startup"].as_u64().unwrap();
        assert_eq!(c["reads"].as_u64(), Some(READS), "{c}");
        assert_eq!(c["lost"].as_u64(), Some(0), "{c}");
        assert_eq!(c["recorded"].as_u64(), Some(READS + startup), "{c}");
        if c["workload"] == "dd" {
            assert!((1..100).contains(&startup), "dd's loader reads: {c}");
        }
    }
    let config = &v["config"];
    let placement = config["unequal"]["strace"].as_str().unwrap_or_default();
    assert!(placement.contains("harness CPUs"), "{config}");
    assert!(config["buffers"]["strace"].as_str().is_some(), "{config}");
    // SystemTap: listed with the reason measured here.
    let stap = &v["unavailable"][0];
    assert!(
        stap["tracer"].as_str().unwrap().starts_with("systemtap"),
        "{stap}"
    );
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("strace ns/event"), "{report}");
    assert!(report.contains("systemtap"), "{report}");
}

#[test]
fn a_strace_of_a_dead_run_is_stopped_by_the_next_run() {
    let mut sleeper = Command::new("sleep").arg("600").spawn().unwrap();
    // A run tag whose lock file is absent: a run that is gone.
    let mut orphan = Command::new("strace")
        .args(["-f", "-o", "/dev/null", "-p", &sleeper.id().to_string()])
        .env("RTRACE_BENCH_RUN", "0badc0de0badc0de")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "events",
        "--tracer",
        "strace",
        "-e",
        "4",
        "-n",
        "10",
        "-w",
        "loop",
        "--rounds",
        "1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stopped = wait_for(5, || orphan.try_wait().unwrap().is_some());
    let _ = orphan.kill();
    let _ = orphan.wait();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stopped, "the dead run's strace survived: {stderr}");
    assert!(stderr.contains("removed stale strace"), "{stderr}");
}

#[test]
fn experiments_that_trace_probes_refuse_strace() {
    for args in [
        &["usdt", "--tracer", "strace"][..],
        &["rate", "--tracer", "strace"],
        &["npt", "--tracer", "strace"],
        &[
            "count",
            "--tracer",
            "strace",
            "-p",
            "rtrace:event",
            "--",
            "true",
        ],
    ] {
        let out = bench(args);
        assert_rejected(&out, "strace sees system calls only");
    }
}
