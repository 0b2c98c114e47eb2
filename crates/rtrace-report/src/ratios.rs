//! Ratios between runs with confidence intervals, for `compare` and the reports. usdt ratios
//! divide extra ns per hit (`rtrace_measure::probe_cost`), their intervals made over rounds;
//! sweep ratios divide latency statistics with a bootstrap over the histograms.

use crate::bootstrap::{self, Bootstrap, Interval, Statistic};
use crate::doc::{columns, Table};
use anyhow::{Context, Result};
use rtrace_measure::interval::{self, Estimate};
use rtrace_measure::probe_cost::{self, CostRatio};
use rtrace_measure::sweep::{Configuration, SweepResult};
use rtrace_measure::usdt::UsdtResult;
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

/// A ratio and its confidence interval (none from a single round).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratio {
    pub estimate: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Coverage of `low..high`, e.g. 0.95.
    pub confidence: f64,
    /// Independent rounds the interval is made of; `None` for a bootstrap over samples.
    pub rounds: Option<usize>,
}

impl From<Interval> for Ratio {
    fn from(i: Interval) -> Ratio {
        Ratio {
            estimate: i.estimate,
            low: Some(i.low),
            high: Some(i.high),
            confidence: i.confidence,
            rounds: None,
        }
    }
}

impl From<Estimate> for Ratio {
    fn from(e: Estimate) -> Ratio {
        Ratio {
            estimate: e.estimate,
            low: e.low,
            high: e.high,
            confidence: e.confidence,
            rounds: Some(e.rounds),
        }
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.low, self.high) {
            (Some(l), Some(h)) => write!(f, "{:.2}× ({l:.2}–{h:.2})", self.estimate),
            _ => write!(f, "{:.2}× (1 round: no interval)", self.estimate),
        }
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

    /// A ratio of two costs per hit.
    pub fn cost(c: &CostRatio) -> RatioRow {
        RatioRow {
            numerator: c.numerator.clone(),
            denominator: c.denominator.clone(),
            mean: c.mean.map(Ratio::from),
            median: c.median.map(Ratio::from),
        }
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
        .map_or(interval::CONFIDENCE, |r| r.confidence);
    let ci = format!("({:.0}% CI)", confidence * 100.0);
    let mut t = Table::new(
        "ratios",
        2,
        columns(&[
            "run",
            "relative to",
            &format!("mean ratio {ci}"),
            &format!("median ratio {ci}"),
        ]),
    );
    for r in rows {
        t.text_row(vec![
            r.numerator.clone(),
            r.denominator.clone(),
            r.mean.map_or("-".into(), |x| x.to_string()),
            r.median.map_or("-".into(), |x| x.to_string()),
        ]);
    }
    crate::doc::terminal::table::plain(&t)
}

/// B / A of the extra ns per hit of every case-1 run measured in both usdt results.
pub fn usdt_pairs(a: &UsdtResult, b: &UsdtResult) -> Vec<RatioRow> {
    probe_cost::across(a, b)
        .iter()
        .map(RatioRow::cost)
        .collect()
}

/// B / A for every (configuration, source) measured in both sweeps.
pub fn sweep_pairs(a: &SweepResult, b: &SweepResult) -> Result<Vec<RatioRow>> {
    a.runs
        .iter()
        .filter_map(|ra| {
            let rb = b.run(ra.config, ra.source)?;
            let name = format!("{}/{}", ra.config, ra.source);
            let (a_name, b_name) = (format!("A {name}"), format!("B {name}"));
            Some(RatioRow::of(b_name, &rb.histogram, a_name, &ra.histogram))
        })
        .collect()
}

/// Each tracer's extra ns per hit over the cheapest tracer's, as in the thesis' reading of
/// Table 3.1; empty with fewer than two traced runs that may enter ratios.
pub fn case1_vs_cheapest(r: &UsdtResult) -> Vec<RatioRow> {
    probe_cost::over_cheapest(r)
        .iter()
        .map(RatioRow::cost)
        .collect()
}

/// Every traced configuration over no tracer, each loop (source) against its own `none` run.
pub fn sweep_vs_none(r: &SweepResult) -> Result<Vec<RatioRow>> {
    r.runs
        .iter()
        .filter(|run| run.config != Configuration::None)
        .filter_map(|run| {
            let none = r.run(Configuration::None, run.source)?;
            Some(RatioRow::of(
                format!("{}/{}", run.config, run.source),
                &run.histogram,
                format!("none/{}", none.source),
                &none.histogram,
            ))
        })
        .collect()
}

/// How usdt ratios and their intervals are made, in one sentence.
pub fn usdt_method(r: &UsdtResult) -> String {
    let rounds = r.runs.first().map_or(0, |c| c.rounds.len().max(1));
    let intervals = interval::no_interval_reason(rounds)
        .unwrap_or_else(|| format!("{} ({rounds} rounds)", interval::METHOD));
    format!("{}; {intervals}", probe_cost::DEFINITION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, assert_has};

    #[test]
    fn case1_ratios_divide_extra_costs_with_an_interval_over_rounds() {
        let mut r = fixtures::usdt();
        let lossy = "the fixture's ftrace case 1 lost events: out of ratios";
        assert!(case1_vs_cheapest(&r).is_empty(), "{lossy}");
        r.config.allow_loss = true;
        let rows = case1_vs_cheapest(&r);
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(
            (&*row.numerator, &*row.denominator),
            ("ftrace case 1", "lttng case 1")
        );
        let mean = row.mean.unwrap();
        let (base, steady) = (r.runs[0].steady_mean_ns(), |i: usize| {
            r.runs[i].steady_mean_ns()
        });
        let exact = (steady(1) - base) / (steady(4) - base);
        assert!(
            (mean.estimate - exact).abs() / exact < 0.01,
            "{mean:?} vs {exact}"
        );
        assert_eq!(mean.rounds, Some(fixtures::ROUNDS as usize));
        assert!(mean.low.unwrap() < mean.estimate && mean.estimate < mean.high.unwrap());
        let s = row.sentence();
        assert!(
            s.starts_with("ftrace case 1 is ") && s.contains("lttng case 1 by mean"),
            "{s}"
        );
        assert!(table(&rows).contains("mean ratio (95% CI)"));
        assert_has(&usdt_method(&r), &["extra ns per hit", "4 rounds"]);
        // One round: no interval, and the ratio says why.
        let e = Estimate {
            estimate: 2.0,
            low: None,
            high: None,
            rounds: 1,
            confidence: 0.95,
        };
        assert_eq!(Ratio::from(e).to_string(), "2.00× (1 round: no interval)");
    }

    #[test]
    fn pairs_match_runs_of_both_results() {
        let (mut a, mut b) = (fixtures::usdt(), fixtures::usdt());
        let rows = usdt_pairs(&a, &b);
        assert_eq!(
            rows.len(),
            1,
            "lttng case 1: the lossy ftrace run stays out"
        );
        (a.config.allow_loss, b.config.allow_loss) = (true, true);
        let rows = usdt_pairs(&a, &b);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].numerator, "B lttng case 1");
        let one = rows[1].mean.unwrap();
        assert!((one.estimate - 1.0).abs() < 1e-9, "{one:?}");
        assert!(one.low.unwrap() < 1.0 && one.high.unwrap() > 1.0, "{one:?}");
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
        let user = ["usdt-ftrace/builtin", "usdt-lttng/builtin"];
        assert_eq!(names, [&user[..], &["kernel-ftrace/builtin"]].concat());
        assert_eq!(vs_none[0].denominator, "none/builtin");
    }
}
