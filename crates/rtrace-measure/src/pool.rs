//! What the generic experiment runner (`rtrace-bench/src/runner.rs`) needs from a run's result
//! model: whether two rounds are the same run, how a later round pools into the first, and
//! whether a round's event accounting holds. Each experiment implements it on its own run
//! type, so results pool differently per experiment (histograms add up for `usdt`, ...).

/// A run's event accounting against the workload's ground truth, which the runner checks after
/// every run.
pub trait Accounted {
    /// `Err` says what broke. Runs without a tracer are `Ok`.
    fn accounting(&self) -> Result<(), String>;
}

/// One round's result of a plan entry, and the pooled result of all its rounds.
pub trait Pool: Accounted + Sized {
    /// `other` is another round of the same plan entry.
    fn is_same_run(&self, other: &Self) -> bool;

    /// Pools a later round of the same run into this one.
    fn absorb(&mut self, round: Self) -> anyhow::Result<()>;
}

/// Two rounds' optional values pooled by `f`, or whichever there is.
pub fn merge<T>(a: Option<T>, b: Option<T>, f: impl FnOnce(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(f(a, b)),
        (a, b) => a.or(b),
    }
}

/// Two rounds' optional totals pooled: their sum, or whichever there is.
pub fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    merge(a, b, T::add)
}

/// Two rounds' encoded histograms pooled: the sum, encoded, and decoded.
pub fn histograms(a: &str, b: &str) -> anyhow::Result<(String, hdrhistogram::Histogram<u64>)> {
    let mut h = rtrace_protocol::decode_histogram(a)?;
    h.add(rtrace_protocol::decode_histogram(b)?)
        .map_err(|e| anyhow::anyhow!("cannot pool histograms: {e:?}"))?;
    Ok((rtrace_protocol::encode_histogram(&h)?, h))
}

/// Adds `round` to the run of `runs` it belongs to, or appends it as a new run.
pub fn keep<R: Pool>(runs: &mut Vec<R>, round: R) -> anyhow::Result<()> {
    match runs.iter_mut().find(|p| p.is_same_run(&round)) {
        Some(pooled) => pooled.absorb(round),
        None => {
            runs.push(round);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run named by its key that sums its values.
    #[derive(Debug, PartialEq)]
    struct Sum(&'static str, u32);

    impl Pool for Sum {
        fn is_same_run(&self, other: &Sum) -> bool {
            self.0 == other.0
        }
        fn absorb(&mut self, round: Sum) -> anyhow::Result<()> {
            self.1 += round.1;
            Ok(())
        }
    }

    impl Accounted for Sum {
        fn accounting(&self) -> Result<(), String> {
            Ok(())
        }
    }

    #[test]
    fn rounds_of_the_same_run_pool_in_first_seen_order() {
        let mut runs = Vec::new();
        for r in [Sum("a", 1), Sum("b", 10), Sum("b", 20), Sum("a", 2)] {
            keep(&mut runs, r).unwrap();
        }
        assert_eq!(runs, [Sum("a", 3), Sum("b", 30)]);
    }
}
