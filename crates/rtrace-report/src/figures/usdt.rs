//! What the usdt figures draw: boxes per tracer and case (Fig 3.1), the case-1 frequency
//! polygon (Fig 3.2).

use super::boxplot::BoxSeries;
use super::data::{bins, nice_width};
use super::lines::{self, Series};
use super::{box_stats, decode, style};
use crate::format::mode_label;
use anyhow::Result;
use rtrace_measure::usdt::{Case, CaseResult, HookKind, UsdtResult};
use rtrace_tracer::TracerKind;

/// Bins of the frequency polygon, at most.
const POLYGON_BINS: u64 = 120;
/// The polygon's x axis ends at this quantile of the widest run.
const POLYGON_TOP_QUANTILE: f64 = 0.99;

/// A case's name in a panel title.
pub(super) fn short(c: Case) -> &'static str {
    match c {
        Case::Baseline => "baseline",
        Case::Traced => "traced",
        Case::Dormant => "dormant tracer",
        Case::Instrumented => "instrumented only",
    }
}

/// The cases measured, in order.
pub(super) fn cases(r: &UsdtResult) -> Vec<Case> {
    let c: std::collections::BTreeSet<Case> = r.runs.iter().map(|c| c.case).collect();
    c.into_iter().collect()
}

/// Which runs a usdt figure draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pick {
    /// The thesis' three tracers on the USDT probe (ftrace, eBPF, LTTng, the first mode or event
    /// kind of each), as in its Figs 3.1 and 3.2.
    Thesis,
    /// Every tracer and mode on one hook kind (the barrier baseline serves the static kinds).
    Hook(HookKind),
}

/// The runs of `case` that `pick` draws, in run order.
pub(super) fn picked(r: &UsdtResult, pick: Pick, case: Case) -> Vec<&CaseResult> {
    // The thesis' run of each of its tracers: LTTng's `tracef` when measured (the thesis
    // used `lttng_ust_tracef`), else the first mode.
    let thesis_run = |t: TracerKind| {
        let of_t = || {
            r.runs
                .iter()
                .filter(move |c| c.case == case && c.hook_kind == HookKind::Usdt && c.tracer == t)
        };
        of_t()
            .find(|c| t == TracerKind::Lttng && c.variant.as_deref() == Some("tracef"))
            .or_else(|| of_t().next())
    };
    let thesis: Vec<&CaseResult> = [
        TracerKind::None,
        TracerKind::Ftrace,
        TracerKind::Ebpf,
        TracerKind::Lttng,
    ]
    .into_iter()
    .filter_map(thesis_run)
    .collect();
    r.runs
        .iter()
        .filter(|c| c.case == case)
        .filter(|c| match pick {
            Pick::Thesis => thesis.iter().any(|t| std::ptr::eq(*t, *c)),
            Pick::Hook(h) => {
                c.hook_kind == h
                    || (case == Case::Baseline
                        && !h.is_dynamic()
                        && c.hook_kind == HookKind::Usdt
                        && c.tracer == TracerKind::None)
            }
        })
        .collect()
}

/// Each run's look: its tracer's colour, shaded and dashed for its further modes.
pub(super) fn looks(runs: &[&CaseResult]) -> Vec<style::Look> {
    style::looks(runs.iter().map(|c| c.tracer))
}

/// One box per run, each with its own look.
pub(super) fn usdt_boxes(runs: &[&CaseResult]) -> Result<Vec<BoxSeries>> {
    runs.iter()
        .zip(looks(runs))
        .map(|(c, look)| {
            Ok(BoxSeries {
                label: mode_label(c),
                colour: look.colour,
                stats: box_stats(&c.histogram)?,
            })
        })
        .collect()
}

/// Fig 3.2: the case-1 frequency polygon of `runs`, share of calls per bin up to the largest
/// p99.
pub(super) fn polygon(title: &str, runs: &[&CaseResult]) -> Result<String> {
    let hists = runs
        .iter()
        .map(|c| Ok((*c, decode(&c.histogram)?)))
        .collect::<Result<Vec<_>>>()?;
    let lo = hists.iter().map(|(_, h)| h.min()).min().unwrap_or(0);
    let hi = hists
        .iter()
        .map(|(_, h)| h.value_at_quantile(POLYGON_TOP_QUANTILE))
        .max()
        .unwrap_or(1);
    let width = nice_width(hi.saturating_sub(lo), POLYGON_BINS);
    let start = lo / width * width;
    let n = ((hi - start) / width + 1) as usize;
    let series = hists
        .iter()
        .zip(looks(runs))
        .map(|((c, h), look)| Series {
            label: mode_label(c),
            look,
            points: bins(h, start, width, n)
                .into_iter()
                .map(|(x, k)| {
                    (
                        (x as f64 + width as f64 / 2.0),
                        100.0 * k as f64 / h.len() as f64,
                    )
                })
                .collect(),
        })
        .collect::<Vec<_>>();
    lines::polygon(
        title,
        "duration per call (ns)",
        &format!("share of calls per {width} ns bin (%)"),
        &format!("x axis up to the largest p99 ({hi} ns): the rarer long calls are in the tables and the case-1 box plot"),
        &series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use TracerKind::{Bpftrace, Ebpf, Ftrace, Lttng};

    /// Series in one panel of the thesis job, at most (8 on the USDT hook: ftrace, 3 eBPF modes,
    /// 2 LTTng event kinds, 2 bpftrace modes).
    const MAX_SERIES: usize = 8;

    /// The thesis job's shape: every hook kind, every mode and event kind.
    fn thesis_job() -> UsdtResult {
        let mut r = crate::fixtures::usdt();
        let base: Vec<CaseResult> = std::mem::take(&mut r.runs);
        let modes: [(TracerKind, &[&str]); 4] = [
            (Ftrace, &[""]),
            (Ebpf, &["record", "record-wakeup", "aggregate"]),
            (Lttng, &["tracepoint", "tracef"]),
            (Bpftrace, &["record", "aggregate"]),
        ];
        for (hook, case) in HookKind::ALL
            .into_iter()
            .flat_map(|h| Case::ALL.map(|c| (h, c)))
        {
            // The barrier baseline serves every static kind.
            let baseline = [(TracerKind::None, &[""][..])];
            let tracers = match case {
                Case::Baseline if matches!(hook, HookKind::UsdtNop5 | HookKind::UsdtStepped) => {
                    &[][..]
                }
                Case::Baseline => &baseline[..],
                _ => &modes[..],
            };
            for (t, ms) in tracers
                .iter()
                .filter(|(t, _)| *t != Lttng || hook == HookKind::Usdt)
            {
                for m in *ms {
                    let mut c = base.iter().find(|c| c.case == case).unwrap().clone();
                    (c.tracer, c.hook_kind) = (*t, hook);
                    c.variant = hook.variant((!m.is_empty()).then_some(*m));
                    r.runs.push(c);
                }
            }
        }
        r
    }

    #[test]
    fn every_panel_of_the_thesis_job_is_legible() {
        let r = thesis_job();
        let thesis = picked(&r, Pick::Thesis, Case::Traced);
        let thesis: Vec<String> = thesis.iter().map(|c| mode_label(c)).collect();
        assert_eq!(thesis, ["ftrace", "ebpf (record)", "lttng (tracef)"]);
        for (hook, case) in HookKind::ALL
            .into_iter()
            .flat_map(|h| Case::ALL.map(|c| (h, c)))
        {
            let runs = picked(&r, Pick::Hook(hook), case);
            assert!(!runs.is_empty(), "{hook} case {}", case.number());
            assert!(runs.len() <= MAX_SERIES, "{hook}: {} series", runs.len());
            let labels: Vec<String> = runs.iter().map(|c| mode_label(c)).collect();
            let looks = looks(&runs);
            for i in 0..runs.len() {
                for j in i + 1..runs.len() {
                    assert_ne!(labels[i], labels[j], "{hook}: two series named alike");
                    let (a, b) = (&labels[i], &labels[j]);
                    assert_ne!(looks[i], looks[j], "{hook}: {a} and {b} look alike");
                }
            }
        }
    }
}
