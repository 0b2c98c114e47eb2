//! Real-world binaries, with the ground truth from the programs themselves, counted by every
//! tracer that can attach to them (ftrace, eBPF, bpftrace):
//!
//! - libstdc++'s unguarded `libstdcxx:throw` and `libstdcxx:catch`: a C++ program throwing and
//!   catching N exceptions fires each exactly N times (in a shared library whose path holds a
//!   `+`, which bpftrace's parser only takes quoted);
//! - python3's semaphore-guarded `python:gc__start`: N calls of `gc.collect()` fire it N times
//!   (plus a fixed number at interpreter exit, so the check is on the difference of two runs);
//! - a uprobe on libc's `getpid`, called N times.

use rtrace_tests::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const TRACERS: [&str; 3] = ["ftrace", "ebpf", "bpftrace"];
const N: u64 = 2000;

const THROWER_CC: &str = r#"
#include <cstdlib>
#include <stdexcept>
int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 0, caught = 0;
  for (long i = 0; i < n; i++) {
    try { throw std::runtime_error("x"); } catch (const std::exception&) { caught++; }
  }
  return caught == n ? 0 : 1;
}
"#;

const GETPID_C: &str = r#"
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 0, s = 0;
  for (long i = 0; i < n; i++) s += getpid() & 1;
  return s < 0;
}
"#;

fn thrower(dir: &Path) -> PathBuf {
    let src = dir.join("thrower.cc");
    std::fs::write(&src, THROWER_CC).unwrap();
    let out = dir.join("thrower");
    let st = Command::new("g++")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .expect("g++ (apt-get install g++)");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    out
}

/// The libstdc++ the dynamic loader gives `prog` (as `ldd` resolves it).
fn libstdcxx_of(prog: &Path) -> PathBuf {
    let out = Command::new("ldd").arg(prog).output().expect("ldd");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("libstdc++"))
        .and_then(|l| l.split("=>").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .map(PathBuf::from)
        .expect("the thrower links libstdc++")
}

/// `count` with `args`, its JSON result.
fn count(dir: &Path, tag: &str, args: &[&str]) -> serde_json::Value {
    let json = dir.join(format!("{tag}.json"));
    let mut all = vec!["count", "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = bench(&all);
    assert_ok(&out);
    read_json(&json)
}

#[test]
fn libstdcxx_throw_and_catch_for_every_tracer() {
    let before = MachineState::now();
    let dir = tempfile::tempdir().unwrap();
    let prog = thrower(dir.path());
    let lib = libstdcxx_of(&prog);
    let n = N.to_string();
    for tracer in TRACERS {
        for probe in ["libstdcxx:throw", "libstdcxx:catch"] {
            let v = count(
                dir.path(),
                &format!("{tracer}-{}", &probe[10..]),
                &[
                    "-t",
                    tracer,
                    "-p",
                    probe,
                    "--binary",
                    lib.to_str().unwrap(),
                    "--expect",
                    &n,
                    "--",
                    prog.to_str().unwrap(),
                    &n,
                ],
            );
            assert_eq!(v["events"], N, "{tracer} {probe}: {v}");
            assert_eq!(v["expected"], N, "{tracer} {probe}: {v}");
            assert_eq!(
                v["recorded"], N,
                "{tracer} {probe}: nothing lost at this rate: {v}"
            );
            assert_eq!(v["exit_code"], 0, "{tracer} {probe}: {v}");
        }
    }
    before.returns(10).expect("the machine is left as it was");
}

#[test]
fn a_wrong_expectation_is_an_error_naming_both_counts() {
    let dir = tempfile::tempdir().unwrap();
    let prog = thrower(dir.path());
    let lib = libstdcxx_of(&prog);
    let out = bench(&[
        "count",
        "-t",
        "ebpf",
        "-p",
        "libstdcxx:throw",
        "--binary",
        lib.to_str().unwrap(),
        "--expect",
        "11",
        "--",
        prog.to_str().unwrap(),
        "10",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("saw 10 events") && stderr.contains("--expect says 11"),
        "{stderr}"
    );
}

/// `count` of python's `gc__start` in `py` under `tracer` for `command`: its events (none lost).
fn gc_starts(dir: &Path, tag: &str, tracer: &str, py: &str, command: &[&str]) -> u64 {
    let mut args = vec!["-t", tracer, "-p", "python:gc__start", "--binary", py, "--"];
    args.extend_from_slice(command);
    let v = count(dir, tag, &args);
    assert_eq!(v["lost"], 0, "{tracer}: {v}");
    v["events"].as_u64().unwrap()
}

/// Debian's python3 (the real ELF, not a version-manager shim).
fn python() -> Option<PathBuf> {
    let p = std::fs::canonicalize("/usr/bin/python3").ok()?;
    let probes = bench(&["probes", p.to_str()?]);
    String::from_utf8_lossy(&probes.stdout)
        .contains("gc__start")
        .then_some(p)
}

#[test]
fn python_gc_start_with_its_semaphore_for_every_tracer() {
    let Some(py) = python() else {
        println!("SKIPPED: /usr/bin/python3 has no python:gc__start probe");
        return;
    };
    let before = MachineState::now();
    let dir = tempfile::tempdir().unwrap();
    let script = "import gc, sys\ngc.disable()\nfor _ in range(int(sys.argv[1])): gc.collect()\n";
    let py = py.to_str().unwrap();
    for tracer in TRACERS {
        let events = |n: u64| {
            let n = n.to_string();
            gc_starts(
                dir.path(),
                &format!("{tracer}-{n}"),
                tracer,
                py,
                &[py, "-c", script, &n],
            )
        };
        let (few, many) = (events(100), events(100 + N));
        assert_eq!(many - few, N, "{tracer}: {few} then {many} events");
        assert!(few >= 100, "{tracer}: {few} events for 100 collections");
    }
    before.returns(10).expect("the machine is left as it was");
}

#[test]
fn libc_getpid_uprobe_for_every_tracer() {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let before = MachineState::now();
    let dir = tempfile::tempdir().unwrap();
    let prog = build_c(dir.path(), "getpid_loop", &[("getpid_loop", GETPID_C)], &[]);
    let n = N.to_string();
    for tracer in TRACERS {
        let v = count(
            dir.path(),
            &format!("{tracer}-getpid"),
            &[
                "-t",
                tracer,
                "-p",
                "uprobe:getpid",
                "--binary",
                libc.to_str().unwrap(),
                "--expect",
                &n,
                "--",
                prog.to_str().unwrap(),
                &n,
            ],
        );
        assert_eq!(v["events"], N, "{tracer}: {v}");
    }
    before.returns(10).expect("the machine is left as it was");
}

/// Debian's python3 forking workers after the attach, started as `nobody` through `runuser`:
/// each worker's `gc.collect()` calls fire the semaphore-guarded `python:gc__start` (the
/// semaphore raised in processes that did not exist when the tracer attached).
#[test]
fn python_workers_forked_through_runuser_for_every_tracer() {
    let Some(py) = python() else {
        println!("SKIPPED: /usr/bin/python3 has no python:gc__start probe");
        return;
    };
    let before = MachineState::now();
    let dir = tempfile::tempdir().unwrap();
    let script = "import gc, os, sys\n\
        n = int(sys.argv[1])\n\
        kids = []\n\
        for _ in range(3):\n    \
            pid = os.fork()\n    \
            if pid == 0:\n        \
                gc.disable()\n        \
                for _ in range(n): gc.collect()\n        \
                os._exit(0)\n    \
            kids.append(pid)\n\
        for k in kids: os.waitpid(k, 0)\n";
    let py = py.to_str().unwrap();
    for tracer in TRACERS {
        let events = |n: u64| {
            let n = n.to_string();
            let as_nobody = ["runuser", "-u", "nobody", "--", py, "-c", script, &n];
            gc_starts(
                dir.path(),
                &format!("{tracer}-fork-{n}"),
                tracer,
                py,
                &as_nobody,
            )
        };
        let (few, many) = (events(100), events(100 + N));
        println!("{tracer}: 3 forked workers as nobody: {few} events for 100 collections each, {many} for {}", 100 + N);
        assert_eq!(many - few, 3 * N, "{tracer}: {few} then {many} events");
        assert!(few >= 300, "{tracer}: {few} events for 3 x 100 collections");
    }
    before.returns(10).expect("the machine is left as it was");
}
