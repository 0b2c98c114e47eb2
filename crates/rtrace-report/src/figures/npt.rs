//! The npt figure (Beamonte's Figs 2-9): the gap histogram of the tight loop per run, counts on
//! a log axis, so the rare long gaps (interruptions) stand out from the loop's own few ns.

use super::data::{bins, nice_width};
use super::lines::{self, Series};
use super::{decode, style, US};
use anyhow::Result;
use rtrace_measure::npt::NptResult;

/// Bins of the histogram, at most.
const BINS: u64 = 200;
/// The x axis ends at the largest gap, but not beyond this (ns): a multi-ms gap would squash
/// every other bin into the first.
const TOP_NS: u64 = 200_000;

pub fn figure(title: &str, r: &NptResult) -> Result<String> {
    let hists = r
        .runs
        .iter()
        .map(|run| Ok((run, decode(&run.done.quiet)?)))
        .collect::<Result<Vec<_>>>()?;
    let hi = hists
        .iter()
        .map(|(_, h)| h.max())
        .max()
        .unwrap_or(1)
        .min(TOP_NS);
    let width = nice_width(hi, BINS).max(1);
    let n = (hi / width + 1) as usize;
    let beyond: Vec<String> = hists
        .iter()
        .map(|(run, h)| {
            (
                run.label(),
                h.count_between(n as u64 * width, h.max().max(n as u64 * width)),
            )
        })
        .filter(|(_, k)| *k > 0)
        .map(|(label, k)| format!("{label} {k}"))
        .collect();
    let note = if beyond.is_empty() {
        "gaps of iterations without a probe firing; every gap is shown".to_owned()
    } else {
        format!(
            "gaps of iterations without a probe firing; beyond the x axis: {} (see the max in the table)",
            beyond.join(", ")
        )
    };
    let mut seen: Vec<rtrace_tracer::TracerKind> = Vec::new();
    let series: Vec<Series> = hists
        .iter()
        .map(|(run, h)| {
            let nth = seen.iter().filter(|&&t| t == run.tracer).count();
            seen.push(run.tracer);
            Series {
                label: run.label(),
                look: style::look(run.tracer, nth),
                points: bins(h, 0, width, n)
                    .into_iter()
                    .map(|(x, k)| (x as f64 / US, k as f64))
                    .collect(),
            }
        })
        .collect();
    lines::log_steps(
        title,
        "gap between loop iterations (µs)",
        &format!(
            "gaps per {} µs bin (log scale)",
            style::tick(width as f64 / US)
        ),
        &note,
        width as f64 / US,
        &series,
    )
}
