//! The Non-Preempt Test loop (`rtrace-bench npt`, Beamonte & Dagenais' npt): read the TSC in a
//! tight loop and record the gap since the previous read. As Beamonte ran it the probe fires in
//! every iteration, at the loop's full speed; with a capped rate (npt's later "tracepoint maximum
//! frequency") it fires at its scheduled ticks. A firing iteration's gap goes to its own
//! histogram, the quiet gaps show interference alone. The largest firing gaps are kept with the
//! TSC read that ended them, converted to `CLOCK_MONOTONIC` after the loop, so that the harness
//! can tell what the tracer did then (LTTng's sub-buffer switches carry that clock).

use crate::{cyclic::monotonic_ns, sites, sized_histogram, tsc, Instrument};
use anyhow::Result;
use rtrace_protocol::{
    encode_histogram, Body, NptConfig, NptDone, NptGap, NPT_LARGEST, NPT_SLOW_AFTER, NPT_SLOW_MAX,
    NPT_SLOW_MIN_NS,
};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

const CALIBRATION: Duration = Duration::from_millis(100);

pub fn run<I: Instrument>(c: &NptConfig) -> Result<NptDone> {
    let tsc_hz = tsc::calibrate(CALIBRATION);
    let ns_per_tick = 1e9 / tsc_hz;
    let every = c.event_rate_hz.is_none();
    let period = match c.event_rate_hz {
        Some(hz) if hz > 0.0 => (tsc_hz / hz).max(1.0) as u64,
        _ => u64::MAX,
    };
    let (mut quiet, mut fired) = (sized_histogram(), sized_histogram());
    let mut largest = Largest::default();
    // Slow firing gaps in time order (ticks, TSC at the end, hit), from a threshold set after
    // the first firings: `u64::MAX` ticks until then.
    let mut slow: Vec<(u64, u64, u64)> = Vec::with_capacity(if every { NPT_SLOW_MAX } else { 0 });
    let (mut slow_ticks, mut slow_from, mut slow_dropped) = (u64::MAX, 0u64, 0u64);
    let before = clock_pair();
    let start = tsc::start();
    let end = start + (c.duration_ns as f64 / ns_per_tick) as u64;
    let mut next = start.saturating_add(period);
    let (mut hits, mut iterations) = (0u64, 0u64);
    let mut prev = start;
    let mut fired_last = false;
    loop {
        let now = tsc::start();
        let ticks = now.wrapping_sub(prev);
        let gap = tsc::to_ns(ticks, ns_per_tick);
        if fired_last {
            fired.saturating_record(gap);
            largest.offer(ticks, now, hits - 1);
            if ticks >= slow_ticks {
                if slow.len() < NPT_SLOW_MAX {
                    slow.push((ticks, now, hits - 1));
                } else {
                    slow_dropped += 1;
                }
            } else if every && hits == NPT_SLOW_AFTER {
                let ns = (8 * fired.value_at_quantile(0.5)).max(NPT_SLOW_MIN_NS);
                slow_ticks = (ns as f64 / ns_per_tick).ceil() as u64;
                slow_from = now;
            }
        } else {
            quiet.saturating_record(gap);
        }
        iterations += 1;
        prev = now;
        if now >= end {
            break;
        }
        fired_last = every || now >= next;
        if fired_last {
            match c.body {
                Body::EventNop5 => sites::event_nop5(hits),
                Body::EventStepped => sites::event_stepped(hits),
                _ => I::event(hits),
            }
            hits += 1;
            if !every {
                // After a long gap the missed firings are skipped, not fired in a burst.
                next = next
                    .saturating_add(period)
                    .max(now.saturating_add(period / 2));
            }
        }
    }
    let after = clock_pair();
    let to_mono = |t: u64| -> u64 {
        let slope = (after.1 - before.1) as f64 / after.0.wrapping_sub(before.0).max(1) as f64;
        (before.1 as f64 + (t as f64 - before.0 as f64) * slope).round() as u64
    };
    Ok(NptDone {
        hits,
        iterations,
        elapsed_ns: tsc::to_ns(prev - start, ns_per_tick),
        tsc_hz,
        quiet: encode_histogram(&quiet)?,
        fired: encode_histogram(&fired)?,
        start_mono_ns: to_mono(start),
        end_mono_ns: to_mono(prev),
        largest: largest.sorted(ns_per_tick, to_mono),
        slow: slow
            .iter()
            .map(|&(ticks, end, hit)| NptGap {
                ns: tsc::to_ns(ticks, ns_per_tick),
                end_mono_ns: to_mono(end),
                hit,
            })
            .collect(),
        slow_ns: if slow_ticks == u64::MAX {
            0
        } else {
            tsc::to_ns(slow_ticks, ns_per_tick)
        },
        slow_from_mono_ns: if slow_from == 0 {
            0
        } else {
            to_mono(slow_from)
        },
        slow_dropped,
    })
}

/// A TSC read and a `CLOCK_MONOTONIC` read taken together: of a few tries, the one whose two
/// TSC reads around the clock read are closest, the TSC taken halfway.
fn clock_pair() -> (u64, u64) {
    (0..16)
        .map(|_| {
            let a = tsc::start();
            let m = monotonic_ns();
            let b = tsc::stop();
            (b - a, a + (b - a) / 2, m)
        })
        .min()
        .map(|(_, t, m)| (t, m))
        .expect("16 tries")
}

/// The [`NPT_LARGEST`] largest gaps so far: (ticks, TSC at the gap's end, hit), in a min-heap
/// allocated once. A gap at or below the smallest kept costs one comparison.
struct Largest {
    heap: BinaryHeap<Reverse<(u64, u64, u64)>>,
    floor: u64,
}

impl Default for Largest {
    fn default() -> Largest {
        Largest {
            heap: BinaryHeap::with_capacity(NPT_LARGEST + 1),
            floor: 0,
        }
    }
}

impl Largest {
    #[inline(always)]
    fn offer(&mut self, ticks: u64, end: u64, hit: u64) {
        if ticks > self.floor {
            self.replace(ticks, end, hit);
        }
    }

    #[cold]
    #[inline(never)]
    fn replace(&mut self, ticks: u64, end: u64, hit: u64) {
        self.heap.push(Reverse((ticks, end, hit)));
        if self.heap.len() > NPT_LARGEST {
            self.heap.pop();
        }
        if self.heap.len() == NPT_LARGEST {
            self.floor = self.heap.peek().map_or(0, |g| g.0 .0);
        }
    }

    /// The gaps kept, largest first, in ns and `CLOCK_MONOTONIC` ns.
    fn sorted(&self, ns_per_tick: f64, to_mono: impl Fn(u64) -> u64) -> Vec<NptGap> {
        let mut v: Vec<_> = self.heap.iter().map(|g| g.0).collect();
        v.sort_by_key(|g| std::cmp::Reverse(g.0));
        v.into_iter()
            .map(|(ticks, end, hit)| NptGap {
                ns: tsc::to_ns(ticks, ns_per_tick),
                end_mono_ns: to_mono(end),
                hit,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_largest_gaps_largest_first() {
        let mut l = Largest::default();
        let n = NPT_LARGEST as u64 * 3;
        for i in 0..n {
            l.offer((i * 37) % (n + 1) + 1, 1000 + i, i);
        }
        let v = l.sorted(1.0, |t| t);
        assert_eq!(v.len(), NPT_LARGEST);
        let mut all: Vec<u64> = (0..n).map(|i| (i * 37) % (n + 1) + 1).collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        let ns: Vec<u64> = v.iter().map(|g| g.ns).collect();
        assert_eq!(ns, all[..NPT_LARGEST].to_vec());
        assert!(v.iter().all(|g| g.end_mono_ns == 1000 + g.hit));
    }
}
