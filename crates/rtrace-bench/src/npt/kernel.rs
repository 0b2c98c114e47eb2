//! `npt --lttng-kernel`: what LTTng's kernel channel beside the loop's UST event recorded, and
//! what it shows on the measured CPU at the run's largest gaps (read before the trace data is
//! settled).

use anyhow::{bail, Result};
use rtrace_lttng::kernel;
use rtrace_measure::npt::{KernelAtGap, KernelTrace, KERNEL_GAPS, SWITCH_SLACK_NS};
use rtrace_protocol::NptDone;
use std::path::Path;

/// Causes named per gap at most (the rest are counted).
const CAUSES: usize = 6;

/// The kernel trace of the LTTng session below `dir`: its events by name, its channel's own
/// discarded count, and the kernel events on CPU `cpu` within each of `done`'s
/// [`KERNEL_GAPS`] largest gaps (from `end_mono_ns - ns` to `end_mono_ns`, ± the clock
/// conversion's slack).
pub fn read(dir: &Path, cpu: usize, done: &NptDone) -> Result<KernelTrace> {
    let Some(session) = kernel::find(dir) else {
        bail!(
            "LTTng wrote no kernel channel statistics below {}",
            dir.display()
        );
    };
    let channel = kernel::channel(&session)?;
    let mut gaps = done.largest.clone();
    gaps.sort_by_key(|g| std::cmp::Reverse(g.ns));
    gaps.truncate(KERNEL_GAPS);
    let windows: Vec<(u64, u64)> = gaps
        .iter()
        .map(|g| {
            (
                g.end_mono_ns.saturating_sub(g.ns + SWITCH_SLACK_NS),
                g.end_mono_ns + SWITCH_SLACK_NS,
            )
        })
        .collect();
    let during = kernel::during(&session, cpu as u32, &windows)?;
    let syms = kernel::kallsyms();
    Ok(KernelTrace {
        events: channel.events,
        discarded: channel.discarded,
        lost_packets: channel.lost_packets,
        at_largest: gaps
            .iter()
            .zip(during)
            .map(|(g, events)| KernelAtGap {
                ns: g.ns,
                end_mono_ns: g.end_mono_ns,
                events: events.len() as u64,
                what: kernel::summarize(&events, CAUSES, &syms),
            })
            .collect(),
    })
}
