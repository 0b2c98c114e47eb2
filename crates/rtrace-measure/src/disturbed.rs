//! Disturbed samples: timed intervals that an interrupt, a preemption or a VM exit landed in.
//!
//! User space cannot mask interrupts around the timed body as Gebai et al. do in the kernel, so
//! disturbed samples are recognised afterwards by their length. The rule: a sample longer than
//! [`FACTOR`] times the run's median is disturbed. On this kind of machine a timer tick or VM
//! exit costs 15–60 µs and a host preemption milliseconds, 100–1000 times an untraced body
//! (~20 ns) and 15–60 times a traced one (~1 µs), while a tracer's own slow paths (a page or
//! sub-buffer switch) stay within a few times its median. The plain mean (the thesis' statistic)
//! keeps every sample; the mean without disturbed samples sits beside it.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A sample longer than this many times the run's median is disturbed.
pub const FACTOR: f64 = 10.0;

/// The rule in words, for reports.
pub const RULE: &str = "a sample longer than 10 × its run's median is disturbed (an interrupt, preemption or VM exit landed in it)";

/// The disturbed samples of one run (or round) and the mean without them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Disturbed {
    /// Samples longer than this are disturbed (ns): [`FACTOR`] × the median.
    pub threshold_ns: f64,
    /// How many samples were disturbed.
    pub count: u64,
    /// Their share of all samples.
    pub fraction: f64,
    /// Mean of the other samples (ns).
    pub mean_ns: f64,
}

impl Disturbed {
    /// The disturbed samples of `h` by the rule; `None` for an empty histogram.
    pub fn of(h: &Histogram<u64>) -> Option<Disturbed> {
        if h.is_empty() {
            return None;
        }
        let threshold_ns = FACTOR * h.value_at_quantile(0.5) as f64;
        let (mut kept, mut sum, mut count) = (0u64, 0f64, 0u64);
        for v in h.iter_recorded() {
            let value = h.median_equivalent(v.value_iterated_to()) as f64;
            let n = v.count_at_value();
            if value > threshold_ns {
                count += n;
            } else {
                kept += n;
                sum += value * n as f64;
            }
        }
        Some(Disturbed {
            threshold_ns,
            count,
            fraction: count as f64 / h.len() as f64,
            mean_ns: if kept > 0 { sum / kept as f64 } else { 0.0 },
        })
    }
}

/// The median of `h` interpolated within its bucket (the median of grouped data): values are
/// assumed spread evenly over each bucket's width, so two runs whose medians fall in the same
/// 1-ns bucket still get different medians when their distributions differ. `None` when empty.
pub fn median(h: &Histogram<u64>) -> Option<f64> {
    if h.is_empty() {
        return None;
    }
    let half = h.len() as f64 / 2.0;
    let mut below = 0u64;
    for v in h.iter_recorded() {
        let n = v.count_at_value();
        if (below + n) as f64 >= half {
            let high = h.highest_equivalent(v.value_iterated_to()) as f64 + 1.0;
            let low = h.lowest_equivalent(v.value_iterated_to()) as f64;
            // The bucket [low, high) holds n values; the median is the (half - below)-th of them.
            return Some(low + (high - low) * (half - below as f64) / n as f64);
        }
        below += n;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn long_samples_are_disturbed_and_left_out_of_the_steady_mean() {
        // 999,990 samples around 20 ns and ten 5-ms stalls: the plain mean moves by 50 ns.
        let h = hist(&[(19, 300_000), (20, 399_990), (21, 300_000), (5_000_000, 10)]);
        let d = Disturbed::of(&h).unwrap();
        assert_eq!((d.threshold_ns, d.count), (200.0, 10));
        assert!((d.fraction - 1e-5).abs() < 1e-12);
        assert!((d.mean_ns - 20.0).abs() < 1e-3, "{d:?}");
        let mean = h.mean();
        assert!(mean > 69.0, "the plain mean keeps the stalls: {mean}");
    }

    #[test]
    fn a_tracers_slow_path_is_not_disturbed() {
        // A traced run: 900 ns typical, a page switch every 100 events at 3 µs.
        let h = hist(&[(900, 99_000), (3_000, 1_000), (40_000, 30)]);
        let d = Disturbed::of(&h).unwrap();
        assert_eq!(d.count, 30, "only the 40-µs samples: {d:?}");
        let mean = 900.0 * 0.99 + 3000.0 * 0.01;
        assert!((d.mean_ns - mean).abs() < 2.0, "{d:?}");
    }

    #[test]
    fn nothing_disturbed_in_a_quiet_run_and_nothing_for_an_empty_one() {
        let d = Disturbed::of(&hist(&[(20, 10), (25, 10)])).unwrap();
        assert_eq!((d.count, d.fraction), (0, 0.0));
        assert!((d.mean_ns - 22.5).abs() < 1e-9);
        assert!(Disturbed::of(&hist(&[])).is_none());
        assert!(median(&hist(&[])).is_none());
    }

    #[test]
    fn the_median_is_interpolated_within_its_bucket() {
        // Half the samples at or below 20: the median is the top of the 20-ns bucket.
        assert!((median(&hist(&[(20, 50), (21, 50)])).unwrap() - 21.0).abs() < 1e-9);
        // 3/4 of the samples in the 20-ns bucket, a quarter below: two thirds into it.
        let m = median(&hist(&[(19, 25), (20, 75)])).unwrap();
        assert!((m - (20.0 + 25.0 / 75.0)).abs() < 1e-9, "{m}");
        // Different shapes with the same integer median give different medians.
        let a = median(&hist(&[(20, 60), (21, 40)])).unwrap();
        let b = median(&hist(&[(20, 90), (21, 10)])).unwrap();
        assert!(a != b && a.floor() == 20.0 && b.floor() == 20.0, "{a} {b}");
    }
}
