//! Results survive a crash and output paths are checked up front (issue #19); no two runs share
//! a run directory or a measured CPU (issue #20).

use rtrace_tests::*;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};

/// A `usdt` run without tracer: case 0 of each hook kind in `hooks`.
fn untraced(hooks: &str, out: &Path) -> Command {
    let mut cmd = Command::new(bin("rtrace-bench"));
    cmd.args([
        "usdt", "--rounds", "1", "-t", "none", "-c", "0", "-n", "20000", "--warmup", "0",
    ])
    .args(["--hook", hooks, "--out"])
    .arg(out)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    cmd
}

fn json_size(hooks: &str, dir: &Path) -> u64 {
    let out = dir.join(hooks.replace(',', "-"));
    assert_ok(&untraced(hooks, &out).output().unwrap());
    std::fs::metadata(out.join("usdt.json")).unwrap().len()
}

#[test]
fn a_run_killed_while_writing_its_json_leaves_the_runs_done() {
    let dir = tempfile::tempdir().unwrap();
    let one = json_size("usdt", dir.path());
    let two = json_size("usdt,uprobe", dir.path());
    assert!(two > one + 1000, "one run: {one} B, two runs: {two} B");
    // A file size limit between the two: the write of the second run's result gets SIGXFSZ
    // (the kernel kills a process that writes past RLIMIT_FSIZE) in the middle of the file.
    let limit = (one + two) / 2;
    let out = dir.path().join("killed");
    let mut cmd = untraced("usdt,uprobe", &out);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            use nix::sys::resource::{setrlimit, Resource};
            setrlimit(Resource::RLIMIT_FSIZE, limit, limit)?;
            setrlimit(Resource::RLIMIT_CORE, 0, 0)?;
            Ok(())
        });
    }
    let run = cmd.output().unwrap();
    assert_eq!(
        run.status.signal(),
        Some(nix::sys::signal::Signal::SIGXFSZ as i32),
        "expected death by SIGXFSZ at {limit} B (one run: {one} B, two: {two} B): {:?} {}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let result = read_json(&out.join("usdt.json"));
    let runs = result["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "the first run's result survives: {result}");
    assert_eq!(runs[0]["case"], 0);
    // And the tool loads it.
    let report = bench(&[
        "report",
        out.join("usdt.json").to_str().unwrap(),
        "--out",
        dir.path().join("report").to_str().unwrap(),
    ]);
    assert_ok(&report);
}

#[test]
fn json_into_a_missing_directory_fails_before_anything_changes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let before = MachineState::now();
    let o = out.to_str().unwrap();
    for args in [
        vec![
            "usdt",
            "-t",
            "ftrace",
            "-n",
            "1000",
            "--out",
            o,
            "--json",
            "/nonexistent/x.json",
        ],
        vec![
            "cyclictest-sweep",
            "--configs",
            "none",
            "-l",
            "100",
            "--out",
            o,
            "--json",
            "/nonexistent/x.json",
        ],
        vec![
            "count",
            "-p",
            "uprobe:getpid",
            "--binary",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "--json",
            "/nonexistent/x.json",
            "--",
            "true",
        ],
        vec![
            "count",
            "-p",
            "uprobe:getpid",
            "--binary",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "--out",
            "/etc/passwd",
            "--",
            "true",
        ],
    ] {
        let run = bench(&args);
        assert_rejected(
            &run,
            if args.contains(&"/etc/passwd") {
                "--out"
            } else {
                "--json"
            },
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!stderr.contains("case 0"), "{stderr}");
        assert!(!out.exists(), "{args:?} created its output directory");
        assert_eq!(MachineState::now(), before, "{args:?} changed the machine");
    }
    for (args, needle) in [
        (
            vec!["usdt", "-t", "none", "-n", "1000", "--out", "/etc/passwd"],
            "--out",
        ),
        (
            vec![
                "usdt", "-t", "none", "-n", "1000", "--out", o, "--json", "/etc",
            ],
            "--json",
        ),
    ] {
        assert_rejected(&bench(&args), needle);
        assert!(!out.exists());
    }
}

#[test]
fn a_second_run_on_a_busy_cpu_is_refused_and_shares_no_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let first = Command::new(bin("rtrace-bench"))
        .args([
            "usdt",
            "--rounds",
            "1",
            "-t",
            "none",
            "-c",
            "0",
            "-n",
            "200000000",
            "--warmup",
            "0",
        ])
        .current_dir(cwd.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let results = cwd.path().join("results");
    let dirs = || -> Vec<String> {
        std::fs::read_dir(&results)
            .map(|d| {
                d.filter_map(|e| Some(e.ok()?.file_name().to_str()?.to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        wait_for(10, || dirs().len() == 1),
        "the first run made no directory"
    );
    let second = Command::new(bin("rtrace-bench"))
        .args([
            "usdt", "--rounds", "1", "-t", "none", "-c", "0", "-n", "1000", "--warmup", "0",
        ])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    let made = dirs();
    signal(&first, nix::sys::signal::Signal::SIGINT);
    let _ = first.wait_with_output();
    assert_rejected(&second, "another live run");
    assert_eq!(made.len(), 1, "the refused run made a directory: {made:?}");
}
