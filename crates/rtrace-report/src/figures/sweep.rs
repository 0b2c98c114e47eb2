//! What the sweep figures draw: the runs of Figs 3.3 and 3.4, and overlaid latency histograms
//! with a log count axis (per configuration, or across kernels as in Fig 3.5).

use super::data::nice_width;
use super::{decode, lines, style};
use anyhow::Result;
use rtrace_measure::sweep::{Configuration, Source, Space, SweepResult, SweepRun};

/// Bins of the latency histograms, at most.
const HISTOGRAM_BINS: u64 = 200;
/// The latency histograms' x axis ends at this quantile of the widest run.
const HISTOGRAM_TOP_QUANTILE: f64 = 0.9999;
/// The finest latency bin: cyclictest's resolution (ns).
const MIN_LATENCY_BIN_NS: u64 = 1_000;

/// The built-in loop's runs of Fig 3.3 (`Space::User`: none and user-space tracing) or Fig 3.4
/// (`Space::Kernel`: none, LTTng user space as the reference, kernel-space tracing).
pub(super) fn sweep_runs(r: &SweepResult, space: Space) -> Vec<&SweepRun> {
    r.runs
        .iter()
        .filter(|run| run.source == Source::Builtin)
        .filter(|run| match (space, run.config.space()) {
            (_, Space::None) => true,
            (Space::User, s) => s == Space::User,
            (_, s) => s == Space::Kernel || run.config == Configuration::UsdtLttng,
        })
        .collect()
}

/// Overlaid latency histograms, counts on a log axis, in µs, up to the largest p99.99.
pub(super) fn latency_histograms(
    title: &str,
    series: Vec<(String, &str)>,
    colours: Vec<plotters::style::RGBColor>,
) -> Result<String> {
    let hists = series
        .into_iter()
        .zip(colours)
        .map(|((label, h), colour)| Ok((label, style::Look { colour, dash: None }, decode(h)?)))
        .collect::<Result<Vec<_>>>()?;
    let top = hists
        .iter()
        .map(|(_, _, h)| h.value_at_quantile(HISTOGRAM_TOP_QUANTILE));
    let hi = top.max().unwrap_or(1);
    let width = nice_width(hi, HISTOGRAM_BINS).max(MIN_LATENCY_BIN_NS);
    let x_desc = "wake-up latency (µs)";
    lines::log_steps(
        title,
        x_desc,
        "wake-ups",
        &hists,
        (hi, width),
        |beyond| match beyond {
            None => "every sample is shown".to_owned(),
            Some(b) => format!(
            "x axis up to the largest p99.99; wake-ups beyond it: {b} (see the max in the tables)"
        ),
        },
    )
}

/// The configuration Fig 3.5 compares across sweeps: LTTng user space as in the thesis, else
/// no tracer, else the first one every sweep measured.
pub(super) fn common_config(sweeps: &[&SweepResult]) -> Option<Configuration> {
    let everywhere = |c: Configuration| sweeps.iter().all(|r| r.run(c, Source::Builtin).is_some());
    [Configuration::UsdtLttng, Configuration::None]
        .into_iter()
        .chain(Configuration::ALL)
        .find(|&c| everywhere(c))
}
