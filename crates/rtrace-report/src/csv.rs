//! `results.csv`: one row per usdt (tracer, case) and per sweep (configuration, source), with
//! every summary statistic in ns at full precision and the event accounting.

use crate::export::{Exporter, Output};
use crate::result::{AnyResult, Report};
use anyhow::Result;
use rtrace_measure::disturbed::Disturbed;
use rtrace_measure::{Events, Summary};

/// The columns, in order.
pub const HEADER: [&str; 25] = [
    "result",
    "experiment",
    "kernel",
    "preemption",
    "tracer",
    "variant",
    "case",
    "configuration",
    "source",
    "count",
    "min_ns",
    "max_ns",
    "mean_ns",
    "stddev_ns",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "p9999_ns",
    "hits",
    "recorded",
    "lost",
    "overflows",
    "mean_without_disturbed_ns",
    "disturbed",
    "lossy",
];

/// What differs between the experiments' rows.
struct Row<'a> {
    tracer: String,
    variant: Option<&'a str>,
    case: Option<u8>,
    configuration: Option<String>,
    source: Option<String>,
    summary: &'a Summary,
    events: Option<&'a Events>,
    overflows: Option<u64>,
    disturbed: Option<Disturbed>,
    /// A case-1 run that lost events (left out of ratios unless `--allow-loss`).
    lossy: Option<bool>,
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// The CSV file.
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, report: &Report) -> Result<Vec<Output>> {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER)?;
        for e in &report.entries {
            let rows: Vec<Row> = match &e.result {
                AnyResult::Usdt(r) => r
                    .runs
                    .iter()
                    .map(|c| Row {
                        tracer: c.tracer.to_string(),
                        variant: c.variant.as_deref(),
                        case: Some(c.case.number()),
                        configuration: None,
                        source: None,
                        summary: &c.summary,
                        events: c.events.as_ref(),
                        overflows: None,
                        disturbed: c.disturbed,
                        lossy: Some(c.is_lossy()),
                    })
                    .collect(),
                AnyResult::Sweep(r) => r
                    .runs
                    .iter()
                    .map(|run| Row {
                        tracer: run.tracer.to_string(),
                        variant: None,
                        case: None,
                        configuration: Some(run.config.to_string()),
                        source: Some(run.source.to_string()),
                        summary: &run.latency,
                        events: run.accounting.as_ref().map(|a| &a.events),
                        overflows: Some(run.overflows),
                        disturbed: None,
                        lossy: None,
                    })
                    .collect(),
                // Rate results have no latency summary: their points are in rate.json.
                AnyResult::Rate(_) | AnyResult::Npt(_) | AnyResult::Events(_) => Vec::new(),
            };
            let env = e.result.environment();
            for row in rows {
                let s = row.summary;
                w.write_record([
                    e.id.clone(),
                    e.result.experiment().to_owned(),
                    env.kernel_release.clone(),
                    env.preemption.clone(),
                    row.tracer,
                    opt(row.variant),
                    opt(row.case),
                    opt(row.configuration),
                    opt(row.source),
                    s.count.to_string(),
                    s.min_ns.to_string(),
                    s.max_ns.to_string(),
                    s.mean_ns.to_string(),
                    s.stddev_ns.to_string(),
                    s.p50_ns.to_string(),
                    s.p99_ns.to_string(),
                    s.p999_ns.to_string(),
                    s.p9999_ns.to_string(),
                    opt(row.events.map(|e| e.hits)),
                    opt(row.events.map(|e| e.recorded)),
                    opt(row.events.map(|e| e.lost)),
                    opt(row.overflows),
                    opt(row.disturbed.map(|d| d.mean_ns)),
                    opt(row.disturbed.map(|d| d.count)),
                    opt(row.lossy),
                ])?;
            }
        }
        Ok(vec![Output::new("results.csv", w.into_inner()?)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_run_with_exact_numbers() {
        let u = crate::fixtures::usdt();
        let s = crate::fixtures::sweep("PREEMPT_RT", 1);
        let report = Report::new([
            (None, AnyResult::Usdt(u.clone())),
            (None, AnyResult::Sweep(s.clone())),
        ]);
        let bytes = Csv.export(&report).unwrap().remove(0).bytes;
        let mut r = ::csv::Reader::from_reader(bytes.as_slice());
        assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>(), HEADER);
        let rows: Vec<::csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), u.runs.len() + s.runs.len());
        let mean: f64 = rows[1][12].parse().unwrap();
        assert_eq!(mean, u.runs[1].summary.mean_ns);
        assert_eq!(&rows[1][4], "ftrace");
        assert_eq!(&rows[1][6], "1");
        assert_eq!(
            &rows[1][24], "true",
            "the fixture's ftrace case 1 lost events"
        );
        assert_eq!(&rows[0][24], "false");
        let steady: f64 = rows[1][22].parse().unwrap();
        assert_eq!(steady, u.runs[1].steady_mean_ns());
        let last = rows.last().unwrap();
        assert_eq!(&last[1], "cyclictest-sweep");
        assert_eq!(&last[8], "cyclictest");
        assert_eq!(&last[6], "", "sweeps have no case");
    }
}
