//! What the usdt figures draw: boxes per tracer and case (Fig 3.1), the case-1 frequency
//! polygon (Fig 3.2).

use super::boxplot::BoxSeries;
use super::data::{bins, nice_width};
use super::lines::{self, Series};
use super::{box_stats, decode, style};
use crate::format::tracer_label;
use anyhow::Result;
use rtrace_measure::usdt::{Case, CaseResult, UsdtResult};

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
    let mut c: Vec<Case> = r.runs.iter().map(|c| c.case).collect();
    c.sort();
    c.dedup();
    c
}

/// The runs of one case, in run order.
pub(super) fn runs_of(r: &UsdtResult, case: Case) -> Vec<&CaseResult> {
    r.runs.iter().filter(|c| c.case == case).collect()
}

/// One box per run of `case`, coloured by tracer.
pub(super) fn usdt_boxes(r: &UsdtResult, case: Case) -> Result<Vec<BoxSeries>> {
    runs_of(r, case)
        .into_iter()
        .map(|c| {
            Ok(BoxSeries {
                label: tracer_label(c.tracer, c.variant.as_deref()),
                colour: style::colour(c.tracer),
                stats: box_stats(&c.histogram)?,
            })
        })
        .collect()
}

/// Fig 3.2: the case-1 frequency polygon, share of calls per bin up to the largest p99.
pub(super) fn polygon(title: &str, r: &UsdtResult) -> Result<String> {
    let hists = runs_of(r, Case::Traced)
        .into_iter()
        .map(|c| Ok((c, decode(&c.histogram)?)))
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
        .map(|(c, h)| Series {
            label: tracer_label(c.tracer, c.variant.as_deref()),
            colour: style::colour(c.tracer),
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
