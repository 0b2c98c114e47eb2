//! The usdt percentile and accounting table's one row model: Markdown and HTML render these
//! rows (the terminal has its own, narrower table).

use crate::format::{case0_ratio, int, run_tracer, steady, trace_cell};
use rtrace_measure::usdt::UsdtResult;

/// Column names, in order.
pub const HEADER: [&str; 14] = [
    "tracer",
    "case",
    "count",
    "p50",
    "p99",
    "p99.9",
    "p99.99",
    "mean w/o dist.",
    "disturbed",
    "× case 0",
    "hits",
    "recorded",
    "lost",
    "trace data",
];

/// Leading text columns (left-aligned).
pub const TEXT_COLUMNS: usize = 2;

/// A row per run of `r`, in run order; `trace data` is what the tracer wrote (all rounds),
/// `kept` marking data still on disk.
pub fn rows(r: &UsdtResult) -> Vec<Vec<String>> {
    r.runs
        .iter()
        .map(|c| {
            let s = &c.summary;
            let ev = |f: fn(&rtrace_measure::Events) -> u64| {
                c.events.as_ref().map_or("-".into(), |e| f(e).to_string())
            };
            vec![
                run_tracer(c),
                c.case.number().to_string(),
                s.count.to_string(),
                int(s.p50_ns),
                int(s.p99_ns),
                int(s.p999_ns),
                int(s.p9999_ns),
                steady(c)[0].clone(),
                steady(c)[1].clone(),
                case0_ratio(r, c),
                ev(|e| e.hits),
                ev(|e| e.recorded),
                ev(|e| e.lost),
                trace_cell(c.trace_data),
            ]
        })
        .collect()
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
        let rows = rows(&r);
        assert_eq!(rows.len(), r.runs.len());
        assert!(rows.iter().all(|row| row.len() == HEADER.len()));
        assert_eq!(rows[1].last().unwrap(), "2.5 MB");
        assert_eq!(rows[0].last().unwrap(), "-");
    }
}
