//! Root integration tests of the perf backend (`rtrace-perf`): the real `perf record` on our own
//! uprobe events, counts checked against the workload's ground truth: in stream mode recorded
//! (each sample once) + lost = hits, in overwrite mode recorded + overwritten = hits; the
//! semaphore raised; nothing left on the machine. Every test is skipped (with a printed reason)
//! if perf is not installed.
//!
//! Run: `cargo test -p rtrace-tests --test perf -- --test-threads=1` as root.

use rtrace_perf::{PerfTracer, DATA_FILE, PERF};
use rtrace_tests::*;
use rtrace_tracer::{EventStats, Hook, RecordMode, Target, Tracer};
use std::path::Path;

fn have_perf() -> bool {
    let ok = Path::new(PERF).is_file();
    if !ok {
        println!("SKIPPED: {PERF} not found (apt-get install linux-perf)");
    }
    ok
}

/// A shared library whose constructor waits for one byte on stdin: the program is exec'd (perf
/// -p follows its threads) but has not reached `main` yet.
const HOLD_C: &str = r#"
#include <unistd.h>
__attribute__((constructor)) static void rtrace_hold(void) { char c; (void)!read(0, &c, 1); }
"#;

fn target(hook: Hook, pid: u32, out_dir: &Path, kb: u64, record: RecordMode) -> Target {
    Target {
        hook,
        pid: Some(pid),
        follow_children: false,
        tree: false,
        skip_tid: None,
        out_dir: out_dir.to_owned(),
        consumer_cpus: vec![0],
        buffer_size_kb: Some(kb),
        record,
        poll: None,
    }
}

/// `sdt_loop N` traced on probe `name` by perf in `record` mode with `kb` KiB per CPU: what it
/// printed (hits, semaphore hits) and perf's accounting.
fn traced_loop(name: &str, n: u64, kb: u64, record: RecordMode) -> ((u64, u64), EventStats) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sdt_loop = sdt_loop(d);
    let hold = build_c(d, "hold.so", &[("hold", HOLD_C)], &["-shared", "-fPIC"]);
    let before = MachineState::now();
    let child = Held::preloaded(&hold, &sdt_loop, &[n.to_string()]);
    let hook = Hook::Usdt {
        sites: rtrace_sdt::find(&sdt_loop, "rtest", name).unwrap(),
        binary: sdt_loop,
    };
    let t = target(hook, child.pid(), d, kb, record);
    let tracer = PerfTracer::new();
    tracer.check(&t.hook).expect("check");
    let att = tracer.attach(&t).expect("attach");
    assert!(
        tracefs_snapshot().contains("rtrace_"),
        "our uprobe event is defined while perf records"
    );
    let out = child.go();
    let stats = att.finish().expect("finish");
    assert!(d.join(DATA_FILE).is_file());
    before
        .returns(10)
        .unwrap_or_else(|e| panic!("perf left state behind: {e}"));
    (parse_sdt_loop_output(&out), stats)
}

#[test]
fn stream_counts_every_hit_once_and_small_buffers_their_losses() {
    if !have_perf() {
        return;
    }
    // 4 MiB per CPU holds every event; one page loses most of them, and perf counts the
    // losses of a buffer still full at the end too.
    for (kb, n) in [(4096, 100_000), (4, 100_000)] {
        let ((hits, _), st) = traced_loop("hit", n, kb, RecordMode::Stream);
        println!("stream {kb} KiB: {st:?}");
        assert_eq!(hits, n);
        assert_eq!(st.recorded + st.lost, n, "{kb} KiB: {st:?}");
        assert_eq!(st.overwritten, 0);
        if kb == 4 {
            assert!(st.lost > 0, "one page cannot hold {n} events: {st:?}");
        }
    }
}

#[test]
fn overwrite_counts_what_the_flight_recorder_overwrote() {
    if !have_perf() {
        return;
    }
    let n = 100_000;
    let ((hits, _), st) = traced_loop("hit", n, 64, RecordMode::Overwrite);
    println!("overwrite 64 KiB: {st:?}");
    assert_eq!(hits, n);
    assert_eq!(st.recorded + st.lost, n, "{st:?}");
    assert_eq!(st.lost, st.overwritten, "an overwrite ring drops nothing");
    assert!(st.recorded > 0 && st.overwritten > 0, "{st:?}");
}

#[test]
fn semaphore_probe_is_enabled_and_counted_exactly() {
    if !have_perf() {
        return;
    }
    for record in [RecordMode::Stream, RecordMode::Overwrite] {
        let n = 50_000;
        let ((_, sem_hits), st) = traced_loop("sem", n, 4096, record);
        println!("{record:?}: sem_hits={sem_hits} {st:?}");
        assert_eq!(sem_hits, n, "{record:?}: the kernel raised the semaphore");
        assert_eq!(st.recorded + st.lost, n, "{record:?}: {st:?}");
    }
}

/// `usdt --tracer perf` through the binary on every hook kind perf takes, in `record` mode:
/// every case-1 run accounts exactly, case 2 records nothing, perf's buffer, version and
/// unequal conditions are in the result, and nothing remains.
fn usdt_run(record: &str, hooks: &str, kb: &str) -> serde_json::Value {
    let before = MachineState::now();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("perf.json");
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "--tracer",
        "perf",
        "--hook",
        hooks,
        "--record",
        record,
        "--buffer-size-kb",
        kb,
        "-c",
        "0,1,2",
        "-n",
        "20000",
        "--warmup",
        "1000",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    before
        .returns(10)
        .unwrap_or_else(|e| panic!("usdt --tracer perf left state behind: {e}"));
    let v = read_json(&json);
    let runs = v["runs"].as_array().unwrap();
    let traced: Vec<&serde_json::Value> = runs
        .iter()
        .filter(|r| r["case"] == 1 && r["tracer"] == "perf")
        .collect();
    assert_eq!(traced.len(), hooks.split(',').count(), "{v}");
    for r in &traced {
        let ev = &r["events"];
        assert_eq!(ev["hits"], 21000, "{r}");
        let sum = ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap();
        assert_eq!(sum, 21000, "{}: {ev}", r["hook_kind"]);
        assert!(ev["recorded"].as_u64().unwrap() > 0, "{ev}");
    }
    for r in runs.iter().filter(|r| r["case"] == 2) {
        assert_eq!(r["events"]["recorded"], 0, "{r}");
    }
    let perf = &v["environment"]["tracer_versions"]["perf"];
    assert!(perf.as_str().unwrap().starts_with("perf "), "{perf}");
    let buffer = v["config"]["buffers"]["perf"].as_str().unwrap();
    assert!(buffer.contains("KiB per CPU"), "{buffer}");
    assert!(
        v["config"]["unequal"]["perf"].is_string(),
        "{}",
        v["config"]
    );
    v
}

#[test]
fn usdt_stream_on_usdt_uprobe_and_uretprobe_hooks_accounts_exactly() {
    if !have_perf() {
        return;
    }
    usdt_run("stream", "usdt,uprobe,uretprobe", "4096");
}

#[test]
fn usdt_overwrite_accounts_the_overwritten_events() {
    if !have_perf() {
        return;
    }
    // 100 KiB becomes 128 (a power of two of pages), and the run says so.
    let v = usdt_run("overwrite", "usdt", "100");
    let unequal = v["config"]["unequal"]["perf"].as_str().unwrap();
    assert!(unequal.contains("became 128 KiB"), "{unequal}");
    let r = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case"] == 1)
        .unwrap();
    assert!(r["events"]["overwritten"].as_u64().unwrap() > 0, "{r}");
}

const GETPPID_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    for (long i = 0; i < n; i++) getppid();
    printf("calls=%ld\n", n);
    return 0;
}
"#;

/// A kernel tracepoint in overwrite mode: one event whose every sample reads its count
/// (`{EVENT}:S`), recorded + overwritten = the process's calls.
#[test]
fn kernel_tracepoint_overwrite_counts_from_its_samples() {
    if !have_perf() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = build_c(d, "getppid", &[("getppid", GETPPID_C)], &[]);
    let hold = build_c(d, "hold.so", &[("hold", HOLD_C)], &["-shared", "-fPIC"]);
    let before = MachineState::now();
    let n = 20_000u64;
    let child = Held::preloaded(&hold, &prog, &[n.to_string()]);
    let hook = Hook::KernelTracepoint {
        category: "syscalls".into(),
        name: "sys_enter_getppid".into(),
    };
    let t = target(hook, child.pid(), d, 8, RecordMode::Overwrite);
    let att = PerfTracer::new().attach(&t).expect("attach");
    let out = child.go();
    let st = att.finish().expect("finish");
    println!("{out}: {st:?}");
    assert_eq!(st.recorded + st.lost, n, "{st:?}");
    assert!(st.overwritten > 0 && st.lost == st.overwritten, "{st:?}");
    before
        .returns(10)
        .unwrap_or_else(|e| panic!("perf left state behind: {e}"));
}

/// `events --tracer perf`: the experiments perf expresses are measured (04, 06 through ftrace's
/// uprobe definition under a name perf's parser takes, 08 with its filter, 13 and 14 with a
/// stack per sample), every output holds at least the workload's reads, the accounting runs
/// on each hook they use are exact, what perf cannot express is listed with why, and nothing
/// remains.
#[test]
fn events_columns_where_perf_expresses_the_experiment() {
    if !have_perf() {
        return;
    }
    let before = MachineState::now();
    let dir = tempfile::tempdir().unwrap();
    let reads = 5000u64;
    let out = bench(&[
        "events",
        "--tracer",
        "perf",
        "--workload",
        "loop",
        "--experiments",
        "4,6,8,9,13,14,18",
        "--reads",
        &reads.to_string(),
        "--rounds",
        "1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    before
        .returns(10)
        .unwrap_or_else(|e| panic!("events --tracer perf left state behind: {e}"));
    let v = read_json(&dir.path().join("events.json"));
    let cell = |f: &str| {
        v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["tracer"] == "perf" && c["feature"] == f)
            .unwrap_or_else(|| panic!("no perf cell {f}: {v}"))
            .clone()
    };
    for f in [
        "tracepoint-entry",
        "uprobe",
        "filter",
        "kernel-stack",
        "user-stack",
    ] {
        let c = cell(f);
        assert_eq!(c["outcome"]["kind"], "measured", "{c}");
        for r in c["outcome"]["detail"].as_array().unwrap() {
            let ev = &r["evidence"];
            let seen = ev["all"].as_u64().unwrap() + ev["lost"].as_u64().unwrap();
            assert!(seen >= reads, "{f}: {r}");
        }
    }
    assert!(cell("filter")["program"]
        .as_str()
        .unwrap()
        .contains("--filter 'count > 0'"));
    for f in ["map", "per-event"] {
        assert_eq!(cell(f)["outcome"]["kind"], "inexpressible", "{}", cell(f));
    }
    let checks: Vec<&serde_json::Value> = v["hook_checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["tracer"] == "perf")
        .collect();
    assert_eq!(checks.len(), 2, "enter and uprobe: {checks:?}");
    for c in checks {
        assert_eq!(c["recorded"].as_u64(), Some(reads), "{c}");
        assert_eq!(c["lost"].as_u64(), Some(0), "{c}");
    }
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("Gebai & Dagenais' Table III"), "{report}");
}
