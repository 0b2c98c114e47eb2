//! `--rounds` and pacing through the real binary: rounds pool into one run per (tracer, case)
//! with exact accounting, and a SCHED_FIFO loop longer than the pacing burst rests.

use rtrace_tests::*;

#[test]
fn rounds_pool_and_account_exactly() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("rounds.json");
    let out = bench(&[
        "usdt",
        "--tracer",
        "ebpf,bpftrace",
        "--bpf-mode",
        "aggregate",
        "--case",
        "0,1",
        "-n",
        "30000",
        "--warmup",
        "1000",
        "--rounds",
        "3",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    let v = read_json(&json);
    assert_eq!(v["config"]["rounds"], 3);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        3,
        "none case 0, ebpf and bpftrace case 1 once each"
    );
    for r in runs {
        assert_eq!(r["rounds"].as_array().unwrap().len(), 3, "{r}");
        assert_eq!(r["summary"]["count"], 30000, "{}", r["tracer"]);
    }
    for r in runs.iter().filter(|r| r["case"] == 1) {
        // Each round has its own warm-up: 30,000 + 3 x 1,000 hits, every one accounted.
        assert_eq!(r["events"]["hits"], 33000, "{r}");
        assert_eq!(r["events"]["recorded"], 33000, "{}", r["tracer"]);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("3 rounds)"), "{stdout}");
    assert_eq!(tracefs_snapshot(), before);
}

#[test]
fn a_long_fifo_loop_rests_under_the_rt_budget() {
    let runtime = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
    if runtime.trim() == "-1" {
        eprintln!("real-time throttling is off here: nothing to pace");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("paced.json");
    // Case 0 at tens of ns per iteration: 40,000,000 iterations spin for well over a second.
    let out = bench(&[
        "usdt",
        "--rounds",
        "1",
        "--tracer",
        "none",
        "--case",
        "0",
        "-n",
        "40000000",
        "--priority",
        "99",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    let v = read_json(&json);
    let pacing = &v["config"]["pacing"];
    assert!(pacing["burst_ns"].as_u64().unwrap() > 0, "{pacing}");
    let run = &v["runs"][0];
    let spun_ns = run["summary"]["mean_ns"].as_f64().unwrap() * 40e6;
    let burst = pacing["burst_ns"].as_f64().unwrap();
    let rests = run["rests"].as_u64().unwrap();
    // At least one rest per full burst of timed spinning (the timer's own cost only adds).
    assert!(
        rests as f64 >= (spun_ns / burst).floor(),
        "{rests} rests for {spun_ns} ns of spinning, burst {burst}"
    );
    assert!(rests >= 1, "{spun_ns} ns of spinning without a rest");
}
