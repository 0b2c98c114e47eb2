//! What a traced hit costs, and the ratios the literature compares: our eBPF backend against
//! bpftrace in the same mode, LTTng against ftrace; and what tells two columns apart, measured:
//! the cost of waking the reader on every event, the cost of the uprobe trap.

use crate::usdt::{Case, CaseResult, HookKind, UsdtResult};
use rtrace_tracer::TracerKind;
use serde::Serialize;

/// One column (tracer and variant) of a usdt result.
type Column<'a> = (TracerKind, Option<&'a str>);

/// What the two sides of a [`CostRatio`] share and what differs between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pair {
    /// eBPF `record` against bpftrace `record`: our ring buffer never wakes its reader,
    /// bpftrace's printf perf buffer wakes it on every event; wake-up policy and program differ.
    WakeupDiffers,
    /// eBPF `record-wakeup` against bpftrace `record`: both wake the reader on every event;
    /// the BPF program and the reader differ.
    SameWakeup,
    /// `aggregate` against `aggregate`: no per-event output; only the BPF programs differ.
    Aggregate,
    /// LTTng (user-space ring buffer, no trap) against ftrace (uprobe trap, kernel ring buffer).
    LttngFtrace,
}

/// `numerator / denominator` of two per-hit costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostRatio {
    /// What is compared, e.g. `extra ns per hit` or `case-1 mean`.
    pub measure: &'static str,
    pub pair: Pair,
    /// The probe both sides trace (`usdt` or `usdt-nop5`).
    pub hook: HookKind,
    /// Our eBPF backend's mode on the numerator side (`record`, `record-wakeup`, `aggregate`);
    /// `None` for LTTng/ftrace.
    pub mode: Option<&'static str>,
    pub numerator: String,
    pub denominator: String,
    pub numerator_ns: f64,
    pub denominator_ns: f64,
    pub ratio: f64,
    /// The same ratio within each round (`--rounds`), in run order; empty with one round.
    pub per_round: Vec<f64>,
}

/// What one difference between two columns costs per hit: `minuend − subtrahend` extra ns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostDifference {
    pub what: Difference,
    /// The probe both sides trace (for [`Difference::Trap`], the minuend's).
    pub hook: HookKind,
    /// Our eBPF backend's mode: `record-wakeup` for [`Difference::Wakeup`], both sides' mode for
    /// [`Difference::Trap`].
    pub mode: &'static str,
    pub minuend: String,
    pub subtrahend: String,
    /// Extra ns per hit of the minuend minus that of the subtrahend.
    pub ns: f64,
    /// The same difference within each round; empty with one round.
    pub per_round: Vec<f64>,
}

/// Which difference a [`CostDifference`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Difference {
    /// Waking the reader on every event: eBPF `record-wakeup` minus eBPF `record` (same program,
    /// same ring buffer, only the submit flag differs).
    Wakeup,
    /// The int3 trap: eBPF on `usdt` (1-byte nop: trap) minus eBPF on `usdt-nop5` (libbpf
    /// attaches to the nop5, a call without trap on Linux >= 6.18), same mode.
    Trap,
}

/// The run of `col` and `case` on a USDT probe (`usdt` or `usdt-nop5`: the variant tells them
/// apart; both share the barrier baseline).
fn find<'a>(r: &'a UsdtResult, col: Column<'_>, case: Case) -> Option<&'a CaseResult> {
    r.runs.iter().find(|c| {
        c.tracer == col.0
            && c.variant.as_deref() == col.1
            && c.case == case
            && matches!(c.hook_kind, HookKind::Usdt | HookKind::UsdtNop5)
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

/// `extra_ns_per_hit` within each round; empty unless both runs have the same number (more
/// than one) of rounds.
fn extra_ns_per_round(r: &UsdtResult, col: Column<'_>) -> Vec<f64> {
    match (
        find(r, col, Case::Traced),
        find(r, (TracerKind::None, None), Case::Baseline),
    ) {
        (Some(t), Some(b)) => zip_with(&means_per_round(t), &means_per_round(b), |x, y| x - y),
        _ => Vec::new(),
    }
}

/// `f` element-wise; empty unless both have the same length.
fn zip_with(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    if a.len() != b.len() {
        return Vec::new();
    }
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

/// The run's mean in each round (empty with one round).
fn means_per_round(c: &CaseResult) -> Vec<f64> {
    if c.rounds.len() < 2 {
        return Vec::new();
    }
    c.rounds.iter().map(|s| s.mean_ns).collect()
}

/// The eBPF/bpftrace pairs on `hook`: (eBPF mode, bpftrace mode, what differs).
const BPF_PAIRS: [(&str, &str, Pair); 3] = [
    ("record", "record", Pair::WakeupDiffers),
    ("record-wakeup", "record", Pair::SameWakeup),
    ("aggregate", "aggregate", Pair::Aggregate),
];

/// The comparisons that can be made from `r`: eBPF vs bpftrace per mode (extra ns per hit) on
/// each USDT probe (`usdt`, `usdt-nop5`), eBPF `record-wakeup` against bpftrace `record` (the
/// same wake-up policy), and LTTng vs ftrace (case-1 means, as the thesis compares them) for
/// each LTTng event kind.
pub fn reference_ratios(r: &UsdtResult) -> Vec<CostRatio> {
    let mut out = Vec::new();
    for hook in [HookKind::Usdt, HookKind::UsdtNop5] {
        for (mode, theirs, pair) in BPF_PAIRS {
            let (Some(ours), Some(theirs)) = (hook.variant(Some(mode)), hook.variant(Some(theirs)))
            else {
                continue;
            };
            let ours = (TracerKind::Ebpf, Some(ours.as_str()));
            let theirs = (TracerKind::Bpftrace, Some(theirs.as_str()));
            if let (Some(a), Some(b)) = (extra_ns_per_hit(r, ours), extra_ns_per_hit(r, theirs)) {
                out.push(CostRatio {
                    measure: "extra ns per hit",
                    pair,
                    hook,
                    mode: Some(mode),
                    numerator: label(ours),
                    denominator: label(theirs),
                    numerator_ns: a,
                    denominator_ns: b,
                    ratio: a / b,
                    per_round: zip_with(
                        &extra_ns_per_round(r, ours),
                        &extra_ns_per_round(r, theirs),
                        |x, y| x / y,
                    ),
                });
            }
        }
    }
    let ftrace = (TracerKind::Ftrace, None);
    for kind in [None, Some("tracepoint"), Some("tracef")] {
        let lttng = (TracerKind::Lttng, kind);
        if let (Some(a), Some(b)) = (find(r, lttng, Case::Traced), find(r, ftrace, Case::Traced)) {
            out.push(CostRatio {
                measure: "case-1 mean",
                pair: Pair::LttngFtrace,
                hook: HookKind::Usdt,
                mode: None,
                numerator: label(lttng),
                denominator: label(ftrace),
                numerator_ns: a.summary.mean_ns,
                denominator_ns: b.summary.mean_ns,
                ratio: a.summary.mean_ns / b.summary.mean_ns,
                per_round: zip_with(&means_per_round(a), &means_per_round(b), |x, y| x / y),
            });
        }
    }
    out
}

/// The differences `r` measures between columns of our eBPF backend: the wake-up cost per
/// event (`record-wakeup` − `record`, on each USDT probe) and the trap cost (`usdt` −
/// `usdt-nop5`, in each mode).
pub fn differences(r: &UsdtResult) -> Vec<CostDifference> {
    let mut out = Vec::new();
    let mut push = |what, hook, mode, a: Option<String>, b: Option<String>| {
        let a = (TracerKind::Ebpf, a.as_deref());
        let b = (TracerKind::Ebpf, b.as_deref());
        if let (Some(x), Some(y)) = (extra_ns_per_hit(r, a), extra_ns_per_hit(r, b)) {
            out.push(CostDifference {
                what,
                hook,
                mode,
                minuend: label(a),
                subtrahend: label(b),
                ns: x - y,
                per_round: zip_with(
                    &extra_ns_per_round(r, a),
                    &extra_ns_per_round(r, b),
                    |x, y| x - y,
                ),
            });
        }
    };
    for hook in [HookKind::Usdt, HookKind::UsdtNop5] {
        push(
            Difference::Wakeup,
            hook,
            "record-wakeup",
            hook.variant(Some("record-wakeup")),
            hook.variant(Some("record")),
        );
    }
    for mode in ["record", "record-wakeup", "aggregate"] {
        push(
            Difference::Trap,
            HookKind::Usdt,
            mode,
            HookKind::Usdt.variant(Some(mode)),
            HookKind::UsdtNop5.variant(Some(mode)),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result with case 0 at 30 ns and the given case-1 means.
    fn result(case1: &[(TracerKind, Option<&str>, f64)]) -> UsdtResult {
        result_in_rounds(case1, 1)
    }

    /// As `result`, every run pooled from `rounds` rounds; round i's mean is the mean + 10 i.
    fn result_in_rounds(case1: &[(TracerKind, Option<&str>, f64)], rounds: u32) -> UsdtResult {
        let mut runs = vec![(TracerKind::None, None, Case::Baseline, 30.0)];
        runs.extend(case1.iter().map(|&(t, v, m)| (t, v, Case::Traced, m)));
        let runs: Vec<serde_json::Value> = runs
            .into_iter()
            .map(|(t, v, c, m)| {
                let summary = |m: f64| {
                    serde_json::json!({"count": 1, "min_ns": m, "max_ns": m, "mean_ns": m,
                    "stddev_ns": 0.0, "p50_ns": m, "p99_ns": m, "p999_ns": m, "p9999_ns": m})
                };
                let s = summary(m);
                let per_round: Vec<_> = (0..rounds)
                    .map(|i| summary(m + 10.0 * f64::from(i)))
                    .collect();
                serde_json::json!({"tracer": t, "case": c, "variant": v, "workload": "w",
                    "hook": null, "summary": s, "histogram": "", "timer_overhead": s,
                    "events": null, "tsc_hz": 1e9, "workload_max_rss_kb": 1, "mlocked": true,
                    "wall_s": 1.0, "rounds": per_round})
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
    fn rounds_give_one_ratio_each() {
        let pair = [
            (TracerKind::Ebpf, Some("aggregate"), 630.0),
            (TracerKind::Bpftrace, Some("aggregate"), 730.0),
        ];
        assert!(reference_ratios(&result(&pair))[0].per_round.is_empty());
        let r = reference_ratios(&result_in_rounds(&pair, 3));
        // Case 0 and case 1 both move by 10 ns a round: the extra cost stays 600 / 700.
        assert_eq!(r[0].per_round.len(), 3);
        assert!(r[0]
            .per_round
            .iter()
            .all(|x| (x - 600.0 / 700.0).abs() < 1e-12));
        let lttng = reference_ratios(&result_in_rounds(
            &[
                (TracerKind::Lttng, None, 190.0),
                (TracerKind::Ftrace, None, 990.0),
            ],
            2,
        ));
        let want = [190.0 / 990.0, 200.0 / 1000.0];
        assert_eq!(lttng[0].per_round.len(), 2);
        assert!(lttng[0]
            .per_round
            .iter()
            .zip(want)
            .all(|(x, w)| (x - w).abs() < 1e-12));
    }

    #[test]
    fn nothing_to_compare_without_pairs() {
        assert!(reference_ratios(&result(&[(TracerKind::Ebpf, Some("record"), 900.0)])).is_empty());
        assert!(differences(&result(&[(TracerKind::Ebpf, Some("record"), 900.0)])).is_empty());
    }

    #[test]
    fn wakeup_pair_and_cost_are_measured_not_assumed() {
        let r = result_in_rounds(
            &[
                (TracerKind::Ebpf, Some("record"), 830.0),
                (TracerKind::Ebpf, Some("record-wakeup"), 17_030.0),
                (TracerKind::Bpftrace, Some("record"), 16_030.0),
            ],
            2,
        );
        let ratios = reference_ratios(&r);
        let pairs: Vec<(Pair, &str, &str)> = ratios
            .iter()
            .map(|c| (c.pair, c.numerator.as_str(), c.denominator.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                (Pair::WakeupDiffers, "ebpf (record)", "bpftrace (record)"),
                (
                    Pair::SameWakeup,
                    "ebpf (record-wakeup)",
                    "bpftrace (record)"
                ),
            ]
        );
        assert!((ratios[1].ratio - 17_000.0 / 16_000.0).abs() < 1e-12);
        let d = differences(&r);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].what, Difference::Wakeup);
        assert_eq!(d[0].minuend, "ebpf (record-wakeup)");
        assert_eq!(d[0].ns, 16_200.0);
        assert_eq!(d[0].per_round, [16_200.0, 16_200.0]);
    }

    #[test]
    fn trap_cost_is_usdt_minus_usdt_nop5() {
        let r = result(&[
            (TracerKind::Ebpf, Some("aggregate"), 830.0),
            (TracerKind::Ebpf, Some("aggregate, usdt-nop5"), 230.0),
            (TracerKind::Bpftrace, Some("aggregate, usdt-nop5"), 900.0),
        ]);
        let d = differences(&r);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].what, Difference::Trap);
        assert_eq!(d[0].ns, 600.0);
        let ratios = reference_ratios(&r);
        assert_eq!(ratios.len(), 1);
        assert_eq!(ratios[0].hook, HookKind::UsdtNop5);
        assert_eq!(ratios[0].pair, Pair::Aggregate);
    }

    #[test]
    fn each_lttng_event_kind_is_compared_with_ftrace() {
        let r = result(&[
            (TracerKind::Lttng, Some("tracepoint"), 200.0),
            (TracerKind::Lttng, Some("tracef"), 400.0),
            (TracerKind::Ftrace, None, 1000.0),
        ]);
        let ratios = reference_ratios(&r);
        let got: Vec<(&str, f64)> = ratios
            .iter()
            .map(|c| (c.numerator.as_str(), c.ratio))
            .collect();
        assert_eq!(got, [("lttng (tracepoint)", 0.2), ("lttng (tracef)", 0.4)]);
    }
}
