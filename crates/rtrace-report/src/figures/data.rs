//! What the figures draw, computed from HDR histograms: box-plot statistics and binned counts.

use hdrhistogram::Histogram;

/// Tukey's whisker reach, in interquartile ranges.
pub const WHISKER_IQR: f64 = 1.5;

/// A box plot of one distribution (ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxStats {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    /// Lowest sample within `WHISKER_IQR` × IQR below q1.
    pub low: f64,
    /// Highest sample within `WHISKER_IQR` × IQR above q3.
    pub high: f64,
    pub p99: f64,
    pub max: f64,
}

impl BoxStats {
    /// `None` for an empty histogram.
    pub fn of(h: &Histogram<u64>) -> Option<BoxStats> {
        if h.is_empty() {
            return None;
        }
        let q = |x: f64| h.value_at_quantile(x) as f64;
        let (q1, q3) = (q(0.25), q(0.75));
        let reach = WHISKER_IQR * (q3 - q1);
        let xs = || (h.iter_recorded()).map(|v| h.highest_equivalent(v.value_iterated_to()) as f64);
        let low = xs().filter(|&x| x >= q1 - reach).fold(q1, f64::min);
        let high = xs().filter(|&x| x <= q3 + reach).fold(q3, f64::max);
        Some(BoxStats {
            q1,
            median: q(0.5),
            q3,
            low: low.max(h.min() as f64),
            high,
            p99: q(0.99),
            max: h.max() as f64,
        })
    }
}

/// Counts of `h` in `n` bins of `width` starting at `start`: (bin start, count).
pub fn bins(h: &Histogram<u64>, start: u64, width: u64, n: usize) -> Vec<(u64, u64)> {
    let width = width.max(1);
    let mut counts = vec![0u64; n];
    for v in h.iter_recorded() {
        let x = h.median_equivalent(v.value_iterated_to());
        if x < start {
            continue;
        }
        let i = ((x - start) / width) as usize;
        if let Some(c) = counts.get_mut(i) {
            *c += v.count_at_value();
        }
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| (start + i as u64 * width, c))
        .collect()
}

/// A round bin width (1, 2, 5 × 10^k) giving at most `max_bins` bins over `span`.
pub fn nice_width(span: u64, max_bins: u64) -> u64 {
    let raw = span.div_ceil(max_bins.max(1)).max(1);
    let mut decade = 1u64;
    loop {
        for m in [1, 2, 5] {
            if m * decade >= raw {
                return m * decade;
            }
        }
        decade *= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn box_of_a_uniform_distribution_with_one_outlier() {
        let h = hist((1..=100).chain([10_000]));
        let b = BoxStats::of(&h).unwrap();
        assert_eq!((b.q1, b.median, b.q3), (26.0, 51.0, 76.0));
        assert_eq!(b.low, 1.0, "whisker reaches the minimum");
        assert_eq!(b.high, 100.0, "whisker stops before the outlier");
        assert_eq!(b.max, h.max() as f64);
        assert!(BoxStats::of(&hist([])).is_none());
    }

    #[test]
    fn bins_count_every_sample_in_range() {
        let h = hist([10, 11, 12, 19, 20, 35, 1000]);
        let b = bins(&h, 10, 10, 3);
        assert_eq!(b, vec![(10, 4), (20, 1), (30, 1)]);
    }

    #[test]
    fn widths_are_round() {
        assert_eq!(nice_width(100, 100), 1);
        assert_eq!(nice_width(1000, 150), 10);
        assert_eq!(nice_width(1000, 400), 5);
        assert_eq!(nice_width(0, 10), 1);
    }
}
