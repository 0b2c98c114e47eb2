//! Root integration tests of `rtrace-bench cyclictest-sweep` and `compare`: short sweeps on the
//! real kernel, every configuration available here, accounting checked, nothing left behind
//! (also after Ctrl-C in the middle of a run).
//!
//! Run as root: `cargo build --release --workspace --bins` then
//! `cargo test --release -p rtrace-tests --test sweep -- --test-threads=1`.

use rtrace_tests::{bin, keep_result, run_tag_of, tracefs_snapshot};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Short runs: 2,000 wake-ups at 200 µs (the VM cannot keep 30 µs).
const SHORT: [&str; 4] = ["--loops", "1000", "--interval-us", "200"];

/// A sweep writing to `out`; 2 rounds unless `args` say otherwise (the default, 20, is the main
/// job's precision, not a test's).
fn sweep_cmd(out: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin("rtrace-bench"));
    cmd.arg("cyclictest-sweep").arg("--out").arg(out);
    if !args.contains(&"--rounds") {
        cmd.args(["--rounds", "2"]);
    }
    cmd.args(args);
    cmd
}

/// Runs to the end; its output.
fn run(cmd: &mut Command) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rtrace-bench");
    let out = child.wait_with_output().expect("wait for rtrace-bench");
    eprintln!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn result(out: &Path) -> Value {
    let path = out.join("cyclictest-sweep.json");
    let text = std::fs::read_to_string(&path).expect("the sweep wrote its JSON");
    serde_json::from_str(&text).expect("valid JSON")
}

fn runs<'a>(r: &'a Value, config: &str, source: &str) -> Vec<&'a Value> {
    r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["config"] == config && x["source"] == source)
        .collect()
}

/// `config` as a whole (not one of its sources) is in the list `key`.
fn listed(r: &Value, key: &str, config: &str) -> bool {
    r[key]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u["config"] == config && u["source"].is_null())
}

fn have_cyclictest() -> bool {
    Command::new("cyclictest")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Nothing of the run tagged `tag` in tracefs: no `rtrace_<tag>_*` instance or uprobe group.
fn assert_clean(tag: &str) {
    let after = tracefs_snapshot();
    assert!(
        !after.contains(&format!("rtrace_{tag}_")),
        "tracing state of run {tag} left behind:\n{after}"
    );
}

#[test]
fn short_sweep_of_every_available_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("copy.json");
    let before = tracefs_snapshot();
    let out = run(sweep_cmd(dir.path(), &SHORT).arg("--json").arg(&json));
    assert!(out.status.success(), "sweep failed: {:?}", out.status);
    assert_eq!(
        tracefs_snapshot(),
        before,
        "the sweep left tracing state behind"
    );

    keep_result(&dir.path().join("cyclictest-sweep.json"));
    let r = result(dir.path());
    assert_eq!(
        r,
        serde_json::from_slice::<Value>(&std::fs::read(&json).unwrap()).unwrap()
    );
    assert_eq!(r["experiment"], "cyclictest-sweep");
    assert_eq!(r["config"]["loops"], 1000);
    assert_eq!(
        r["config"]["probe_at"], "alternate",
        "paired within each run by default"
    );
    // Trace data goes once its events are counted; its size stays in the result.
    assert_eq!(r["config"]["keep_traces"], "none");
    for run in r["runs"].as_array().unwrap() {
        if run["accounting"].is_null() {
            continue;
        }
        assert_eq!(run["trace_data"]["kept"], 0, "{run}");
        assert_eq!(run["trace_data"]["rounds"], 2, "{run}");
        assert!(run["trace_data"]["bytes"].as_u64().unwrap() > 0, "{run}");
        for round in 1..=2 {
            let dir = dir.path().join(format!(
                "{}-{}-round{round}",
                run["config"].as_str().unwrap(),
                run["source"].as_str().unwrap()
            ));
            assert!(!dir.is_dir(), "{} is still there", dir.display());
        }
    }
    assert!(!r["environment"]["preemption"].as_str().unwrap().is_empty());
    assert!(
        r["failed"].as_array().unwrap().is_empty(),
        "{}",
        r["failed"]
    );

    // Every configuration ran or is reported unavailable with a reason: none is dropped.
    for c in r["config"]["configs"].as_array().unwrap() {
        let c = c.as_str().unwrap();
        let ran = runs(&r, c, "builtin").len() == 1;
        assert!(
            ran ^ listed(&r, "unavailable", c),
            "{c}: ran {ran}, unavailable {}",
            listed(&r, "unavailable", c)
        );
    }
    assert_eq!(runs(&r, "none", "builtin").len(), 1);
    assert_eq!(
        runs(&r, "usdt-ftrace", "builtin").len(),
        1,
        "ftrace works on this host"
    );
    assert_eq!(r["config"]["rounds"], 2, "two rounds by default");
    // perf (Gebai's kernel and user tracer) runs where it is installed, in both sources; its
    // accounting is checked with every configuration's below.
    if Path::new(rtrace_perf::PERF).is_file() {
        for c in ["usdt-perf", "kernel-perf"] {
            assert_eq!(runs(&r, c, "builtin").len(), 1, "{c}: {}", r["unavailable"]);
            if have_cyclictest() {
                assert_eq!(runs(&r, c, "cyclictest").len(), 1, "{c}");
            }
        }
        if let Some(x) = runs(&r, "kernel-perf", "cyclictest").first() {
            assert_eq!(x["hook"], "syscalls:sys_exit_clock_nanosleep");
        }
    }
    if have_cyclictest() {
        let none = runs(&r, "none", "cyclictest");
        assert_eq!(none.len(), 1, "cyclictest cross-check of none");
        // `none` runs before every cross-checked configuration and after the last, 1000 loops
        // each time over the rounds.
        let checked = r["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["source"] == "cyclictest" && x["config"] != "none")
            .count() as u64;
        assert_eq!(none[0]["loops"], 1000 * (checked + 1));
        let beside = none[0]["rounds"].as_array().unwrap();
        assert_eq!(beside.len() as u64, 2 * (checked + 1), "{beside:?}");
        // Every configuration that ran has its real-cyclictest cross-check, user space
        // included: a uretprobe on libc's clock_nanosleep (LTTng: the preloaded wrapper).
        // A uprobe on its entry would fire before the sleep: uprobe-* have none, with the reason.
        for x in r["runs"].as_array().unwrap() {
            let c = x["config"].as_str().unwrap();
            let expected = usize::from(!c.starts_with("uprobe-"));
            assert_eq!(
                runs(&r, c, "cyclictest").len(),
                expected,
                "{c}: cyclictest runs"
            );
        }
        let names_window = r["unavailable"].as_array().unwrap().iter().any(|u| {
            u["config"] == "uprobe-ftrace"
                && u["source"] == "cyclictest"
                && u["reason"]
                    .as_str()
                    .unwrap()
                    .contains("outside the measured window")
        });
        assert!(names_window, "{}", r["unavailable"]);
        for c in [
            "usdt-ftrace",
            "usdt-ebpf",
            "usdt-bpftrace",
            "uretprobe-ftrace",
            "uretprobe-ebpf",
            "uretprobe-bpftrace",
            "usdt-perf",
        ] {
            if let Some(x) = runs(&r, c, "cyclictest").first() {
                assert_eq!(x["hook"], "uretprobe:clock_nanosleep", "{c}");
            }
        }
        if let Some(x) = runs(&r, "usdt-lttng", "cyclictest").first() {
            assert_eq!(x["hook"], "rtrace:event");
            assert!(x["program"].as_str().unwrap().starts_with("LD_PRELOAD="));
        }
    }

    for x in r["runs"].as_array().unwrap() {
        let name = format!("{} {}", x["config"], x["source"]);
        // `none` runs beside every configuration of its source (and after the last), each
        // time 1000 loops over the rounds; every other configuration once.
        let times = if x["config"] == "none" {
            let others = r["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|y| y["source"] == x["source"] && y["config"] != "none")
                .count() as u64;
            others + 1
        } else {
            1
        };
        // Alternate placement (the default): the untraced wake-ups are kept apart.
        let untraced = x["untraced"]["latency"]["count"].as_u64().unwrap_or(0);
        let count = x["latency"]["count"].as_u64().unwrap();
        assert_eq!(count + untraced, 1000 * times, "{name}");
        assert!(x["latency"]["min_ns"].as_f64().unwrap() > 0.0, "{name}");
        assert!(!x["histogram"].as_str().unwrap().is_empty(), "{name}");
        // Two rounds, alternating order, pooled; each round's statistics kept.
        let mut rounds: Vec<u64> = x["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["round"].as_u64().unwrap())
            .collect();
        rounds.dedup();
        assert_eq!(rounds, [0, 1], "{name}");
        let loops: u64 = x["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["loops"].as_u64().unwrap())
            .sum();
        assert_eq!(loops, 1000 * times, "{name}");
        match x["config"].as_str().unwrap() {
            "none" => assert!(x["accounting"].is_null(), "{name}"),
            _ => {
                let a = &x["accounting"];
                assert_eq!(a["ok"], true, "{name}: {a}");
                let ev = &a["events"];
                let seen = ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap();
                // One event per wake-up, exactly: a tracepoint per loop (user space), one
                // clock_nanosleep exit per call of the measuring thread (kernel space; the
                // built-in loop retries none here, cyclictest's main thread is filtered out).
                // Alternate placement (the default): the built-in loop's user-space
                // tracepoint fires on every other wake-up of each round, the first included.
                let config = x["config"].as_str().unwrap();
                let alternate = x["source"] == "builtin" && !config.starts_with("kernel-");
                let hits: u64 = (x["rounds"].as_array().unwrap().iter())
                    .map(|r| r["loops"].as_u64().unwrap())
                    .map(|n| if alternate { n.div_ceil(2) } else { n })
                    .sum();
                assert_eq!(a["rule"], "exact", "{name}");
                assert_eq!(ev["hits"], hits, "{name}: one hit per traced loop");
                assert_eq!(seen, hits, "{name}");
            }
        }
    }
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("p99.99") && table.contains("usdt-ftrace"),
        "{table}"
    );
}

/// `--probe-at alternate`: the probe fires on every other wake-up, exactly accounted, and each
/// traced run keeps its wake-ups without the probe apart, so the report pairs them.
#[test]
fn alternating_runs_keep_their_untraced_wake_ups_and_pair_them() {
    let dir = tempfile::tempdir().unwrap();
    let before = tracefs_snapshot();
    let out = run(&mut sweep_cmd(
        dir.path(),
        &[
            "--loops",
            "2000",
            "--interval-us",
            "200",
            "--no-cyclictest",
            "--configs",
            "none,usdt-ebpf",
            "--probe-at",
            "alternate",
            "--rounds",
            "2",
        ],
    ));
    assert!(out.status.success(), "sweep failed: {:?}", out.status);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    let r = result(dir.path());
    assert_eq!(r["config"]["probe_at"], "alternate");
    let ebpf = &runs(&r, "usdt-ebpf", "builtin")[0];
    assert_eq!(ebpf["loops"], 2000);
    let ev = &ebpf["accounting"]["events"];
    // Two rounds of 1000 wake-ups, the first of each firing.
    assert_eq!(ev["hits"], 1000, "every other wake-up fires: {ev}");
    assert_eq!(
        ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap(),
        1000
    );
    assert_eq!(ebpf["latency"]["count"], 1000);
    assert_eq!(ebpf["untraced"]["latency"]["count"], 1000);
    for round in ebpf["rounds"].as_array().unwrap() {
        assert!(round["untraced"].is_array(), "{round}");
    }
    assert!(
        runs(&r, "none", "builtin")[0]["untraced"].is_null(),
        "none does not alternate"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .skip_while(|l| !l.starts_with("Latency shift against"))
        .find(|l| l.starts_with("usdt-ebpf") && l.contains("builtin"))
        .unwrap_or_default();
    let paired = row.split("  ").filter(|c| !c.trim().is_empty()).nth(4);
    assert!(
        paired.is_some_and(|c| c.trim().starts_with(['+', '−'])),
        "the paired shift column: {row:?}"
    );
}

/// SIGINTs the sweep once `ready` says it is mid-run; it must exit 130 and leave nothing behind.
/// Returns the run's tag.
fn interrupt_when(args: &[&str], ready: impl Fn(&Path, u32) -> bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut child = sweep_cmd(dir.path(), args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the sweep");
    let started = Instant::now();
    while !ready(dir.path(), child.id()) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before it was interrupted"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the sweep never got going"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let tag = run_tag_of(child.id()).expect("a run that traces holds its lock");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the sweep did not stop within 30 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_clean(&tag);
    let out = dir.path().display().to_string();
    let leftover = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .any(|c| {
            let c = String::from_utf8_lossy(&c);
            c.contains(&out) || c.contains(r#""mode":"cyclic""#)
        });
    assert!(
        !leftover,
        "a process of the interrupted sweep is still running"
    );
    assert_eq!(result(dir.path())["experiment"], "cyclictest-sweep");
    tag
}

/// A tracefs instance of the run `pid` exists.
fn our_instance_exists(pid: u32) -> bool {
    let Some(tag) = run_tag_of(pid) else {
        return false;
    };
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.filter_map(|e| e.ok()).any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("rtrace_{tag}_"))
            })
        })
        .unwrap_or(false)
}

#[test]
fn sigint_during_a_traced_builtin_run_leaves_nothing_behind() {
    // 1,000,000 loops at 200 µs: far longer than the test waits.
    let _ = interrupt_when(
        &[
            "--configs",
            "usdt-ftrace",
            "--loops",
            "1000000",
            "--interval-us",
            "200",
            "--no-cyclictest",
        ],
        |_, pid| our_instance_exists(pid),
    );
}

#[test]
fn sigint_during_a_traced_cyclictest_run_leaves_nothing_behind() {
    if !have_cyclictest() {
        eprintln!("skipped: cyclictest is not installed");
        return;
    }
    // The built-in run takes 1 s; the cyclictest run starts once its stderr file exists.
    let _ = interrupt_when(
        &[
            "--configs",
            "kernel-ftrace",
            "--loops",
            "10000",
            "--interval-us",
            "100",
            "--rounds",
            "1",
        ],
        |out, pid| out.join("kernel-ftrace-cyclictest.stderr").exists() && our_instance_exists(pid),
    );
}

#[test]
fn sigint_during_an_lttng_run_leaves_no_session() {
    let lttng_ok = Command::new("lttng")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !lttng_ok {
        eprintln!("skipped: lttng is not installed");
        return;
    }
    // Interrupt once a session of ours is recording.
    let tag = interrupt_when(
        &[
            "--configs",
            "usdt-lttng",
            "--loops",
            "1000000",
            "--interval-us",
            "200",
            "--rounds",
            "1",
            "--no-cyclictest",
        ],
        |out, pid| {
            out.join("usdt-lttng-builtin").exists()
                && run_tag_of(pid).is_some_and(|tag| {
                    Command::new("lttng").arg("list").output().is_ok_and(|o| {
                        String::from_utf8_lossy(&o.stdout).contains(&format!("rtrace_{tag}_"))
                    })
                })
        },
    );
    let list = Command::new("lttng").arg("list").output().unwrap();
    let sessions = String::from_utf8_lossy(&list.stdout);
    assert!(
        !sessions.contains(&format!("rtrace_{tag}_")),
        "LTTng session of the interrupted sweep left behind:\n{sessions}"
    );
}

#[test]
fn missing_cyclictest_is_a_note_and_the_sweep_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&mut sweep_cmd(
        dir.path(),
        &[
            "--configs",
            "none",
            "--loops",
            "500",
            "--interval-us",
            "200",
            "--cyclictest",
            "/nonexistent/cyclictest",
        ],
    ));
    assert!(out.status.success(), "{:?}", out.status);
    let r = result(dir.path());
    assert_eq!(runs(&r, "none", "builtin").len(), 1);
    let u = &r["unavailable"][0];
    assert_eq!(
        (u["config"].as_str(), u["source"].as_str()),
        (Some("none"), Some("cyclictest"))
    );
    assert!(u["reason"].as_str().unwrap().contains("not found"), "{u}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("note: none cyclictest unavailable"));
}

#[test]
fn kernel_lttng_without_modules_is_reported_unavailable() {
    let modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
    if modules.contains("lttng_tracer") {
        eprintln!("skipped: LTTng kernel modules are loaded here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run(&mut sweep_cmd(
        dir.path(),
        &[
            "--configs",
            "kernel-lttng,none",
            "--loops",
            "500",
            "--interval-us",
            "200",
            "--no-cyclictest",
        ],
    ));
    assert!(out.status.success(), "{:?}", out.status);
    let r = result(dir.path());
    assert!(
        listed(&r, "unavailable", "kernel-lttng"),
        "{}",
        r["unavailable"]
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("unavailable here:") && table.contains("kernel-lttng:"),
        "{table}"
    );
}

#[test]
fn compare_overlays_two_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        let out = run(&mut sweep_cmd(
            d,
            &[
                "--configs",
                "none,kernel-ftrace",
                "--loops",
                "1000",
                "--interval-us",
                "200",
            ],
        ));
        assert!(out.status.success(), "{:?}", out.status);
    }
    let json = dir.path().join("cmp.json");
    let out = run(Command::new(bin("rtrace-bench"))
        .arg("compare")
        .arg(a.join("cyclictest-sweep.json"))
        .arg(b.join("cyclictest-sweep.json"))
        .arg("--json")
        .arg(&json));
    assert!(out.status.success(), "{:?}", out.status);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("kernel-ftrace") && table.contains("p99.99"),
        "{table}"
    );
    let c: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let n_runs = result(&a)["runs"].as_array().unwrap().len();
    assert_eq!(c["pairs"].as_array().unwrap().len(), n_runs);
    for p in c["pairs"].as_array().unwrap() {
        for s in p["stats"].as_array().unwrap() {
            let (x, y, d) = (
                s["a_ns"].as_f64().unwrap(),
                s["b_ns"].as_f64().unwrap(),
                s["diff_ns"].as_f64().unwrap(),
            );
            assert!((y - x - d).abs() < 1e-6, "{s}");
        }
    }
    // Not a sweep result: one error line, exit 1.
    std::fs::write(dir.path().join("u.json"), r#"{"experiment":"usdt"}"#).unwrap();
    let out = run(Command::new(bin("rtrace-bench"))
        .arg("compare")
        .arg(dir.path().join("u.json"))
        .arg(a.join("cyclictest-sweep.json")));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("Error: ") && err.trim_end().lines().count() == 1,
        "{err}"
    );
}
