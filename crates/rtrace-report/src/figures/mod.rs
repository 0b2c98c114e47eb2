//! The figures of a report (thesis Figs 3.1–3.5), drawn with plotters' SVG backend. `plan` says
//! which figures the results allow; `Figure::render` draws one.

pub mod boxplot;
pub mod data;
pub mod lines;
pub mod style;

use crate::format::tracer_label;
use crate::result::{Entry, Report};
use anyhow::{Context, Result};
use boxplot::BoxSeries;
use data::{bins, nice_width, BoxStats};
use hdrhistogram::Histogram;
use lines::Series;
use rtrace_measure::sweep::{Configuration, Source, Space, SweepResult, SweepRun};
use rtrace_measure::usdt::{Case, CaseResult, UsdtResult};

/// Bins of the frequency polygon, at most.
const POLYGON_BINS: u64 = 120;
/// Bins of the latency histograms, at most.
const HISTOGRAM_BINS: u64 = 200;
/// The latency histograms' x axis ends at this quantile of the widest run.
const HISTOGRAM_TOP_QUANTILE: f64 = 0.9999;
/// The finest latency bin: cyclictest's resolution (ns).
const MIN_LATENCY_BIN_NS: u64 = 1_000;
/// The polygon's x axis ends at this quantile of the widest run.
const POLYGON_TOP_QUANTILE: f64 = 0.99;
const NS: f64 = 1.0;
const US: f64 = 1_000.0;

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Fig 3.1: case 1 per tracer.
    Case1Box,
    /// Every case, a panel each.
    CasesBox,
    /// Fig 3.2: frequency polygon of case 1.
    Case1Polygon,
    /// Fig 3.3 (user space) or 3.4 (kernel space).
    SweepBox(Space),
    /// Latency histograms of one sweep, log count.
    SweepHistogram,
    /// Fig 3.5: one configuration across sweeps (e.g. PREEMPT vs PREEMPT_RT).
    Preemption(Configuration),
}

/// One figure a report can show.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name under `figures/`.
    pub file: String,
    pub title: String,
    /// One or two sentences under the figure: what it shows and how to read it.
    pub caption: String,
    /// Ids of the results it draws.
    pub entries: Vec<String>,
    kind: Kind,
}

impl Figure {
    /// Path in the report directory.
    pub fn path(&self) -> String {
        format!("figures/{}", self.file)
    }

    /// Draws the figure as an SVG document.
    pub fn render(&self, report: &Report) -> Result<String> {
        let entries: Vec<&Entry> = self
            .entries
            .iter()
            .filter_map(|id| report.entries.iter().find(|e| &e.id == id))
            .collect();
        let usdt = || match entries.first().map(|e| &e.result) {
            Some(crate::result::AnyResult::Usdt(r)) => Ok(r),
            _ => anyhow::bail!("{} needs a usdt result", self.file),
        };
        let sweeps = || -> Vec<(&Entry, &SweepResult)> {
            entries
                .iter()
                .filter_map(|e| match &e.result {
                    crate::result::AnyResult::Sweep(r) => Some((*e, r)),
                    _ => None,
                })
                .collect()
        };
        let svg = match &self.kind {
            Kind::Case1Box => boxplot::figure(
                style::SIZE,
                &self.title,
                "duration per call (ns)",
                &[(String::new(), usdt_boxes(usdt()?, Case::Traced)?)],
                NS,
            ),
            Kind::CasesBox => {
                let r = usdt()?;
                let groups = cases(r)
                    .into_iter()
                    .map(|c| {
                        Ok((
                            format!("case {}: {}", c.number(), short(c)),
                            usdt_boxes(r, c)?,
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?;
                boxplot::figure(
                    style::WIDE,
                    &self.title,
                    "duration per call (ns)",
                    &groups,
                    NS,
                )
            }
            Kind::Case1Polygon => polygon(&self.title, usdt()?),
            Kind::SweepBox(space) => {
                let (_, r) = *sweeps().first().context("no sweep")?;
                let runs = sweep_runs(r, *space);
                let boxes = runs
                    .iter()
                    .map(|run| {
                        Ok(BoxSeries {
                            label: run.config.to_string(),
                            colour: style::config_colour(run.config),
                            stats: box_stats(&run.histogram)?,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                boxplot::figure(
                    style::SIZE,
                    &self.title,
                    "wake-up latency (µs)",
                    &[(String::new(), boxes)],
                    US,
                )
            }
            Kind::SweepHistogram => {
                let (_, r) = *sweeps().first().context("no sweep")?;
                let runs: Vec<&SweepRun> = r
                    .runs
                    .iter()
                    .filter(|run| run.source == Source::Builtin)
                    .collect();
                let series = runs
                    .iter()
                    .map(|run| (run.config.to_string(), run.histogram.as_str()))
                    .collect();
                let colours = runs
                    .iter()
                    .map(|run| style::config_colour(run.config))
                    .collect();
                latency_histograms(&self.title, series, colours)
            }
            Kind::Preemption(config) => {
                let series: Vec<(String, &str)> = sweeps()
                    .into_iter()
                    .filter_map(|(e, r)| {
                        r.run(*config, Source::Builtin).map(|run| {
                            (format!("{} ({})", e.kernel(), e.id), run.histogram.as_str())
                        })
                    })
                    .collect();
                let colours = style::SERIES
                    .iter()
                    .copied()
                    .cycle()
                    .take(series.len())
                    .collect();
                latency_histograms(&self.title, series, colours)
            }
        }?;
        Ok(svg)
    }
}

fn decode(h: &str) -> Result<Histogram<u64>> {
    rtrace_protocol::decode_histogram(h).context("a histogram in the result file does not decode")
}

fn box_stats(h: &str) -> Result<BoxStats> {
    BoxStats::of(&decode(h)?).context("empty histogram")
}

fn short(c: Case) -> &'static str {
    match c {
        Case::Baseline => "baseline",
        Case::Traced => "traced",
        Case::Dormant => "dormant tracer",
        Case::Instrumented => "instrumented only",
    }
}

fn cases(r: &UsdtResult) -> Vec<Case> {
    let mut c: Vec<Case> = r.runs.iter().map(|c| c.case).collect();
    c.sort();
    c.dedup();
    c
}

fn runs_of(r: &UsdtResult, case: Case) -> Vec<&CaseResult> {
    r.runs.iter().filter(|c| c.case == case).collect()
}

fn usdt_boxes(r: &UsdtResult, case: Case) -> Result<Vec<BoxSeries>> {
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

/// The built-in loop's runs of Fig 3.3 (`Space::User`: none and user-space tracing) or Fig 3.4
/// (`Space::Kernel`: none, LTTng user space as the reference, kernel-space tracing).
fn sweep_runs(r: &SweepResult, space: Space) -> Vec<&SweepRun> {
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

fn polygon(title: &str, r: &UsdtResult) -> Result<String> {
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

/// Overlaid latency histograms, counts on a log axis, in µs, up to the largest p99.99.
fn latency_histograms(
    title: &str,
    series: Vec<(String, &str)>,
    colours: Vec<plotters::style::RGBColor>,
) -> Result<String> {
    let hists = series
        .into_iter()
        .map(|(label, h)| Ok((label, decode(h)?)))
        .collect::<Result<Vec<_>>>()?;
    let hi = hists
        .iter()
        .map(|(_, h)| h.value_at_quantile(HISTOGRAM_TOP_QUANTILE))
        .max()
        .unwrap_or(1);
    let width = nice_width(hi, HISTOGRAM_BINS).max(MIN_LATENCY_BIN_NS);
    let n = (hi / width + 1) as usize;
    let beyond: Vec<String> = hists
        .iter()
        .map(|(label, h)| {
            (
                label,
                h.count_between(n as u64 * width, h.max().max(n as u64 * width)),
            )
        })
        .filter(|(_, k)| *k > 0)
        .map(|(label, k)| format!("{label} {k}"))
        .collect();
    let note = if beyond.is_empty() {
        "every sample is shown".to_owned()
    } else {
        format!(
            "x axis up to the largest p99.99; wake-ups beyond it: {} (see the max in the tables)",
            beyond.join(", ")
        )
    };
    let series: Vec<Series> = hists
        .iter()
        .zip(colours)
        .map(|((label, h), colour)| Series {
            label: label.clone(),
            colour,
            points: bins(h, 0, width, n)
                .into_iter()
                .map(|(x, k)| (x as f64 / US, k as f64))
                .collect(),
        })
        .collect();
    lines::log_steps(
        title,
        "wake-up latency (µs)",
        &format!(
            "wake-ups per {} µs bin (log scale)",
            style::tick(width as f64 / US)
        ),
        &note,
        width as f64 / US,
        &series,
    )
}

/// The configuration Fig 3.5 compares across sweeps: LTTng user space as in the thesis, else
/// no tracer, else the first one every sweep measured.
fn common_config(sweeps: &[&SweepResult]) -> Option<Configuration> {
    let everywhere = |c: Configuration| sweeps.iter().all(|r| r.run(c, Source::Builtin).is_some());
    [Configuration::UsdtLttng, Configuration::None]
        .into_iter()
        .chain(Configuration::ALL)
        .find(|&c| everywhere(c))
}

/// The figures these results allow, in report order.
pub fn plan(report: &Report) -> Vec<Figure> {
    let mut out = Vec::new();
    let fig = |e: &Entry, name: &str, title: String, caption: &str, kind: Kind| Figure {
        file: format!("{}-{name}.svg", e.id),
        title,
        caption: caption.to_owned(),
        entries: vec![e.id.clone()],
        kind,
    };
    for (e, r) in report.usdt() {
        if !runs_of(r, Case::Traced).is_empty() {
            out.push(fig(e, "case1-box", "Probe duration per tracer, case 1 (thesis Fig 3.1)".into(),
                "Per-call duration of the traced probe (case 1) for each tracer: lower and narrower is a cheaper, steadier tracer.",
                Kind::Case1Box));
            out.push(fig(e, "case1-polygon", "Probe duration distribution, case 1 (thesis Fig 3.2)".into(),
                "Frequency polygon of the case-1 durations: how often each duration occurs, as a share of the calls of each tracer.",
                Kind::Case1Polygon));
        }
        if !r.runs.is_empty() {
            out.push(fig(e, "cases-box", "Probe duration per tracer, every case".into(),
                "Each case on its own axis: case 0 is the bare loop; cases 2 and 3 show what a dormant tracer and an inactive tracepoint cost.",
                Kind::CasesBox));
        }
    }
    let mut sweeps = Vec::new();
    for (e, r) in report.sweeps() {
        sweeps.push((e, r));
        let any = |space: Space| {
            sweep_runs(r, space)
                .iter()
                .any(|run| run.config.space() == space)
        };
        if any(Space::User) {
            out.push(fig(e, "user-box", "Wake-up latency, user-space tracing (thesis Fig 3.3)".into(),
                "Latency of the cyclic loop with no tracer and with its tracepoint traced by each tracer.",
                Kind::SweepBox(Space::User)));
        }
        if any(Space::Kernel) {
            out.push(fig(e, "kernel-box", "Wake-up latency, kernel-space tracing (thesis Fig 3.4)".into(),
                "Latency with sys_exit_clock_nanosleep traced in the kernel, next to no tracer and LTTng user space.",
                Kind::SweepBox(Space::Kernel)));
        }
        if !r.runs.is_empty() {
            out.push(fig(e, "histogram", "Wake-up latency histograms per configuration".into(),
                "Every configuration's latency histogram; the log count axis shows the rare long wake-ups.",
                Kind::SweepHistogram));
        }
    }
    if sweeps.len() >= 2 {
        let results: Vec<&SweepResult> = sweeps.iter().map(|(_, r)| *r).collect();
        if let Some(config) = common_config(&results) {
            out.push(Figure {
                file: format!("preemption-{config}-histogram.svg"),
                title: format!("Wake-up latency across kernels, {config} (thesis Fig 3.5)"),
                caption: "The same configuration on each kernel (e.g. PREEMPT vs PREEMPT_RT): where the curves part in the tail, one preemption model bounds latency more tightly.".into(),
                entries: sweeps.iter().map(|(e, _)| e.id.clone()).collect(),
                kind: Kind::Preemption(config),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::result::AnyResult;

    fn report() -> Report {
        Report::new([
            (None, AnyResult::Usdt(fixtures::usdt())),
            (
                None,
                AnyResult::Sweep(fixtures::sweep("PREEMPT_DYNAMIC (full)", 2)),
            ),
            (None, AnyResult::Sweep(fixtures::sweep("PREEMPT_RT", 1))),
        ])
    }

    #[test]
    fn every_thesis_figure_is_planned() {
        let files: Vec<String> = plan(&report()).into_iter().map(|f| f.file).collect();
        assert_eq!(
            files,
            [
                "usdt-case1-box.svg",
                "usdt-case1-polygon.svg",
                "usdt-cases-box.svg",
                "cyclictest-sweep-user-box.svg",
                "cyclictest-sweep-kernel-box.svg",
                "cyclictest-sweep-histogram.svg",
                "cyclictest-sweep-2-user-box.svg",
                "cyclictest-sweep-2-kernel-box.svg",
                "cyclictest-sweep-2-histogram.svg",
                "preemption-usdt-lttng-histogram.svg",
            ]
        );
    }

    #[test]
    fn figures_render_with_labelled_axes() {
        let report = report();
        for f in plan(&report) {
            let svg = f.render(&report).unwrap();
            assert!(svg.starts_with("<svg"), "{}", f.file);
            assert!(
                svg.contains(&f.title.replace('&', "&amp;")),
                "{}: title",
                f.file
            );
            assert!(
                svg.contains("(ns)") || svg.contains("(µs)"),
                "{}: unit",
                f.file
            );
        }
    }

    #[test]
    fn sweep_figures_pick_the_thesis_runs() {
        let r = fixtures::sweep("PREEMPT_RT", 1);
        let names = |s| {
            sweep_runs(&r, s)
                .iter()
                .map(|r| r.config.name())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(Space::User), ["none", "usdt-ftrace", "usdt-lttng"]);
        assert_eq!(
            names(Space::Kernel),
            ["none", "usdt-lttng", "kernel-ftrace"]
        );
        assert_eq!(common_config(&[&r, &r]), Some(Configuration::UsdtLttng));
    }
}
