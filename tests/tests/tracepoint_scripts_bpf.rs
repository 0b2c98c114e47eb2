//! Root integration tests of tracepoint scripts (`Hook::Tracepoints`, the `app` experiment's
//! tracing scripts) in the eBPF backend (both modes) and with the real bpftrace: every process
//! traced, `dd bs=1` as a known load of reads and writes, the counts per probe checked, and
//! nothing left behind (BPF links and programs, bpftrace processes).
//!
//! Run: `flock /tmp/rtrace-root.lock cargo test --release -p rtrace-tests --test
//! tracepoint_scripts_bpf -- --test-threads=1 --nocapture` as root (the timings are printed).

use rtrace_bpftrace::{BpftraceMode, BpftraceTracer};
use rtrace_ebpf::{EbpfMode, EbpfTracer};
use rtrace_tests::{bpf_ids, pids_named, wait_for};
use rtrace_tracer::{tracepoints, EventStats, Hook, RecordMode, Target, Tracer};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const EVENTS: &str = "/sys/kernel/tracing/events";

/// `dd bs=1 count=N`: N one-byte reads and N one-byte writes (and a few more of its own).
const N: u64 = 20_000;

fn script(patterns: &[&str]) -> Hook {
    let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
    Hook::Tracepoints(tracepoints::expand(Path::new(EVENTS), &patterns).expect("expand"))
}

fn points(hook: &Hook) -> usize {
    match hook {
        Hook::Tracepoints(s) => s.points.len(),
        _ => unreachable!(),
    }
}

fn target(hook: Hook, out_dir: &Path) -> Target {
    Target {
        hook,
        pid: None,
        follow_children: false,
        tree: false,
        skip_tid: None,
        out_dir: out_dir.to_owned(),
        consumer_cpus: vec![0],
        buffer_size_kb: None,
        record: RecordMode::Stream,
        poll: None,
    }
}

/// What the kernel holds of a tracer: BPF links and programs, bpftrace processes.
#[derive(Debug, PartialEq, Eq)]
struct Held {
    links: BTreeSet<u64>,
    progs: BTreeSet<u64>,
    bpftraces: BTreeSet<u32>,
}

impl Held {
    fn now() -> Held {
        Held {
            links: bpf_ids("link"),
            progs: bpf_ids("prog"),
            bpftraces: pids_named(&["bpftrace"]),
        }
    }
}

struct Run {
    stats: EventStats,
    by_probe: Vec<(String, u64)>,
    attach: Duration,
    finish: Duration,
}

fn dd() {
    let count = format!("count={N}");
    let out = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1", &count])
        .output()
        .expect("dd");
    assert!(out.status.success(), "dd failed: {out:?}");
}

/// Attaches `tracer` to `hook` system-wide, runs `dd`, finishes; checks that at least
/// `min_links` BPF links were there while attached and that nothing is left after.
fn run(tracer: &dyn Tracer, hook: Hook, min_links: usize) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let before = Held::now();
    tracer.check(&hook).expect("check");
    let t = target(hook, dir.path());
    let start = Instant::now();
    let att = tracer.attach(&t).expect("attach");
    let attach = start.elapsed();
    let links = bpf_ids("link").difference(&before.links).count();
    assert!(
        links >= min_links,
        "{links} new BPF links while attached, want at least {min_links}"
    );
    dd();
    let start = Instant::now();
    let (stats, by_probe) = att.finish_by_probe().expect("finish");
    let finish = start.elapsed();
    let mut now = Held::now();
    let back = wait_for(5, || {
        now = Held::now();
        now == before
    });
    assert!(back, "left behind: before {before:?}\nafter {now:?}");
    Run {
        stats,
        by_probe,
        attach,
        finish,
    }
}

fn count(by_probe: &[(String, u64)], probe: &str) -> u64 {
    by_probe
        .iter()
        .find(|(p, _)| p == probe)
        .map_or(0, |&(_, n)| n)
}

/// The accounting and the per-probe counts of a `syscalls:sys_enter_*` (or wider) run.
fn check(what: &str, r: &Run, points: usize) {
    let s = r.stats;
    eprintln!(
        "{what}: {points} tracepoints, recorded {} lost {}, read {} write {}, attach {:.2} s, finish {:.2} s",
        s.recorded,
        s.lost,
        count(&r.by_probe, "syscalls:sys_enter_read"),
        count(&r.by_probe, "syscalls:sys_enter_write"),
        r.attach.as_secs_f64(),
        r.finish.as_secs_f64()
    );
    assert!(s.recorded + s.lost >= 2 * N, "{what}: {s:?}");
    assert_eq!(r.by_probe.len(), points, "{what}: every point, in order");
    let sum: u64 = r.by_probe.iter().map(|(_, n)| n).sum();
    assert_eq!(sum, s.recorded, "{what}: the probes' counts add up");
    // A record run's per-probe counts are of its recorded events: a lost one (a full ring while
    // the rest of the machine is busy too) may have been any probe's.
    for probe in ["syscalls:sys_enter_read", "syscalls:sys_enter_write"] {
        let n = count(&r.by_probe, probe);
        assert!(
            n + s.lost >= N,
            "{what}: {probe} counted {n} (+ {} lost) < {N}",
            s.lost
        );
    }
}

#[test]
fn ebpf_counts_a_script_per_probe() {
    // A few tracepoints: each link's detach waits for a grace period, one at a time (~70 ms;
    // 26 s for the 720 of syscalls:*, which app measures as the tracer's exit).
    let hook = script(&["syscalls:sys_enter_read*", "syscalls:sys_enter_write*"]);
    let points = points(&hook);
    assert!(points > 2, "{points}");
    let r = run(&EbpfTracer::new(EbpfMode::Aggregate), hook, points);
    assert_eq!(r.stats.lost, 0);
    check("ebpf aggregate", &r, points);
}

#[test]
fn ebpf_records_a_script_per_probe() {
    let hook = script(&["syscalls:sys_enter_read*", "syscalls:sys_enter_write*"]);
    let points = points(&hook);
    let r = run(&EbpfTracer::new(EbpfMode::Record), hook, points);
    check("ebpf record", &r, points);
}

#[test]
#[ignore = "26 s of detaching 720 links, too long for CI: run with --ignored (app's main-job step runs syscalls:* under eBPF)"]
fn ebpf_counts_every_syscall_tracepoint() {
    let hook = script(&["syscalls:*"]);
    let points = points(&hook);
    assert!(points > 512, "{points}");
    let r = run(&EbpfTracer::new(EbpfMode::Count), hook, points);
    check("ebpf count syscalls:*", &r, points);
    assert!(count(&r.by_probe, "syscalls:sys_exit_read") >= N);
}

#[test]
fn bpftrace_counts_a_script_per_probe() {
    let hook = script(&["syscalls:sys_enter_read*", "syscalls:sys_enter_write*"]);
    let points = points(&hook);
    let r = run(&BpftraceTracer::new(BpftraceMode::Aggregate), hook, 0);
    assert_eq!(r.stats.lost, 0);
    check("bpftrace", &r, points);
}

/// More than bpftrace 0.17's default 512 probes: the backend raises its limits.
#[test]
#[ignore = "bpftrace takes 53 s to exit from 720 probes, too long for CI: run with --ignored"]
fn bpftrace_attaches_all_of_syscalls_star() {
    let hook = script(&["syscalls:*"]);
    let points = points(&hook);
    assert!(points > 512, "{points}");
    let r = run(&BpftraceTracer::new(BpftraceMode::Aggregate), hook, 0);
    check("bpftrace syscalls:*", &r, points);
    assert!(count(&r.by_probe, "syscalls:sys_exit_read") >= N);
}

#[test]
fn bpftrace_refuses_record_mode_for_a_script() {
    let hook = script(&["syscalls:sys_enter_read"]);
    let err = BpftraceTracer::new(BpftraceMode::Record)
        .check(&hook)
        .unwrap_err();
    assert!(format!("{err:#}").contains("aggregate"), "{err:#}");
}
