//! The sweep table's one row model: the terminal, Markdown and HTML render these rows.

use crate::format::us;
use rtrace_measure::sweep::{Accounting, AccountingRule, SweepResult};

/// Column names, in order.
pub const HEADER: [&str; 16] = [
    "configuration",
    "source",
    "loops",
    "min",
    "mean",
    "p50",
    "p99",
    "p99.9",
    "p99.99",
    "max",
    "overflows",
    "hits",
    "recorded",
    "lost",
    "accounting",
    "trace data",
];

/// Leading text columns (left-aligned).
pub const TEXT_COLUMNS: usize = 2;

/// One (configuration, source) row: its cells (latencies in µs) and whether its accounting
/// failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub cells: Vec<String>,
    pub failed: bool,
}

/// `ok`, `ok (+3)` (events from outside the loop, kernel space) or `FAILED`; `-` untraced.
fn accounting_cell(a: Option<&Accounting>) -> String {
    match a.map(|a| (a.ok, a.rule, a.extra)) {
        None => "-".into(),
        Some((false, _, _)) => "FAILED".into(),
        Some((true, AccountingRule::Exact, _)) => "ok".into(),
        Some((true, AccountingRule::AtLeast, extra)) => format!("ok (+{extra})"),
    }
}

/// A row per run of `r`, in run order.
pub fn rows(r: &SweepResult) -> Vec<Row> {
    r.runs
        .iter()
        .map(|run| {
            let s = &run.latency;
            let acc = run.accounting.as_ref();
            let ev = |f: fn(&rtrace_measure::Events) -> u64| {
                acc.map_or("-".into(), |a| f(&a.events).to_string())
            };
            Row {
                cells: vec![
                    run.config.to_string(),
                    run.source.to_string(),
                    run.loops.to_string(),
                    us(s.min_ns),
                    us(s.mean_ns),
                    us(s.p50_ns),
                    us(s.p99_ns),
                    us(s.p999_ns),
                    us(s.p9999_ns),
                    us(s.max_ns),
                    run.overflows.to_string(),
                    ev(|e| e.hits),
                    ev(|e| e.recorded),
                    ev(|e| e.lost),
                    accounting_cell(acc),
                    crate::format::trace_cell(run.trace_data),
                ],
                failed: acc.is_some_and(|a| !a.ok),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn one_row_per_run_with_every_column() {
        let r = fixtures::sweep("PREEMPT_RT", 1);
        let rows = rows(&r);
        assert_eq!(rows.len(), r.runs.len());
        for row in &rows {
            assert_eq!(row.cells.len(), HEADER.len());
            assert!(row.cells.iter().all(|c| !c.is_empty()), "{row:?}");
        }
    }
}
