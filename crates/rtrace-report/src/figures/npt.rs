//! The npt figure (Beamonte's Figs 2-9): the gap histogram of the tight loop per run, counts on
//! a log axis, so the rare long gaps (interruptions) stand out from the loop's own few ns.

use super::data::nice_width;
use super::{decode, lines, style};
use anyhow::Result;
use rtrace_measure::npt::NptResult;

/// Bins of the histogram, at most.
const BINS: u64 = 200;
/// The x axis ends at the largest gap, but not beyond this (ns): a multi-ms gap would squash
/// every other bin into the first.
const TOP_NS: u64 = 200_000;

/// The histogram shown: the firing iterations' when the probe fires in every iteration, else
/// the quiet ones'.
fn gaps<'a>(r: &NptResult, run: &'a rtrace_measure::npt::NptRun) -> &'a str {
    match r.config.event_rate_hz {
        None => &run.done.fired,
        Some(_) => &run.done.quiet,
    }
}

pub fn figure(title: &str, r: &NptResult) -> Result<String> {
    let looks = style::looks(r.runs.iter().map(|run| run.tracer));
    let hists = r
        .runs
        .iter()
        .zip(looks)
        .map(|(run, look)| Ok((run.label(), look, decode(gaps(r, run))?)))
        .collect::<Result<Vec<_>>>()?;
    let hi = hists
        .iter()
        .map(|(_, _, h)| h.max())
        .max()
        .unwrap_or(1)
        .min(TOP_NS);
    let width = nice_width(hi, BINS).max(1);
    let x_desc = "gap between loop iterations (µs)";
    lines::log_steps(title, x_desc, "gaps", &hists, (hi, width), |beyond| {
        let gaps = match r.config.event_rate_hz {
            None => "gaps of iterations that fired the probe (every iteration)",
            Some(_) => "gaps of iterations without a probe firing",
        };
        match beyond {
            None => format!("{gaps}; every gap is shown"),
            Some(b) => format!("{gaps}; beyond the x axis: {b} (see the max in the table)"),
        }
    })
}
