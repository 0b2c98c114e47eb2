//! The Non-Preempt Test loop (`rtrace-bench npt`, Beamonte & Dagenais' npt): read the TSC in a
//! tight loop and record the gap since the previous read. The probe fires at its scheduled ticks
//! (a capped rate, as npt's "tracepoint maximum frequency"); a firing iteration's gap goes to its
//! own histogram, so the quiet gaps show interference alone.

use crate::{sites, sized_histogram, tsc, Instrument};
use anyhow::Result;
use rtrace_protocol::{encode_histogram, Body, NptConfig, NptDone};
use std::time::Duration;

const CALIBRATION: Duration = Duration::from_millis(100);
pub fn run<I: Instrument>(c: &NptConfig) -> Result<NptDone> {
    let tsc_hz = tsc::calibrate(CALIBRATION);
    let ns_per_tick = 1e9 / tsc_hz;
    let period = if c.event_rate_hz > 0.0 {
        (tsc_hz / c.event_rate_hz).max(1.0) as u64
    } else {
        u64::MAX
    };
    let (mut quiet, mut fired) = (sized_histogram(), sized_histogram());
    let start = tsc::start();
    let end = start + (c.duration_ns as f64 / ns_per_tick) as u64;
    let mut next = start.saturating_add(period);
    let (mut hits, mut iterations) = (0u64, 0u64);
    let mut prev = start;
    let mut fired_last = false;
    loop {
        let now = tsc::start();
        let gap = tsc::to_ns(now.wrapping_sub(prev), ns_per_tick);
        if fired_last {
            fired.saturating_record(gap);
        } else {
            quiet.saturating_record(gap);
        }
        iterations += 1;
        prev = now;
        if now >= end {
            break;
        }
        fired_last = now >= next;
        if fired_last {
            match c.body {
                Body::EventNop5 => sites::event_nop5(hits),
                Body::EventStepped => sites::event_stepped(hits),
                _ => I::event(hits),
            }
            hits += 1;
            // After a long gap the missed firings are skipped, not fired in a burst.
            next = next
                .saturating_add(period)
                .max(now.saturating_add(period / 2));
        }
    }
    Ok(NptDone {
        hits,
        iterations,
        elapsed_ns: tsc::to_ns(prev - start, ns_per_tick),
        tsc_hz,
        quiet: encode_histogram(&quiet)?,
        fired: encode_histogram(&fired)?,
    })
}
