//! Bad input: one clear error line naming the fix, a non-zero exit, nothing changed.

use rtrace_tests::*;
use std::process::Command;

fn rejected(args: &[&str], needle: &str) {
    let before = tracefs_snapshot();
    assert_rejected(&bench(args), needle);
    assert_eq!(tracefs_snapshot(), before, "bad input changed tracefs");
}

#[test]
fn missing_binary() {
    rejected(
        &["count", "-p", "a:b", "--", "/nonexistent/prog"],
        "check the path",
    );
    rejected(&["probes", "/nonexistent/prog"], "check the path");
}

#[test]
fn command_not_on_path() {
    rejected(
        &["count", "-p", "a:b", "--", "no-such-command-xyz"],
        "not found on PATH",
    );
}

#[test]
fn not_an_elf_file() {
    rejected(&["probes", "/etc/passwd"], "not an ELF file");
    rejected(
        &[
            "count",
            "-p",
            "a:b",
            "--binary",
            "/etc/passwd",
            "--",
            "true",
        ],
        "not an ELF file",
    );
}

#[test]
fn no_such_probe() {
    let dir = tempfile::tempdir().unwrap();
    let prog = sdt_loop(dir.path());
    rejected(
        &["count", "-p", "rtest:nope", "--", prog.to_str().unwrap()],
        "rtrace-bench probes",
    );
}

#[test]
fn malformed_probe_name() {
    rejected(&["count", "-p", "rtest/x:y", "--", "true"], "PROVIDER:NAME");
}

#[test]
fn cpu_out_of_range() {
    rejected(&["usdt", "--cpu", "4096", "-n", "10"], "--cpu 0..");
}

#[test]
fn unknown_tracer() {
    let out = bench(&["usdt", "--tracer", "dtrace"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("possible values"));
}

#[test]
fn missing_workload() {
    rejected(
        &["usdt", "-n", "10", "--workload-dir", "/nonexistent"],
        "cargo build --release",
    );
}

#[test]
fn not_root() {
    // Run as `nobody`: the binary must be reachable; copy it to a world-readable place.
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("rtrace-bench");
    std::fs::copy(bin("rtrace-bench"), &exe).unwrap();
    for p in [dir.path(), exe.as_path()] {
        let mut perm = std::fs::metadata(p).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(p, perm).unwrap();
    }
    let prog = sdt_loop(dir.path());
    let before = tracefs_snapshot();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["count", "-p", "rtest:hit", "--"])
        .arg(&prog)
        .output()
        .unwrap();
    assert_rejected(&out, "run rtrace-bench as root");
    assert_eq!(tracefs_snapshot(), before);
}
