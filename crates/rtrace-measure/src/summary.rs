//! Summary statistics of a histogram of nanoseconds.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Nanoseconds.
pub type Ns = f64;

/// The statistics Table 3.1 reports, plus percentiles. All values in ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    pub min_ns: Ns,
    pub max_ns: Ns,
    pub mean_ns: Ns,
    /// Population standard deviation.
    pub stddev_ns: Ns,
    pub p50_ns: Ns,
    pub p99_ns: Ns,
    pub p999_ns: Ns,
    pub p9999_ns: Ns,
}

impl Summary {
    /// Summarises `h`; `None` for an empty histogram.
    pub fn of(h: &Histogram<u64>) -> Option<Summary> {
        if h.is_empty() {
            return None;
        }
        let q = |x: f64| h.value_at_quantile(x) as f64;
        Some(Summary {
            count: h.len(),
            min_ns: h.min() as f64,
            max_ns: h.max() as f64,
            mean_ns: h.mean(),
            stddev_ns: h.stdev(),
            p50_ns: q(0.50),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_known_values() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let s = Summary::of(&h).unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min_ns, 1.0);
        assert_eq!(s.max_ns, 1000.0);
        assert!((s.mean_ns - 500.5).abs() < 0.5);
        assert_eq!(s.p50_ns, 500.0);
        assert_eq!(s.p99_ns, 990.0);
        assert!((s.stddev_ns - 288.67).abs() < 0.5);
    }

    #[test]
    fn empty_has_no_summary() {
        assert!(Summary::of(&Histogram::<u64>::new(3).unwrap()).is_none());
    }
}
