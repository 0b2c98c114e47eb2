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

/// The array at `v`; empty when it is none.
fn list(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
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
    let runs = list(&v["runs"]).len();
    let mut line = format!(
        "{} {}, preemption {preemption}, emulated {}, {runs} runs",
        v["experiment"].as_str().unwrap_or("?"),
        env["kernel_release"].as_str().unwrap_or("?"),
        env["emulated"],
    );
    let (what, (n, more)) = match v["experiment"].as_str() {
        Some("cyclictest-sweep") => ("accounted", check_sweep(v)),
        Some("events") => ("cells measured", check_events(v)),
        Some("npt") => ("LTTng kernel events", check_npt(v)),
        _ => return (line, problems),
    };
    line.push_str(&format!(", {n} {what}"));
    problems.extend(more);
    (line, problems)
}

/// npt: nothing failed, every traced run's events accounted exactly (recorded + lost = hits,
/// something recorded); with `--lttng-kernel`, LTTng's run recorded kernel events in its own
/// channel (apart from the UST accounting) and named what happened at its largest gaps.
/// Returns the kernel events recorded.
fn check_npt(v: &Value) -> (u64, Vec<String>) {
    let mut problems = Vec::new();
    for f in list(&v["failed"]) {
        problems.push(format!("failed: {}", f.as_str().unwrap_or("?")));
    }
    let runs = list(&v["runs"]);
    for r in runs.iter().filter(|r| !r["events"].is_null()) {
        let e = &r["events"];
        let n = |k: &str| e[k].as_u64().unwrap_or(0);
        if n("recorded") + n("lost") != n("hits") || n("recorded") == 0 {
            problems.push(format!(
                "{}: accounting not exact: {e}",
                r["tracer"].as_str().unwrap_or("?")
            ));
        }
    }
    let wants_kernel = v["config"]["lttng_kernel"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    let mut kernel_events = 0;
    if wants_kernel {
        let lttng: Vec<&Value> = runs.iter().filter(|r| r["tracer"] == "lttng").collect();
        if lttng.is_empty() {
            problems.push("--lttng-kernel given but no LTTng run".into());
        }
        for r in lttng {
            let k = &r["kernel"];
            let recorded: u64 = k["events"]
                .as_object()
                .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
            kernel_events += recorded;
            if recorded == 0 {
                problems.push(format!("LTTng run recorded no kernel events: {k}"));
            }
            let named = k["at_largest"]
                .as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(|g| g["what"].as_str().is_some()));
            if !named {
                problems.push(format!("LTTng run named nothing at its largest gaps: {k}"));
            }
        }
    }
    (kernel_events, problems)
}

/// Every requested configuration ran, nothing failed, every traced run accounted.
fn check_sweep(v: &Value) -> (u64, Vec<String>) {
    let mut problems = Vec::new();
    // A configuration or its cyclictest cross-check that cannot run in the guest is a failure:
    // the guests have every tracer but bpftrace, which the plan does not ask for.
    for u in list(&v["unavailable"]) {
        let what = match u["source"].as_str() {
            Some(source) => format!("{} ({source})", u["config"].as_str().unwrap_or("?")),
            None => u["config"].as_str().unwrap_or("?").to_owned(),
        };
        problems.push(format!(
            "configuration {what} unavailable: {}",
            u["reason"].as_str().unwrap_or("?")
        ));
    }
    for f in list(&v["failed"]) {
        problems.push(format!(
            "configuration {} ({}) failed: {}",
            f["config"].as_str().unwrap_or("?"),
            f["source"].as_str().unwrap_or("all"),
            f["reason"].as_str().unwrap_or("?")
        ));
    }
    let mut accounted = 0;
    for r in list(&v["runs"]) {
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

fn check_events(v: &Value) -> (u64, Vec<String>) {
    let mut problems = Vec::new();
    let cells = list(&v["cells"]);
    let measured = cells
        .iter()
        .filter(|c| c["outcome"]["kind"] == "measured")
        .count() as u64;
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
    for f in list(&v["failed"]) {
        problems.push(format!("failed: {}", f.as_str().unwrap_or("?")));
    }
    let checks = list(&v["hook_checks"]);
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
    fn npt_needs_exact_ust_accounting_and_kernel_events() {
        let v = json!({
            "experiment": "npt",
            "config": {"lttng_kernel": ["sched_switch"]},
            "failed": [],
            "runs": [
                {"tracer": "none", "events": null},
                {"tracer": "lttng", "events": {"hits": 10, "recorded": 8, "lost": 2},
                 "kernel": {"events": {"sched_switch": 5, "irq_handler_entry": 2}, "discarded": 0,
                            "at_largest": [{"ns": 9, "end_mono_ns": 9, "events": 1, "what": "irq 11"}]}}
            ]
        });
        assert_eq!(check_npt(&v), (7, Vec::<String>::new()));
        let mut bad = v.clone();
        bad["runs"][1]["events"]["recorded"] = json!(15);
        bad["runs"][1]["kernel"]["events"] = json!({});
        let (_, problems) = check_npt(&bad);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("accounting not exact"));
        assert!(problems[1].contains("no kernel events"));
        let mut none = v.clone();
        none["runs"][1]["kernel"] = Value::Null;
        assert_eq!(check_npt(&none).1.len(), 2);
        // Without --lttng-kernel the kernel is not asked for.
        none["config"]["lttng_kernel"] = json!([]);
        assert!(check_npt(&none).1.is_empty());
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
