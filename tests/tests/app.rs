//! `rtrace-bench app` end to end on a workload of seconds: the user's command after `--` under
//! one tracepoint, each tracer's runs accounted, the prediction made before the traced runs,
//! nothing left behind; and bad input refused with one line, nothing changed.

use rtrace_tests::*;

const DD: [&str; 5] = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000"];

fn app(
    dir: &std::path::Path,
    tracers: &str,
    extra: &[&str],
    command: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "app",
        "-t",
        tracers,
        "--rounds",
        "2",
        "--warmup",
        "1",
        "--calibration-runs",
        "2",
        "--calibration-loops",
        "50000",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(command);
    bench(&args)
}

#[test]
fn a_users_command_gets_its_slowdown_and_its_prediction() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let out = app(
        dir.path(),
        "ftrace,ebpf,bpftrace",
        &["--probe", "syscalls:sys_enter_read"],
        &DD,
    );
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    keep_result(&dir.path().join("app.json"));
    let v = read_json(&dir.path().join("app.json"));
    // The count: dd's 300,000 one-byte reads, and a few more of everything else.
    let counts = v["counts"].as_array().unwrap();
    assert_eq!(counts.len(), 1, "{v}");
    let hits = counts[0]["hits"].as_u64().unwrap();
    assert!((300_000..330_000).contains(&hits), "{hits}");
    let runs = v["runs"].as_array().unwrap();
    let tracers = [
        "ftrace",
        "ebpf (record)",
        "ebpf (aggregate)",
        "bpftrace (aggregate)",
    ];
    for tracer in tracers {
        let traced: Vec<_> = runs
            .iter()
            .filter(|r| r["tracer"] == tracer && r["warmup"] != true)
            .collect();
        assert_eq!(traced.len(), 2, "{tracer}: {v}");
        for r in traced {
            let e = &r["events"];
            let seen = e["recorded"].as_u64().unwrap() + e["lost"].as_u64().unwrap();
            assert!(
                seen >= 100_000,
                "{tracer} saw {seen} events of dd's 100,000 reads"
            );
            assert!(r["exit_ns"].as_u64().unwrap() > 0);
            assert!(r["attach_ns"].as_u64().unwrap() > 0);
        }
    }
    let predictions = v["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), tracers.len(), "{v}");
    for p in predictions {
        assert!(p["extra_cpu_ns"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["hits"].as_u64().unwrap(), hits);
    }
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        report.contains("Predicted and measured extra CPU time"),
        "{report}"
    );
}

#[test]
fn bad_input_is_one_line_and_changes_nothing() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let out = app(
        dir.path(),
        "ftrace",
        &["--probe", "syscalls:sys_enter_nosuch"],
        &DD,
    );
    assert_rejected(&out, "no tracepoint matches `syscalls:sys_enter_nosuch`");
    let out = app(dir.path(), "ftrace", &["--probe", "nosuch:*"], &DD);
    assert_rejected(&out, "no tracepoint category `nosuch`");
    let out = app(
        dir.path(),
        "ftrace",
        &["--probe", "syscalls:sys_enter_read"],
        &["/nonexistent/cmd"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/cmd"), "{err}");
    let out = app(
        dir.path(),
        "ftrace",
        &["--probe", "syscalls:sys_enter_read"],
        &["false"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`false` failed"), "{err}");
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    assert!(our_instances().is_empty());
}
