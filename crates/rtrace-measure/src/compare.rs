//! Overlaying two sweeps (`rtrace-bench compare A.json B.json`, e.g. PREEMPT vs PREEMPT_RT as in
//! the thesis' Fig 3.5): per-statistic differences B − A for every (configuration, source)
//! measured in both.

use crate::sweep::{Configuration, Source, SweepResult, SweepRun};
use crate::Summary;
use serde::{Deserialize, Serialize};

/// A statistic of a latency summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    Min,
    Mean,
    P50,
    P99,
    P999,
    P9999,
    Max,
}

impl Stat {
    pub const ALL: [Stat; 7] = [
        Stat::Min,
        Stat::Mean,
        Stat::P50,
        Stat::P99,
        Stat::P999,
        Stat::P9999,
        Stat::Max,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stat::Min => "min",
            Stat::Mean => "mean",
            Stat::P50 => "p50",
            Stat::P99 => "p99",
            Stat::P999 => "p99.9",
            Stat::P9999 => "p99.99",
            Stat::Max => "max",
        }
    }

    pub fn of(self, s: &Summary) -> f64 {
        match self {
            Stat::Min => s.min_ns,
            Stat::Mean => s.mean_ns,
            Stat::P50 => s.p50_ns,
            Stat::P99 => s.p99_ns,
            Stat::P999 => s.p999_ns,
            Stat::P9999 => s.p9999_ns,
            Stat::Max => s.max_ns,
        }
    }
}

/// One statistic in A and B (ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StatDiff {
    pub stat: Stat,
    pub a_ns: f64,
    pub b_ns: f64,
    /// B − A.
    pub diff_ns: f64,
    /// B / A; `None` when A is 0.
    pub ratio: Option<f64>,
}

impl StatDiff {
    pub fn new(stat: Stat, a: &Summary, b: &Summary) -> StatDiff {
        let (a_ns, b_ns) = (stat.of(a), stat.of(b));
        StatDiff {
            stat,
            a_ns,
            b_ns,
            diff_ns: b_ns - a_ns,
            ratio: (a_ns != 0.0).then(|| b_ns / a_ns),
        }
    }
}

/// A (configuration, source) measured in both sweeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairDiff {
    pub config: Configuration,
    pub source: Source,
    pub stats: Vec<StatDiff>,
    pub a_overflows: u64,
    pub b_overflows: u64,
}

/// What identifies one side of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// The result file.
    pub file: String,
    pub kernel_release: String,
    pub preemption: String,
    pub loops: u64,
    pub interval_us: u64,
    pub started_unix: u64,
}

/// The comparison of two sweeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    /// In A's run order.
    pub pairs: Vec<PairDiff>,
    /// `config/source` measured only in A, only in B.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// Differences in settings or data quality that make the numbers less comparable.
    pub warnings: Vec<String>,
}

fn side(file: &str, r: &SweepResult) -> Side {
    Side {
        file: file.to_owned(),
        kernel_release: r.header.environment.kernel_release.clone(),
        preemption: r.header.environment.preemption.clone(),
        loops: r.config.loops,
        interval_us: r.config.interval_us,
        started_unix: r.header.started_unix,
    }
}

fn key(r: &SweepRun) -> String {
    format!("{}/{}", r.config, r.source)
}

/// Compares sweep `b` against sweep `a`.
pub fn compare(a_file: &str, a: &SweepResult, b_file: &str, b: &SweepResult) -> Comparison {
    let mut pairs = Vec::new();
    let mut only_a = Vec::new();
    let mut warnings = Vec::new();
    for ra in &a.runs {
        let Some(rb) = b.run(ra.config, ra.source) else {
            only_a.push(key(ra));
            continue;
        };
        pairs.push(PairDiff {
            config: ra.config,
            source: ra.source,
            stats: Stat::ALL
                .into_iter()
                .map(|s| StatDiff::new(s, &ra.latency, &rb.latency))
                .collect(),
            a_overflows: ra.overflows,
            b_overflows: rb.overflows,
        });
        for (name, r) in [("A", ra), ("B", rb)] {
            if r.overflows > 0 {
                warnings.push(format!(
                    "{name} {}: {} samples overflowed the histogram limit; its tail percentiles are upper bounds for cyclictest, exact for the built-in loop",
                    key(r),
                    r.overflows
                ));
            }
            if let Some(acc) = r.accounting.as_ref().filter(|a| !a.ok) {
                warnings.push(format!(
                    "{name} {}: event accounting failed ({}): the tracer did not see every event",
                    key(r),
                    acc.error.as_deref().unwrap_or("mismatch")
                ));
            }
        }
    }
    let only_b = b
        .runs
        .iter()
        .filter(|rb| a.run(rb.config, rb.source).is_none())
        .map(key)
        .collect();
    let mut differ = |what: &str, setting: fn(&SweepResult) -> String| {
        let (x, y) = (setting(a), setting(b));
        if x != y {
            warnings.push(format!(
                "A and B differ in {what} ({x} vs {y}): the differences mix that in"
            ));
        }
    };
    differ("--interval-us", |r| r.config.interval_us.to_string());
    differ("--loops", |r| r.config.loops.to_string());
    differ("--priority", |r| format!("{:?}", r.config.run.priority));
    differ("--histogram-us", |r| {
        r.config.histogram_limit_us.to_string()
    });
    differ("CPU model", |r| r.header.environment.cpu_model.clone());
    Comparison {
        a: side(a_file, a),
        b: side(b_file, b),
        pairs,
        only_a,
        only_b,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::SweepRun;
    use crate::testing::{summary, sweep};
    use rtrace_tracer::TracerKind;
    use Configuration::{KernelFtrace, UsdtLttng};
    use Source::{Builtin, Cyclictest};
    use Stat::{Max, Min, P99};

    fn run(config: Configuration, source: Source, base: f64) -> SweepRun {
        SweepRun {
            tracer: TracerKind::None,
            ..crate::testing::sweep_run(config, source, summary(base))
        }
    }

    #[test]
    fn differences_are_b_minus_a_per_statistic() {
        let a = sweep(200, vec![run(Configuration::None, Builtin, 1000.0)]);
        let b = sweep(200, vec![run(Configuration::None, Builtin, 1500.0)]);
        let c = compare("a.json", &a, "b.json", &b);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(c.pairs.len(), 1);
        let stats = &c.pairs[0].stats;
        assert_eq!(stats.len(), Stat::ALL.len());
        let p99 = stats.iter().find(|s| s.stat == P99).unwrap();
        assert_eq!((p99.a_ns, p99.b_ns, p99.diff_ns), (5000.0, 7500.0, 2500.0));
        assert_eq!(p99.ratio, Some(1.5));
        let max = stats.iter().find(|s| s.stat == Max).unwrap();
        assert_eq!(max.diff_ns, 5000.0);
    }

    #[test]
    fn unmatched_runs_are_listed_and_setting_changes_warned() {
        let none = || run(Configuration::None, Builtin, 1000.0);
        let a = sweep(200, vec![none(), run(KernelFtrace, Cyclictest, 1000.0)]);
        let b = sweep(30, vec![none(), run(UsdtLttng, Builtin, 1000.0)]);
        let c = compare("a", &a, "b", &b);
        assert_eq!(c.only_a, vec!["kernel-ftrace/cyclictest".to_string()]);
        assert_eq!(c.only_b, vec!["usdt-lttng/builtin".to_string()]);
        let w = &c.warnings;
        assert!(w.iter().any(|w| w.contains("--interval-us")), "{w:?}");
    }

    #[test]
    fn zero_baseline_has_no_ratio() {
        let mut a = summary(0.0);
        a.max_ns = 0.0;
        let d = StatDiff::new(Min, &a, &summary(10.0));
        assert_eq!((d.diff_ns, d.ratio), (10.0, None));
    }
}
