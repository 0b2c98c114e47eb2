//! The options every experiment shares are honoured and recorded, or refused up front: each
//! experiment run with `--buffer-size-kb 256` records 256 KiB for every backend it used, and an
//! option an experiment does not take is refused before anything runs.

use rtrace_tests::*;
use serde_json::Value;

/// The tracers a result used: those with a run (usdt, sweep, npt), a search (rate) or a measured
/// cell (events). rate searches with two tracers only: its searches take a second per point.
fn used(v: &Value) -> Vec<String> {
    let items = |key: &str| v[key].as_array().unwrap().clone();
    let tracers: Vec<Value> = match v["experiment"].as_str().unwrap() {
        "rate" => items("searches"),
        "events" => items("cells")
            .into_iter()
            .filter(|c| c["outcome"]["kind"] == "measured")
            .collect(),
        _ => items("runs"),
    };
    let mut t: Vec<String> = tracers
        .iter()
        .map(|x| x["tracer"].as_str().unwrap().to_owned())
        .filter(|t| t != "none")
        .collect();
    t.sort();
    t.dedup();
    t
}

#[test]
fn every_experiment_records_the_buffer_size_for_every_backend_it_used() {
    let before = tracefs_snapshot();
    let runs: [(&str, &[&str]); 5] = [
        (
            "usdt",
            &[
                "usdt", "-t", "all", "-n", "2000", "--rounds", "1", "--case", "0,1",
            ],
        ),
        (
            "cyclictest-sweep",
            &[
                "cyclictest-sweep",
                "--configs",
                "none,usdt,kernel-ftrace",
                "--loops",
                "300",
                "--rounds",
                "1",
                "--no-cyclictest",
                "--interval-us",
                "200",
            ],
        ),
        (
            "rate",
            &[
                "rate",
                "-t",
                "ftrace,lttng",
                "--duration-ms",
                "50",
                "--start-rate",
                "20000",
                "--max-rate",
                "30000",
                "--bisections",
                "0",
                // The options' plumbing, not a steady state: each point its window alone, and
                // a flood as short (the defaults fire for 10 buffer-fulls and 5 s).
                "--turnovers",
                "0",
                "--flood-ms",
                "50",
            ],
        ),
        (
            "npt",
            &[
                "npt",
                "-t",
                "all",
                "--duration-ms",
                "100",
                "--event-rate",
                "1000",
            ],
        ),
        (
            "events",
            &[
                "events", "-t", "all", "-e", "4,18", "-n", "2000", "--rounds", "1", "-w", "loop",
            ],
        ),
    ];
    for (name, args) in runs {
        let dir = tempfile::tempdir().unwrap();
        let mut all = args.to_vec();
        all.extend([
            "--buffer-size-kb",
            "256",
            "--out",
            dir.path().to_str().unwrap(),
        ]);
        let out = bench(&all);
        assert_ok(&out);
        let v = read_json(&dir.path().join(format!("{name}.json")));
        let config = &v["config"];
        assert_eq!(config["buffer_size_kb"], 256, "{name}: {config}");
        let used = used(&v);
        assert!(used.len() >= 2, "{name} used {used:?}");
        let buffers = config["buffers"].as_object().unwrap();
        let mut recorded: Vec<&String> = buffers.keys().collect();
        recorded.sort();
        assert_eq!(
            recorded,
            used.iter().collect::<Vec<_>>(),
            "{name}: {config}"
        );
        for (tracer, text) in buffers {
            assert!(
                text.as_str().unwrap().contains("256 KiB per CPU"),
                "{name}: {tracer}: {text}"
            );
        }
        assert_eq!(
            tracefs_snapshot(),
            before,
            "{name} left tracing state behind"
        );
    }
}

#[test]
fn an_option_an_experiment_does_not_take_is_refused_before_anything_runs() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = bench(&[
        "events",
        "--record",
        "stream",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_rejected(&out, "`events` does not take --record");
    assert!(!out_dir.exists(), "nothing created");
    assert_eq!(tracefs_snapshot(), before);
}
