//! Root integration tests of dynamic instrumentation (issue 8) through the real binary: uprobe and
//! uretprobe hooks on the workload's marker functions (`usdt --hook`) and on functions of foreign
//! binaries and libraries (`count --probe uprobe:F|uretprobe:F`), with exact accounting and no
//! tracefs or BPF state left behind.
//!
//! Run: `cargo test --release -p rtrace-tests --test uprobe -- --test-threads=1` as root.

use rtrace_tests::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const N: u64 = 100_000;

/// Calls of `work` in a `count` of the foreign program: a hit of its single-stepped first
/// instruction costs ~10 µs here, and every buffer holds far more than this many events, so a
/// larger count adds time, not a stricter check (the count is exact at any size).
const WORK_CALLS: u64 = 10_000;

/// A foreign C program: `work(i)` (never inlined, no IPA clones) is called N times and returns
/// `3 * i`; `idle()` is never called; `getpid()` of libc is called N times. Prints `calls=N`.
const FUNCS_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline, noipa)) long work(long i) { __asm__ volatile("" ::: "memory"); return 3 * i; }
__attribute__((noinline, noipa)) long idle(long i) { __asm__ volatile("" ::: "memory"); return i; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000, s = 0;
    for (long i = 0; i < n; i++) { s += work(i); s += getpid() & 1; }
    if (argc > 2) s += idle(n);
    printf("calls=%ld sum=%ld\n", n, s);
    return 0;
}
"#;

fn funcs(dir: &Path) -> PathBuf {
    build_c(dir, "funcs", &[("funcs", FUNCS_C)], &[])
}

fn have_bpftrace() -> bool {
    Path::new("/usr/bin/bpftrace").is_file()
}

/// IDs of every BPF link and program on the system: none of ours may remain.
fn bpf_ids() -> (BTreeSet<u64>, BTreeSet<u64>) {
    let ids = |what: &str| -> BTreeSet<u64> {
        let out = Command::new("bpftool")
            .args(["-j", what, "show"])
            .output()
            .expect("bpftool (apt-get install bpftool)");
        assert!(out.status.success(), "bpftool {what} show failed");
        if out.stdout.iter().all(u8::is_ascii_whitespace) {
            return BTreeSet::new();
        }
        let v: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("bpftool json");
        v.iter().filter_map(|x| x["id"].as_u64()).collect()
    };
    (ids("link"), ids("prog"))
}

fn run<'a>(
    v: &'a serde_json::Value,
    tracer: &str,
    variant: Option<&str>,
    case: u64,
) -> &'a serde_json::Value {
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tracer"] == tracer && r["case"] == case && r["variant"].as_str() == variant)
        .unwrap_or_else(|| panic!("no {tracer} ({variant:?}) case {case} in result"))
}

#[test]
fn usdt_command_uprobe_and_uretprobe_rows_account_exactly() {
    let before = (tracefs_snapshot(), bpf_ids());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "--tracer",
        "ftrace,ebpf",
        "--hook",
        "uprobe,uretprobe",
        "--bpf-mode",
        "record,aggregate",
        "-n",
        &N.to_string(),
        "--warmup",
        "1000",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    let v = read_json(&json);
    assert_eq!(
        v["config"]["hooks"],
        serde_json::json!(["uprobe", "uretprobe"])
    );
    // The barrier baseline stays, next to each hook kind's call baseline.
    let barrier = run(&v, "none", None, 0);
    assert_eq!(barrier["hook_kind"], "usdt");
    for kind in ["uprobe", "uretprobe"] {
        let call = run(&v, "none", Some(kind), 0);
        assert_eq!(call["hook_kind"], kind);
        assert!(call["events"].is_null() && call["hook"].is_null());
        for (tracer, mode) in [
            ("ftrace", None),
            ("ebpf", Some("record")),
            ("ebpf", Some("aggregate")),
        ] {
            let variant = match mode {
                Some(m) => format!("{m}, {kind}"),
                None => kind.to_owned(),
            };
            let c1 = run(&v, tracer, Some(&variant), 1);
            assert_eq!(c1["hook_kind"], kind);
            assert_eq!(c1["hook"], format!("{kind}:rtrace_marker_hit"));
            let ev = &c1["events"];
            assert_eq!(
                ev["hits"],
                N + 1000,
                "{tracer} {variant}: warm-up calls count too"
            );
            assert_eq!(
                ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap(),
                N + 1000,
                "{tracer} {variant}: {ev}"
            );
            assert_eq!(ev["lost"], 0, "{tracer} {variant}: {ev}");
            let c2 = run(&v, tracer, Some(&variant), 2);
            assert_eq!(c2["hook"], format!("{kind}:rtrace_marker_idle"));
            assert_eq!(
                c2["events"]["hits"], 0,
                "{tracer} {variant}: the idle marker never runs"
            );
            assert_eq!(c2["events"]["recorded"], 0, "{tracer} {variant}");
            assert_eq!(c2["events"]["lost"], 0);
            assert!(run(&v, tracer, Some(&variant), 3)["events"].is_null());
        }
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ftrace (uretprobe)"), "{stdout}");
    assert!(stdout.contains("ebpf (record, uprobe)"), "{stdout}");
    assert!(stdout.contains("uretprobe/uprobe"), "{stdout}");
    assert!(stdout.contains("plain marker call"), "{stdout}");
    assert_eq!(
        (tracefs_snapshot(), bpf_ids()),
        before,
        "tracing state changed"
    );
}

#[test]
fn lttng_is_skipped_for_uprobe_hooks_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "--tracer",
        "lttng",
        "--hook",
        "uprobe",
        "-n",
        "1000",
        "--warmup",
        "0",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: lttng skipped for uprobe: LTTng traces its own tracepoint only"),
        "{stderr}"
    );
    let v = read_json(&json);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "barrier and call baselines only: {runs:?}");
}

/// `count` on the foreign program: exact counts of `work` entries and returns.
fn count_function(
    tracer: &str,
    mode: &str,
    probe: &str,
) -> (serde_json::Value, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let prog = funcs(dir.path());
    let json = dir.path().join("c.json");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = bench(&[
        "count",
        "--tracer",
        tracer,
        "--bpf-mode",
        mode,
        "--probe",
        probe,
        "--json",
        json.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        &WORK_CALLS.to_string(),
    ]);
    assert_ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("calls={WORK_CALLS}")),
        "the program ran"
    );
    (read_json(&json), out_dir, dir)
}

#[test]
fn count_uprobe_and_uretprobe_on_a_foreign_c_binary() {
    let before = (tracefs_snapshot(), bpf_ids());
    let mut tracers = vec![
        ("ftrace", "record"),
        ("ebpf", "record"),
        ("ebpf", "aggregate"),
    ];
    if have_bpftrace() {
        tracers.extend([("bpftrace", "record"), ("bpftrace", "aggregate")]);
    } else {
        eprintln!("bpftrace not installed: skipped its rows");
    }
    for (tracer, mode) in tracers {
        for kind in ["uprobe", "uretprobe"] {
            let probe = format!("{kind}:work");
            let (v, out_dir, _keep) = count_function(tracer, mode, &probe);
            assert_eq!(v["probe"], probe);
            assert_eq!(v["sites"], 1);
            assert_eq!(v["recorded"], WORK_CALLS, "{tracer} {mode} {probe}: {v}");
            assert_eq!(v["lost"], 0, "{tracer} {mode} {probe}: {v}");
            if (tracer, mode) == ("ebpf", "record") {
                // The recorded argument: `i` on entry, the return value `3 * i` on return.
                let text = std::fs::read_to_string(out_dir.join(rtrace_ebpf::EVENTS_FILE)).unwrap();
                let args: Vec<u64> = text
                    .lines()
                    .skip(1)
                    .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
                    .collect();
                let factor = if kind == "uretprobe" { 3 } else { 1 };
                let expected: Vec<u64> = (0..WORK_CALLS).map(|i| factor * i).collect();
                assert!(args == expected, "{probe}: arguments are not {factor} * i");
            }
        }
    }
    assert_eq!(
        (tracefs_snapshot(), bpf_ids()),
        before,
        "tracing state changed"
    );
}

#[test]
fn count_a_function_that_never_runs_records_zero() {
    for tracer in ["ftrace", "ebpf"] {
        let (v, _, _keep) = count_function(tracer, "record", "uretprobe:idle");
        assert_eq!(v["recorded"], 0, "{tracer}: {v}");
        assert_eq!(v["lost"], 0, "{tracer}: {v}");
    }
}

#[test]
fn count_a_libc_function_called_by_a_foreign_program() {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    assert!(libc.exists(), "glibc expected at {}", libc.display());
    let before = (tracefs_snapshot(), bpf_ids());
    let dir = tempfile::tempdir().unwrap();
    let prog = funcs(dir.path());
    for tracer in ["ftrace", "ebpf"] {
        for kind in ["uprobe", "uretprobe"] {
            let json = dir.path().join(format!("{tracer}-{kind}.json"));
            let out = bench(&[
                "count",
                "--tracer",
                tracer,
                "--probe",
                &format!("{kind}:getpid"),
                "--binary",
                libc.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
                "--",
                prog.to_str().unwrap(),
                &N.to_string(),
            ]);
            assert_ok(&out);
            let v = read_json(&json);
            // Only the traced process counts: every other caller of getpid is filtered out.
            assert_eq!(v["recorded"], N, "{tracer} {kind}: {v}");
            assert_eq!(v["lost"], 0, "{tracer} {kind}: {v}");
            assert!(v["binary"].as_str().unwrap().ends_with("libc.so.6"));
        }
    }
    assert_eq!(
        (tracefs_snapshot(), bpf_ids()),
        before,
        "tracing state changed"
    );
}

#[test]
fn unknown_function_fails_with_one_line_naming_the_listing() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let prog = funcs(dir.path());
    for tracer in ["ftrace", "ebpf"] {
        let out = bench(&[
            "count",
            "--tracer",
            tracer,
            "--probe",
            "uprobe:no_such_function",
            "--",
            prog.to_str().unwrap(),
            "10",
        ]);
        assert_rejected(&out, "--symbols");
    }
    let out = bench(&["count", "--probe", "uprobe:a-b", "--", "/bin/true"]);
    assert_rejected(&out, "uprobe:FUNCTION");
    assert_eq!(tracefs_snapshot(), before);
}

/// A long `usdt --hook uretprobe` run under ftrace, once its uretprobe event exists.
fn start_long_uretprobe_run() -> std::process::Child {
    let child = Command::new(bin("rtrace-bench"))
        .args([
            "usdt",
            "--rounds",
            "1",
            "-t",
            "ftrace",
            "--hook",
            "uretprobe",
            "-c",
            "1",
            "-n",
            "50000000",
            "--warmup",
            "0",
            "--out",
        ])
        .arg(std::env::temp_dir().join("rtrace-long-uretprobe"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_for(20, || tracefs_snapshot().contains("r:rtrace_")),
        "the run never created its uretprobe event"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    child
}

#[test]
fn interrupted_and_killed_uretprobe_runs_leave_nothing_behind() {
    let before = tracefs_snapshot();
    let child = start_long_uretprobe_run();
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(tracefs_snapshot(), before, "SIGINT left state behind");

    let mut child = start_long_uretprobe_run();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(tracefs_snapshot(), before, "SIGKILL cannot clean up");
    // The workload dies with its harness; then the next run removes the dead run's event.
    let gone = wait_for(5, || {
        let out = bench(&[
            "count",
            "--probe",
            "uretprobe:getpid",
            "--binary",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "--",
            "/bin/true",
        ]);
        assert_ok(&out);
        tracefs_snapshot() == before
    });
    assert!(gone, "the killed run's uretprobe event was not removed");
}
