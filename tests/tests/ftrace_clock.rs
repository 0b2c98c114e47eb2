//! `--ftrace-clock`: the private instance's `trace_clock` is the one asked for while the run
//! traces, the result records it, the global instance's clock is never changed, and a clock the
//! kernel does not offer is refused before anything changes.

use rtrace_tests::*;
use std::path::Path;
use std::process::{Command, Stdio};

const TRACEFS: &str = "/sys/kernel/tracing";

fn global_clock() -> String {
    std::fs::read_to_string(Path::new(TRACEFS).join("trace_clock")).unwrap()
}

/// The bracketed clock of a `trace_clock` file's text.
fn selected(text: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_owned)
}

#[test]
fn the_instance_runs_on_the_clock_asked_for_and_the_global_clock_is_untouched() {
    let global_before = global_clock();
    // A clock other than the global one, so that reading the global file could not pass.
    let clock = ["global", "counter"]
        .into_iter()
        .find(|c| selected(&global_before).as_deref() != Some(c))
        .unwrap();
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let iterations = 2_000_000u64;
    let mut child = Command::new(bin("rtrace-bench"))
        .args([
            "usdt", "--tracer", "ftrace", "--case", "0,1", "--rounds", "1",
        ])
        .args(["-n", &iterations.to_string(), "--ftrace-clock", clock])
        .args(["--out", dir.path().to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read every instance of ours while the run traces: each must be on `clock`.
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        for name in our_instances() {
            let file = Path::new(TRACEFS)
                .join("instances")
                .join(&name)
                .join("trace_clock");
            if let Ok(text) = std::fs::read_to_string(file) {
                seen.push((name, selected(&text)));
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !seen.is_empty(),
        "no instance of ours seen during a 2,000,000-hit run"
    );
    for (name, got) in &seen {
        assert_eq!(got.as_deref(), Some(clock), "instance {name}");
    }
    assert_eq!(
        global_clock(),
        global_before,
        "the global trace_clock changed"
    );
    assert_eq!(tracefs_snapshot(), before, "tracefs state left behind");

    let v = read_json(&dir.path().join("usdt.json"));
    assert_eq!(v["config"]["tracer_options"]["ftrace_clock"], clock);
    let buffer = v["config"]["buffers"]["ftrace"].as_str().unwrap();
    assert!(
        buffer.ends_with(&format!("trace_clock {clock}")),
        "{buffer}"
    );
    let traced = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tracer"] == "ftrace" && r["case"] == 1)
        .unwrap();
    let ev = &traced["events"];
    let recorded = ev["recorded"].as_u64().unwrap();
    assert!(recorded > 0, "{ev}");
    assert_eq!(
        recorded + ev["lost"].as_u64().unwrap(),
        ev["hits"].as_u64().unwrap()
    );
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains(&format!("trace_clock {clock}")), "{report}");
}

#[test]
fn a_clock_the_kernel_does_not_offer_is_refused_before_anything_changes() {
    let before = tracefs_snapshot();
    let global_before = global_clock();
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "usdt",
        "--tracer",
        "all",
        "--ftrace-clock",
        "no-such-clock",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_rejected(
        &out,
        "--ftrace-clock no-such-clock is not a trace clock of this kernel",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("local, global, counter"), "{stderr}");
    assert_eq!(tracefs_snapshot(), before);
    assert_eq!(global_clock(), global_before);
    assert!(!dir.path().join("usdt.json").exists());
}

#[test]
fn the_events_suites_ftrace_instance_takes_the_clock_too() {
    let before = tracefs_snapshot();
    let global_before = global_clock();
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "events",
        "--tracer",
        "ftrace",
        "-e",
        "4",
        "-n",
        "20000",
        "--workload",
        "loop",
        "--rounds",
        "1",
        "--ftrace-clock",
        "counter",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    // The instance's trace_clock is read back after the write: a run that did not get its
    // clock fails.
    assert_ok(&out);
    let v = read_json(&dir.path().join("events.json"));
    assert_eq!(v["config"]["tracer_options"]["ftrace_clock"], "counter");
    assert_eq!(global_clock(), global_before);
    assert_eq!(tracefs_snapshot(), before);
}
