//! Root integration tests of the ftrace backend through the real binary: exact accounting, the
//! tracefs state before and after every kind of exit, foreign binaries, bad input.

use rtrace_tests::*;
use std::process::{Command, Stdio};
use std::time::Duration;

fn case<'a>(v: &'a serde_json::Value, tracer: &str, case: u64) -> &'a serde_json::Value {
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tracer"] == tracer && r["case"] == case)
        .unwrap_or_else(|| panic!("no {tracer} case {case} in result"))
}

fn usdt_all_cases(record: &str) {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "--tracer",
        "ftrace",
        "-n",
        "100000",
        "--warmup",
        "1000",
        "--record",
        record,
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    let v = read_json(&json);
    for c in 0..4 {
        let r = case(&v, if c == 0 { "none" } else { "ftrace" }, c);
        assert_eq!(r["summary"]["count"], 100000, "case {c} samples");
        for k in [
            "min_ns",
            "max_ns",
            "mean_ns",
            "stddev_ns",
            "p50_ns",
            "p99_ns",
            "p999_ns",
        ] {
            assert!(r["summary"][k].as_f64().unwrap() >= 0.0, "{k}");
        }
    }
    let ev = &case(&v, "ftrace", 1)["events"];
    assert_eq!(ev["hits"], 101000, "warm-up hits count too");
    assert_eq!(
        ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap(),
        101000
    );
    assert!(
        ev["recorded"].as_u64().unwrap() > 0,
        "ftrace recorded nothing"
    );
    let dormant = &case(&v, "ftrace", 2)["events"];
    assert_eq!(dormant["recorded"], 0);
    assert!(case(&v, "ftrace", 3)["events"].is_null());
    assert_eq!(tracefs_snapshot(), before, "tracefs state changed");
}

#[test]
fn usdt_every_case_overwrite_mode_accounts_exactly() {
    usdt_all_cases("overwrite");
}

#[test]
fn usdt_every_case_stream_mode_keeps_every_event() {
    usdt_all_cases("stream");
}

/// A flight recorder too small for the run overwrites events after writing them: they are
/// counted as lost and as overwritten (not dropped), and the run's cost stays in the ratios.
#[test]
fn overwritten_events_are_paid_for_and_the_run_counts() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    assert_ok(&bench(&[
        "usdt",
        "--rounds",
        "1",
        "-t",
        "ftrace",
        "-c",
        "0,1",
        "-n",
        "200000",
        "--record",
        "overwrite",
        "--buffer-size-kb",
        "64",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]));
    let v = read_json(&json);
    let ev = &case(&v, "ftrace", 1)["events"];
    let (lost, overwritten) = (ev["lost"].as_u64().unwrap(), ev["overwritten"].as_u64());
    assert!(lost > 0, "a 64 KiB buffer holds all 200,000 events? {ev}");
    assert_eq!(
        overwritten,
        Some(lost),
        "every lost event was overwritten: {ev}"
    );
    assert_eq!(
        ev["recorded"].as_u64().unwrap() + lost,
        ev["hits"].as_u64().unwrap()
    );
    let report = std::fs::read_to_string(dir.path().join("report.txt")).unwrap();
    assert!(!report.contains("[lossy]"), "{report}");
    assert!(
        report.contains("were overwritten by later ones"),
        "{report}"
    );
}

/// One ftrace case-1 round of 200,000 iterations in stream mode with `extra` options; its
/// result and output directory.
fn stream_case1(extra: &[&str]) -> (serde_json::Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec![
        "usdt", "--rounds", "1", "-t", "ftrace", "-c", "1", "-n", "200000", "--record", "stream",
    ];
    args.extend_from_slice(extra);
    args.extend([
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&bench(&args));
    (read_json(&json), dir)
}

#[test]
fn stream_mode_loses_nothing_with_a_consumer() {
    let (v, dir) = stream_case1(&["--keep-traces", "all"]);
    let ev = &case(&v, "ftrace", 1)["events"];
    assert_eq!(
        ev["recorded"], ev["hits"],
        "stream mode dropped events: {ev}"
    );
    let raw: u64 = std::fs::read_dir(dir.path().join("ftrace-case1"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().metadata().unwrap().len())
        .sum();
    assert!(raw > 200000 * 8, "trace data files hold only {raw} bytes");
    let hits = ev["hits"].as_u64().unwrap();
    assert!(
        raw < hits * 64,
        "{raw} bytes for {hits} events: the consumer reads pages before they are full"
    );
    let data = &case(&v, "ftrace", 1)["trace_data"];
    assert_eq!(data["kept"], 1, "{data}");
    assert_eq!(
        data["bytes"], raw,
        "the size in the result is what is on disk"
    );

    // By default the data goes once its events are counted; its size stays in the result.
    let (v, dir) = stream_case1(&[]);
    let data = &case(&v, "ftrace", 1)["trace_data"];
    assert_eq!(data["kept"], 0, "{data}");
    assert!(data["bytes"].as_u64().unwrap() > 200000 * 8, "{data}");
    assert!(!dir.path().join("ftrace-case1").exists());
    assert_eq!(v["config"]["keep_traces"], "none");
}

#[test]
fn semaphore_probe_of_a_foreign_c_binary_is_counted_exactly() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let prog = sdt_loop(dir.path());
    let json = dir.path().join("c.json");
    let out = bench(&[
        "count",
        "--tracer",
        "ftrace",
        "--probe",
        "rtest:sem",
        "--buffer-size-kb",
        "8192",
        "--json",
        json.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "100000",
    ]);
    assert_ok(&out);
    let (hits, sem_hits) = parse_sdt_loop_output(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(hits, 100000);
    assert_eq!(sem_hits, 100000, "the kernel did not raise the semaphore");
    let v = read_json(&json);
    assert_eq!(
        v["recorded"].as_u64().unwrap() + v["lost"].as_u64().unwrap(),
        sem_hits
    );
    assert_eq!(v["lost"], 0);
    assert_eq!(tracefs_snapshot(), before);
}

#[test]
fn a_probe_that_never_fires_counts_zero_and_untraced_semaphore_stays_down() {
    let dir = tempfile::tempdir().unwrap();
    let prog = sdt_loop(dir.path());
    let json = dir.path().join("c.json");
    let out = bench(&[
        "count",
        "-p",
        "rtest:never",
        "--json",
        json.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "1000",
    ]);
    assert_ok(&out);
    assert_eq!(read_json(&json)["recorded"], 0);
    let (_, sem_hits) = parse_sdt_loop_output(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        sem_hits, 0,
        "semaphore raised without a tracer on rtest:sem"
    );
}

#[test]
fn two_runs_at_once_do_not_collide() {
    let dir = tempfile::tempdir().unwrap();
    let prog = sdt_loop(dir.path());
    let spawn = |n: &str, json: &str| {
        Command::new(bin("rtrace-bench"))
            .args([
                "count",
                "-p",
                "rtest:hit",
                "--buffer-size-kb",
                "8192",
                "--json",
                json,
                "--",
            ])
            .arg(&prog)
            .arg(n)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let ja = dir.path().join("a.json");
    let jb = dir.path().join("b.json");
    let a = spawn("30000", ja.to_str().unwrap());
    let b = spawn("50000", jb.to_str().unwrap());
    assert_ok(&a.wait_with_output().unwrap());
    assert_ok(&b.wait_with_output().unwrap());
    assert_eq!(read_json(&ja)["recorded"], 30000);
    assert_eq!(read_json(&jb)["recorded"], 50000);
}

/// Starts a long case-1 run and waits until its tracefs instance exists.
fn start_long_run() -> std::process::Child {
    let before = our_instances();
    let child = Command::new(bin("rtrace-bench"))
        .args([
            "usdt", "--rounds", "1", "-t", "ftrace", "-c", "1", "-n", "50000000", "--warmup", "0",
        ])
        .args([
            "--out",
            std::env::temp_dir().join("rtrace-long").to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_for(20, || our_instances().len() > before.len()),
        "the run never created its instance"
    );
    std::thread::sleep(Duration::from_millis(300));
    child
}

fn workload_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "workload")
        })
        .collect()
}

#[test]
fn sigint_mid_run_leaves_nothing_behind() {
    let before = tracefs_snapshot();
    let child = start_long_run();
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tracefs_snapshot(), before);
    assert!(
        wait_for(5, || workload_pids().is_empty()),
        "workload survived"
    );
}

#[test]
fn sigterm_mid_run_leaves_nothing_behind() {
    let before = tracefs_snapshot();
    let child = start_long_run();
    signal(&child, nix::sys::signal::Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert_eq!(tracefs_snapshot(), before);
}

#[test]
fn a_crashed_workload_fails_the_run_and_leaves_nothing_behind() {
    let before = tracefs_snapshot();
    let child = start_long_run();
    for pid in workload_pids() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGABRT,
        );
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("workload failed"), "{stderr}");
    assert_eq!(tracefs_snapshot(), before);
}

#[test]
fn sigkill_leaves_stale_state_that_the_next_run_removes() {
    let before = tracefs_snapshot();
    let mut child = start_long_run();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_for(5, || workload_pids().is_empty()),
        "workload outlived its harness"
    );
    assert_ne!(
        tracefs_snapshot(),
        before,
        "SIGKILL cannot clean up; state expected"
    );
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "-t",
        "ftrace",
        "-c",
        "2",
        "-n",
        "1000",
        "--warmup",
        "0",
        "--out",
        std::env::temp_dir()
            .join("rtrace-after-kill")
            .to_str()
            .unwrap(),
    ]);
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("removed stale"));
    assert_eq!(tracefs_snapshot(), before);
}

#[test]
fn stale_cleanup_spares_live_runs() {
    let dir = tempfile::tempdir().unwrap();
    let prog = sdt_loop(dir.path());
    let live = start_long_run();
    let live_instances = our_instances();
    let out = bench(&[
        "count",
        "-p",
        "rtest:hit",
        "--",
        prog.to_str().unwrap(),
        "10",
    ]);
    assert_ok(&out);
    for i in &live_instances {
        assert!(
            our_instances().contains(i),
            "live run's instance {i} was removed"
        );
    }
    signal(&live, nix::sys::signal::Signal::SIGINT);
    live.wait_with_output().unwrap();
}

#[test]
fn tracefs_is_mounted_when_absent() {
    // In a private mount namespace: unmount tracefs, then a run must mount it and work.
    let dir = tempfile::tempdir().unwrap();
    let prog = sdt_loop(dir.path());
    let script = format!(
        "umount /sys/kernel/tracing && ! test -e /sys/kernel/tracing/uprobe_events && {} count -p rtest:hit -- {} 100",
        bin("rtrace-bench").display(),
        prog.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("recorded 100 lost 0"));
}

#[test]
fn workload_memory_does_not_grow_with_iterations() {
    let rss = |n: &str| {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        assert_ok(&bench(&[
            "usdt",
            "--rounds",
            "1",
            "-t",
            "none",
            "-n",
            n,
            "--warmup",
            "0",
            "--json",
            json.to_str().unwrap(),
            "--out",
            dir.path().to_str().unwrap(),
        ]));
        read_json(&json)["runs"][0]["workload_max_rss_kb"]
            .as_f64()
            .unwrap()
    };
    let small = rss("100000");
    let large = rss("10000000");
    assert!(
        large <= small * 1.10,
        "RSS grew from {small} KiB to {large} KiB"
    );
}
