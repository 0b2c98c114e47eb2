//! The paced probe loop (`rtrace-bench rate`): the probe fires `rate_hz` times a second for the
//! given duration and at least `min_hits` times per thread, each firing at its scheduled TSC
//! tick (busy-wait in between). A firing that
//! starts more than one period late is counted (`late`): the rate asked for was not kept.

use crate::{sites, tsc, Instrument};
use anyhow::Result;
use rtrace_protocol::{Body, RateConfig, RateDone};
use std::time::Duration;

const CALIBRATION: Duration = Duration::from_millis(100);

/// Fires on every thread of `c`, each at its share of the rate; `ready` as for
/// [`crate::together::run`].
pub fn run<I: Instrument>(c: &RateConfig, ready: impl FnOnce() -> Result<()>) -> Result<RateDone> {
    let tsc_hz = tsc::calibrate(CALIBRATION);
    let share = c.rate_hz / (c.more_threads.len() + 1) as f64;
    let threads = crate::together::run(&c.more_threads, c.priority, ready, || {
        fire::<I>(c, tsc_hz, share)
    })?;
    let hits = threads.iter().map(|t| t.0).sum::<u64>();
    let late = threads.iter().map(|t| t.1).sum();
    let elapsed_ns = threads.iter().map(|t| t.2).max().unwrap_or(0);
    Ok(RateDone {
        hits,
        elapsed_ns,
        achieved_hz: hits as f64 * 1e9 / elapsed_ns.max(1) as f64,
        late,
    })
}

/// One thread's paced loop at `rate_hz`: (hits, late firings, elapsed ns). A firing more than
/// a period late restarts the schedule from it.
fn fire<I: Instrument>(c: &RateConfig, tsc_hz: f64, rate_hz: f64) -> (u64, u64, u64) {
    let period = (tsc_hz / rate_hz.max(1e-3)).max(1.0);
    let total = c.duration_ns as f64 * tsc_hz / 1e9;
    let start = tsc::start() as f64;
    let end = start + total;
    let mut next = start;
    let (mut hits, mut late) = (0u64, 0u64);
    loop {
        let mut now = tsc::start() as f64;
        if now >= end && hits >= c.min_hits {
            break;
        }
        while now < next {
            std::hint::spin_loop();
            now = tsc::start() as f64;
        }
        if now - next > period {
            // More than a period behind (the CPU was taken, or a hit cost more than the
            // period): the missed firings are skipped, not fired in a burst at the loop's full
            // speed, so the rate fired (and reported) is what a steady rate reached.
            late += 1;
            next = now;
        }
        match c.body {
            Body::EventNop5 => sites::event_nop5(hits),
            Body::EventStepped => sites::event_stepped(hits),
            _ => I::event(hits),
        }
        hits += 1;
        next += period;
    }
    let elapsed_ns = ((tsc::start() as f64 - start) * 1e9 / tsc_hz) as u64;
    (hits, late, elapsed_ns)
}
