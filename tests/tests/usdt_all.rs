//! The main job's path end to end: `usdt` with every tracer and every eBPF/bpftrace mode in one
//! run, through the real binary. Every traced case must account exactly (the binary fails the
//! run otherwise), case 2 must record nothing, and no tracing state may remain.

use rtrace_tests::*;

#[test]
fn every_tracer_and_mode_accounts_exactly_in_one_run() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("all.json");
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "--tracer",
        "ftrace,ebpf,lttng,bpftrace",
        "--bpf-mode",
        "record,record-wakeup,aggregate",
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
    let v = read_json(&json);
    let runs = v["runs"].as_array().unwrap();
    let traced: Vec<&serde_json::Value> = runs.iter().filter(|r| r["case"] == 1).collect();
    // ftrace, ebpf x3, lttng, bpftrace x2 (record-wakeup is bpftrace's record).
    assert_eq!(traced.len(), 7, "{}", String::from_utf8_lossy(&out.stderr));
    for r in &traced {
        let ev = &r["events"];
        assert_eq!(ev["hits"], 21000, "{r}");
        let sum = ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap();
        assert_eq!(sum, 21000, "{} {}: {ev}", r["tracer"], r["variant"]);
        assert!(
            ev["recorded"].as_u64().unwrap() > 0,
            "{} recorded nothing",
            r["tracer"]
        );
    }
    for r in runs.iter().filter(|r| r["case"] == 2) {
        assert_eq!(
            r["events"]["recorded"], 0,
            "{} {}",
            r["tracer"], r["variant"]
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in [
        "ebpf (aggregate) ÷ bpftrace (aggregate)",
        "ebpf (record-wakeup) ÷ bpftrace (record)",
        "both wake the reader on every event",
        "wake-up cost per event (usdt): ebpf (record-wakeup) − ebpf (record) = ",
    ] {
        assert!(stdout.contains(line), "{line:?} missing:\n{stdout}");
    }
    assert!(stdout.contains("lttng (tracepoint) ÷ ftrace"), "{stdout}");
    assert!(dir.path().join("index.html").exists());
    assert_eq!(tracefs_snapshot(), before);
    let sessions = std::process::Command::new("lttng")
        .arg("list")
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&sessions.stdout).contains("rtrace_"),
        "an LTTng session of ours survived"
    );
}

/// The `nop; nop5` and the single-stepped USDT probes: every tracer that can attach to a USDT
/// probe accounts exactly on them (libbpf attaches one byte past the note's address on the
/// nop5, the others at it), case 2 records nothing, and LTTng is skipped with the reason. Each
/// run records whether its process mapped `[uprobes-trampoline]` (read from its own
/// `/proc/self/maps` after the loop): only libbpf's nop5 site is optimized.
#[test]
fn nop5_and_stepped_probes_account_and_record_the_optimization() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("nop5.json");
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "--tracer",
        "all",
        "--bpf-mode",
        "record,aggregate",
        "--hook",
        "usdt-nop5,usdt-stepped",
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("lttng skipped for usdt-nop5"), "{stdout}");
    let v = read_json(&json);
    let runs = v["runs"].as_array().unwrap();
    let traced: Vec<&serde_json::Value> = runs.iter().filter(|r| r["case"] == 1).collect();
    // ftrace, ebpf x2, bpftrace x2 and perf where installed, on rtrace:event_nop5 and on
    // rtrace:event_stepped.
    let perf = usize::from(std::path::Path::new(rtrace_perf::PERF).is_file());
    assert_eq!(traced.len(), 2 * (5 + perf), "{stdout}");
    for r in &traced {
        let kind = r["hook_kind"].as_str().unwrap();
        let probe = &kind["usdt-".len()..];
        assert_eq!(r["hook"], format!("rtrace:event_{probe}"), "{r}");
        let ev = &r["events"];
        assert_eq!(ev["hits"], 21000, "{r}");
        let sum = ev["recorded"].as_u64().unwrap() + ev["lost"].as_u64().unwrap();
        assert_eq!(sum, 21000, "{} {}: {ev}", r["tracer"], r["variant"]);
        let optimized = kind == "usdt-nop5" && r["tracer"] == "ebpf";
        for round in r["rounds"].as_array().unwrap() {
            let mapped = &round["uprobes_trampoline"];
            assert_eq!(mapped, optimized, "{} {}", r["tracer"], r["variant"]);
            assert!(round["syscall_ns"].as_f64().unwrap() > 0.0, "{round}");
        }
    }
    for r in runs.iter().filter(|r| r["case"] == 2) {
        assert!(
            r["hook"].as_str().unwrap().starts_with("rtrace:idle_"),
            "{r}"
        );
        assert_eq!(
            r["events"]["recorded"], 0,
            "{} {}",
            r["tracer"], r["variant"]
        );
        assert_eq!(r["rounds"][0]["uprobes_trampoline"], false, "{r}");
    }
    for said in [
        "ebpf (aggregate) optimized (1 of 1 rounds)",
        "ftrace not optimized (0 of 1 rounds)",
    ] {
        assert!(stdout.contains(said), "{said}: {stdout}");
    }
    assert!(
        stdout.contains("ebpf (aggregate, usdt-nop5) ÷ bpftrace (aggregate, usdt-nop5)"),
        "{stdout}"
    );
    assert_eq!(tracefs_snapshot(), before);
}

/// `--spacing-us`: every timed hit after a sleep (the cold path the consistency section
/// measures): the option is recorded, each run took at least its sleeps, and every traced hit
/// is accounted.
#[test]
fn spaced_hits_sleep_first_and_account_exactly() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("spaced.json");
    let out = bench(&[
        "usdt",
        "--rounds",
        "2",
        "--tracer",
        "ftrace,ebpf",
        "--bpf-mode",
        "record",
        "--case",
        "0,1",
        "--spacing-us",
        "200",
        "-n",
        "4000",
        "--warmup",
        "100",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    let v = read_json(&json);
    assert_eq!(v["config"]["spacing_us"], 200);
    assert!(v["config"]["pacing"].is_null(), "{}", v["config"]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "case 0, ftrace and ebpf");
    for r in runs {
        // 2 rounds of 2,000 hits, each after a 200 µs sleep: at least 0.8 s of sleeps.
        let wall = r["wall_s"].as_f64().unwrap();
        assert!(wall >= 0.8, "{} case {}: {wall} s", r["tracer"], r["case"]);
        if r["case"] == 1 {
            let ev = &r["events"];
            assert_eq!(ev["hits"], 4200, "{r}");
            assert_eq!(ev["recorded"], 4200, "{} {ev}", r["tracer"]);
        }
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("hits after a sleep (usdt --spacing-us)"),
        "{stdout}"
    );
    assert_eq!(tracefs_snapshot(), before);
}
