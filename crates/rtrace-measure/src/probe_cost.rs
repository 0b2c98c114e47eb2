//! What a traced hit costs, with one definition for every comparison the reports make (our
//! eBPF backend against bpftrace, LTTng against ftrace, each tracer against the cheapest, the
//! per-hook costs, `compare`): the **extra ns per hit**, a run's mean minus the mean of case 0
//! with the same loop body (the barrier for USDT probes, the marker call for uprobe and
//! uretprobe), both without disturbed samples. Ratios divide two such costs; their intervals
//! come from the rounds (`crate::interval`). Raw means stay in the tables.

use crate::interval::{self, Estimate};
pub use crate::usdt::{column, label};
use crate::usdt::{Case, CaseResult, HookKind, UsdtResult};
use rtrace_tracer::TracerKind;
use serde::Serialize;

/// The definition in words, for reports.
pub const DEFINITION: &str = "extra ns per hit = a run's mean minus the mean of case 0 with the same loop body (barrier for USDT, marker call for uprobe/uretprobe), both without disturbed samples, round by round";

/// A per-round statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Mean without disturbed samples.
    SteadyMean,
    /// Median interpolated within its bucket.
    Median,
    /// Median minus the process's own empty timed interval (`RoundSummary::timer_ns`): what
    /// is left once this VM's speed state at that moment is taken out.
    NetMedian,
    /// Mean without disturbed samples minus the process's own empty timed interval.
    NetSteadyMean,
}

impl Stat {
    /// Variance one round's value has from rounding alone (ns²): a median is read from a 1-ns
    /// bucket; a mean of 10⁵ samples is not rounded to speak of.
    fn rounding_var(self) -> f64 {
        match self {
            Stat::SteadyMean | Stat::NetSteadyMean => 0.0,
            Stat::Median | Stat::NetMedian => 1.0 / 12.0,
        }
    }

    fn of_run(self, c: &CaseResult) -> f64 {
        match self {
            Stat::SteadyMean | Stat::NetSteadyMean => c.steady_mean_ns(),
            Stat::Median | Stat::NetMedian => c.summary.p50_ns,
        }
    }

    /// One value per round; empty when a round lacks what the statistic needs (files of
    /// older versions have no per-round timer).
    fn per_round(self, c: &CaseResult) -> Vec<f64> {
        c.rounds
            .iter()
            .map(|r| match self {
                Stat::SteadyMean => Some(r.steady_mean_ns()),
                Stat::Median => Some(r.median_ns()),
                Stat::NetMedian => Some(r.median_ns() - r.timer_ns()?),
                Stat::NetSteadyMean => Some(r.steady_mean_ns() - r.timer_ns()?),
            })
            .collect::<Option<Vec<f64>>>()
            .unwrap_or_default()
    }
}

impl UsdtResult {
    /// Case 0 with the loop body of `hook`'s rows: the barrier for USDT kinds, the marker call
    /// for uprobe and uretprobe (either one's serves both).
    pub fn baseline(&self, hook: HookKind) -> Option<&CaseResult> {
        let find = |h: HookKind| {
            self.runs.iter().find(|c| {
                c.tracer == TracerKind::None && c.case == Case::Baseline && c.hook_kind == h
            })
        };
        match hook {
            HookKind::Usdt | HookKind::UsdtNop5 | HookKind::UsdtStepped => find(HookKind::Usdt),
            HookKind::Uprobe => find(HookKind::Uprobe).or_else(|| find(HookKind::Uretprobe)),
            HookKind::Uretprobe => find(HookKind::Uretprobe).or_else(|| find(HookKind::Uprobe)),
        }
    }

    /// A case-1 run that lost events is left out of ratios unless `--allow-loss`.
    pub fn in_ratios(&self, c: &CaseResult) -> bool {
        !c.is_lossy() || self.config.allow_loss
    }
}

/// A run against its loop body's case 0.
#[derive(Debug, Clone, Copy)]
pub struct Extra<'a> {
    pub run: &'a CaseResult,
    pub baseline: &'a CaseResult,
}

impl<'a> Extra<'a> {
    /// `run` of `r` against its case 0; `None` without one (or for case 0 itself).
    pub fn of(r: &'a UsdtResult, run: &'a CaseResult) -> Option<Extra<'a>> {
        let baseline = r.baseline(run.hook_kind)?;
        (!std::ptr::eq(run, baseline)).then_some(Extra { run, baseline })
    }

    /// `stat` of the run minus `stat` of case 0, over all rounds pooled (ns).
    pub fn pooled(&self, stat: Stat) -> f64 {
        stat.of_run(self.run) - stat.of_run(self.baseline)
    }

    /// The same within each round (round i of the run against round i of case 0, the same
    /// pass over the plan); the pooled value alone for files without rounds; empty when the
    /// two have different numbers of rounds.
    pub fn per_round(&self, stat: Stat) -> Vec<f64> {
        let old_file = self.run.rounds.is_empty() && self.baseline.rounds.is_empty();
        if old_file && matches!(stat, Stat::SteadyMean | Stat::Median) {
            return vec![self.pooled(stat)];
        }
        let (a, b) = (stat.per_round(self.run), stat.per_round(self.baseline));
        if a.len() != b.len() {
            return Vec::new();
        }
        a.iter().zip(&b).map(|(x, y)| x - y).collect()
    }

    /// The difference with its interval over rounds (dormant cases: how far from case 0):
    /// the mean of the per-round differences with its t interval.
    pub fn difference(&self, stat: Stat) -> Option<Estimate> {
        interval::mean_of(&self.per_round(stat), 2.0 * stat.rounding_var())
    }

    /// The median of the per-round differences with its order-statistic interval (robust
    /// against a round whose state changed between its timer and its loop); `None` without
    /// per-round values (files of older versions for the net statistics).
    pub fn median_difference(&self, stat: Stat) -> Option<Estimate> {
        interval::median_of(&self.per_round(stat), (2.0 * stat.rounding_var()).sqrt())
    }
}

/// `run`'s extra ns per hit in `r` (the definition above: mean without disturbed samples, round
/// by round) with its interval over rounds; `None` without its case 0.
pub fn per_hit(r: &UsdtResult, run: &CaseResult) -> Option<Estimate> {
    Extra::of(r, run)?.difference(Stat::SteadyMean)
}

/// `numerator / denominator` of two costs per hit, by mean without disturbed samples and by
/// median, each with its interval over rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostRatio {
    pub numerator: String,
    pub denominator: String,
    /// Extra ns per hit of each side, rounds pooled.
    pub numerator_ns: f64,
    pub denominator_ns: f64,
    /// Geometric mean of the per-round ratios of extra costs by mean, with its interval;
    /// `None` when a cost is not positive.
    pub mean: Option<Estimate>,
    /// The same by median.
    pub median: Option<Estimate>,
    /// The per-round ratios by mean, in run order.
    pub per_round: Vec<f64>,
}

/// Per-round ratios `a / b` and the variance rounding alone gives their logs.
fn ratio_rounds(a: &Extra<'_>, b: &Extra<'_>, stat: Stat) -> (Vec<f64>, f64) {
    let (x, y) = (a.per_round(stat), b.per_round(stat));
    if x.len() != y.len() || x.is_empty() {
        return (Vec::new(), 0.0);
    }
    let ratios = x.iter().zip(&y).map(|(p, q)| p / q).collect();
    // Each cost is a difference of two rounded values: var 2 r; var(ln c) ≈ var(c) / c².
    let (ca, cb) = (a.pooled(stat), b.pooled(stat));
    let floor = 2.0 * stat.rounding_var() * (1.0 / (ca * ca) + 1.0 / (cb * cb));
    (ratios, floor)
}

impl CostRatio {
    /// `a / b` where both are costs of `r`'s runs.
    pub fn of(a: &Extra<'_>, b: &Extra<'_>) -> CostRatio {
        let estimate = |stat| {
            let (ratios, floor) = ratio_rounds(a, b, stat);
            interval::ratio_of(&ratios, floor)
        };
        CostRatio {
            numerator: label(a.run),
            denominator: label(b.run),
            numerator_ns: a.pooled(Stat::SteadyMean),
            denominator_ns: b.pooled(Stat::SteadyMean),
            mean: estimate(Stat::SteadyMean),
            median: estimate(Stat::Median),
            per_round: ratio_rounds(a, b, Stat::SteadyMean).0,
        }
    }

    /// The same run in two results (e.g. two invocations or kernels): B's cost over A's, the
    /// rounds of each side independent (Welch's t on the logs).
    pub fn across(a: &Extra<'_>, b: &Extra<'_>, a_name: &str, b_name: &str) -> CostRatio {
        let estimate = |stat: Stat| {
            let (ca, cb) = (a.pooled(stat), b.pooled(stat));
            let floor = 2.0 * stat.rounding_var() / (ca * ca).min(cb * cb);
            interval::ratio_between(&a.per_round(stat), &b.per_round(stat), floor)
        };
        CostRatio {
            numerator: format!("{b_name} {}", label(b.run)),
            denominator: format!("{a_name} {}", label(a.run)),
            numerator_ns: b.pooled(Stat::SteadyMean),
            denominator_ns: a.pooled(Stat::SteadyMean),
            mean: estimate(Stat::SteadyMean),
            median: estimate(Stat::Median),
            per_round: Vec::new(),
        }
    }
}

/// The case-1 run of `tracer` with `variant` on a USDT probe (`usdt` or `usdt-nop5`: the
/// variant tells them apart), if it may enter ratios.
fn traced<'a>(r: &'a UsdtResult, tracer: TracerKind, variant: Option<&str>) -> Option<Extra<'a>> {
    let run = r.runs.iter().find(|c| {
        c.tracer == tracer
            && c.variant.as_deref() == variant
            && c.case == Case::Traced
            && matches!(c.hook_kind, HookKind::Usdt | HookKind::UsdtNop5)
    })?;
    r.in_ratios(run).then(|| Extra::of(r, run)).flatten()
}

/// `a / b` named by their columns (`lttng`, `ebpf (record)`): both are case 1.
fn columns(a: &Extra<'_>, b: &Extra<'_>) -> CostRatio {
    CostRatio {
        numerator: column(a.run),
        denominator: column(b.run),
        ..CostRatio::of(a, b)
    }
}

/// What the two sides of a [`Reference`] share and what differs between them.
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

/// A reference comparison: the ratio and what its two sides are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reference {
    pub pair: Pair,
    /// The probe both sides trace (`usdt` or `usdt-nop5`).
    pub hook: HookKind,
    /// Our eBPF backend's mode on the numerator side (`record`, `record-wakeup`,
    /// `aggregate`); `None` for LTTng/ftrace.
    pub mode: Option<&'static str>,
    pub ratio: CostRatio,
}

/// The eBPF/bpftrace pairs on a USDT probe: (eBPF mode, bpftrace mode, what differs).
const BPF_PAIRS: [(&str, &str, Pair); 3] = [
    ("record", "record", Pair::WakeupDiffers),
    ("record-wakeup", "record", Pair::SameWakeup),
    ("aggregate", "aggregate", Pair::Aggregate),
];

/// The comparisons the literature makes that `r` allows: our eBPF backend against bpftrace on
/// each USDT probe (`usdt`, `usdt-nop5`) in the same mode, and eBPF `record-wakeup` against
/// bpftrace `record` (the same wake-up policy); LTTng against ftrace for each LTTng event kind.
pub fn references(r: &UsdtResult) -> Vec<Reference> {
    let mut out = Vec::new();
    for hook in [HookKind::Usdt, HookKind::UsdtNop5] {
        for (mode, theirs, pair) in BPF_PAIRS {
            let (Some(ours), Some(theirs)) = (hook.variant(Some(mode)), hook.variant(Some(theirs)))
            else {
                continue;
            };
            if let (Some(a), Some(b)) = (
                traced(r, TracerKind::Ebpf, Some(&ours)),
                traced(r, TracerKind::Bpftrace, Some(&theirs)),
            ) {
                out.push(Reference {
                    pair,
                    hook,
                    mode: Some(mode),
                    ratio: columns(&a, &b),
                });
            }
        }
    }
    for kind in [None, Some("tracepoint"), Some("tracef")] {
        if let (Some(a), Some(b)) = (
            traced(r, TracerKind::Lttng, kind),
            traced(r, TracerKind::Ftrace, None),
        ) {
            out.push(Reference {
                pair: Pair::LttngFtrace,
                hook: HookKind::Usdt,
                mode: None,
                ratio: columns(&a, &b),
            });
        }
    }
    out
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

/// What one difference between two of our eBPF columns costs: the minuend's extra ns per hit
/// minus the subtrahend's, round by round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostDifference {
    pub what: Difference,
    /// The probe both sides trace (for [`Difference::Trap`]: `usdt`, the minuend's).
    pub hook: HookKind,
    /// `record-wakeup` for [`Difference::Wakeup`], both sides' mode for [`Difference::Trap`].
    pub mode: &'static str,
    pub minuend: String,
    pub subtrahend: String,
    /// Difference of the extra costs by mean without disturbed samples, with its interval over
    /// rounds.
    pub ns: Option<Estimate>,
}

/// The differences `r` measures between columns of our eBPF backend: the wake-up cost per event
/// (`record-wakeup` − `record`, on each USDT probe) and the trap cost (`usdt` − `usdt-nop5`, in
/// each mode).
pub fn differences(r: &UsdtResult) -> Vec<CostDifference> {
    let mut out = Vec::new();
    let mut push = |what, hook, mode, a: Option<String>, b: Option<String>| {
        if let (Some(x), Some(y)) = (
            traced(r, TracerKind::Ebpf, a.as_deref()),
            traced(r, TracerKind::Ebpf, b.as_deref()),
        ) {
            let (p, q) = (x.per_round(Stat::SteadyMean), y.per_round(Stat::SteadyMean));
            let diffs: Vec<f64> = if p.len() == q.len() {
                p.iter().zip(&q).map(|(p, q)| p - q).collect()
            } else {
                Vec::new()
            };
            out.push(CostDifference {
                what,
                hook,
                mode,
                minuend: column(x.run),
                subtrahend: column(y.run),
                ns: interval::mean_of(&diffs, 0.0),
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

/// Every case-1 run's cost over the cheapest one's (as the thesis reads Table 3.1); empty with
/// fewer than two runs that may enter ratios.
pub fn over_cheapest(r: &UsdtResult) -> Vec<CostRatio> {
    let costs: Vec<Extra<'_>> = r
        .runs
        .iter()
        .filter(|c| c.case == Case::Traced && r.in_ratios(c))
        .filter_map(|c| Extra::of(r, c))
        .collect();
    let Some(cheapest) = costs.iter().min_by(|x, y| {
        x.pooled(Stat::SteadyMean)
            .total_cmp(&y.pooled(Stat::SteadyMean))
    }) else {
        return Vec::new();
    };
    costs
        .iter()
        .filter(|c| !std::ptr::eq(c.run, cheapest.run))
        .map(|c| CostRatio::of(c, cheapest))
        .collect()
}

/// B / A of every case-1 run measured in both results that may enter ratios in both.
pub fn across(a: &UsdtResult, b: &UsdtResult) -> Vec<CostRatio> {
    a.runs
        .iter()
        .filter(|ra| ra.case == Case::Traced && a.in_ratios(ra))
        .filter_map(|ra| {
            let rb = b.runs.iter().find(|rb| {
                (rb.tracer, &rb.variant, rb.case, rb.hook_kind)
                    == (ra.tracer, &ra.variant, ra.case, ra.hook_kind)
            })?;
            let (ea, eb) = (Extra::of(a, ra)?, Extra::of(b, rb)?);
            b.in_ratios(rb)
                .then(|| CostRatio::across(&ea, &eb, "A", "B"))
        })
        .collect()
}

/// How far a dormant run (case 2 or 3) is from its case 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dormant {
    pub run: String,
    /// Per round, (the run's median − its process's empty interval) − (the same for case 0):
    /// the median over rounds with its order-statistic interval (ns). This VM switches
    /// between speed states that move every timed interval by ~4 ns; the difference net of
    /// each process's own empty interval takes the state out.
    pub net_median: Option<Estimate>,
    /// The same with means without disturbed samples.
    pub net_mean: Option<Estimate>,
    /// Median minus case 0's median (ns), round by round, with the t interval.
    pub median: Option<Estimate>,
    /// Mean without disturbed samples minus case 0's (ns), round by round.
    pub mean: Option<Estimate>,
    /// The pooled medians (the tables' p50) of the run and of case 0.
    pub p50_ns: (f64, f64),
    /// The ratio of the means without disturbed samples (the tables' "× case 0": one ratio
    /// definition everywhere; a single multi-ms stall moves a plain mean by several ns).
    pub mean_ratio: f64,
}

/// Every case-2 and case-3 run against its case 0.
pub fn dormant(r: &UsdtResult) -> Vec<Dormant> {
    r.runs
        .iter()
        .filter(|c| matches!(c.case, Case::Dormant | Case::Instrumented))
        .filter_map(|c| Extra::of(r, c))
        .map(|e| Dormant {
            run: label(e.run),
            net_median: e.median_difference(Stat::NetMedian),
            net_mean: e.median_difference(Stat::NetSteadyMean),
            median: e.difference(Stat::Median),
            mean: e.difference(Stat::SteadyMean),
            p50_ns: (e.run.summary.p50_ns, e.baseline.summary.p50_ns),
            mean_ratio: e.run.steady_mean_ns() / e.baseline.steady_mean_ns(),
        })
        .collect()
}

/// One line per case-1 run left out of ratios for losing events.
pub fn lossy_notes(r: &UsdtResult) -> Vec<String> {
    r.runs
        .iter()
        .filter(|c| c.is_lossy())
        .map(|c| {
            let hits = c.events.map_or(0, |e| e.hits);
            let fate = if r.config.allow_loss {
                "kept in ratios (--allow-loss)"
            } else {
                "left out of ratios (--allow-loss keeps it)"
            };
            format!(
                "{} dropped {} of {hits} events: the drop path is cheaper than recording, so its cost reads too low; {fate}",
                label(c),
                c.events.map_or(0, |e| e.dropped())
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Case::{Baseline, Dormant, Instrumented, Traced};
    use TracerKind::{Bpftrace, Ebpf, Ftrace, Lttng};

    /// A run: tracer, variant ("" for none), case and per-round steady means (= medians).
    type Run = (TracerKind, &'static str, Case, Vec<f64>);

    /// A result of case 0 with rounds 30, 40, 35 ns, then `runs`.
    fn result(runs: &[Run]) -> UsdtResult {
        let base = (TracerKind::None, "", Baseline, vec![30.0, 40.0, 35.0]);
        with_baseline(&[&[base], runs].concat())
    }

    /// `t` tracing with `variant` at `extra` ns over case 0's rounds.
    fn traced(t: TracerKind, variant: &'static str, extra: f64) -> Run {
        (
            t,
            variant,
            Traced,
            vec![30.0 + extra, 40.0 + extra, 35.0 + extra],
        )
    }

    fn near(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// A result whose runs are exactly `runs`, case 0 first.
    fn with_baseline(runs: &[Run]) -> UsdtResult {
        let runs: Vec<serde_json::Value> = runs
            .iter()
            .map(|(t, v, c, means)| {
                let summary = |m: f64| {
                    serde_json::json!({"count": 1000, "min_ns": m, "max_ns": m, "mean_ns": m,
                    "stddev_ns": 0.0, "p50_ns": m, "p99_ns": m, "p999_ns": m, "p9999_ns": m})
                };
                let pooled = means.iter().sum::<f64>() / means.len() as f64;
                let rounds: Vec<_> = means
                    .iter()
                    .map(|&m| {
                        let mut s = summary(m);
                        s["median_ns"] = m.into();
                        s["disturbed"] = serde_json::json!({"threshold_ns": 10.0 * m,
                            "count": 0, "fraction": 0.0, "mean_ns": m});
                        s
                    })
                    .collect();
                let v = (!v.is_empty()).then_some(v);
                serde_json::json!({"tracer": t, "case": c, "variant": v, "workload": "w",
                    "hook": null, "summary": summary(pooled), "histogram": "",
                    "timer_overhead": summary(pooled), "events": null, "tsc_hz": 1e9,
                    "workload_max_rss_kb": 1, "mlocked": true, "wall_s": 1.0,
                    "rounds": rounds})
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

    /// Case 0, LTTng at 200 ns and ftrace at 1000 ns.
    fn lttng_ftrace() -> UsdtResult {
        result(&[traced(Lttng, "", 200.0), traced(Ftrace, "", 1000.0)])
    }

    #[test]
    fn ebpf_against_bpftrace_divides_extra_costs_round_by_round() {
        let r = result(&[
            traced(Ebpf, "aggregate", 600.0),
            traced(Bpftrace, "aggregate", 700.0),
        ]);
        let refs = references(&r);
        assert_eq!(refs.len(), 1);
        let c = &refs[0].ratio;
        assert_eq!(c.numerator, "ebpf (aggregate)");
        assert_eq!((c.numerator_ns, c.denominator_ns), (600.0, 700.0));
        // Case 0 and case 1 move together: every round gives 600 / 700.
        assert!(c.per_round.iter().all(|&x| near(x, 6.0 / 7.0)));
        let mean = c.mean.unwrap();
        assert!(near(mean.estimate, 6.0 / 7.0) && mean.rounds == 3);
        // The median's interval is never zero-width: rounding to 1-ns buckets alone spreads it.
        let median = c.median.unwrap();
        assert!(median.low.unwrap() < median.estimate && median.estimate < median.high.unwrap());
        // LTTng against ftrace uses the extra cost too.
        let c = &references(&lttng_ftrace())[0].ratio;
        assert_eq!(c.numerator, "lttng");
        assert!(near(c.mean.unwrap().estimate, 0.2), "{c:?}");
    }

    #[test]
    fn one_round_gives_an_estimate_without_interval_and_noise_widens_it() {
        let r = with_baseline(&[
            (TracerKind::None, "", Baseline, vec![30.0]),
            (Lttng, "", Traced, vec![230.0]),
            (Ftrace, "", Traced, vec![1030.0]),
        ]);
        let m = references(&r)[0].ratio.mean.unwrap();
        assert_eq!((m.rounds, m.low, m.high), (1, None, None));
        assert!(near(m.estimate, 0.2));
        let noisy = (Lttng, "", Traced, vec![210.0, 260.0, 230.0]);
        let r = result(&[noisy, traced(Ftrace, "", 1000.0)]);
        let m = references(&r)[0].ratio.mean.unwrap();
        assert!(
            m.contains(0.2) && m.high.unwrap() - m.low.unwrap() > 0.02,
            "{m:?}"
        );
    }

    #[test]
    fn lossy_runs_stay_out_of_ratios_unless_allowed() {
        let mut r = lttng_ftrace();
        r.runs[1].events = Some(crate::Events::of(100, 90, 10));
        assert!(references(&r).is_empty() && over_cheapest(&r).is_empty());
        let notes = lossy_notes(&r);
        assert!(
            notes[0].starts_with("lttng case 1 dropped 10 of 100 events")
                && notes[0].contains("left out of ratios"),
            "{notes:?}"
        );
        r.config.allow_loss = true;
        assert_eq!(references(&r).len(), 1);
        assert!(lossy_notes(&r)[0].contains("kept in ratios"));
        // Events a flight recorder overwrote were written first: the run counts.
        r.config.allow_loss = false;
        r.runs[1].events.as_mut().unwrap().overwritten = 10;
        assert!(lossy_notes(&r).is_empty());
        assert_eq!(references(&r).len(), 1);
    }

    #[test]
    fn costs_over_the_cheapest_and_across_results() {
        let r = lttng_ftrace();
        let rows = over_cheapest(&r);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].denominator, "lttng case 1");
        assert!(near(rows[0].mean.unwrap().estimate, 5.0));
        let slower = result(&[(Lttng, "", Traced, vec![425.0, 445.0, 435.0])]);
        let rows = across(&r, &slower);
        assert_eq!(rows.len(), 1, "ftrace is only in A");
        assert_eq!(rows[0].numerator, "B lttng case 1");
        let m = rows[0].mean.unwrap();
        assert!((m.estimate - 2.0).abs() < 0.01 && m.contains(2.0), "{m:?}");
    }

    #[test]
    fn wakeup_pair_and_cost_are_measured_not_assumed() {
        let wakeup = (
            Ebpf,
            "record-wakeup",
            Traced,
            vec![17_030.0, 17_240.0, 17_035.0],
        );
        let r = result(&[
            traced(Ebpf, "record", 800.0),
            wakeup,
            traced(Bpftrace, "record", 16_000.0),
        ]);
        let refs = references(&r);
        let pairs: Vec<_> = refs
            .iter()
            .map(|c| {
                (
                    c.pair,
                    c.ratio.numerator.as_str(),
                    c.ratio.denominator.as_str(),
                )
            })
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
        assert_eq!(refs[1].mode, Some("record-wakeup"));
        let d = differences(&r);
        assert_eq!(d.len(), 1);
        let what = (d[0].what, d[0].minuend.as_str(), d[0].subtrahend.as_str());
        assert_eq!(
            what,
            (Difference::Wakeup, "ebpf (record-wakeup)", "ebpf (record)")
        );
        let ns = d[0].ns.unwrap();
        assert!(near(ns.estimate, 48_800.0 / 3.0), "{ns:?}");
        assert!(ns.contains(16_200.0) && ns.contains(16_400.0), "{ns:?}");
    }

    #[test]
    fn trap_cost_is_usdt_minus_usdt_nop5() {
        let r = result(&[
            traced(Ebpf, "aggregate", 800.0),
            traced(Ebpf, "aggregate, usdt-nop5", 200.0),
            traced(Bpftrace, "aggregate, usdt-nop5", 900.0),
        ]);
        let d = differences(&r);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].what, d[0].mode), (Difference::Trap, "aggregate"));
        assert!(near(d[0].ns.unwrap().estimate, 600.0));
        let refs = references(&r);
        assert_eq!(refs.len(), 1);
        assert_eq!(
            (refs[0].pair, refs[0].hook),
            (Pair::Aggregate, HookKind::UsdtNop5)
        );
    }

    #[test]
    fn each_lttng_event_kind_is_compared_with_ftrace() {
        let r = result(&[
            traced(Lttng, "tracepoint", 200.0),
            traced(Lttng, "tracef", 400.0),
            traced(Ftrace, "", 1000.0),
        ]);
        let got = references(&r);
        assert_eq!(got.len(), 2);
        let want = [("lttng (tracepoint)", 0.2), ("lttng (tracef)", 0.4)];
        for (c, (name, ratio)) in got.iter().map(|x| &x.ratio).zip(want) {
            assert_eq!(c.numerator, name);
            assert!(near(c.mean.unwrap().estimate, ratio));
        }
    }

    #[test]
    fn dormant_runs_are_differences_from_case_0() {
        let r = result(&[
            (Ftrace, "", Dormant, vec![30.5, 40.5, 35.5]),
            (Ftrace, "", Instrumented, vec![31.0, 39.0, 37.0]),
        ]);
        let d = dormant(&r);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].run, "ftrace case 2");
        let m = d[0].median.unwrap();
        assert!(near(m.estimate, 0.5) && m.contains(0.5) && m.low < m.high);
        assert!(near(d[0].mean_ratio, 35.5 / 35.0));
        assert!(d[1].mean.unwrap().contains(0.0));
        assert!(d[0].net_median.is_none(), "no per-round timer in this file");
    }

    #[test]
    fn net_differences_take_the_speed_state_out() {
        // Case 0 and case 2 in opposite states round by round (21 vs 25 ns), each process's
        // empty interval 0.7 ns below its loop: net, case 2 costs 0.1 ns more.
        let mut r = with_baseline(&[
            (TracerKind::None, "", Baseline, [21.7, 25.7].repeat(3)),
            (Ftrace, "", Dormant, [25.8, 21.8].repeat(3)),
        ]);
        for c in &mut r.runs {
            let extra = if c.case == Dormant { 0.1 } else { 0.0 };
            for round in &mut c.rounds {
                round.timer_median_ns = Some(round.median_ns.unwrap() - 0.7 - extra);
            }
        }
        let d = &dormant(&r)[0];
        let raw = d.median.unwrap();
        assert!(raw.high.unwrap() - raw.low.unwrap() > 4.0, "{raw:?}");
        let net = d.net_median.unwrap();
        assert!(near(net.estimate, 0.1), "{net:?}");
        assert!(
            net.contains(0.1) && net.high.unwrap() - net.low.unwrap() < 1.0,
            "{net:?}"
        );
        assert!(near(d.net_mean.unwrap().estimate, 0.1));
    }

    #[test]
    fn uprobe_runs_are_measured_against_the_call_baseline() {
        let mut r = result(&[
            (TracerKind::None, "", Baseline, vec![50.0; 3]),
            (Ftrace, "", Traced, vec![1050.0; 3]),
        ]);
        r.runs[1].hook_kind = HookKind::Uprobe;
        r.runs[2].hook_kind = HookKind::Uprobe;
        let e = Extra::of(&r, &r.runs[2]).unwrap();
        assert_eq!(e.pooled(Stat::SteadyMean), 1000.0);
        assert!(
            Extra::of(&r, &r.runs[0]).is_none(),
            "case 0 has no cost of its own"
        );
    }
}
