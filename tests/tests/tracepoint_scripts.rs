//! Root integration tests of tracepoint scripts ([`Hook::Tracepoints`], the `app` experiment's
//! hook): `syscalls:sys_enter_*` traced system-wide by ftrace and perf while
//! `dd if=/dev/zero of=/dev/null bs=1 count=20000` runs (20,000 one-byte reads and as many
//! writes), and by strace on dd's pid; every event accounted, counted by tracepoint, nothing left
//! behind (no `rtrace_` instance, no perf or strace process).
//!
//! Run: `cargo test -p rtrace-tests --test tracepoint_scripts -- --test-threads=1` as root.

use rtrace_ftrace::FtraceTracer;
use rtrace_perf::PerfTracer;
use rtrace_strace::StraceTracer;
use rtrace_tests::*;
use rtrace_tracer::tracepoints::{expand, Script};
use rtrace_tracer::{EventStats, Hook, RecordMode, Target, Tracer};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const N: u64 = 20_000;

fn script(patterns: &[&str]) -> Script {
    let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
    expand(Path::new("/sys/kernel/tracing/events"), &patterns).expect("expand the script")
}

fn target(hook: Hook, pid: Option<u32>, out_dir: &Path) -> Target {
    Target {
        hook,
        pid,
        follow_children: pid.is_some(),
        tree: false,
        skip_tid: None,
        out_dir: out_dir.to_owned(),
        consumer_cpus: vec![0],
        buffer_size_kb: Some(4096),
        record: RecordMode::Stream,
        poll: None,
    }
}

fn dd_args() -> Vec<String> {
    ["if=/dev/zero", "of=/dev/null", "bs=1"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("count={N}")])
        .collect()
}

fn probe(probes: &[(String, u64)], name: &str) -> u64 {
    probes
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no count for {name} in {} probes", probes.len()))
        .1
}

/// `tracer` on `patterns` (with `syscalls:sys_enter_read` and `_write`) system-wide while dd
/// runs: its accounting and per-probe counts, checked, and the time from attach to finish.
fn system_wide(
    tracer: &dyn Tracer,
    name: &str,
    patterns: &[&str],
) -> (EventStats, Vec<(String, u64)>) {
    let dir = tempfile::tempdir().unwrap();
    let s = script(patterns);
    let points = s.points.len();
    assert!(points > 2, "{points} tracepoints");
    let instances = our_instances();
    let t = target(Hook::Tracepoints(s), None, dir.path());
    tracer.check(&t.hook).expect("check");
    let t0 = Instant::now();
    let att = tracer.attach(&t).expect("attach");
    let attached = t0.elapsed();
    let t1 = Instant::now();
    let st = Command::new("dd")
        .args(dd_args())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run dd");
    assert!(st.success());
    let ran = t1.elapsed();
    let t2 = Instant::now();
    let (stats, probes) = att.finish_by_probe().expect("finish");
    let finished = t2.elapsed();
    let total = stats.recorded + stats.lost;
    let traced = t0.elapsed() - finished;
    println!(
        "{name}: {points} tracepoints, attach {attached:?}, dd {ran:?} ({:.0} of its calls/s), finish {finished:?}: recorded {} lost {} ({:.0} events/s from attach to finish), read {}, write {}",
        (2 * N) as f64 / ran.as_secs_f64(),
        stats.recorded,
        stats.lost,
        total as f64 / traced.as_secs_f64(),
        probes.iter().find(|(n, _)| n == "syscalls:sys_enter_read").map_or(0, |p| p.1),
        probes.iter().find(|(n, _)| n == "syscalls:sys_enter_write").map_or(0, |p| p.1),
    );
    assert!(total >= 2 * N, "{name}: {stats:?}");
    if !probes.is_empty() {
        assert_eq!(probes.len(), points, "one count per tracepoint");
        assert!(probe(&probes, "syscalls:sys_enter_read") >= N);
        assert!(probe(&probes, "syscalls:sys_enter_write") >= N);
        let sum: u64 = probes.iter().map(|p| p.1).sum();
        assert_eq!(sum, stats.recorded, "per-probe counts add up to recorded");
    }
    assert_eq!(our_instances(), instances, "{name} left an instance behind");
    (stats, probes)
}

#[test]
fn ftrace_traces_a_script_system_wide_and_counts_each_tracepoint() {
    // Every system call's entry: ftrace enables and disables 360 events in a blink.
    let (_, probes) = system_wide(&FtraceTracer::new(), "ftrace", &["syscalls:sys_enter_*"]);
    assert!(!probes.is_empty(), "stream mode counts by tracepoint");
}

#[test]
fn ftrace_refuses_mode_off_for_a_script() {
    let t = FtraceTracer::with_mode(rtrace_ftrace::FtraceMode::Off);
    let e = t
        .check(&Hook::Tracepoints(script(&["syscalls:sys_enter_read"])))
        .unwrap_err();
    assert!(format!("{e:#}").contains("mode `off`"), "{e:#}");
}

#[test]
fn perf_traces_a_script_system_wide_and_counts_each_tracepoint() {
    if !Path::new(rtrace_perf::PERF).is_file() {
        println!("SKIPPED: perf not installed");
        return;
    }
    let perfs = pids_named(&["perf"]);
    // A few tracepoints: perf's exit takes ~40 ms per tracepoint (the kernel's grace period
    // per event, one at a time), 15 s for the 360 entries, which app measures.
    let patterns = ["syscalls:sys_enter_read*", "syscalls:sys_enter_write*"];
    let (_, probes) = system_wide(&PerfTracer::new(), "perf", &patterns);
    assert!(!probes.is_empty(), "perf counts by tracepoint");
    assert!(
        wait_for(5, || pids_named(&["perf"]) == perfs),
        "perf left running"
    );
}

/// Whether process `pid` is stopped (state `T` in /proc/PID/stat).
fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('T')))
        .unwrap_or(false)
}

/// dd's read and write entries as strace counts them when it starts dd itself: a second
/// method, from another run of the same deterministic command.
fn dd_calls_by_strace(dir: &Path) -> (u64, u64) {
    let out = dir.join("direct.txt");
    let st = Command::new(rtrace_strace::STRACE)
        .arg("-f")
        .arg("-o")
        .arg(&out)
        .args(["-e", "trace=read,write", "dd"])
        .args(dd_args())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run strace dd");
    assert!(st.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let n = |call: &str| text.lines().filter(|l| l.contains(call)).count() as u64;
    (n(" read("), n(" write("))
}

#[test]
fn strace_follows_a_held_process_and_counts_its_calls_in_the_script_s_terms() {
    if !Path::new(rtrace_strace::STRACE).is_file() {
        println!("SKIPPED: strace not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tracer = StraceTracer::new();
    // Another category is refused in check, system-wide in attach.
    let e = tracer
        .check(&Hook::Tracepoints(script(&[
            "syscalls:sys_enter_read",
            "sched:sched_switch",
        ])))
        .unwrap_err();
    assert!(
        format!("{e:#}").contains("strace sees system calls only"),
        "{e:#}"
    );
    let s = script(&["syscalls:sys_enter_*", "syscalls:sys_exit_read"]);
    let e = tracer
        .attach(&target(Hook::Tracepoints(s.clone()), None, dir.path()))
        .err()
        .expect("no pid");
    assert!(
        format!("{e:#}").contains("cannot trace every process"),
        "{e:#}"
    );
    // dd, held before its exec: the shell stops itself until strace is attached.
    let script_text = format!("kill -STOP $$; exec dd {}", dd_args().join(" "));
    let mut child = Command::new("sh")
        .args(["-c", &script_text])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn sh");
    let pid = child.id();
    assert!(wait_for(5, || stopped(pid)), "sh did not stop itself");
    let straces = pids_named(&["strace"]);
    let t = target(Hook::Tracepoints(s), Some(pid), dir.path());
    tracer.check(&t.hook).expect("check");
    let t0 = Instant::now();
    let att = tracer.attach(&t).expect("attach");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGCONT,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    let ran = t0.elapsed();
    let (stats, probes) = att.finish_by_probe().expect("finish");
    let (reads, writes) = dd_calls_by_strace(dir.path());
    let (enter_read, exit_read, enter_write) = (
        probe(&probes, "syscalls:sys_enter_read"),
        probe(&probes, "syscalls:sys_exit_read"),
        probe(&probes, "syscalls:sys_enter_write"),
    );
    println!(
        "strace: {} tracepoints, dd under strace {ran:?}: recorded {} lost {}, read entries {enter_read} exits {exit_read}, write entries {enter_write}; strace running dd itself: {reads} reads, {writes} writes",
        probes.len(),
        stats.recorded,
        stats.lost
    );
    assert!(enter_read >= N && enter_read != 0);
    assert_eq!(enter_read, reads, "dd's reads, counted two ways");
    assert_eq!(exit_read, reads, "every read returned");
    assert_eq!(enter_write, writes, "dd's writes, counted two ways");
    assert_eq!(probe(&probes, "syscalls:sys_enter_exit_group"), 1);
    // The shell's exec searches PATH: an execve per directory until dd's.
    assert!(probe(&probes, "syscalls:sys_enter_execve") >= 1);
    let sum: u64 = probes.iter().map(|p| p.1).sum();
    assert_eq!((sum, stats.lost), (stats.recorded, 0));
    assert!(
        wait_for(5, || pids_named(&["strace"]) == straces),
        "strace left running"
    );
}
