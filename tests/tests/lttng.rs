//! LTTng backend against the real lttng tools and the `workload-lttng` binary. Needs root and
//! a built workload: `cargo build -p workload && cargo test -p rtrace-tests --test lttng --
//! --test-threads=1` (same profile for both).

use rtrace_lttng::{EventKind, LttngOptions, LttngTracer};
use rtrace_tracer::{EventStats, Hook, RecordMode, Target, Tracer};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

/// A `workload-lttng` process between its ready and done lines.
struct Workload {
    child: Child,
    stdout: BufReader<ChildStdout>,
    pid: u32,
}

impl Workload {
    /// Starts the micro loop (`body`: "event" or "barrier") and waits for its ready line.
    fn start(body: &str, iterations: u64, kind: EventKind) -> Workload {
        let config = serde_json::json!({
            "mode": "micro", "body": body, "iterations": iterations, "warmup": 1000,
            "cpu": 1, "priority": null, "timer_samples": 100,
        });
        let mut child = Command::new(rtrace_tests::bin("workload-lttng"))
            .arg(config.to_string())
            .env(EventKind::WORKLOAD_ENV, kind.name())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start workload-lttng");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let ready = read_json(&mut stdout);
        assert_eq!(ready["msg"], "ready", "{ready}");
        assert_eq!(ready["instrumentation"], "lttng-ust", "{ready}");
        let pid = ready["pid"].as_u64().unwrap() as u32;
        Workload { child, stdout, pid }
    }

    /// Says go, waits for the done line and the exit; returns the ground-truth hits.
    fn run(mut self) -> u64 {
        self.child.stdin.as_mut().unwrap().write_all(b"g").unwrap();
        let done = read_json(&mut self.stdout);
        assert_eq!(done["msg"], "done", "{done}");
        assert!(self.child.wait().unwrap().success());
        done["hits"].as_u64().unwrap()
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_json(r: &mut impl BufRead) -> serde_json::Value {
    let mut line = String::new();
    r.read_line(&mut line).expect("read workload line");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"))
}

fn tracer(subbuf_size: Option<u64>, num_subbuf: Option<u32>, kind: EventKind) -> LttngTracer {
    LttngTracer::new(LttngOptions {
        subbuf_size,
        num_subbuf,
        event_kind: kind,
    })
    .unwrap()
}

fn target(event: &str, pid: u32, out: &Path, record: RecordMode) -> Target {
    Target {
        hook: Hook::LttngUst {
            provider: "rtrace".into(),
            event: event.into(),
        },
        pid: Some(pid),
        follow_children: true,
        tree: false,
        skip_tid: None,
        out_dir: out.to_owned(),
        consumer_cpus: vec![0],
        buffer_size_kb: None,
        record,
        poll: None,
    }
}

/// Runs one workload under `tracer` on `event` and returns (hits, stats).
fn traced(
    t: &LttngTracer,
    body: &str,
    event: &str,
    iterations: u64,
    record: RecordMode,
) -> (u64, anyhow::Result<EventStats>) {
    let dir = tempfile::tempdir().unwrap();
    let w = Workload::start(body, iterations, t.options().event_kind);
    let a = t
        .attach(&target(event, w.pid, dir.path(), record))
        .unwrap_or_else(|e| panic!("attach: {e:#}"));
    let hits = w.run();
    (hits, a.finish())
}

/// Sessions this test process created that still exist.
fn our_sessions() -> Vec<String> {
    let out = Command::new("lttng").args(["list"]).output().unwrap();
    let prefix = format!("rtrace_{}_", rtrace_tracer::owner::run_id().unwrap());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|w| w.starts_with(&prefix))
        .map(str::to_owned)
        .collect()
}

#[test]
fn case1_default_channel_records_every_event() {
    let t = tracer(None, None, EventKind::Tracepoint);
    let (hits, stats) = traced(&t, "event", "event", 100_000, RecordMode::Stream);
    let stats = stats.unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(hits, 101_000);
    assert_eq!(
        stats,
        EventStats {
            recorded: hits,
            lost: 0,
            overwritten: 0,
            outside_tree: 0,
        }
    );
    assert!(our_sessions().is_empty(), "{:?}", our_sessions());
}

#[test]
fn tiny_channel_discards_and_accounts_for_every_event() {
    let t = tracer(Some(4096), Some(2), EventKind::Tracepoint);
    let (hits, stats) = traced(&t, "event", "event", 200_000, RecordMode::Stream);
    let stats = stats.unwrap_or_else(|e| panic!("{e:#}"));
    assert!(stats.lost > 0, "{stats:?}");
    assert!(stats.recorded > 0, "{stats:?}");
    assert_eq!(stats.recorded + stats.lost, hits, "{stats:?}");
}

#[test]
fn case2_idle_tracepoint_records_nothing() {
    let t = tracer(None, None, EventKind::Tracepoint);
    let (hits, stats) = traced(&t, "barrier", "idle", 100_000, RecordMode::Stream);
    assert_eq!(hits, 0);
    assert_eq!(stats.unwrap(), EventStats::default());
}

#[test]
fn tracef_kind_records_every_event() {
    let t = tracer(None, None, EventKind::Tracef);
    let (hits, stats) = traced(&t, "event", "event", 20_000, RecordMode::Stream);
    assert_eq!(
        stats.unwrap_or_else(|e| panic!("{e:#}")),
        EventStats {
            recorded: hits,
            lost: 0,
            overwritten: 0,
            outside_tree: 0,
        }
    );
}

#[test]
fn snapshot_mode_is_exact_or_refuses() {
    let t = tracer(None, None, EventKind::Tracepoint);
    let (hits, stats) = traced(&t, "event", "event", 50_000, RecordMode::Overwrite);
    assert_eq!(
        stats.unwrap_or_else(|e| panic!("{e:#}")),
        EventStats {
            recorded: hits,
            lost: 0,
            overwritten: 0,
            outside_tree: 0,
        }
    );
    // A wrapped buffer: the overwritten events are the missing packets' (exact, checked
    // against the workload's own count).
    let tiny = tracer(Some(4096), Some(2), EventKind::Tracepoint);
    let (hits, stats) = traced(&tiny, "event", "event", 50_000, RecordMode::Overwrite);
    let stats = stats.unwrap_or_else(|e| panic!("{e:#}"));
    assert!(stats.overwritten > 0, "{stats:?}");
    assert_eq!(stats.lost, stats.overwritten, "{stats:?}");
    assert_eq!(stats.recorded + stats.lost, hits, "{stats:?}");
    // tracef's events differ in size: what an overwritten packet held is unknown.
    let tracef = tracer(Some(4096), Some(2), EventKind::Tracef);
    let (_, stats) = traced(&tracef, "event", "event", 20_000, RecordMode::Overwrite);
    let err = format!(
        "{:#}",
        stats.expect_err("a wrapped tracef snapshot cannot be counted")
    );
    assert!(err.contains("variable size"), "{err}");
    assert!(our_sessions().is_empty(), "{:?}", our_sessions());
}

/// `usdt --record overwrite` on a buffer that wraps many times, through the binary: every run
/// of every round accounts exactly, recorded + overwritten = the workload's hits.
#[test]
fn usdt_overwrite_mode_counts_the_overwritten_events_exactly() {
    for kb in ["16", "64"] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let out = rtrace_tests::bench(&[
            "usdt",
            "-t",
            "lttng",
            "-c",
            "1",
            "--rounds",
            "3",
            "-n",
            "300000",
            "--record",
            "overwrite",
            "--buffer-size-kb",
            kb,
            "--json",
            json.to_str().unwrap(),
            "--out",
            dir.path().to_str().unwrap(),
        ]);
        rtrace_tests::assert_ok(&out);
        let v = rtrace_tests::read_json(&json);
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "one row");
        let ev = &runs[0]["events"];
        let n = |k: &str| ev[k].as_u64().unwrap_or_else(|| panic!("{k} in {ev}"));
        // 3 rounds of 100,000 timed iterations and 10,000 warm-up ones.
        assert_eq!(n("hits"), 330_000, "{ev}");
        assert!(
            n("overwritten") > 300_000,
            "{kb} KiB holds most events? {ev}"
        );
        assert_eq!(n("lost"), n("overwritten"), "{ev}");
        assert_eq!(n("recorded") + n("overwritten"), n("hits"), "{ev}");
        eprintln!("{kb} KiB: {ev}");
    }
    assert!(our_sessions().is_empty(), "{:?}", our_sessions());
}

#[test]
fn mismatched_event_kind_shows_in_the_accounting() {
    // The workload fires tracef, the tracer asks for rtrace:event: nothing would be recorded.
    let t = tracer(None, None, EventKind::Tracepoint);
    let w = Workload::start("event", 1000, EventKind::Tracef);
    let dir = tempfile::tempdir().unwrap();
    // Both kinds share the binary, so rtrace:event exists and attach succeeds, but it records
    // none of the tracef hits: the accounting must show it.
    let a = t
        .attach(&target("event", w.pid, dir.path(), RecordMode::Stream))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let hits = w.run();
    let stats = a.finish().unwrap();
    assert_ne!(stats.recorded + stats.lost, hits, "{stats:?}");
}

#[test]
fn drop_without_finish_destroys_the_session() {
    let t = tracer(None, None, EventKind::Tracepoint);
    let w = Workload::start("event", 1000, EventKind::Tracepoint);
    let dir = tempfile::tempdir().unwrap();
    let a = t
        .attach(&target("event", w.pid, dir.path(), RecordMode::Stream))
        .unwrap();
    assert_eq!(our_sessions().len(), 1);
    drop(a);
    assert!(our_sessions().is_empty(), "{:?}", our_sessions());
    drop(w);
}

#[test]
fn remove_stale_destroys_only_sessions_of_runs_that_are_gone() {
    use nix::fcntl::{Flock, FlockArg};
    let t = tracer(None, None, EventKind::Tracepoint);
    t.ensure_sessiond(&[0]).unwrap();
    let run_dir = rtrace_tracer::owner::run_dir();
    std::fs::create_dir_all(&run_dir).unwrap();
    // A run whose lock file is gone, one whose lock is free, one whose lock is held.
    let (absent, free, held) = ("dead0000dead0001", "dead0000dead0002", "dead0000dead0003");
    let lock = |tag: &str| run_dir.join(format!("{tag}.lock"));
    let _ = std::fs::remove_file(lock(absent));
    std::fs::write(lock(free), "").unwrap();
    std::fs::write(lock(held), "").unwrap();
    let holder = Flock::lock(
        std::fs::File::open(lock(held)).unwrap(),
        FlockArg::LockExclusive,
    )
    .map_err(|(_, e)| e)
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let name = |tag: &str| format!("rtrace_{tag}_7");
    for tag in [absent, free, held] {
        let out = format!("--output={}", dir.path().join(tag).display());
        let st = Command::new("lttng")
            .args(["create", &name(tag), &out])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
    let removed = rtrace_lttng::remove_stale().unwrap();
    // Lock files go last, once every backend has judged the tags (as `tracers::remove_stale`).
    rtrace_tracer::owner::remove_dead_locks();
    let list =
        String::from_utf8(Command::new("lttng").arg("list").output().unwrap().stdout).unwrap();
    let _ = Command::new("lttng")
        .args(["destroy", &name(held)])
        .stdout(Stdio::null())
        .status();
    drop(holder);
    let _ = std::fs::remove_file(lock(held));
    for gone in [absent, free] {
        assert!(
            removed.iter().any(|r| r.contains(&name(gone))),
            "{removed:?}"
        );
        assert!(!list.contains(&name(gone)), "{list}");
    }
    assert!(
        !lock(free).exists(),
        "a dead run's lock file goes once its objects are gone"
    );
    assert!(
        !removed.iter().any(|r| r.contains(&name(held))),
        "{removed:?}"
    );
    assert!(list.contains(&name(held)), "{list}");
}

#[test]
fn kernel_hook_is_checked() {
    let t = tracer(None, None, EventKind::Tracepoint);
    let hook = Hook::KernelTracepoint {
        category: "syscalls".into(),
        name: "sys_exit_clock_nanosleep".into(),
    };
    let modules = Path::new("/sys/module/lttng_tracer").exists()
        || Command::new("modinfo")
            .arg("lttng-tracer")
            .output()
            .is_ok_and(|o| o.status.success());
    match t.check(&hook) {
        Ok(()) => assert!(modules),
        Err(e) => {
            assert!(!modules, "{e:#}");
            assert!(format!("{e:#}").contains("lttng-modules"), "{e:#}");
        }
    }
    let other = Hook::KernelTracepoint {
        category: "sched".into(),
        name: "sched_switch".into(),
    };
    assert!(t.check(&other).is_err());
}

/// Case 3 measures LTTng as a C program pays for a disabled tracepoint: the loop tests the
/// tracepoint's `state` inline, as the `lttng_ust_tracepoint()` macro does, and the disabled
/// path between the two TSC reads holds no call. Checked on the machine code (objdump).
#[test]
fn disabled_tracepoint_is_tested_inline_in_the_timed_loop() {
    let windows = rtrace_tests::timed_windows("workload-lttng");
    for symbol in [
        "lttng_ust_tracepoint_rtrace___event+0x18>",
        "lttng_ust_tracepoint_lttng_ust_tracef___event+0x18>",
    ] {
        let loops: Vec<&Vec<String>> = windows
            .iter()
            .filter(|w| w.iter().any(|l| l.contains(symbol)))
            .collect();
        assert!(
            !loops.is_empty(),
            "no timed interval reads {symbol} (the tracepoint state) inline"
        );
        for w in loops {
            assert!(
                !w.iter().any(|l| l.contains("call")),
                "the timed interval reading {symbol} calls out on its disabled path:\n{}",
                w.join("\n")
            );
        }
    }
}

/// Whether an lttng-sessiond of this user answers.
fn sessiond_running() -> bool {
    Command::new("lttng")
        .args(["--no-sessiond", "list"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_daemon_we_started_outlives_its_starter_while_another_run_uses_it() {
    if sessiond_running() {
        println!("SKIPPED: a session daemon runs already (this test needs to start one)");
        return;
    }
    let starter = tracer(None, None, EventKind::Tracepoint);
    assert!(starter.ensure_sessiond(&[0]).unwrap().is_some(), "started");
    let user = tracer(None, None, EventKind::Tracepoint);
    let w = Workload::start("event", 1000, EventKind::Tracepoint);
    let dir = tempfile::tempdir().unwrap();
    let a = user
        .attach(&target("event", w.pid, dir.path(), RecordMode::Stream))
        .unwrap();
    drop(starter);
    assert!(sessiond_running(), "the starter stopped a daemon in use");
    let hits = w.run();
    let stats = a
        .finish()
        .expect("the session survives its daemon's starter");
    assert_eq!(stats.recorded + stats.lost, hits);
    drop(user);
    // Gone, not only silent: a session daemon stops answering before it and its consumer
    // daemons have exited, and the next test's machine snapshot would see them go.
    assert!(
        rtrace_tests::wait_for(15, || !sessiond_running()
            && rtrace_tests::MachineState::now().lttng_daemons.is_empty()),
        "the last user did not stop the daemon a run started"
    );
}

/// `usdt --steady-state`: the warm-up alone (no `--warmup`, 30 timed iterations) fills the
/// buffer before timing, so the run has overwritten events, all accounted.
#[test]
fn steady_state_warm_up_wraps_the_buffer_before_timing() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = rtrace_tests::bench(&[
        "usdt",
        "-t",
        "lttng",
        "-c",
        "1",
        "--rounds",
        "1",
        "-n",
        "30",
        "--warmup",
        "0",
        "--record",
        "overwrite",
        "--steady-state",
        "--buffer-size-kb",
        "64",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    rtrace_tests::assert_ok(&out);
    let v = rtrace_tests::read_json(&json);
    let steady = &v["config"]["steady_state"]["lttng (tracepoint)"];
    // 5 sub-buffers of 16 KiB (4 and the reader's) over 12 bytes.
    assert_eq!(steady["capacity_events"], 6826, "{steady}");
    assert_eq!(steady["warmup"], 6826, "{steady}");
    let ev = &v["runs"][0]["events"];
    let n = |k: &str| ev[k].as_u64().unwrap_or_else(|| panic!("{k} in {ev}"));
    assert_eq!(n("hits"), 6826 + 30, "{ev}");
    assert!(n("overwritten") > 0, "the warm-up did not wrap: {ev}");
    assert_eq!(n("recorded") + n("overwritten"), n("hits"), "{ev}");
    let refused = rtrace_tests::bench(&["usdt", "-t", "lttng", "--steady-state"]);
    rtrace_tests::assert_rejected(&refused, "pass --record overwrite");
}
