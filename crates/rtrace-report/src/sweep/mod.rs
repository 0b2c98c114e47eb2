//! The cyclictest sweep's section: per (configuration, source), the wake-up latency in µs and the
//! event accounting; what could not run; each configuration's shift against `none` beside the
//! per-hit cost of a `usdt` result of the same machine ([`shift`]); the ratios to no tracer.

pub mod shift;

use crate::doc::{columns, items, Block, Cell, Column, Section, Table};
use crate::format::{trace_cell, trace_data_line, us};
use crate::result::{Entry, Report};
use rtrace_measure::sweep::{Accounting, AccountingRule, Skipped, SweepResult};

/// The cyclictest sweep.
impl crate::result::Reported for SweepResult {
    fn section(&self, e: &Entry, report: &Report) -> Section {
        let r = self;
        // The usdt result it is compared with: the first plain one (not a decomposition, whose
        // runs are steps of a staircase) measured on the same machine (a per-hit cost from
        // another machine says nothing about this one).
        let usdt = report
            .plain_usdt_of(&r.header.environment)
            .first()
            .map(|&(_, u)| u);
        let c = &r.config;
        let mut s = crate::doc::section(
            e,
            "wake-up latency",
            format!(
                "{} loops every {} µs on CPU {} (main CPU {}), SCHED_FIFO {}; {}; {}. Latencies in µs; overflows: samples above {} µs.",
                c.loops, c.interval_us, c.run.cpu, c.main_cpu, c.run.priority.unwrap_or(0), e.kernel(),
                r.header.environment.cpu_model, c.histogram_limit_us
            ),
            crate::summary::sweep(r, usdt),
            Some(Block::Paragraph(format!("{}.", notes(r).join(". ")))),
        );
        let heading = "Latency per configuration (µs) and event accounting";
        s.table(heading, latency(r));
        skipped(&mut s, "Configurations unavailable here:", &r.unavailable);
        skipped(&mut s, "Runs that failed:", &r.failed);
        s.list("Runs retried once", items(r.retried.iter().cloned()));
        if let Some(t) = shift::table(r, usdt) {
            s.push(Block::Heading("Latency shift against `none`".into()));
            s.push(Block::Note(format!("{}.", shift::NOTE)));
            s.push(Block::Table(t));
        }
        match crate::ratios::sweep_vs_none(r) {
            Ok(rows) if rows.is_empty() => {}
            Ok(rows) => {
                s.push(Block::Heading("Latency relative to no tracer".into()));
                s.push(Block::Paragraph(
                    "Ratio of means and of medians (95% bootstrap confidence interval over the samples):"
                        .into(),
                ));
                s.push(Block::List(items(rows.iter().map(|r| r.sentence()))));
            }
            Err(err) => s.push(Block::Paragraph(format!(
                "No ratios to no tracer: {err:#}."
            ))),
        }
        crate::doc::close(&mut s, e, &[], &r.config);
        s
    }

    fn cost_experiment(&self) -> Option<crate::cost::Experiment> {
        Some(crate::cost::Experiment::Sweep)
    }

    fn costs(&self) -> Vec<crate::cost::Cost> {
        crate::consistency::sources::sweep(self)
    }
}

/// The sentences every sweep report states under its title: where the user-space probe fired,
/// and the trace data.
pub fn notes(r: &SweepResult) -> Vec<String> {
    let traced: Vec<(String, rtrace_measure::trace_data::TraceData)> = r
        .runs
        .iter()
        .filter_map(|run| Some((format!("{} {}", run.config, run.source), run.trace_data?)))
        .collect();
    let placement = match r.config.probe_at {
        Some(p) => format!("user-space probe placement `{}`: {}", p.name(), p.describe()),
        None => "user-space probe placement: after the latency was taken (a file of an older version: the probe's cost never entered a latency)".into(),
    };
    std::iter::once(placement)
        .chain(trace_data_line(&traced, r.config.run.keep_traces))
        .collect()
}

/// A paragraph `title` and a list of `list`; nothing when it is empty.
fn skipped(s: &mut Section, title: &str, list: &[Skipped]) {
    if list.is_empty() {
        return;
    }
    s.push(Block::Paragraph(title.into()));
    s.push(Block::List(items(list.iter().map(|k| {
        let src = k.source.map_or(String::new(), |s| format!(" ({s})"));
        format!("`{}`{src}: {}", k.config, k.reason)
    }))));
}

/// `ok`, `ok (+3)` (events from outside the loop, kernel space) or a flagged `FAILED`; `-`
/// untraced.
fn accounting_cell(a: Option<&Accounting>) -> Cell {
    match a.map(|a| (a.ok, a.rule, a.extra)) {
        None => Cell::missing(),
        Some((false, _, _)) => Cell::text("FAILED").flag(),
        Some((true, AccountingRule::Exact, _)) => Cell::text("ok"),
        Some((true, AccountingRule::AtLeast, extra)) => Cell::text(format!("ok (+{extra})")),
    }
}

/// The latency table: a row per (configuration, source) in run order, latencies in µs.
pub fn latency(r: &SweepResult) -> Table {
    let mut cols = columns(&["configuration", "source", "loops"]);
    cols.extend(
        ["min", "mean", "p50", "p99", "p99.9", "p99.99", "max"].map(|n| Column::new(n).unit("µs")),
    );
    cols.extend(columns(&[
        "overflows",
        "hits",
        "recorded",
        "lost",
        "accounting",
    ]));
    cols.push(Column::new("trace data").unit("bytes"));
    let rows = r
        .runs
        .iter()
        .map(|run| {
            let s = &run.latency;
            let acc = run.accounting.as_ref();
            let ev = |f: fn(&rtrace_measure::Events) -> u64| {
                Cell::or_missing(acc, |a| Cell::count(f(&a.events)))
            };
            let mut row = vec![
                Cell::text(run.config.to_string()),
                Cell::text(run.source.to_string()),
                Cell::count(run.loops),
            ];
            row.extend(
                [
                    s.min_ns, s.mean_ns, s.p50_ns, s.p99_ns, s.p999_ns, s.p9999_ns, s.max_ns,
                ]
                .map(|ns| Cell::num(ns / 1000.0, us(ns))),
            );
            row.extend([
                Cell::count(run.overflows),
                ev(|e| e.hits),
                ev(|e| e.recorded),
                ev(|e| e.lost),
                accounting_cell(acc),
                trace_cell(run.trace_data),
            ]);
            row
        })
        .collect();
    Table::new("latency", 2, cols).rows(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Value;

    #[test]
    fn one_row_per_run_with_every_column() {
        let mut r = crate::fixtures::sweep("PREEMPT_RT", 1);
        r.runs[1].accounting.as_mut().unwrap().ok = false;
        let t = latency(&r);
        assert_eq!(t.rows.len(), r.runs.len());
        for row in &t.rows {
            assert_eq!(row.len(), t.columns.len());
            assert!(row.iter().all(|c| !c.shown.is_empty()), "{row:?}");
        }
        let failed = &t.rows[1][14];
        assert!(failed.flagged && failed.shown == "FAILED", "{failed:?}");
        let mean = Value::Number(r.runs[0].latency.mean_ns / 1000.0);
        assert_eq!(t.rows[0][4].value, mean, "µs at full precision");
    }
}
