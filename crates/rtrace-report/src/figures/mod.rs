//! The figures of a report (thesis Figs 3.1–3.5), drawn with plotters' SVG backend. `plan` says
//! which figures the results allow; `Figure::render` draws one.

pub mod bars;
pub mod boxplot;
pub mod data;
mod events;
mod fleet;
pub mod lines;
mod npt;
mod rate;
mod staircase;
pub mod style;
mod sweep;
mod usdt;

use crate::result::{Entry, Report};
use anyhow::{Context, Result};
use boxplot::BoxSeries;
use data::BoxStats;
use hdrhistogram::Histogram;
use rtrace_measure::sweep::{Configuration, Source, Space, SweepResult};
use rtrace_measure::usdt::Case;
use rtrace_measure::usdt::{HookKind, UsdtResult};
use sweep::{common_config, latency_histograms, sweep_runs};
use usdt::{cases, picked, polygon, short, usdt_boxes, Pick};

const NS: f64 = 1.0;
const US: f64 = 1_000.0;

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Fig 3.1: case 1 per tracer.
    Case1Box(Pick),
    /// Every case of one hook kind, a panel each.
    CasesBox(HookKind),
    /// Fig 3.2: frequency polygon of case 1.
    Case1Polygon(Pick),
    /// Fig 3.3 (user space) or 3.4 (kernel space).
    SweepBox(Space),
    /// Latency histograms of one sweep, log count.
    SweepHistogram,
    /// Fig 3.5: one configuration across sweeps (e.g. PREEMPT vs PREEMPT_RT).
    Preemption(Configuration),
    /// The per-hit cost decomposition of one hook site (`usdt --decompose`).
    Staircase(HookKind),
    /// The loss curve of a rate result.
    LossCurve,
    /// The gap histograms of an npt result.
    NptGaps,
    /// The per-event costs of an events result, one workload.
    EventCosts(rtrace_measure::events::Workload),
    /// Per-hit cost on one hook kind by machine (the fleet).
    Fleet(HookKind),
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
    /// One of the fleet's figures: it goes to the fleet section.
    pub fn is_fleet(&self) -> bool {
        matches!(self.kind, Kind::Fleet(_))
    }

    /// The figure drawn, as the document shows it.
    pub fn draw(&self, report: &Report) -> Result<crate::doc::Figure> {
        let svg = self
            .render(report)
            .with_context(|| format!("cannot draw {}", self.file))?;
        Ok(crate::doc::Figure {
            file: self.file.clone(),
            title: self.title.clone(),
            caption: self.caption.clone(),
            svg,
        })
    }

    /// Draws the figure as an SVG document.
    pub fn render(&self, report: &Report) -> Result<String> {
        let entries: Vec<&Entry> = self
            .entries
            .iter()
            .filter_map(|id| report.entries.iter().find(|e| &e.id == id))
            .collect();
        let first = entries.first().map(|e| &e.result);
        let usdt = || model::<UsdtResult>(first, &self.file, "a usdt");
        let sweep = || model::<SweepResult>(first, &self.file, "a sweep");
        match &self.kind {
            Kind::Case1Box(pick) => boxplot::figure(
                style::SIZE,
                &self.title,
                "duration per call (ns)",
                &[(
                    String::new(),
                    usdt_boxes(*pick, &picked(usdt()?, *pick, Case::Traced))?,
                )],
                NS,
            ),
            Kind::CasesBox(hook) => {
                let r = usdt()?;
                let groups = cases(r)
                    .into_iter()
                    .map(|c| (c, picked(r, Pick::Hook(*hook), c)))
                    .filter(|(_, runs)| !runs.is_empty())
                    .map(|(c, runs)| {
                        Ok((
                            format!("case {}: {}", c.number(), short(c)),
                            usdt_boxes(Pick::Hook(*hook), &runs)?,
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
            Kind::Case1Polygon(pick) => {
                polygon(&self.title, *pick, &picked(usdt()?, *pick, Case::Traced))
            }
            Kind::LossCurve => rate::figure(&self.title, model(first, &self.file, "a rate")?),
            Kind::NptGaps => npt::figure(&self.title, model(first, &self.file, "an npt")?),
            Kind::EventCosts(w) => {
                events::figure(&self.title, model(first, &self.file, "an events")?, *w)
            }
            Kind::Fleet(hook) => {
                let fleet = crate::fleet::of(report).context("results of one machine")?;
                fleet::figure(&self.title, &fleet, *hook)
            }
            Kind::Staircase(hook) => {
                let stairs: Vec<_> = rtrace_measure::decompose::staircases(usdt()?)
                    .into_iter()
                    .filter(|s| s.hook == *hook)
                    .collect();
                staircase::figure(&self.title, &stairs)
            }
            Kind::SweepBox(space) => {
                let runs = sweep_runs(sweep()?, *space);
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
                let runs = (sweep()?.runs.iter()).filter(|run| run.source == Source::Builtin);
                let series = runs
                    .clone()
                    .map(|run| (run.config.to_string(), run.histogram.as_str()))
                    .collect();
                let colours = runs.map(|run| style::config_colour(run.config)).collect();
                latency_histograms(&self.title, series, colours)
            }
            Kind::Preemption(config) => {
                let series: Vec<(String, &str)> = (entries.iter())
                    .filter_map(|e| {
                        let run = e
                            .result
                            .get::<SweepResult>()?
                            .run(*config, Source::Builtin)?;
                        Some((format!("{} ({})", e.kernel(), e.id), run.histogram.as_str()))
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
        }
    }
}

/// The result as model `R`; an error naming the figure (`file`) and `what` it needs otherwise.
fn model<'a, R: crate::result::Reported>(
    r: Option<&'a crate::result::AnyResult>,
    file: &str,
    what: &str,
) -> Result<&'a R> {
    r.and_then(|r| r.get())
        .with_context(|| format!("{file} needs {what} result"))
}

fn decode(h: &str) -> Result<Histogram<u64>> {
    rtrace_protocol::decode_histogram(h).context("a histogram in the result file does not decode")
}

fn box_stats(h: &str) -> Result<BoxStats> {
    BoxStats::of(&decode(h)?).context("empty histogram")
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
        let start = out.len();
        // A decomposition's runs are steps (ftrace with tracing off, eBPF's floor), not the
        // thesis' tracers: its figures are the staircases and every step side by side.
        let thesis = if rtrace_measure::decompose::is_decomposition(r) {
            Vec::new()
        } else {
            picked(r, Pick::Thesis, Case::Traced)
        };
        if !thesis.is_empty() {
            out.push(fig(e, "case1-box", "Probe duration per tracer, case 1 (thesis Fig 3.1)".into(),
                "Per-call duration of the traced probe (case 1) for the thesis' tracers as it ran them on the USDT probe (ftrace; bpftrace's printf, which it calls eBPF, §3.2.2; LTTng's tracef) and our libbpf eBPF beside them: lower and narrower is a cheaper, steadier tracer.",
                Kind::Case1Box(Pick::Thesis)));
            out.push(fig(e, "case1-polygon", "Probe duration distribution, case 1 (thesis Fig 3.2)".into(),
                "Frequency polygon of the case-1 durations: how often each duration occurs, as a share of the calls of each tracer (the thesis' tracers as it ran them, our libbpf eBPF beside them).",
                Kind::Case1Polygon(Pick::Thesis)));
        }
        let measured = |h: &HookKind| r.runs.iter().any(|c| c.hook_kind == *h);
        for h in HookKind::ALL.into_iter().filter(measured) {
            let all = picked(r, Pick::Hook(h), Case::Traced);
            let same = all.len() == thesis.len()
                && all.iter().zip(&thesis).all(|(a, b)| std::ptr::eq(*a, *b));
            let name = |what: &str| match h {
                HookKind::Usdt => what.to_owned(),
                _ => format!("{what}-{h}"),
            };
            if !all.is_empty() && !same {
                out.push(fig(e, &name("case1-box-all"), format!("Probe duration, case 1, every tracer and mode ({h} hook)"),
                    "Per-call duration of the traced probe for every tracer and mode on this hook; a log axis when they span more than 10×.",
                    Kind::Case1Box(Pick::Hook(h))));
                out.push(fig(e, &name("case1-polygon-all"), format!("Probe duration distribution, case 1, every tracer and mode ({h} hook)"),
                    "Frequency polygon of the case-1 durations of every tracer and mode on this hook.",
                    Kind::Case1Polygon(Pick::Hook(h))));
            }
            out.push(fig(e, &name("cases-box"), format!("Probe duration per tracer, every case ({h} hook)"),
                "Each case on its own axis: case 0 is the bare loop; cases 2 and 3 show what a dormant tracer and an inactive tracepoint cost.",
                Kind::CasesBox(h)));
            if rtrace_measure::decompose::staircases(r)
                .iter()
                .any(|s| s.hook == h)
            {
                out.push(fig(e, &format!("staircase-{h}"), format!("Where the nanoseconds go: per-hit cost, step by step ({h} hook)"),
                    "Each path from its floor up to one full configuration, each step adding one mechanism (see the table): a bar spans from the step below to this step, the number is what the step adds, the whisker the step's 95% interval.",
                    Kind::Staircase(h)));
            }
        }
        // A usdt --spacing-us result's figures say so: the same titles would read as the hot
        // loop's.
        if let Some(us) = r.config.spacing_us {
            for f in &mut out[start..] {
                f.title
                    .push_str(&format!(", each hit after a {us} µs sleep"));
            }
        }
    }
    let sweeps: Vec<_> = report.sweeps().collect();
    for &(e, r) in &sweeps {
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
    for e in &report.entries {
        let rate = e.result.get::<rtrace_measure::rate::RateResult>();
        if rate.is_some_and(|r| !r.searches.is_empty()) {
            out.push(fig(e, "loss-curve", "Events lost against the event rate".into(),
                "The share of events each tracer and buffer size lost at each rate it was driven at (log axis); the thick tick on the axis marks its highest lossless rate.",
                Kind::LossCurve));
        }
        if let Some(r) = e.result.get::<rtrace_measure::events::EventsResult>() {
            for w in r.workloads() {
                if r.cells
                    .iter()
                    .any(|c| c.workload == w && r.cost(c).is_some())
                {
                    let slug = match w {
                        rtrace_measure::events::Workload::Loop => "costs",
                        rtrace_measure::events::Workload::Dd => "costs-dd",
                    };
                    out.push(fig(e, slug, format!("Per-event cost of tracer features (Gregg's benchmark), {}", w.name()),
                        "Each tracer's cost per traced read for every experiment that ran here (log axis; whiskers: 95% interval over rounds); the black bar is Piotrowski's bpftrace 0.17 number on a Xeon Gold 6226R (Linux 5.4, dd), whose experiments 8-18 hook kprobe:vfs_read (on a kernel without kprobes, ours hook the read syscall's tracepoint).",
                        Kind::EventCosts(w)));
                }
            }
        }
        let npt = e.result.get::<rtrace_measure::npt::NptResult>();
        if npt.is_some_and(|r| !r.runs.is_empty()) {
            out.push(fig(e, "gaps", "npt: gaps of a tight loop, with and without tracing".into(),
                "How often each gap length occurred (log count axis) while the loop ran with no tracer and with each tracer consuming its events: the loop's own gap is the first bin; everything to its right took the CPU away from it.",
                Kind::NptGaps));
        }
    }
    if let Some(fleet) = crate::fleet::of(report).filter(|f| f.row_names().len() >= 2) {
        let usdt: Vec<String> = report.usdt().map(|(e, _)| e.id.clone()).collect();
        for hook in fleet.hooks() {
            out.push(Figure {
                file: format!("fleet-{hook}.svg"),
                title: format!("Per-hit cost by machine ({hook} hook)"),
                caption: "Each tracer and mode's per-hit cost on every machine of the fleet (a machine's repeats beside it), log axis, whiskers the 95% interval over rounds: the numbers of the fleet's tables.".into(),
                entries: usdt.clone(),
                kind: Kind::Fleet(hook),
            });
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

    #[test]
    fn a_spaced_usdt_result_s_figures_say_their_hits_came_after_a_sleep() {
        let hot = plan(&Report::one(fixtures::usdt().into()));
        let mut r = fixtures::usdt();
        r.config.spacing_us = Some(30);
        let spaced = plan(&Report::one(r.into()));
        assert_eq!(hot.len(), spaced.len());
        for (h, s) in hot.iter().zip(&spaced) {
            assert!(!h.title.contains("sleep"), "{}", h.title);
            assert_eq!(
                s.title,
                format!("{}, each hit after a 30 µs sleep", h.title)
            );
        }
    }

    #[test]
    fn every_thesis_figure_is_planned_and_renders_with_labelled_axes() {
        let report = fixtures::report();
        let plan = plan(&report);
        let files: Vec<&str> = plan.iter().map(|f| f.file.as_str()).collect();
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
        for f in plan {
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
