//! The cyclictest-style latency loop (thesis §3.4), following cyclictest's method: one
//! measuring thread, SCHED_FIFO and pinned to the measured CPU, sleeps with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the next period; latency = actual wake
//! time − expected wake time, recorded in ns. Like the thesis' modified cyclictest, the
//! tracepoint fires once per loop between the wake-up and the clock reading, so its cost is
//! part of the latency (`ProbeAt::Window`; `ProbeAt::After` fires it after the latency is
//! taken, before the next sleep, where it costs nothing measured). The main
//! thread, on another CPU, does the handshake and waits. Periods the thread woke too late for
//! are skipped (cyclictest's `while (now > next) next += interval`) and counted as overruns.

use crate::{announce, emit, setup, sized_histogram, wait_for_go, Instrument};
use anyhow::{anyhow, bail, Context, Result};
use hdrhistogram::Histogram;
use rtrace_protocol::{encode_histogram, CyclicConfig, CyclicDone, Fire, Message, ProbeAt};
use std::io::Write;
use std::sync::mpsc;

const NS_PER_S: u64 = 1_000_000_000;

/// What the measuring thread counted.
struct Measured {
    hist: Histogram<u64>,
    /// `ProbeAt::Alternate`: the wake-ups without the tracepoint.
    untraced: Option<Histogram<u64>>,
    hits: u64,
    sleeps: u64,
    overruns: u64,
    overflows: u64,
}

pub fn run<I: Instrument>(c: &CyclicConfig) -> Result<()> {
    if let Some(main) = c.main_cpu {
        if !core_affinity::set_for_current(core_affinity::CoreId { id: main }) {
            bail!("cannot pin the main thread to CPU {main} (is it online?)");
        }
    }
    // Lock before the measuring thread exists: MCL_FUTURE then covers its stack too.
    let _ = nix::sys::mman::mlockall(
        nix::sys::mman::MlockAllFlags::MCL_CURRENT | nix::sys::mman::MlockAllFlags::MCL_FUTURE,
    );
    let pm_qos = pm_qos_zero();

    let (ready_tx, ready_rx) = mpsc::channel::<Result<setup::Placed>>();
    let (go_tx, go_rx) = mpsc::channel::<bool>();
    let cfg = c.clone();
    let thread = std::thread::Builder::new()
        .name("cyclic".into())
        .spawn(move || -> Result<Measured> {
            let placed = setup::place(cfg.cpu, Some(cfg.priority));
            let ok = placed.is_ok();
            let _ = ready_tx.send(placed);
            if !ok || !go_rx.recv().unwrap_or(false) {
                bail!("not started");
            }
            let marker = |i| {
                crate::markers::rtrace_marker_hit(i);
            };
            Ok(match (cfg.fire_event, cfg.fire, cfg.probe_at) {
                (true, Fire::Tracepoint, ProbeAt::Window) => {
                    measure(&cfg, |expected| I::event(expected), |_| {})
                }
                (true, Fire::Tracepoint, ProbeAt::After) => {
                    measure(&cfg, |_| {}, |latency| I::event(latency))
                }
                (true, Fire::Tracepoint, ProbeAt::Alternate) => {
                    alternate(&cfg, |expected| I::event(expected))
                }
                (true, Fire::Marker, ProbeAt::Window) => measure(&cfg, marker, |_| {}),
                (true, Fire::Marker, ProbeAt::After) => measure(&cfg, |_| {}, marker),
                (true, Fire::Marker, ProbeAt::Alternate) => alternate(&cfg, marker),
                (false, _, _) => measure(&cfg, |_| {}, |_| {}),
            })
        })
        .context("cannot start the measuring thread")?;

    let placed = ready_rx
        .recv()
        .map_err(|_| anyhow!("the measuring thread died before it was placed"))??;
    announce::<I>(c.cpu, &placed)?;
    let go = wait_for_go();
    let _ = go_tx.send(go.is_ok());
    go?;
    let m = thread
        .join()
        .map_err(|_| anyhow!("the measuring thread panicked"))??;
    let pm_qos_zero = pm_qos.is_some();
    drop(pm_qos);
    let hits = if c.fire_event { m.hits } else { 0 };
    if std::hint::black_box(hits == u64::MAX) {
        // Never taken: keeps the idle tracepoint in the binary, reachable but not fired.
        I::idle(hits);
    }
    emit(&Message::CyclicDone(CyclicDone {
        loops: m.hist.len() + m.untraced.as_ref().map_or(0, |u| u.len()),
        hits,
        sleeps: m.sleeps,
        overruns: m.overruns,
        overflows: m.overflows,
        histogram: encode_histogram(&m.hist)?,
        untraced: m.untraced.as_ref().map(encode_histogram).transpose()?,
        pm_qos_zero,
        max_rss_kb: crate::micro::max_rss_kb(),
    }))
}

/// The measuring loop: `window(expected wake time)` runs between the wake-up and the clock
/// reading, `after(latency)` between measuring and the next sleep; each once per loop.
#[inline(always)]
fn measure(c: &CyclicConfig, mut window: impl FnMut(u64), mut after: impl FnMut(u64)) -> Measured {
    measure_with(c, false, |expected| {
        window(expected);
        let now = monotonic_ns();
        after(now.saturating_sub(expected));
        (true, now)
    })
}

/// `ProbeAt::Alternate`: `window(expected wake time)` between the wake-up and the clock reading
/// on every other loop (the first included); the other loops' latencies go to `untraced`.
#[inline(always)]
fn alternate(c: &CyclicConfig, mut window: impl FnMut(u64)) -> Measured {
    let mut fire = false;
    measure_with(c, true, |expected| {
        fire = !fire;
        if fire {
            window(expected);
        }
        (fire, monotonic_ns())
    })
}

/// cyclictest's loop: sleep to the next period, `wake(expected wake time)` returns whether this
/// wake-up fired the tracepoint and the clock reading; its latency goes to `hist` (or to
/// `untraced`, kept when `split`, for a wake-up without the tracepoint).
#[inline(always)]
fn measure_with(
    c: &CyclicConfig,
    split: bool,
    mut wake: impl FnMut(u64) -> (bool, u64),
) -> Measured {
    let mut m = Measured {
        hist: sized_histogram(),
        untraced: split.then(sized_histogram),
        hits: 0,
        sleeps: 0,
        overruns: 0,
        overflows: 0,
    };
    let interval = c.interval_ns;
    let mut next = monotonic_ns() + interval;
    for _ in 0..c.loops {
        m.sleeps += sleep_until(next);
        let (fired, now) = wake(next);
        let latency = now.saturating_sub(next);
        match (&mut m.untraced, fired) {
            (Some(untraced), false) => untraced.saturating_record(latency),
            _ => {
                m.hits += 1;
                m.hist.saturating_record(latency);
            }
        }
        if latency > c.histogram_limit_ns {
            m.overflows += 1;
        }
        next += interval;
        while now > next {
            next += interval;
            m.overruns += 1;
        }
    }
    m
}

/// `clock_gettime(CLOCK_MONOTONIC)` in ns.
#[inline(always)]
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * NS_PER_S + ts.tv_nsec as u64
}

/// Sleeps until the absolute monotonic time `t` (ns); returns the number of calls made.
#[inline(always)]
fn sleep_until(t: u64) -> u64 {
    let ts = libc::timespec {
        tv_sec: (t / NS_PER_S) as libc::time_t,
        tv_nsec: (t % NS_PER_S) as libc::c_long,
    };
    let mut calls = 0;
    loop {
        calls += 1;
        // SAFETY: valid timespec; no remaining-time pointer with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return calls;
        }
    }
}

/// Holds `/dev/cpu_dma_latency` at 0 µs while the returned file is open (what cyclictest does by
/// default, keeping CPUs out of deep C-states). `None` when not permitted or not present.
fn pm_qos_zero() -> Option<std::fs::File> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .ok()?;
    f.write_all(&0i32.to_ne_bytes()).ok()?;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(loops: u64, interval_ns: u64, limit_ns: u64) -> CyclicConfig {
        CyclicConfig {
            interval_ns,
            loops,
            cpu: 0,
            main_cpu: None,
            priority: 1,
            fire_event: true,
            probe_at: ProbeAt::Window,
            fire: Fire::default(),
            histogram_limit_ns: limit_ns,
        }
    }

    #[test]
    fn loop_records_one_sample_and_one_event_per_period() {
        let mut events = 0u64;
        let m = measure(&config(50, 100_000, 10_000_000), |_| events += 1, |_| {});
        assert_eq!(m.hist.len(), 50);
        assert_eq!(m.hits, 50);
        assert_eq!(events, 50);
        assert!(m.sleeps >= 50);
        assert!(m.hist.max() < 10_000_000_000, "woke after 10 s?");
    }

    /// Spins for `ns` (a probe that costs that much).
    fn spin(ns: u64) {
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_nanos(ns) {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn a_window_probe_is_part_of_every_latency_and_an_after_probe_of_none() {
        const COST: u64 = 2_000_000;
        let window = measure(&config(10, 10_000_000, u64::MAX), |_| spin(COST), |_| {});
        assert!(window.hist.min() >= COST, "min {} ns", window.hist.min());
        let after = measure(&config(10, 10_000_000, u64::MAX), |_| {}, |_| spin(COST));
        assert!(after.hist.min() < COST, "min {} ns", after.hist.min());
    }

    #[test]
    fn alternating_fires_on_every_other_wake_up_and_keeps_the_others_apart() {
        const COST: u64 = 2_000_000;
        let mut fired = 0;
        let m = alternate(&config(10, 10_000_000, u64::MAX), |_| {
            fired += 1;
            spin(COST)
        });
        let untraced = m.untraced.expect("kept apart");
        assert_eq!((fired, m.hits, m.hist.len(), untraced.len()), (5, 5, 5, 5));
        assert!(m.hist.min() >= COST, "traced min {} ns", m.hist.min());
        assert!(untraced.min() < COST, "untraced min {} ns", untraced.min());
        assert!(measure(&config(2, 1_000_000, u64::MAX), |_| {}, |_| {})
            .untraced
            .is_none());
    }

    #[test]
    fn every_sample_above_the_limit_is_an_overflow() {
        let m = measure(&config(20, 50_000, 0), |_| {}, |_| {});
        // A wake-up is never exactly on time: every latency exceeds a 0 ns limit.
        assert_eq!(m.overflows, m.hist.len() - m.hist.count_at(0));
    }

    #[test]
    fn sleeping_past_the_next_period_counts_overruns() {
        let m = measure(
            &config(3, 1_000, u64::MAX),
            |_| {},
            |_| std::thread::sleep(std::time::Duration::from_millis(1)),
        );
        assert!(m.overruns >= 2 * 900, "{} overruns", m.overruns);
    }
}
