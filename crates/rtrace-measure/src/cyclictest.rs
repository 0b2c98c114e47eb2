//! Reading the `--json` file of rt-tests' `cyclictest` (checked against 2.40).
//!
//! Quirks of the format: top-level keys `"cmdline:"` and `"rt_test_version:"` carry a colon;
//! `thread."N".histogram` lists non-zero buckets only, keyed by the bucket as a string; samples
//! beyond the last bucket (overflows) are in no bucket, so overflows = `cycles` − Σ buckets.
//! With `--nsecs`, `resolution_in_ns` is 1 and buckets, `min`, `max` and `avg` are ns
//! (1-ns buckets); without it they are µs.

use crate::Summary;
use hdrhistogram::Histogram;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One thread's results from a cyclictest JSON file, in ns.
#[derive(Debug, Clone)]
pub struct CyclictestReport {
    /// Measured wake-ups.
    pub cycles: u64,
    /// cyclictest's own statistics over every sample, overflows included (ns).
    pub min_ns: f64,
    pub max_ns: f64,
    pub avg_ns: f64,
    /// Every sample (ns): the buckets as cyclictest counted them, and each overflow recorded at
    /// `max_ns` (an upper bound: cyclictest does not keep their values).
    pub histogram: Histogram<u64>,
    /// Samples beyond the histogram's last bucket.
    pub overflows: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CyclictestError {
    #[error(
        "cyclictest JSON does not parse: {0} (is this a file written by `cyclictest --json`?)"
    )]
    Json(#[from] serde_json::Error),
    #[error("cyclictest JSON has {0} threads: run it with --threads=1")]
    Threads(usize),
    #[error("cyclictest JSON has a histogram bucket `{0}` that is not a number")]
    Bucket(String),
    #[error("cyclictest JSON counts {buckets} samples in its histogram but only {cycles} cycles")]
    Count { buckets: u64, cycles: u64 },
    #[error("cyclictest reported return code {0}: see its stderr")]
    ReturnCode(i64),
}

#[derive(Deserialize)]
struct RawFile {
    resolution_in_ns: Option<u64>,
    return_code: Option<i64>,
    thread: BTreeMap<String, RawThread>,
}

#[derive(Deserialize)]
struct RawThread {
    #[serde(default)]
    histogram: BTreeMap<String, u64>,
    cycles: u64,
    min: f64,
    max: f64,
    avg: f64,
}

/// Parses a cyclictest 2.x `--json` file of a single-thread run.
pub fn parse(json: &str) -> Result<CyclictestReport, CyclictestError> {
    let raw: RawFile = serde_json::from_str(json)?;
    if let Some(rc) = raw.return_code.filter(|&rc| rc != 0) {
        return Err(CyclictestError::ReturnCode(rc));
    }
    if raw.thread.len() != 1 {
        return Err(CyclictestError::Threads(raw.thread.len()));
    }
    let t = raw.thread.into_values().next().expect("one thread");
    let nsecs = raw.resolution_in_ns == Some(1);
    let scale = if nsecs { 1.0 } else { 1000.0 };
    let mut histogram = crate::sweep::latency_histogram();
    let mut in_buckets = 0u64;
    for (bucket, &count) in &t.histogram {
        let b: u64 = bucket
            .trim()
            .parse()
            .map_err(|_| CyclictestError::Bucket(bucket.clone()))?;
        histogram.saturating_record_n((b as f64 * scale) as u64, count);
        in_buckets += count;
    }
    let overflows = t
        .cycles
        .checked_sub(in_buckets)
        .ok_or(CyclictestError::Count {
            buckets: in_buckets,
            cycles: t.cycles,
        })?;
    let max_ns = t.max * scale;
    if overflows > 0 {
        histogram.saturating_record_n(max_ns as u64, overflows);
    }
    Ok(CyclictestReport {
        cycles: t.cycles,
        min_ns: t.min * scale,
        max_ns,
        avg_ns: t.avg * scale,
        histogram,
        overflows,
    })
}

impl CyclictestReport {
    /// Percentiles from the histogram; min, max and mean are cyclictest's own (exact, over every
    /// sample). `None` without samples.
    pub fn summary(&self) -> Option<Summary> {
        let mut s = Summary::of(&self.histogram)?;
        s.min_ns = self.min_ns;
        s.max_ns = self.max_ns;
        s.mean_ns = self.avg_ns;
        // A bucket's highest equivalent value may exceed the exact extremes.
        for p in [
            &mut s.p50_ns,
            &mut s.p99_ns,
            &mut s.p999_ns,
            &mut s.p9999_ns,
        ] {
            *p = p.clamp(self.min_ns, self.max_ns);
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cyclictest --mlockall --priority=99 --interval=200 --loops=200 --distance=0 --threads=1
    /// --affinity=1 --mainaffinity=0 --quiet --nsecs --histogram=8000 --json=F` on the dev VM.
    const NSECS: &str = include_str!("testdata/cyclictest-2.40-nsecs.json");
    /// The same with `--loops=2000 --histogram=1000` and no `--nsecs`.
    const USECS: &str = include_str!("testdata/cyclictest-2.40-usecs.json");

    #[test]
    fn nsecs_file_buckets_are_ns_and_overflows_are_counted() {
        let r = parse(NSECS).unwrap();
        assert_eq!(r.cycles, 200);
        assert_eq!(
            r.overflows, 7,
            "193 of 200 samples are in the 8000-ns histogram"
        );
        assert_eq!(r.histogram.len(), 200, "overflows are kept, at the max");
        assert_eq!((r.min_ns, r.max_ns), (4702.0, 11790.0));
        let s = r.summary().unwrap();
        assert_eq!(s.count, 200);
        assert_eq!((s.min_ns, s.max_ns, s.mean_ns), (4702.0, 11790.0, 6171.42));
        assert!(s.p50_ns > 4702.0 && s.p50_ns < 8000.0, "{s:?}");
        assert!(s.p99_ns >= 8000.0, "the top 3.5% are overflows: {s:?}");
    }

    #[test]
    fn usecs_file_is_scaled_to_ns() {
        let r = parse(USECS).unwrap();
        assert!(r.cycles == 2000 && r.overflows == 0);
        assert_eq!((r.min_ns, r.max_ns), (3000.0, 129_000.0));
        let s = r.summary().unwrap();
        // 47 + 370 + 441 samples are below 6 us; hdrhistogram reports a bucket's highest value.
        assert_eq!(s.p50_ns as u64, r.histogram.highest_equivalent(6000));
        assert_eq!(r.histogram.count_at(4000), 370);
    }

    #[test]
    fn malformed_files_are_errors() {
        assert!(matches!(parse("{"), Err(CyclictestError::Json(_))));
        let two = r#"{"thread":{"0":{"cycles":1,"min":1,"max":1,"avg":1},
                               "1":{"cycles":1,"min":1,"max":1,"avg":1}}}"#;
        assert!(matches!(parse(two), Err(CyclictestError::Threads(2))));
        let bad = r#"{"thread":{"0":{"histogram":{"x":1},"cycles":1,"min":1,"max":1,"avg":1}}}"#;
        assert!(matches!(parse(bad), Err(CyclictestError::Bucket(_))));
        let over = r#"{"thread":{"0":{"histogram":{"3":5},"cycles":1,"min":3,"max":3,"avg":3}}}"#;
        assert!(matches!(parse(over), Err(CyclictestError::Count { .. })));
        let rc = r#"{"return_code":1,"thread":{}}"#;
        assert!(matches!(parse(rc), Err(CyclictestError::ReturnCode(1))));
    }

    #[test]
    fn empty_histogram_with_overflows_only() {
        let j = r#"{"resolution_in_ns":1,"thread":{"0":{"histogram":{      },"cycles":4,"min":3893,"max":17384,"avg":7127.81}}}"#;
        let r = parse(j).unwrap();
        assert_eq!(r.overflows, 4);
        assert_eq!(r.summary().unwrap().p50_ns as u64 / 100, 17384 / 100);
    }
}
