//! Leftovers of SIGKILLed runs (issue #20): children holding kernel state die with the harness,
//! and whatever tracer a killed run used, the next run of any other tracer leaves tracefs, BPF
//! programs and links, LTTng sessions and daemons, bpftrace and perf processes exactly as they
//! were before the killed run.

use rtrace_tests::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const TRACERS: [&str; 5] = ["ftrace", "ebpf", "lttng", "bpftrace", "perf"];

/// The tracers usable here (LTTng, bpftrace and perf are optional packages).
fn available() -> Vec<&'static str> {
    let on_path = |p: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    TRACERS
        .into_iter()
        .filter(|t| match *t {
            "lttng" => ["lttng", "lttng-sessiond", "babeltrace2"]
                .iter()
                .all(|p| on_path(p)),
            "bpftrace" => Path::new("/usr/bin/bpftrace").is_file(),
            "perf" => Path::new(rtrace_perf::PERF).is_file(),
            _ => true,
        })
        .inspect(|t| println!("tracer {t} available"))
        .collect()
}

/// Whether `tracer`'s state of a run started after `before` is in place.
fn traced(tracer: &str, before: &MachineState) -> bool {
    let now = MachineState::now();
    match tracer {
        "ftrace" => now.tracefs != before.tracefs && now.tracefs.contains("instances: [\"rtrace_"),
        "ebpf" => now.bpf_links.len() > before.bpf_links.len(),
        "lttng" => now.lttng_sessions.len() > before.lttng_sessions.len(),
        "bpftrace" => {
            now.bpftraces.len() > before.bpftraces.len()
                && now.bpf_progs.len() > before.bpf_progs.len()
        }
        // perf records our uprobe event: both in place.
        "perf" => now.perfs.len() > before.perfs.len() && now.tracefs.contains("p:rtrace_"),
        other => panic!("unknown tracer {other}"),
    }
}

/// Whether the workload of the run `harness` is in its timed loop: the harness sends the
/// workload's go byte once its tracer attached, and until then the workload waits for it, asleep
/// (state `S`); from then on it runs (`R`).
fn looping(harness: &Child) -> bool {
    let harness = harness.id().to_string();
    pids_named(&["workload", "workload-lttng"])
        .into_iter()
        .any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid …`
                let mut fields = stat
                    .rsplit_once(')')
                    .map_or("", |(_, r)| r)
                    .split_whitespace();
                fields.next() == Some("R") && fields.next() == Some(harness.as_str())
            })
        })
}

/// Starts a long case-1 `usdt` run of `tracer` and returns once its tracer is on and the
/// workload it traces is in its loop.
fn start_long_run(tracer: &str, out: &Path) -> Child {
    let before = MachineState::now();
    let mut child = Command::new(bin("rtrace-bench"))
        .args([
            "usdt",
            "--rounds",
            "1",
            "-t",
            tracer,
            "-c",
            "1",
            "-n",
            "300000000",
            "--warmup",
            "0",
        ])
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rtrace-bench");
    if !wait_for(60, || traced(tracer, &before) && looping(&child)) {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "the {tracer} run never attached: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    child
}

/// SIGKILLs `child` (rtrace-bench) and reaps it.
fn sigkill(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A short case-1 run of `tracer`; returns its stderr.
fn short_run(tracer: &str, out: &Path) -> String {
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "-t",
        tracer,
        "-c",
        "1",
        "-n",
        "2000",
        "--warmup",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_ok(&out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bpftrace_dies_with_a_killed_run() {
    if !available().contains(&"bpftrace") {
        println!("SKIPPED: bpftrace not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let before = MachineState::now();
    sigkill(start_long_run("bpftrace", &dir.path().join("killed")));
    assert!(
        wait_for(5, || pids_named(&["bpftrace"]).is_subset(&before.bpftraces)),
        "bpftrace outlived its SIGKILLed harness: {:?}",
        pids_named(&["bpftrace"])
    );
    before
        .returns(10)
        .unwrap_or_else(|d| panic!("the killed bpftrace run left state behind: {d}"));
}

/// perf dies with its SIGKILLed harness (the kernel then drops its events and their uprobes);
/// its uprobe event definition stays in `uprobe_events` until the next run of any tracer.
#[test]
fn perf_dies_with_a_killed_run_and_the_next_run_removes_its_event() {
    if !available().contains(&"perf") {
        println!("SKIPPED: perf not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let before = MachineState::now();
    sigkill(start_long_run("perf", &dir.path().join("killed")));
    assert!(
        wait_for(5, || pids_named(&["perf"]).is_subset(&before.perfs)),
        "perf outlived its SIGKILLed harness: {:?}",
        pids_named(&["perf"])
    );
    assert_ne!(
        tracefs_snapshot(),
        before.tracefs,
        "its event definition stays"
    );
    let stderr = short_run("ebpf", &dir.path().join("ebpf"));
    assert!(stderr.contains("removed stale uprobe"), "{stderr}");
    before
        .returns(10)
        .unwrap_or_else(|d| panic!("the killed perf run left state behind: {d}"));
}

#[test]
fn a_killed_ftrace_run_is_cleaned_up_by_an_ebpf_run() {
    let dir = tempfile::tempdir().unwrap();
    let before = MachineState::now();
    sigkill(start_long_run("ftrace", &dir.path().join("killed")));
    assert_ne!(
        tracefs_snapshot(),
        before.tracefs,
        "SIGKILL cannot clean up: state expected"
    );
    let stderr = short_run("ebpf", &dir.path().join("ebpf"));
    assert!(stderr.contains("removed stale"), "{stderr}");
    before
        .returns(10)
        .unwrap_or_else(|d| panic!("the eBPF run left the killed ftrace run's state: {d}"));
}

#[test]
fn a_killed_run_of_any_tracer_is_cleaned_up_by_a_run_of_any_other() {
    let tracers = available();
    let started = Instant::now();
    for &killed in &tracers {
        for &other in tracers.iter().filter(|&&t| t != killed) {
            let pair = Instant::now();
            let dir = tempfile::tempdir().unwrap();
            let before = MachineState::now();
            sigkill(start_long_run(killed, &dir.path().join("killed")));
            short_run(other, &dir.path().join("other"));
            before.returns(10).unwrap_or_else(|d| {
                panic!("{killed} run SIGKILLed, then a {other} run: not as before: {d}")
            });
            println!(
                "{killed} killed, {other} cleaned up: {:.1} s",
                pair.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "matrix of {} tracers: {:.1} s",
        tracers.len(),
        started.elapsed().as_secs_f64()
    );
}
