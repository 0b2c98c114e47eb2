//! The per-probe microbenchmark loop (thesis §3.3.2): each iteration's body is timed with
//! TSC reads (`lfence; rdtsc` before, `rdtscp` after); recording happens outside the timed interval.

use crate::{sized_histogram, tsc, Instrument};
use anyhow::Result;
use hdrhistogram::Histogram;
use rtrace_protocol::{encode_histogram, Body, Done, MicroConfig, Pacing};
use std::time::Duration;

#[inline(always)]
fn barrier() {
    // SAFETY: an empty asm block without `nomem` is a compiler memory barrier and nothing else
    // (the thesis' `asm("" ::: "memory")`).
    unsafe { core::arch::asm!("", options(nostack, preserves_flags)) }
}

/// Calibration window of the TSC: against `CLOCK_MONOTONIC` 20 ms give the frequency to about
/// 1e-6 (the frequencies of separate processes agree that well), and every round is a process.
const CALIBRATION: Duration = Duration::from_millis(20);

/// Runs the loop on every thread of `c`. `ready` is called once every further thread exists and
/// is pinned (so that a tracer filtering on the process's threads sees them all) and returns
/// when the harness says go.
pub fn run<I: Instrument>(c: &MicroConfig, ready: impl FnOnce() -> Result<()>) -> Result<Done> {
    let tsc_hz = tsc::calibrate(CALIBRATION);
    let ns_per_tick = 1e9 / tsc_hz;
    let tsc_step_ns = tsc::step_ticks() as f64 * ns_per_tick;
    let mut timer = sized_histogram();
    let mut hist = sized_histogram();
    let mut rests = 0;

    for _ in 0..c.timer_samples {
        let t0 = tsc::start();
        let t1 = tsc::stop();
        timer.saturating_record(tsc::to_ns(t1 - t0, ns_per_tick));
    }

    let threads = crate::together::run(&c.more_threads, c.priority, ready, || {
        let mut hist = sized_histogram();
        let mut pacer = Pacer::new(c.pacing, ns_per_tick);
        let hits = body::<I>(c, ns_per_tick, &mut hist, &mut pacer);
        (hits, hist, pacer.rests)
    })?;
    let mut hits = 0;
    let mut per_thread = Vec::new();
    for (h, th, r) in &threads {
        hits += h;
        rests += r;
        hist.add(th).expect("same bounds");
        if threads.len() > 1 {
            per_thread.push(encode_histogram(th)?);
        }
    }
    if std::hint::black_box(hits == u64::MAX) {
        // Never taken: keeps the idle tracepoint and marker in the binary, reachable but not
        // fired.
        I::idle(hits);
        crate::sites::idle_nop5(hits);
        crate::sites::idle_stepped(hits);
        crate::markers::rtrace_marker_idle(hits);
    }
    let uprobes_trampoline = crate::kernel_paths::uprobes_trampoline();
    let syscall_ns = crate::kernel_paths::bare_syscall_ns(ns_per_tick);

    Ok(Done {
        hits: if c.body == Body::Barrier { 0 } else { hits },
        iterations: hist.len(),
        warmup: c.warmup,
        tsc_hz,
        tsc_step_ns: Some(tsc_step_ns),
        histogram: encode_histogram(&hist)?,
        timer_overhead: encode_histogram(&timer)?,
        max_rss_kb: max_rss_kb(),
        rests,
        per_thread,
        uprobes_trampoline,
        syscall_ns: Some(syscall_ns),
    })
}

/// One thread's loop of `c.body`; returns how many times the body ran.
fn body<I: Instrument>(
    c: &MicroConfig,
    ns_per_tick: f64,
    hist: &mut Histogram<u64>,
    pacer: &mut Pacer,
) -> u64 {
    match c.body {
        Body::Barrier => timed(c, ns_per_tick, hist, pacer, |_| barrier()),
        Body::Event => timed(c, ns_per_tick, hist, pacer, I::event),
        Body::EventNop5 => timed(c, ns_per_tick, hist, pacer, crate::sites::event_nop5),
        Body::EventStepped => timed(c, ns_per_tick, hist, pacer, crate::sites::event_stepped),
        Body::Call => timed(c, ns_per_tick, hist, pacer, |i| {
            crate::markers::rtrace_marker_hit(i);
        }),
    }
}

/// Sleeps outside the timed interval once the loop has spun for a burst (see [`Pacing`]).
struct Pacer {
    burst_ticks: u64,
    rest: Duration,
    since: u64,
    rests: u64,
}

impl Pacer {
    fn new(pacing: Option<Pacing>, ns_per_tick: f64) -> Pacer {
        let (burst_ticks, rest) = match pacing {
            Some(p) => (
                (p.burst_ns as f64 / ns_per_tick) as u64,
                Duration::from_nanos(p.rest_ns),
            ),
            None => (u64::MAX, Duration::ZERO),
        };
        Pacer {
            burst_ticks,
            rest,
            since: tsc::start(),
            rests: 0,
        }
    }

    /// Called between iterations with a fresh TSC reading.
    #[inline(always)]
    fn between(&mut self, now: u64) {
        if now.wrapping_sub(self.since) > self.burst_ticks {
            self.pause();
        }
    }

    #[cold]
    #[inline(never)]
    fn pause(&mut self) {
        std::thread::sleep(self.rest);
        self.rests += 1;
        self.since = tsc::start();
    }
}

/// Runs warm-up then timed iterations of `body`; returns how many times `body` ran.
#[inline(always)]
fn timed(
    c: &MicroConfig,
    ns_per_tick: f64,
    hist: &mut Histogram<u64>,
    pacer: &mut Pacer,
    mut body: impl FnMut(u64),
) -> u64 {
    let mut ran = 0u64;
    for i in 0..c.warmup {
        body(i);
        ran += 1;
        if i % 1024 == 1023 {
            pacer.between(tsc::start());
        }
    }
    let spacing = c.spacing_us.map(Duration::from_micros);
    for i in 0..c.iterations {
        if let Some(gap) = spacing {
            std::thread::sleep(gap);
        }
        let t0 = tsc::start();
        body(i);
        let t1 = tsc::stop();
        ran += 1;
        hist.saturating_record(tsc::to_ns(t1.wrapping_sub(t0), ns_per_tick));
        pacer.between(t1);
    }
    ran
}

pub(crate) fn max_rss_kb() -> u64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| u.max_rss() as u64)
        .unwrap_or(0)
}
