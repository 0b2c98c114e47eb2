//! Ratios of two distributions with a bootstrap confidence interval, straight from the
//! histograms: "ftrace case 1 is 3.2× (3.1–3.3) LTTng case 1".
//!
//! A histogram of N samples is resampled with the Poisson bootstrap: every recorded value keeps
//! its value and gets a Poisson(count) weight, which is N independent Poisson(1) weights summed.
//! That costs one draw per distinct value instead of one per sample (10⁷ in the thesis).

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Poisson};

/// Which statistic a ratio compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    Mean,
    Median,
}

impl Statistic {
    /// The statistic of weighted values sorted by value; `None` without weight.
    pub fn of(self, values: &[(f64, f64)]) -> Option<f64> {
        let total: f64 = values.iter().map(|v| v.1).sum();
        if total <= 0.0 {
            return None;
        }
        match self {
            Statistic::Mean => Some(values.iter().map(|(v, w)| v * w).sum::<f64>() / total),
            Statistic::Median => {
                let mut seen = 0.0;
                values.iter().find_map(|&(v, w)| {
                    seen += w;
                    (seen >= total / 2.0).then_some(v)
                })
            }
        }
    }
}

/// How to bootstrap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    /// Resamples drawn.
    pub replicates: usize,
    /// Coverage of the interval, e.g. 0.95.
    pub confidence: f64,
    /// Seed of the generator: the same input gives the same interval.
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Bootstrap {
        Bootstrap {
            replicates: 1000,
            confidence: 0.95,
            seed: 0x7274_7261_6365,
        }
    }
}

/// A point estimate and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
}

/// The distinct values of `h` with their counts, sorted by value.
pub fn weighted(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    h.iter_recorded()
        .map(|v| {
            (
                h.median_equivalent(v.value_iterated_to()) as f64,
                v.count_at_value() as f64,
            )
        })
        .collect()
}

fn resample(values: &[(f64, f64)], rng: &mut impl Rng) -> Vec<(f64, f64)> {
    values
        .iter()
        .map(|&(v, n)| {
            let w = Poisson::new(n).map_or(0.0, |p| p.sample(rng));
            (v, w)
        })
        .collect()
}

/// The `q` quantile of sorted `xs` (nearest rank).
fn quantile(xs: &[f64], q: f64) -> f64 {
    let i = ((xs.len() as f64 - 1.0) * q).round() as usize;
    xs[i.min(xs.len() - 1)]
}

/// `stat(a) / stat(b)` for each of `stats` with a percentile bootstrap interval, from the same
/// resamples; `None` when either side is empty or `stat(b)` is 0.
pub fn ratios(
    a: &[(f64, f64)],
    b: &[(f64, f64)],
    stats: &[Statistic],
    how: Bootstrap,
) -> Vec<Option<Interval>> {
    let ratio_of = |stat: Statistic, a: &[(f64, f64)], b: &[(f64, f64)]| {
        let (x, y) = (stat.of(a)?, stat.of(b)?);
        (y != 0.0).then(|| x / y)
    };
    let mut reps: Vec<Vec<f64>> = vec![Vec::with_capacity(how.replicates); stats.len()];
    let mut rng = SmallRng::seed_from_u64(how.seed);
    for _ in 0..how.replicates {
        let (ra, rb) = (resample(a, &mut rng), resample(b, &mut rng));
        for (i, &stat) in stats.iter().enumerate() {
            reps[i].extend(ratio_of(stat, &ra, &rb));
        }
    }
    let tail = (1.0 - how.confidence) / 2.0;
    stats
        .iter()
        .zip(reps)
        .map(|(&stat, mut reps)| {
            let estimate = ratio_of(stat, a, b)?;
            if reps.is_empty() {
                return None;
            }
            reps.sort_by(f64::total_cmp);
            Some(Interval {
                estimate,
                low: quantile(&reps, tail),
                high: quantile(&reps, 1.0 - tail),
                confidence: how.confidence,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio(
        a: &[(f64, f64)],
        b: &[(f64, f64)],
        stat: Statistic,
        how: Bootstrap,
    ) -> Option<Interval> {
        ratios(a, b, &[stat], how).remove(0)
    }

    /// `n` samples per value of `values`.
    fn flat(values: &[f64], n: f64) -> Vec<(f64, f64)> {
        values.iter().map(|&v| (v, n)).collect()
    }

    #[test]
    fn statistics_of_weighted_values() {
        let v = [(1.0, 1.0), (2.0, 1.0), (10.0, 2.0)];
        assert_eq!(Statistic::Mean.of(&v), Some(5.75));
        assert_eq!(Statistic::Median.of(&v), Some(2.0));
        assert_eq!(Statistic::Mean.of(&[]), None);
    }

    #[test]
    fn a_scaled_distribution_has_its_scale_inside_a_narrow_interval() {
        let b = flat(&[100.0, 110.0, 120.0, 130.0, 500.0], 2_000.0);
        let a: Vec<(f64, f64)> = b.iter().map(|&(v, n)| (v * 3.0, n)).collect();
        for stat in [Statistic::Mean, Statistic::Median] {
            let r = ratio(&a, &b, stat, Bootstrap::default()).unwrap();
            assert!((r.estimate - 3.0).abs() < 1e-9, "{stat:?} {r:?}");
            assert!(
                r.low <= r.estimate && r.estimate <= r.high,
                "{stat:?} {r:?}"
            );
            assert!(r.high - r.low < 0.2, "{stat:?} too wide: {r:?}");
        }
    }

    #[test]
    fn more_samples_give_a_narrower_interval() {
        let width = |n: f64| {
            let a = flat(&[10.0, 20.0, 30.0, 40.0], n);
            let b = flat(&[10.0, 15.0, 20.0, 25.0], n);
            let r = ratio(&a, &b, Statistic::Mean, Bootstrap::default()).unwrap();
            assert!((r.estimate - 25.0 / 17.5).abs() < 1e-9);
            r.high - r.low
        };
        let (small, large) = (width(25.0), width(25_000.0));
        assert!(large < small / 10.0, "{small} vs {large}");
    }

    #[test]
    fn the_interval_covers_the_truth_of_a_noisy_sample() {
        // Two samples of the same distribution: the ratio's interval must contain 1.
        let a = [(10.0, 480.0), (11.0, 520.0), (50.0, 9.0)];
        let b = [(10.0, 505.0), (11.0, 495.0), (50.0, 11.0)];
        let r = ratio(&a, &b, Statistic::Mean, Bootstrap::default()).unwrap();
        assert!(r.low < 1.0 && 1.0 < r.high, "{r:?}");
    }

    #[test]
    fn deterministic_and_empty_inputs() {
        let a = flat(&[1.0, 2.0], 10.0);
        let how = Bootstrap::default();
        assert_eq!(
            ratio(&a, &a, Statistic::Mean, how),
            ratio(&a, &a, Statistic::Mean, how)
        );
        assert!(ratio(&a, &[], Statistic::Mean, how).is_none());
        assert!(ratio(&a, &flat(&[0.0], 5.0), Statistic::Mean, how).is_none());
    }

    #[test]
    fn histograms_become_weighted_values() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record_n(15, 3).unwrap();
        h.record(600).unwrap();
        assert_eq!(weighted(&h), vec![(15.0, 3.0), (600.0, 1.0)]);
    }
}
