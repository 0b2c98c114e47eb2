//! The instrumented workload, generic over its instrumentation so each flavour (USDT here,
//! LTTng-UST in its own binary) gets the same loop, monomorphised, with the tracepoint inlined.
//!
//! Protocol (see `rtrace_protocol`): argv[1] is a JSON `WorkloadConfig`; the workload pins,
//! locks memory, prints `Ready`, waits for one byte on stdin, runs, prints `Done`.

mod cyclic;
mod kernel_paths;
pub mod markers;
mod micro;
mod npt;
mod rate;
mod reads;
mod setup;
pub mod sites;
mod together;
pub mod tsc;

use anyhow::{bail, Context, Result};
use rtrace_protocol::{Message, Probes, Ready, WorkloadConfig};
use std::io::{Read, Write};

/// A workload flavour's tracepoints. `event` is fired in the loop; `idle` exists in the binary
/// but is never fired during a run (case 2 attaches to it).
pub trait Instrument {
    /// `"usdt"` or `"lttng-ust"`.
    const INSTRUMENTATION: &'static str;
    /// Every flavour names its tracepoints `rtrace:event` and `rtrace:idle`.
    fn probes() -> Probes {
        Probes {
            provider: "rtrace".into(),
            event: "event".into(),
            idle: "idle".into(),
        }
    }
    fn event(i: u64);
    fn idle(i: u64);
}

/// Entry point of every workload binary: exits 0 on success, 2 on bad input, 1 otherwise.
pub fn main<I: Instrument>() -> ! {
    match run::<I>() {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("workload: {e:#}");
            std::process::exit(1)
        }
    }
}

fn run<I: Instrument>() -> Result<()> {
    let arg = std::env::args().nth(1).context(
        "usage: workload '<json WorkloadConfig>' (this binary is started by rtrace-bench)",
    )?;
    let config: WorkloadConfig =
        serde_json::from_str(&arg).context("argument is not a valid WorkloadConfig")?;
    match config {
        WorkloadConfig::Micro(c) => {
            let placed = setup::place(c.cpu, c.priority)?;
            let done = micro::run::<I>(&c, || {
                announce::<I>(c.cpu, &placed)?;
                wait_for_go()
            })?;
            emit(&Message::Done(done))
        }
        WorkloadConfig::Cyclic(c) => cyclic::run::<I>(&c),
        WorkloadConfig::Rate(c) => {
            let placed = setup::place(c.cpu, c.priority)?;
            let done = rate::run::<I>(&c, || {
                announce::<I>(c.cpu, &placed)?;
                wait_for_go()
            })?;
            emit(&Message::RateDone(done))
        }
        WorkloadConfig::Npt(c) => {
            let placed = setup::place(c.cpu, c.priority)?;
            announce::<I>(c.cpu, &placed)?;
            wait_for_go()?;
            emit(&Message::NptDone(npt::run::<I>(&c)?))
        }
        WorkloadConfig::Reads(c) => {
            let placed = setup::place(c.cpu, c.priority)?;
            let done = reads::run(&c, || {
                announce::<I>(c.cpu, &placed)?;
                reads::wait_for_go_without_read()
            })?;
            emit(&Message::ReadsDone(done))
        }
    }
}

/// A histogram of ns pre-sized up to 60 s: recording never allocates in the loop.
fn sized_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

fn announce<I: Instrument>(cpu: usize, placed: &setup::Placed) -> Result<()> {
    emit(&Message::Ready(Ready {
        pid: std::process::id(),
        cpu,
        instrumentation: I::INSTRUMENTATION.to_owned(),
        probes: I::probes(),
        mlocked: placed.mlocked,
        priority: placed.priority,
    }))
}

fn emit(m: &Message) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", m.to_line())?;
    out.flush()?;
    Ok(())
}

fn wait_for_go() -> Result<()> {
    let mut b = [0u8; 1];
    let n = std::io::stdin().read(&mut b)?;
    if n != 1 {
        bail!("harness closed stdin before go");
    }
    Ok(())
}
