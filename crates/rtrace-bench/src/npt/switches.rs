//! Where an npt run's largest gaps fell against the tracer's buffer switches, from the run's
//! trace data before it is settled: LTTng's packets (the hit number of each packet's first event;
//! its `timestamp_begin` in `CLOCK_MONOTONIC` against the gaps' ends converted by the workload
//! for the time since a switch) and ftrace's `trace_pipe_raw` pages (the kernel page each hit's
//! event is on, found by the probe's argument).
//! eBPF's ring buffer has no sub-buffers; bpftrace's perf buffer is not read here.

use anyhow::Result;
use rtrace_measure::npt::{
    at_switch_hits, at_switch_times, near_switches, AtSwitches, LargestGap, Switches,
};
use rtrace_protocol::NptDone;
use rtrace_tracer::TracerKind;
use std::path::{Path, PathBuf};

/// What the trace data shows of a run's buffer switches.
pub struct Placed {
    pub switches: Switches,
    /// `done`'s largest gaps placed against them.
    pub largest: Vec<LargestGap>,
    /// What each switch's iteration cost (`None`: the loop kept no slow gaps).
    pub at_switches: Option<AtSwitches>,
}

/// The switches of `kind`'s trace data below `dir` on CPU `cpu`, `done`'s largest gaps placed
/// against them and the cost of each switch's iteration; `None` where the tracer has no
/// switches to show (or wrote no data).
pub fn place(kind: TracerKind, dir: &Path, cpu: usize, done: &NptDone) -> Result<Option<Placed>> {
    Ok(match kind {
        TracerKind::Lttng => {
            let found = rtrace_lttng::switches(dir, cpu as u32)?;
            let times = &found.times;
            let inside = times
                .iter()
                .filter(|&&t| (done.start_mono_ns..=done.end_mono_ns).contains(&t))
                .count() as u64;
            let mut largest = near_switches(&done.largest, times);
            // Each packet's first event carries its hit number: which hits switched is then
            // exact, and only the time since a switch needs the clocks.
            let (how, at_switches) = match &found.hits {
                Some(hits) => {
                    let set: std::collections::HashSet<&u64> = hits.iter().collect();
                    for g in &mut largest {
                        g.switched = Some(set.contains(&g.gap.hit));
                    }
                    (
                        "each CTF packet but a stream's first: the hit number of its first event (which gap switched), its timestamp_begin (CLOCK_MONOTONIC) against the gap's end converted from the TSC (how long since)",
                        at_switch_hits(done, hits),
                    )
                }
                None => (
                    "each CTF packet's timestamp_begin (CLOCK_MONOTONIC) but a stream's first, against the gap's end converted from the TSC",
                    at_switch_times(done, times),
                ),
            };
            Some(Placed {
                switches: Switches {
                    what: "LTTng sub-buffer switch".into(),
                    count: inside,
                    how: how.into(),
                },
                largest,
                at_switches,
            })
        }
        TracerKind::Ftrace => {
            let Some(file) = find(dir, &format!("ftrace-cpu{cpu}.raw")) else {
                return Ok(None);
            };
            let hits: Vec<u64> = done.largest.iter().map(|g| g.hit).collect();
            let (pages, found) = rtrace_ftrace::pages::locate(&file, &hits)?;
            let largest = done
                .largest
                .iter()
                .map(|&gap| {
                    let on = found.get(&gap.hit);
                    LargestGap {
                        gap,
                        switched: on.map(|p| p.first),
                        since_switch_ns: on.map(|p| p.since_page_ns as i64),
                    }
                })
                .collect();
            let firsts = rtrace_ftrace::pages::first_hits(&file)?;
            Some(Placed {
                switches: Switches {
                    what: "ftrace ring-buffer page switch".into(),
                    count: pages,
                    how: "the trace_pipe_raw page holding the gap's event (found by the probe's argument): its first event or not, and the trace clock from the page's first event to it".into(),
                },
                largest,
                at_switches: at_switch_hits(done, &firsts),
            })
        }
        _ => None,
    })
}

/// The first file named `name` below `dir`.
fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == name) {
                return Some(p);
            }
        }
    }
    None
}
