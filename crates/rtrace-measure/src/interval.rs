//! Confidence intervals whose unit is an independent run: a round (`--rounds`), i.e. a separate
//! workload process with its own address layout, cache placement and machine state.
//!
//! Samples of one process are not independent (a VM's speed drifts between states lasting
//! seconds), so resampling them gives intervals far too narrow: two invocations exclude each
//! other. A round is. With few rounds a percentile bootstrap under-covers badly, so the
//! interval is Student's t over the rounds: on log ratios for a ratio (the ratio's interval is
//! then asymmetric and never crosses zero), on differences for a difference.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Coverage of every interval.
pub const CONFIDENCE: f64 = 0.95;

/// How the intervals are made, in words, for reports.
pub const METHOD: &str = "95% Student-t interval over rounds (each round is a separate workload process) on the per-round log ratios";

/// A point estimate from `rounds` independent rounds and its interval; `None` bounds with one
/// round (there is no spread to estimate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub estimate: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Rounds the estimate is made of.
    pub rounds: usize,
    /// Coverage of `low..high`.
    pub confidence: f64,
}

impl Estimate {
    /// `low..high` contains `x`; `false` without an interval.
    pub fn contains(&self, x: f64) -> bool {
        matches!((self.low, self.high), (Some(l), Some(h)) if l <= x && x <= h)
    }
}

/// Why an estimate has no interval, for reports; `None` when it has one.
pub fn no_interval_reason(rounds: usize) -> Option<String> {
    (rounds < 2).then(|| {
        format!("{rounds} round: no interval (an interval needs at least 2 independent rounds; run with --rounds 10)")
    })
}

/// The two-sided `CONFIDENCE` quantile of Student's t with `df` degrees of freedom.
fn t_quantile(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0))
        .unwrap_or(f64::INFINITY)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n - 1).
fn variance(xs: &[f64]) -> f64 {
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() as f64 - 1.0)
}

/// Mean of `xs` (one value per round) with its t interval. `floor_var` is a lower bound on the
/// variance of one value (e.g. what rounding to a histogram bucket alone adds), so that rounds
/// that happen to agree exactly still get an interval of honest width. `None` when `xs` is
/// empty or not finite.
pub fn mean_of(xs: &[f64], floor_var: f64) -> Option<Estimate> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = xs.len();
    let estimate = mean(xs);
    let half = (n > 1)
        .then(|| t_quantile(n as f64 - 1.0) * (variance(xs).max(floor_var) / n as f64).sqrt());
    Some(Estimate {
        estimate,
        low: half.map(|h| estimate - h),
        high: half.map(|h| estimate + h),
        rounds: n,
        confidence: CONFIDENCE,
    })
}

/// Geometric mean of per-round ratios with the t interval of their logs; `None` unless every
/// ratio is positive. `floor_var` bounds the variance of one log ratio from below.
pub fn ratio_of(ratios: &[f64], floor_var: f64) -> Option<Estimate> {
    if ratios.iter().any(|&r| r <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let e = mean_of(&logs, floor_var)?;
    Some(Estimate {
        estimate: e.estimate.exp(),
        low: e.low.map(f64::exp),
        high: e.high.map(f64::exp),
        ..e
    })
}

/// `b / a` of two independent sets of rounds (e.g. two invocations): the geometric means'
/// ratio with Welch's t interval on the logs. `None` unless every value is positive.
pub fn ratio_between(a: &[f64], b: &[f64], floor_var: f64) -> Option<Estimate> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|&x| x <= 0.0 || !x.is_finite()) {
        return None;
    }
    let (la, lb): (Vec<f64>, Vec<f64>) = (
        a.iter().map(|x| x.ln()).collect(),
        b.iter().map(|x| x.ln()).collect(),
    );
    let log_ratio = mean(&lb) - mean(&la);
    let rounds = a.len().min(b.len());
    let half = (rounds > 1).then(|| {
        let (va, vb) = (
            variance(&la).max(floor_var) / la.len() as f64,
            variance(&lb).max(floor_var) / lb.len() as f64,
        );
        // Welch–Satterthwaite degrees of freedom.
        let df = (va + vb).powi(2)
            / (va.powi(2) / (la.len() as f64 - 1.0) + vb.powi(2) / (lb.len() as f64 - 1.0));
        t_quantile(df) * (va + vb).sqrt()
    });
    Some(Estimate {
        estimate: log_ratio.exp(),
        low: half.map(|h| (log_ratio - h).exp()),
        high: half.map(|h| (log_ratio + h).exp()),
        rounds,
        confidence: CONFIDENCE,
    })
}

/// The median of `xs` (one value per round) with a distribution-free interval from order
/// statistics: the widest symmetric pair of ranks whose coverage (binomial) is at least
/// [`CONFIDENCE`]; with fewer than 6 rounds no pair reaches it and the interval is the range,
/// its coverage (`confidence`) said as it is. Robust against a round that switched state
/// mid-way. Never narrower than `resolution` on each side. `None` when empty or not finite.
pub fn median_of(xs: &[f64], resolution: f64) -> Option<Estimate> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let estimate = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    if n < 2 {
        // One round: its value without an interval, as its mean.
        return mean_of(&v, 0.0);
    }
    // Coverage of [x(k), x(n+1-k)] (1-based) is 1 - 2 P(Bin(n, 1/2) < k).
    let below = |k: usize| -> f64 { (0..k).map(|i| binomial(n, i) * 0.5f64.powi(n as i32)).sum() };
    let mut k = 1;
    while k < n / 2 && 1.0 - 2.0 * below(k + 1) >= CONFIDENCE {
        k += 1;
    }
    let (low, high) = (v[k - 1], v[n - k]);
    Some(Estimate {
        estimate,
        low: Some(low.min(estimate - resolution)),
        high: Some(high.max(estimate + resolution)),
        rounds: n,
        confidence: 1.0 - 2.0 * below(k),
    })
}

/// n choose k as a float.
fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, t) in [(1.0, 12.706), (4.0, 2.776), (9.0, 2.262), (1e6, 1.960)] {
            assert!((t_quantile(df) - t).abs() < 1e-3, "{df}");
        }
    }

    #[test]
    fn a_mean_of_rounds_has_the_t_interval() {
        let e = mean_of(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.0).unwrap();
        assert_eq!(e.estimate, 3.0);
        // s = 1.5811, se = 0.7071, t(4) = 2.776.
        let high = 3.0 + 2.776 * (0.5f64).sqrt();
        assert!((e.high.unwrap() - high).abs() < 1e-3, "{e:?}");
        assert!(e.contains(1.1) && !e.contains(0.9) && e.rounds == 5);
    }

    #[test]
    fn one_round_has_no_interval_and_says_why() {
        let e = mean_of(&[7.0], 0.0).unwrap();
        assert_eq!((e.estimate, e.low, e.high), (7.0, None, None));
        assert!(!e.contains(7.0));
        assert!(no_interval_reason(1).unwrap().contains("--rounds"));
        assert!(no_interval_reason(2).is_none());
        assert!(mean_of(&[], 0.0).is_none());
    }

    #[test]
    fn identical_rounds_get_the_floor_width_not_zero() {
        let e = mean_of(&[21.0; 8], 1.0 / 12.0).unwrap();
        let width = e.high.unwrap() - e.low.unwrap();
        assert!(width > 0.1 && width < 1.0, "{e:?}");
        let zero = mean_of(&[21.0; 8], 0.0).unwrap();
        assert_eq!(zero.low, zero.high);
    }

    #[test]
    fn ratios_are_geometric_with_asymmetric_bounds() {
        let e = ratio_of(&[2.0, 8.0], 0.0).unwrap();
        assert!((e.estimate - 4.0).abs() < 1e-12);
        let (l, h) = (e.low.unwrap(), e.high.unwrap());
        assert!(l > 0.0 && (e.estimate / l - h / e.estimate).abs() < 1e-9);
        assert!(ratio_of(&[1.0, -1.0], 0.0).is_none());
    }

    #[test]
    fn ratio_between_two_invocations() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.5).collect();
        let e = ratio_between(&a, &b, 0.0).unwrap();
        assert!((e.estimate - 1.5).abs() < 1e-9);
        assert!(
            e.contains(1.5) && !e.contains(1.4) && !e.contains(1.6),
            "{e:?}"
        );
        assert!(ratio_between(&a, &a, 0.0).unwrap().contains(1.0));
        assert!(ratio_between(&a, &[0.0], 0.0).is_none());
    }

    #[test]
    fn median_intervals_from_order_statistics() {
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let e = median_of(&xs, 0.0).unwrap();
        assert_eq!(e.estimate, 5.5);
        // n = 10: [x(2), x(9)] covers 97.9%; [x(3), x(8)] only 89%.
        assert_eq!((e.low, e.high), (Some(2.0), Some(9.0)));
        assert!((e.confidence - 0.9785).abs() < 1e-3, "{e:?}");
        // One wild round does not move it.
        let mut wild = xs.clone();
        wild[9] = 1000.0;
        assert_eq!(median_of(&wild, 0.0).unwrap().high, Some(9.0));
        // Five rounds cannot reach 95%: the range, with its real coverage.
        let five = median_of(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.0).unwrap();
        assert_eq!((five.low, five.high), (Some(1.0), Some(5.0)));
        assert!((five.confidence - 0.9375).abs() < 1e-9);
        // Identical rounds keep the resolution's width.
        let same = median_of(&[0.0; 8], 0.3).unwrap();
        assert_eq!((same.low, same.high), (Some(-0.3), Some(0.3)));
        assert!(median_of(&[], 0.0).is_none());
    }

    /// The interval's coverage, simulated: rounds drawn around a true ratio with a spread
    /// between rounds; 95% of the intervals must contain the truth (within simulation error).
    #[test]
    fn t_intervals_over_five_rounds_cover_95_percent() {
        // A small deterministic generator (no dependency): uniform sums approximate a normal.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut normal = move || (0..12).map(|_| uniform()).sum::<f64>() - 6.0;
        let trials = 4000;
        let mut covered = 0;
        for _ in 0..trials {
            let ratios: Vec<f64> = (0..5).map(|_| (0.2 + 0.05 * normal()).exp()).collect();
            if ratio_of(&ratios, 0.0).unwrap().contains(0.2f64.exp()) {
                covered += 1;
            }
        }
        let coverage = covered as f64 / trials as f64;
        assert!((0.935..0.965).contains(&coverage), "coverage {coverage}");
    }
}
