//! The guest's result files, checked on the host: each result JSON must show the guest's
//! preemption model and TCG emulation; a sweep must have run and accounted every configuration
//! it was asked for.

use super::kernel::Kernel;
use anyhow::Result;
use serde_json::Value;
use std::path::Path;

#[derive(Default)]
pub struct Checked {
    /// One line per result file.
    pub files: Vec<String>,
    /// What is wrong; each fails the suite.
    pub problems: Vec<String>,
}

/// Checks every `*.json` directly in `dir` (the plan's result files). `NAME.json` belongs to the
/// check NAME; the problems of a pending check's file are listed, not counted.
pub fn check(dir: &Path, kernel: Kernel, pending: &[String]) -> Result<Checked> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    let mut c = Checked::default();
    for name in names {
        let text = std::fs::read_to_string(dir.join(&name))?;
        let v: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                c.problems.push(format!("{name}: invalid JSON: {e}"));
                continue;
            }
        };
        let (line, problems) = check_one(&v, kernel);
        c.files.push(format!("{name}: {line}"));
        let stem = name.trim_end_matches(".json");
        if pending.iter().any(|p| p == stem) {
            c.files.extend(
                problems
                    .into_iter()
                    .map(|p| format!("  pending, not counted: {p}")),
            );
        } else {
            c.problems
                .extend(problems.into_iter().map(|p| format!("{name}: {p}")));
        }
    }
    Ok(c)
}

/// A summary line and the problems of one result.
fn check_one(v: &Value, kernel: Kernel) -> (String, Vec<String>) {
    let mut problems = Vec::new();
    let env = &v["environment"];
    let preemption = env["preemption"].as_str().unwrap_or("?");
    if preemption != kernel.expected_preemption() {
        problems.push(format!(
            "environment.preemption is {preemption:?}, expected {:?} on this kernel",
            kernel.expected_preemption()
        ));
    }
    if env["emulated"] != Value::Bool(true) {
        problems.push(format!(
            "environment.emulated is {}, expected true under TCG",
            env["emulated"]
        ));
    }
    let runs = v["runs"].as_array().map_or(0, Vec::len);
    let mut line = format!(
        "{} {}, preemption {preemption}, emulated {}, {runs} runs",
        v["experiment"].as_str().unwrap_or("?"),
        env["kernel_release"].as_str().unwrap_or("?"),
        env["emulated"],
    );
    if v["experiment"] == "cyclictest-sweep" {
        let (accounted, sweep_problems) = check_sweep(v);
        line.push_str(&format!(", {accounted} accounted"));
        problems.extend(sweep_problems);
    }
    if v["experiment"] == "events" {
        let (measured, events_problems) = check_events(v);
        line.push_str(&format!(", {measured} cells measured"));
        problems.extend(events_problems);
    }
    (line, problems)
}

/// Every requested configuration ran, nothing failed, every traced run accounted.
fn check_sweep(v: &Value) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let empty = Vec::new();
    // A configuration or its cyclictest cross-check that cannot run in the guest is a failure:
    // the guests have every tracer but bpftrace, which the plan does not ask for.
    for u in v["unavailable"].as_array().unwrap_or(&empty) {
        let what = match u["source"].as_str() {
            Some(source) => format!("{} ({source})", u["config"].as_str().unwrap_or("?")),
            None => u["config"].as_str().unwrap_or("?").to_owned(),
        };
        problems.push(format!(
            "configuration {what} unavailable: {}",
            u["reason"].as_str().unwrap_or("?")
        ));
    }
    for f in v["failed"].as_array().unwrap_or(&empty) {
        problems.push(format!(
            "configuration {} ({}) failed: {}",
            f["config"].as_str().unwrap_or("?"),
            f["source"].as_str().unwrap_or("all"),
            f["reason"].as_str().unwrap_or("?")
        ));
    }
    let mut accounted = 0;
    for r in v["runs"].as_array().unwrap_or(&empty) {
        let a = &r["accounting"];
        if a.is_null() {
            continue;
        }
        if a["ok"] == Value::Bool(true) {
            accounted += 1;
        } else {
            problems.push(format!(
                "{} ({}): events not accounted: {} {}",
                r["config"].as_str().unwrap_or("?"),
                r["source"].as_str().unwrap_or("?"),
                a["events"],
                a["error"].as_str().unwrap_or("")
            ));
        }
    }
    (accounted, problems)
}

/// The events suite's cells the guests exist for: kprobe experiments with our eBPF, hist
/// triggers with ftrace, LTTng's kernel tracer. Each asked for must have been measured, nothing
/// may have failed, every accounting run must be exact.
const GUEST_EVENTS: [(&str, &str); 10] = [
    ("ebpf", "kprobe"),
    ("ebpf", "kretprobe"),
    ("ebpf", "map"),
    ("ebpf", "histogram"),
    ("ftrace", "map"),
    ("ftrace", "single-key"),
    ("ftrace", "kernel-stack"),
    ("ftrace", "histogram"),
    ("lttng", "tracepoint-entry"),
    ("lttng", "tracepoint-return"),
];

fn check_events(v: &Value) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let empty = Vec::new();
    let cells = v["cells"].as_array().unwrap_or(&empty);
    let measured = cells
        .iter()
        .filter(|c| c["outcome"]["kind"] == "measured")
        .count();
    for (tracer, feature) in GUEST_EVENTS {
        let Some(c) = cells
            .iter()
            .find(|c| c["tracer"] == tracer && c["feature"] == feature)
        else {
            continue; // not asked for
        };
        if c["outcome"]["kind"] != "measured" {
            problems.push(format!(
                "{tracer} {feature}: {} ({})",
                c["outcome"]["kind"].as_str().unwrap_or("?"),
                c["outcome"]["detail"].as_str().unwrap_or("")
            ));
        }
    }
    for f in v["failed"].as_array().unwrap_or(&empty) {
        problems.push(format!("failed: {}", f.as_str().unwrap_or("?")));
    }
    let checks = v["hook_checks"].as_array().unwrap_or(&empty);
    if checks.is_empty() {
        problems.push("no accounting run".into());
    }
    for c in checks {
        let n = |k: &str| c[k].as_u64().unwrap_or(0);
        if n("recorded") + n("lost") != n("reads") || n("recorded") == 0 {
            problems.push(format!("accounting not exact: {c}"));
        }
    }
    (measured, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preemption_and_emulation_are_checked() {
        let ok = json!({"experiment": "usdt", "environment": {"preemption": "PREEMPT_RT", "emulated": true, "kernel_release": "6.1.0-56-rt-amd64"}, "runs": [{}, {}]});
        let (line, problems) = check_one(&ok, Kernel::Rt);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(line.contains("preemption PREEMPT_RT, emulated true, 2 runs"));
        let (_, problems) = check_one(&ok, Kernel::Preempt);
        assert_eq!(problems.len(), 1);
        let native = json!({"environment": {"preemption": "PREEMPT_RT", "emulated": false}});
        assert_eq!(check_one(&native, Kernel::Rt).1.len(), 1);
    }

    #[test]
    fn events_need_the_guest_cells_measured_and_exact_accounting() {
        let v = json!({
            "experiment": "events",
            "failed": [],
            "cells": [
                {"tracer": "ebpf", "feature": "kprobe", "outcome": {"kind": "measured", "detail": []}},
                {"tracer": "ftrace", "feature": "map", "outcome": {"kind": "unavailable", "detail": "no hist"}},
                {"tracer": "ftrace", "feature": "user-stack", "outcome": {"kind": "inexpressible", "detail": "x"}}
            ],
            "hook_checks": [{"reads": 10, "recorded": 10, "lost": 0}, {"reads": 10, "recorded": 9, "lost": 0}]
        });
        let (measured, problems) = check_events(&v);
        assert_eq!(measured, 1);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("ftrace map: unavailable (no hist)"));
        assert!(problems[1].contains("accounting not exact"));
    }

    #[test]
    fn sweep_needs_every_configuration_accounted() {
        let v = json!({
            "experiment": "cyclictest-sweep",
            "unavailable": [{"config": "kernel-lttng", "source": null, "reason": "no modules"},
                            {"config": "none", "source": "cyclictest", "reason": "missing"}],
            "failed": [],
            "runs": [{"config": "none", "accounting": null},
                     {"config": "kernel-ftrace", "source": "builtin", "accounting": {"ok": true}},
                     {"config": "usdt-ftrace", "source": "builtin", "accounting": {"ok": false, "events": {"hits": 3}, "error": "lost"}}]
        });
        let (accounted, problems) = check_sweep(&v);
        assert_eq!(accounted, 1);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("kernel-lttng unavailable: no modules"));
        assert!(problems[1].contains("none (cyclictest) unavailable: missing"));
        assert!(problems[2].contains("usdt-ftrace"));
    }
}
