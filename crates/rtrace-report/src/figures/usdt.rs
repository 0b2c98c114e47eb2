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
    /// The thesis' tracers on the USDT probe as it ran them (§3.2.2: "eBPF and bpftrace
    /// synonymously", LTTng through `lttng_ust_tracef`): ftrace, bpftrace's printf, LTTng's
    /// tracef, with our libbpf eBPF beside them, as in its Figs 3.1 and 3.2.
    Thesis,
    /// Every tracer and mode on one hook kind (the barrier baseline serves the static kinds).
    Hook(HookKind),
}

/// The mode the thesis ran each tracer in, preferred where measured.
fn thesis_mode(t: TracerKind) -> Option<&'static str> {
    match t {
        TracerKind::Lttng => Some("tracef"),
        TracerKind::Bpftrace | TracerKind::Ebpf => Some("record"),
        _ => None,
    }
}

/// The runs of `case` that `pick` draws: in run order, or the thesis' order (its tracers, then
/// ours).
pub(super) fn picked(r: &UsdtResult, pick: Pick, case: Case) -> Vec<&CaseResult> {
    let of_case = || r.runs.iter().filter(move |c| c.case == case);
    match pick {
        Pick::Thesis => [
            TracerKind::None,
            TracerKind::Ftrace,
            TracerKind::Bpftrace,
            TracerKind::Lttng,
            TracerKind::Ebpf,
        ]
        .into_iter()
        .filter_map(|t| {
            let of_t = || of_case().filter(move |c| c.hook_kind == HookKind::Usdt && c.tracer == t);
            of_t()
                .find(|c| thesis_mode(t).is_some() && c.variant.as_deref() == thesis_mode(t))
                .or_else(|| of_t().next())
        })
        .collect(),
        Pick::Hook(h) => of_case()
            .filter(|c| {
                c.hook_kind == h
                    || (case == Case::Baseline
                        && !h.is_dynamic()
                        && c.hook_kind == HookKind::Usdt
                        && c.tracer == TracerKind::None)
            })
            .collect(),
    }
}

/// A run's name in a figure: in the thesis' figures, what it was there (`bpftrace printf (the
/// thesis' eBPF)`) and ours marked as ours.
pub(super) fn label(pick: Pick, c: &CaseResult) -> String {
    match (pick, c.tracer, c.variant.as_deref()) {
        (Pick::Thesis, TracerKind::Bpftrace, Some("record")) => {
            "bpftrace printf (the thesis' eBPF)".into()
        }
        (Pick::Thesis, TracerKind::Lttng, Some("tracef")) => "lttng tracef (the thesis')".into(),
        (Pick::Thesis, TracerKind::Ebpf, _) => format!("{}, libbpf (ours)", mode_label(c)),
        _ => mode_label(c),
    }
}

/// Each run's look: its tracer's colour, shaded and dashed for its further modes.
pub(super) fn looks(runs: &[&CaseResult]) -> Vec<style::Look> {
    style::looks(runs.iter().map(|c| c.tracer))
}

/// One box per run, each with its own look.
pub(super) fn usdt_boxes(pick: Pick, runs: &[&CaseResult]) -> Result<Vec<BoxSeries>> {
    runs.iter()
        .zip(looks(runs))
        .map(|(c, look)| {
            Ok(BoxSeries {
                label: label(pick, c),
                colour: look.colour,
                stats: box_stats(&c.histogram)?,
            })
        })
        .collect()
}

/// Fig 3.2: the case-1 frequency polygon of `runs`, share of calls per bin up to the largest
/// p99.
pub(super) fn polygon(title: &str, pick: Pick, runs: &[&CaseResult]) -> Result<String> {
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
            label: label(pick, c),
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
        let thesis: Vec<String> = thesis.iter().map(|c| label(Pick::Thesis, c)).collect();
        assert_eq!(
            thesis,
            [
                "ftrace",
                "bpftrace printf (the thesis' eBPF)",
                "lttng tracef (the thesis')",
                "ebpf (record), libbpf (ours)"
            ]
        );
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
