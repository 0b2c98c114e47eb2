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
    rejected(
        &["usdt", "--cpu", "4096", "-n", "10"],
        "pass one of them, e.g. --cpu",
    );
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

/// `rtrace-bench ARGS` killed after `secs` (a hang is a failure, not a stuck test), with its
/// address space limited to `max_bytes` (unbounded reads fail fast instead of eating the machine).
fn bench_bounded(args: &[&str], secs: u64, max_bytes: u64) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin("rtrace-bench"));
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::resource::setrlimit(
                nix::sys::resource::Resource::RLIMIT_AS,
                max_bytes,
                max_bytes,
            )
            .map_err(std::io::Error::from)
        });
    }
    let child = cmd.spawn().unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if rx
            .recv_timeout(std::time::Duration::from_secs(secs))
            .is_err()
        {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = tx.send(());
    out
}

#[test]
fn a_hash_in_a_binary_path_cannot_redirect_the_uprobe() {
    // tracefs ends a definition at `#`: `DIR/lnk:0x1000#/prog:0xOFF` would become a uprobe on
    // the symlink DIR/lnk (another program) at offset 0x1000.
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("lnk:0x1000#");
    std::fs::create_dir(&odd).unwrap();
    let prog = sdt_loop(&odd);
    std::os::unix::fs::symlink("/bin/true", dir.path().join("lnk")).unwrap();
    let p = prog.to_str().unwrap();
    rejected(
        &[
            "count",
            "-t",
            "ftrace",
            "-p",
            "rtest:hit",
            "--binary",
            p,
            "--",
            p,
            "10",
        ],
        "symlink",
    );
}

#[test]
fn a_non_ascii_binary_path_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("caf\u{e9}");
    std::fs::create_dir(&odd).unwrap();
    let prog = sdt_loop(&odd);
    let p = prog.to_str().unwrap();
    rejected(
        &["count", "-t", "ftrace", "-p", "rtest:hit", "--", p, "10"],
        "symlink",
    );
    rejected(
        &[
            "count",
            "-t",
            "ftrace",
            "-p",
            "uprobe:main",
            "--binary",
            p,
            "--",
            p,
            "10",
        ],
        "symlink",
    );
}

#[test]
fn devices_and_fifos_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let f = fifo.to_str().unwrap();
    for args in [
        vec!["probes", "/dev/zero"],
        vec!["probes", f],
        vec!["probes", "/dev/zero", "--symbols", "*"],
        vec!["count", "-p", "a:b", "--binary", "/dev/zero", "--", "true"],
        vec!["count", "-p", "uprobe:main", "--binary", f, "--", "true"],
        vec!["report", "/dev/zero"],
        vec!["report", f],
        vec!["compare", "/dev/zero", f],
    ] {
        let before = tracefs_snapshot();
        let out = bench_bounded(&args, 20, 2 << 30);
        assert_rejected(&out, "not a regular file");
        assert_eq!(tracefs_snapshot(), before, "{args:?} changed tracefs");
    }
}

#[test]
fn a_cpuset_without_room_for_the_harness_is_refused_with_the_fix() {
    // A cgroup v1 cpuset of one CPU: the run may use CPU 0 only (CPU 1 is online, not allowed).
    let root = std::path::Path::new("/sys/fs/cgroup/cpuset");
    if !root.join("cpuset.cpus").exists() {
        println!(
            "SKIPPED: no cgroup v1 cpuset hierarchy at {}",
            root.display()
        );
        return;
    }
    let set = root.join(format!("rtrace-test-{}", std::process::id()));
    std::fs::create_dir(&set).unwrap();
    std::fs::write(set.join("cpuset.cpus"), "0").unwrap();
    std::fs::write(set.join("cpuset.mems"), "0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "echo $$ > {}/tasks && exec {} usdt --rounds 1 -t none -n 1000 --warmup 0 --out {}",
        set.display(),
        bin("rtrace-bench").display(),
        dir.path().join("run").display()
    );
    let before = tracefs_snapshot();
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    let _ = std::fs::remove_dir(&set);
    assert_rejected(&out, "cpuset");
    assert!(!dir.path().join("run").exists());
    assert_eq!(tracefs_snapshot(), before);
}

#[test]
fn more_threads_than_cpus() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    let n = (cpus + 1).to_string();
    rejected(
        &["usdt", "--threads", &n, "-n", "1000"],
        "pass --threads 1..",
    );
    rejected(
        &["usdt", "--threads", "0", "-n", "1000"],
        "pass --threads 1..",
    );
    rejected(&["usdt", "--spacing-us", "0", "-n", "1000"], "--spacing-us");
}

#[test]
fn events_bad_input() {
    rejected(&["events", "--experiments", "19"], "--experiments");
    rejected(&["events", "--experiments", "7-4"], "--experiments");
    rejected(&["events", "--reads", "0"], "--reads");
    rejected(&["events", "--tracer", "none"], "name a tracer");
    rejected(&["events", "--cpu", "4096"], "pass one of them, e.g. --cpu");
    rejected(
        &["events", "--workload-dir", "/nonexistent", "-n", "10"],
        "cargo build --release",
    );
}
