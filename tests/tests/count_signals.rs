//! `count` and signals (issue #20): SIGINT/SIGTERM/SIGHUP stop its command and clean up at once,
//! and its exit status is the command's (128 + signal when the command was killed).

use nix::sys::signal::Signal;
use rtrace_tests::*;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";

fn count(tracer: &str, command: &[&str]) -> Command {
    let mut cmd = Command::new(bin("rtrace-bench"));
    cmd.args([
        "count",
        "-t",
        tracer,
        "-p",
        "uprobe:getpid",
        "--binary",
        LIBC,
        "--",
    ])
    .args(command);
    cmd
}

fn tracers() -> Vec<&'static str> {
    let mut t = vec!["ftrace", "ebpf"];
    if std::path::Path::new("/usr/bin/bpftrace").is_file() {
        t.push("bpftrace");
    }
    t
}

#[test]
fn count_exits_with_its_command_s_status() {
    for (script, code) in [
        ("exit 0", 0),
        ("exit 3", 3),
        ("exit 255", 255),
        ("kill -TERM $$", 128 + 15),
        ("kill -KILL $$", 128 + 9),
    ] {
        let out = count("ftrace", &["sh", "-c", script]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "`{script}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn count_under_a_signal_stops_its_command_and_cleans_up_within_2_s() {
    for tracer in tracers() {
        for sig in [Signal::SIGTERM, Signal::SIGHUP, Signal::SIGINT] {
            let before = MachineState::now();
            let sleepers = pids_named(&["sleep"]);
            let child = count(tracer, &["sleep", "60"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            assert!(
                wait_for(30, || pids_named(&["sleep"]).len() > sleepers.len()),
                "{tracer}: the command never started"
            );
            std::thread::sleep(Duration::from_millis(200));
            let sent = Instant::now();
            signal(&child, sig);
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                if rx.recv_timeout(Duration::from_secs(20)).is_err() {
                    let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
                }
            });
            let out = child.wait_with_output().unwrap();
            let took = sent.elapsed();
            let _ = tx.send(());
            println!("{tracer} {sig}: exit {:?} after {took:?}", out.status);
            assert!(
                out.status.signal().is_none(),
                "{tracer} {sig}: count did not exit by itself ({:?})",
                out.status
            );
            assert!(
                took < Duration::from_secs(2),
                "{tracer} {sig}: count took {took:?} to stop"
            );
            assert_eq!(
                out.status.code(),
                Some(128 + sig as i32),
                "{tracer} {sig}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                wait_for(2, || pids_named(&["sleep"]).is_subset(&sleepers)),
                "{tracer} {sig}: the command survived"
            );
            before
                .returns(10)
                .unwrap_or_else(|d| panic!("{tracer} {sig}: left behind: {d}"));
        }
    }
}
