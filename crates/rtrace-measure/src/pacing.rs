//! Keeping a spinning SCHED_FIFO loop under the kernel's real-time budget.
//!
//! With `sched_rt_runtime_us` < `sched_rt_period_us` (950 ms per 1 s by default) the kernel
//! stops real-time tasks that used up the budget until the period ends. The microbenchmark's
//! loop spins for as long as a case lasts, so a case longer than ~0.95 s would take one
//! tens-of-ms stall per second; that stall lands in one sample, moves the mean by tens of ns
//! and, worse, only in the runs whose duration happens to cross the budget. The loop therefore
//! sleeps outside its timed interval before it can reach the budget.

use rtrace_protocol::Pacing;

const RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";
const PERIOD: &str = "/proc/sys/kernel/sched_rt_period_us";

/// The pacing for a loop at `priority` (SCHED_FIFO if `Some`) on this machine; `None` when the
/// loop is not real-time or real-time throttling is off (`sched_rt_runtime_us` = -1).
pub fn for_this_machine(priority: Option<i32>) -> Option<Pacing> {
    priority?;
    let read = |p: &str| std::fs::read_to_string(p).ok()?.trim().parse::<i64>().ok();
    pacing(read(RUNTIME)?, read(PERIOD)?)
}

/// Bursts of half the budget separated by rests of the unbudgeted part plus a tenth of the
/// period: any window of one period then holds at most `period - rest` < `runtime` of spinning.
pub fn pacing(runtime_us: i64, period_us: i64) -> Option<Pacing> {
    if runtime_us < 0 || period_us <= 0 || runtime_us >= period_us {
        return None;
    }
    let (runtime, period) = (runtime_us as u64 * 1000, period_us as u64 * 1000);
    Some(Pacing {
        burst_ns: runtime / 2,
        rest_ns: period - runtime + period / 10,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_budget_gives_475_ms_bursts_and_150_ms_rests() {
        assert_eq!(
            pacing(950_000, 1_000_000),
            Some(Pacing {
                burst_ns: 475_000_000,
                rest_ns: 150_000_000
            })
        );
    }

    #[test]
    fn no_pacing_without_a_budget() {
        assert_eq!(pacing(-1, 1_000_000), None);
        assert_eq!(pacing(1_000_000, 1_000_000), None);
        assert_eq!(pacing(0, 0), None);
    }

    #[test]
    fn a_period_window_never_holds_the_whole_budget() {
        for (runtime, period) in [
            (950_000, 1_000_000),
            (500_000, 1_000_000),
            (90_000, 100_000),
        ] {
            let p = pacing(runtime, period).unwrap();
            // Worst window: the end of one burst, a rest, the start of the next.
            let spun = (period as u64 * 1000).saturating_sub(p.rest_ns);
            assert!(spun < runtime as u64 * 1000, "{runtime}/{period}: {p:?}");
            assert!(p.burst_ns < runtime as u64 * 1000);
        }
    }

    #[test]
    fn normal_scheduling_is_not_paced() {
        assert_eq!(for_this_machine(None), None);
    }
}
