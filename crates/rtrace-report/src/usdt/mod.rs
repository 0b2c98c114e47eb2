//! The usdt microbenchmark's section: Table 3.1 per hook kind, the per-thread split, the
//! percentiles and event accounting, how the numbers are made, the dormant cases, the ratios,
//! the reference comparisons, the per-hit cost by hook and, for `usdt --decompose`, where the
//! nanoseconds go.

pub mod hooks;
pub mod reference;
pub mod statistics;
pub mod table31;
pub mod threads;

use crate::doc::{columns, items, Block, Cell, Column, Section, Table};
use crate::format::{case0_ratio_value, int, listed, ns, run_tracer, trace_cell};
use crate::result::{Entry, Report};
use rtrace_measure::usdt::UsdtResult;

/// The microbenchmark, and its decomposition (`usdt --decompose`).
impl crate::result::Reported for UsdtResult {
    fn section(&self, e: &Entry, report: &Report) -> Section {
        let r = self;
        let decomposition = rtrace_measure::decompose::is_decomposition(r);
        let title = match (decomposition, r.config.spacing_us) {
            (true, _) => "per-hit cost decomposition (usdt --decompose)",
            (false, Some(_)) => "per-probe duration, hits after a sleep (usdt --spacing-us)",
            (false, None) => "per-probe duration",
        };
        let mut s = crate::doc::section(
            e,
            title,
            format!(
                "{} iterations per case (after {} warm-up{}){} on CPU {}; {}; {}. Durations in ns.",
                r.config.iterations,
                r.config.warmup,
                steady_state(r),
                match r.config.spacing_us {
                    Some(us) =>
                        format!(", each timed one after a {us} µs sleep (the probe's path cold)"),
                    None => String::new(),
                },
                r.config.run.cpu,
                e.kernel(),
                r.header.environment.cpu_model
            ),
            crate::summary::usdt(r),
            threads::note(r).map(|n| Block::Paragraph(format!("{n}."))),
        );
        for (title, t) in table31::tables(r) {
            s.table(title, t);
        }
        s.push(Block::Note(table31::NOTE.into()));
        if let Some(t) = threads::table(r) {
            s.table("Per loop thread", t);
        }
        s.table("Percentiles (ns) and event accounting", percentiles(r));
        if let Some(first) = r.runs.first() {
            s.push(Block::Paragraph(format!(
                "Timer overhead (empty timed interval): mean {} ns, min {} ns; TSC {:.3} GHz.",
                ns(first.timer_overhead.mean_ns),
                ns(first.timer_overhead.min_ns),
                first.tsc_hz / 1e9
            )));
        }
        s.list("How these numbers are made", items(statistics::method(r)));
        s.list(
            "Dormant cases against case 0 (95% CI over rounds)",
            items(statistics::dormant_lines(r)),
        );
        let ratios = crate::ratios::case1_vs_cheapest(r);
        if !ratios.is_empty() {
            s.push(Block::Heading(
                "Extra ns per hit relative to the cheapest tracer".into(),
            ));
            s.push(Block::Paragraph(format!(
                "{}:",
                crate::ratios::usdt_method(r)
            )));
            s.push(Block::List(items(ratios.iter().map(|r| r.sentence()))));
        }
        s.list("Reference comparisons (same run)", reference::items(r));
        hooks::push(&mut s, r);
        crate::decompose::push(&mut s, r, &crate::decompose::alone_beside(report, r));
        crate::doc::close(&mut s, e, &[], &r.config);
        s
    }

    fn cost_experiment(&self) -> Option<crate::cost::Experiment> {
        match rtrace_measure::decompose::is_decomposition(self) {
            true => Some(crate::cost::Experiment::Decompose),
            false => Some(crate::cost::Experiment::Usdt),
        }
    }

    fn costs(&self) -> Vec<crate::cost::Cost> {
        crate::consistency::sources::usdt(self)
    }
}

/// The percentile and event accounting table: a row per run, in run order; `trace data` is
/// what the tracer wrote (all rounds), `kept` marking data still on disk.
pub fn percentiles(r: &UsdtResult) -> Table {
    let mut cols = columns(&["tracer", "case", "count"]);
    cols.extend(
        ["p50", "p99", "p99.9", "p99.99", "mean w/o dist."].map(|n| Column::new(n).unit("ns")),
    );
    cols.extend(columns(&[
        "disturbed",
        "× case 0",
        "hits",
        "recorded",
        "lost",
    ]));
    cols.push(Column::new("trace data").unit("bytes"));
    let rows = r
        .runs
        .iter()
        .map(|c| {
            let s = &c.summary;
            let ev = |f: fn(&rtrace_measure::Events) -> u64| {
                Cell::or_missing(c.events.as_ref(), |e| Cell::count(f(e)))
            };
            vec![
                Cell::text(run_tracer(c)).flag_if(c.is_lossy()),
                Cell::count(c.case.number().into()),
                Cell::count(s.count),
                Cell::num(s.p50_ns, int(s.p50_ns)),
                Cell::num(s.p99_ns, int(s.p99_ns)),
                Cell::num(s.p999_ns, int(s.p999_ns)),
                Cell::num(s.p9999_ns, int(s.p9999_ns)),
                Cell::or_missing(c.disturbed, |d| Cell::num(d.mean_ns, ns(d.mean_ns))),
                Cell::or_missing(c.disturbed, |d| Cell::count(d.count)),
                Cell::or_missing(case0_ratio_value(r, c), |x| {
                    Cell::num(x, crate::format::dec2(x))
                }),
                ev(|e| e.hits),
                ev(|e| e.recorded),
                ev(|e| e.lost),
                trace_cell(c.trace_data),
            ]
        })
        .collect();
    Table::new("percentiles", 2, cols).rows(rows)
}

/// `--steady-state`: each column's warm-up that filled its buffer before timing: `; steady
/// state (Gebai): case 1 warmed up until its buffer wrapped, ftrace 300,000 (capacity ≤ 65,792),
/// …`; empty without it.
fn steady_state(r: &UsdtResult) -> String {
    let cols: Vec<String> = r
        .config
        .steady_state
        .iter()
        .map(|(col, s)| {
            format!(
                "{col} {} (its buffer holds ≤ {} events)",
                s.warmup, s.capacity_events
            )
        })
        .collect();
    let line = listed(cols, ", ", |l| {
        format!("; steady state (Gebai): case 1 warmed up until its buffer wrapped, {l}; the accounting counts those hits too")
    });
    line.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_run_with_its_trace_data() {
        let mut r = crate::fixtures::usdt();
        r.runs[1].trace_data = Some(rtrace_measure::trace_data::TraceData {
            bytes: 2_500_000,
            rounds: 2,
            kept: 0,
        });
        let t = percentiles(&r);
        assert_eq!(t.rows.len(), r.runs.len());
        assert!(t.rows.iter().all(|row| row.len() == t.columns.len()));
        let last = t.rows[1].last().unwrap();
        assert_eq!(
            (last.shown.as_str(), last.value),
            ("2.5 MB", crate::doc::Value::Count(2_500_000))
        );
        assert_eq!(t.rows[0].last().unwrap().shown, "-");
        assert!(t.rows[1][0].flagged, "ftrace case 1 lost events: flagged");
        assert_eq!(t.rows[1][0].shown, "ftrace [lossy]");
        assert_eq!(
            t.rows[1][3].value,
            crate::doc::Value::Number(r.runs[1].summary.p50_ns),
            "the full-precision value behind the rounded one"
        );
    }
}
