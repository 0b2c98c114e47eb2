//! Ratios between runs with bootstrap confidence intervals, for `compare` and the reports:
//! "ftrace case 1 is 3.21× (3.18–3.25) lttng case 1 by mean".

use crate::bootstrap::{self, Bootstrap, Interval, Statistic};
use crate::format::run_label;
use crate::table::Table;
use anyhow::{Context, Result};
use rtrace_measure::sweep::{Configuration, SweepResult};
use rtrace_measure::usdt::{Case, CaseResult, UsdtResult};
use serde::Serialize;

/// `numerator / denominator` by mean and by median.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioRow {
    pub numerator: String,
    pub denominator: String,
    /// `None` when a side is empty or zero.
    pub mean: Option<Ratio>,
    pub median: Option<Ratio>,
}

/// A ratio and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratio {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// Coverage of `low..high`, e.g. 0.95.
    pub confidence: f64,
}

impl From<Interval> for Ratio {
    fn from(i: Interval) -> Ratio {
        Ratio {
            estimate: i.estimate,
            low: i.low,
            high: i.high,
            confidence: i.confidence,
        }
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.2}× ({:.2}–{:.2})",
            self.estimate, self.low, self.high
        )
    }
}

impl RatioRow {
    /// Compares two encoded histograms: `num / den`.
    pub fn of(numerator: String, num: &str, denominator: String, den: &str) -> Result<RatioRow> {
        let weights = |h: &str| -> Result<Vec<(f64, f64)>> {
            Ok(bootstrap::weighted(
                &rtrace_protocol::decode_histogram(h).context("a histogram does not decode")?,
            ))
        };
        let (n, d) = (weights(num)?, weights(den)?);
        let both = [Statistic::Mean, Statistic::Median];
        let mut r = bootstrap::ratios(&n, &d, &both, Bootstrap::default()).into_iter();
        let mut next = || r.next().flatten().map(Ratio::from);
        Ok(RatioRow {
            numerator,
            denominator,
            mean: next(),
            median: next(),
        })
    }

    /// `ftrace case 1 is 3.21× (3.18–3.25) lttng case 1 by mean, 3.05× (3.04–3.06) by median`.
    pub fn sentence(&self) -> String {
        let part = |r: Option<Ratio>| r.map_or("-".into(), |r| r.to_string());
        format!(
            "{} is {} {} by mean, {} by median",
            self.numerator,
            part(self.mean),
            self.denominator,
            part(self.median)
        )
    }
}

/// A table of ratios with the interval's coverage in the header.
pub fn table(rows: &[RatioRow]) -> String {
    let confidence = rows
        .iter()
        .find_map(|r| r.mean.or(r.median))
        .map_or(Bootstrap::default().confidence, |r| r.confidence);
    let ci = format!("({:.0}% CI)", confidence * 100.0);
    let mut t = Table::new(
        &[
            "run",
            "relative to",
            &format!("mean ratio {ci}"),
            &format!("median ratio {ci}"),
        ],
        2,
    );
    for r in rows {
        t.row(vec![
            r.numerator.clone(),
            r.denominator.clone(),
            r.mean.map_or("-".into(), |x| x.to_string()),
            r.median.map_or("-".into(), |x| x.to_string()),
        ]);
    }
    t.render()
}

fn same_run(a: &CaseResult, b: &CaseResult) -> bool {
    a.tracer == b.tracer && a.variant == b.variant && a.case == b.case
}

/// B / A for every (tracer, variant, case) measured in both usdt results.
pub fn usdt_pairs(a: &UsdtResult, b: &UsdtResult) -> Result<Vec<RatioRow>> {
    a.runs
        .iter()
        .filter_map(|ra| b.runs.iter().find(|rb| same_run(ra, rb)).map(|rb| (ra, rb)))
        .map(|(ra, rb)| {
            let name = run_label(ra);
            RatioRow::of(
                format!("B {name}"),
                &rb.histogram,
                format!("A {name}"),
                &ra.histogram,
            )
        })
        .collect()
}

/// B / A for every (configuration, source) measured in both sweeps.
pub fn sweep_pairs(a: &SweepResult, b: &SweepResult) -> Result<Vec<RatioRow>> {
    a.runs
        .iter()
        .filter_map(|ra| b.run(ra.config, ra.source).map(|rb| (ra, rb)))
        .map(|(ra, rb)| {
            let name = format!("{}/{}", ra.config, ra.source);
            RatioRow::of(
                format!("B {name}"),
                &rb.histogram,
                format!("A {name}"),
                &ra.histogram,
            )
        })
        .collect()
}

/// Each tracer's case 1 over the cheapest tracer's case 1 (by mean), as in the thesis' reading
/// of Table 3.1; empty with fewer than two traced runs.
pub fn case1_vs_cheapest(r: &UsdtResult) -> Result<Vec<RatioRow>> {
    let traced: Vec<&CaseResult> = r.runs.iter().filter(|c| c.case == Case::Traced).collect();
    let Some(cheapest) = traced
        .iter()
        .min_by(|x, y| x.summary.mean_ns.total_cmp(&y.summary.mean_ns))
    else {
        return Ok(Vec::new());
    };
    traced
        .iter()
        .filter(|c| !same_run(c, cheapest))
        .map(|c| {
            RatioRow::of(
                run_label(c),
                &c.histogram,
                run_label(cheapest),
                &cheapest.histogram,
            )
        })
        .collect()
}

/// Every traced configuration over no tracer, each loop (source) against its own `none` run.
pub fn sweep_vs_none(r: &SweepResult) -> Result<Vec<RatioRow>> {
    r.runs
        .iter()
        .filter(|run| run.config != Configuration::None)
        .filter_map(|run| {
            r.run(Configuration::None, run.source)
                .map(|none| (run, none))
        })
        .map(|(run, none)| {
            RatioRow::of(
                format!("{}/{}", run.config, run.source),
                &run.histogram,
                format!("none/{}", none.source),
                &none.histogram,
            )
        })
        .collect()
}

/// The ratios a report shows for one result, with a heading that says what they compare.
pub fn of_entry(result: &crate::AnyResult) -> Result<(&'static str, Vec<RatioRow>)> {
    Ok(match result {
        crate::AnyResult::Usdt(r) => (
            "Case 1 relative to the cheapest tracer",
            case1_vs_cheapest(r)?,
        ),
        crate::AnyResult::Sweep(r) => ("Latency relative to no tracer", sweep_vs_none(r)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn case1_ratios_name_both_sides_with_an_interval() {
        let r = fixtures::usdt();
        let rows = case1_vs_cheapest(&r).unwrap();
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(
            (row.numerator.as_str(), row.denominator.as_str()),
            ("ftrace case 1", "lttng case 1")
        );
        let mean = row.mean.unwrap();
        let exact = r.runs[1].summary.mean_ns / r.runs[4].summary.mean_ns;
        assert!(
            (mean.estimate - exact).abs() / exact < 0.01,
            "{mean:?} vs {exact}"
        );
        assert!(mean.low < mean.estimate && mean.estimate < mean.high);
        let s = row.sentence();
        assert!(
            s.starts_with("ftrace case 1 is ") && s.contains("lttng case 1 by mean"),
            "{s}"
        );
        assert!(table(&rows).contains("mean ratio (95% CI)"));
    }

    #[test]
    fn pairs_match_runs_of_both_results() {
        let (a, b) = (fixtures::usdt(), fixtures::usdt());
        let rows = usdt_pairs(&a, &b).unwrap();
        assert_eq!(rows.len(), a.runs.len());
        let one = rows[1].mean.unwrap();
        assert!(
            (one.estimate - 1.0).abs() < 1e-9 && one.low < 1.0 && one.high > 1.0,
            "{one:?}"
        );
        let (sa, sb) = (
            fixtures::sweep("PREEMPT", 2),
            fixtures::sweep("PREEMPT_RT", 1),
        );
        let rows = sweep_pairs(&sa, &sb).unwrap();
        assert_eq!(rows[0].numerator, "B none/builtin");
        let half = rows[0].median.unwrap();
        assert!((half.estimate - 0.5).abs() < 0.02, "{half:?}");
        let vs_none = sweep_vs_none(&sa).unwrap();
        let names: Vec<&str> = vs_none.iter().map(|r| r.numerator.as_str()).collect();
        assert_eq!(
            names,
            [
                "usdt-ftrace/builtin",
                "usdt-lttng/builtin",
                "kernel-ftrace/builtin"
            ]
        );
        assert_eq!(vs_none[0].denominator, "none/builtin");
    }
}
