//! What a traced hit costs, and the ratios the literature compares: our eBPF backend against
//! bpftrace in the same mode, LTTng against ftrace.

use crate::usdt::{Case, CaseResult, HookKind, UsdtResult};
use rtrace_tracer::TracerKind;
use serde::Serialize;

/// One column (tracer and variant) of a usdt result.
type Column<'a> = (TracerKind, Option<&'a str>);

/// `numerator / denominator` of two per-hit costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostRatio {
    /// What is compared, e.g. `extra ns per hit` or `case-1 mean`.
    pub measure: &'static str,
    pub numerator: String,
    pub denominator: String,
    pub numerator_ns: f64,
    pub denominator_ns: f64,
    pub ratio: f64,
}

/// The USDT-hook run of `col` and `case`.
fn find<'a>(r: &'a UsdtResult, col: Column<'_>, case: Case) -> Option<&'a CaseResult> {
    r.runs.iter().find(|c| {
        c.tracer == col.0
            && c.variant.as_deref() == col.1
            && c.case == case
            && c.hook_kind == HookKind::Usdt
    })
}

fn label(col: Column<'_>) -> String {
    match col.1 {
        Some(v) => format!("{} ({v})", col.0),
        None => col.0.to_string(),
    }
}

/// Case-1 mean minus the run's case-0 mean (the loop with a compiler barrier for a body).
pub fn extra_ns_per_hit(r: &UsdtResult, col: Column<'_>) -> Option<f64> {
    let traced = find(r, col, Case::Traced)?;
    let baseline = find(r, (TracerKind::None, None), Case::Baseline)?;
    Some(traced.summary.mean_ns - baseline.summary.mean_ns)
}

/// The comparisons that can be made from `r`: eBPF vs bpftrace per mode (extra ns per hit), and
/// LTTng vs ftrace (case-1 means, as the thesis compares them).
pub fn reference_ratios(r: &UsdtResult) -> Vec<CostRatio> {
    let mut out = Vec::new();
    for mode in ["record", "aggregate"] {
        let ours = (TracerKind::Ebpf, Some(mode));
        let theirs = (TracerKind::Bpftrace, Some(mode));
        if let (Some(a), Some(b)) = (extra_ns_per_hit(r, ours), extra_ns_per_hit(r, theirs)) {
            out.push(CostRatio {
                measure: "extra ns per hit",
                numerator: label(ours),
                denominator: label(theirs),
                numerator_ns: a,
                denominator_ns: b,
                ratio: a / b,
            });
        }
    }
    let lttng = (TracerKind::Lttng, None);
    let ftrace = (TracerKind::Ftrace, None);
    if let (Some(a), Some(b)) = (find(r, lttng, Case::Traced), find(r, ftrace, Case::Traced)) {
        out.push(CostRatio {
            measure: "case-1 mean",
            numerator: label(lttng),
            denominator: label(ftrace),
            numerator_ns: a.summary.mean_ns,
            denominator_ns: b.summary.mean_ns,
            ratio: a.summary.mean_ns / b.summary.mean_ns,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result with case 0 at 30 ns and the given case-1 means.
    fn result(case1: &[(TracerKind, Option<&str>, f64)]) -> UsdtResult {
        let mut runs = vec![(TracerKind::None, None, Case::Baseline, 30.0)];
        runs.extend(case1.iter().map(|&(t, v, m)| (t, v, Case::Traced, m)));
        let runs: Vec<serde_json::Value> = runs
            .into_iter()
            .map(|(t, v, c, m)| {
                let s = serde_json::json!({"count": 1, "min_ns": m, "max_ns": m, "mean_ns": m,
                    "stddev_ns": 0.0, "p50_ns": m, "p99_ns": m, "p999_ns": m, "p9999_ns": m});
                serde_json::json!({"tracer": t, "case": c, "variant": v, "workload": "w",
                    "hook": null, "summary": s, "histogram": "", "timer_overhead": s,
                    "events": null, "tsc_hz": 1e9, "workload_max_rss_kb": 1, "mlocked": true,
                    "wall_s": 1.0})
            })
            .collect();
        let env = serde_json::to_value(crate::Environment::collect(0)).unwrap();
        serde_json::from_value(serde_json::json!({
            "experiment": "usdt", "tool_version": "0", "started_unix": 0, "environment": env,
            "config": {"tracers": [], "cases": [], "iterations": 1, "warmup": 0, "cpu": 1,
                "harness_cpus": [0], "priority": null, "buffer_size_kb": null,
                "tracer_options": null},
            "runs": runs,
        }))
        .unwrap()
    }

    #[test]
    fn ebpf_against_bpftrace_uses_extra_cost_per_hit() {
        let r = result(&[
            (TracerKind::Ebpf, Some("aggregate"), 630.0),
            (TracerKind::Bpftrace, Some("aggregate"), 730.0),
        ]);
        let ratios = reference_ratios(&r);
        assert_eq!(ratios.len(), 1);
        assert_eq!(ratios[0].numerator_ns, 600.0);
        assert_eq!(ratios[0].denominator_ns, 700.0);
        assert!((ratios[0].ratio - 600.0 / 700.0).abs() < 1e-12);
    }

    #[test]
    fn lttng_against_ftrace_uses_case1_means() {
        let r = result(&[
            (TracerKind::Lttng, None, 200.0),
            (TracerKind::Ftrace, None, 1000.0),
        ]);
        let ratios = reference_ratios(&r);
        assert_eq!(ratios.len(), 1);
        assert_eq!(ratios[0].ratio, 0.2);
    }

    #[test]
    fn nothing_to_compare_without_pairs() {
        assert!(reference_ratios(&result(&[(TracerKind::Ebpf, Some("record"), 900.0)])).is_empty());
    }
}
