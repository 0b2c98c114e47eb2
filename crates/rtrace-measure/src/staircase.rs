//! Where a traced hit's nanoseconds go (`usdt --decompose`): per tracer and hook site, the
//! configurations that add one mechanism at a time, measured in the same run and rounds, as a
//! staircase. Each step's height is its extra ns per hit over case 0 (`crate::probe_cost`); its
//! increment is the difference to the step below, round by round, with a t interval over the
//! rounds. The increments add up to the top step's cost by construction (they telescope);
//! what the staircase shows is where that cost is spent, and the first step is the floor this
//! kernel sets for the hook: the trap or call and the uprobe dispatch with the least work a
//! tracer can do and still count every hit.

use crate::interval::{self, Estimate};
use crate::probe_cost::{Extra, Stat};
use crate::usdt::{Case, CaseResult, HookKind, UsdtResult};
use rtrace_tracer::TracerKind;
use serde::Serialize;

/// The configurations of each tracer from the cheapest up, with what each adds to the one
/// below: (mode, case, what it adds).
fn ladder(tracer: TracerKind) -> &'static [(Option<&'static str>, Case, &'static str)] {
    match tracer {
        TracerKind::Ebpf => &[
            (Some("floor"), Case::Traced, "floor: the hook (int3 trap or nop5 call), uprobe dispatch, a BPF program that increments one global counter (the argument not read)"),
            (Some("count"), Case::Traced, "+ per-CPU map lookup and counter"),
            (Some("aggregate"), Case::Traced, "+ reading the argument (USDT: its spec looked up by attach cookie) and its log2 histogram"),
            (Some("record"), Case::Traced, "a 32-byte event (argument, timestamp, CPU, pid) reserved and submitted in the ring buffer, no wake-up, instead of the maps"),
            (Some("record-wakeup"), Case::Traced, "+ waking the reader on every event"),
        ],
        TracerKind::Ftrace => &[
            (Some("off"), Case::Traced, "floor: the int3 trap, the uprobe handler, the event's argument fetch; tracing off, the ring-buffer reservation fails"),
            (Some("overwrite"), Case::Traced, "+ the ring-buffer write (tracing on, no consumer)"),
            (Some("stream"), Case::Traced, "+ a consumer draining the buffer on another CPU"),
        ],
        TracerKind::Lttng => &[
            (Some("tracepoint"), Case::Instrumented, "floor: the dormant tracepoint's inline enabled check (no session)"),
            (Some("tracepoint"), Case::Traced, "+ the probe: event written into the shared ring buffer from user space"),
            (Some("tracef"), Case::Traced, "printf-style formatting (tracef) instead of the structured tracepoint"),
        ],
        TracerKind::Bpftrace => &[
            (Some("aggregate"), Case::Traced, "bpftrace `count()`: the hook, uprobe dispatch, its program"),
            (Some("record"), Case::Traced, "printf of the event into a perf buffer that wakes the reader instead"),
        ],
        TracerKind::None => &[],
    }
}

/// One step of a staircase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The run's label (`ebpf (count) case 1`, `lttng (tracepoint) case 3`).
    pub run: String,
    /// What this step adds to the one below.
    pub adds: &'static str,
    /// Extra ns per hit over case 0 (the step's height).
    pub height: Estimate,
    /// Height minus the step below's, round by round (the first step: its height).
    pub increment: Estimate,
    /// Performance counters per hit over case 0 (`--decompose`), by counter name: the run's
    /// count per iteration minus case 0's.
    pub counters: std::collections::BTreeMap<String, f64>,
}

/// One tracer's staircase on one hook site.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Staircase {
    pub tracer: TracerKind,
    pub hook: HookKind,
    pub steps: Vec<Step>,
    /// Counters that could not be counted, with the reason.
    pub uncounted: std::collections::BTreeMap<String, String>,
}

impl Staircase {
    /// The top step's height: the full cost the steps decompose.
    pub fn full(&self) -> f64 {
        self.steps.last().map_or(0.0, |s| s.height.estimate)
    }

    /// The increments' sum (equal to [`Staircase::full`] up to rounding: they telescope).
    pub fn sum(&self) -> f64 {
        self.steps.iter().map(|s| s.increment.estimate).sum()
    }
}

fn find<'a>(
    r: &'a UsdtResult,
    tracer: TracerKind,
    hook: HookKind,
    mode: Option<&str>,
    case: Case,
) -> Option<&'a CaseResult> {
    r.runs.iter().find(|c| {
        c.tracer == tracer
            && c.hook_kind == hook
            && c.case == case
            && hook.mode_of(c.variant.as_deref()) == mode
    })
}

/// Every staircase of `r` with at least two steps, per hook kind then tracer. A lossy run ends
/// its staircase below it (dropping an event is cheaper than writing it).
pub fn staircases(r: &UsdtResult) -> Vec<Staircase> {
    let mut out = Vec::new();
    for hook in HookKind::ALL {
        for tracer in TracerKind::ALL {
            let mut steps: Vec<Step> = Vec::new();
            let mut below: Vec<f64> = Vec::new();
            let mut uncounted = std::collections::BTreeMap::new();
            for &(mode, case, adds) in ladder(tracer) {
                let Some(run) = find(r, tracer, hook, mode, case) else {
                    continue;
                };
                if case == Case::Traced && !r.in_ratios(run) {
                    break;
                }
                let Some(extra) = Extra::of(r, run) else {
                    continue;
                };
                let heights = extra.per_round(Stat::SteadyMean);
                let Some(height) = interval::mean_of(&heights, 0.0) else {
                    continue;
                };
                let increments: Vec<f64> = if below.len() == heights.len() {
                    heights.iter().zip(&below).map(|(h, b)| h - b).collect()
                } else if below.is_empty() {
                    heights.clone()
                } else {
                    continue;
                };
                let Some(increment) = interval::mean_of(&increments, 0.0) else {
                    continue;
                };
                let mut counters = std::collections::BTreeMap::new();
                if let (Some(c), Some(b)) = (&run.counters, &extra.baseline.counters) {
                    for name in c.values.keys() {
                        if let (Some(x), Some(y)) = (c.per_iteration(name), b.per_iteration(name)) {
                            counters.insert(name.clone(), x - y);
                        }
                    }
                    for (name, why) in &c.unavailable {
                        uncounted.entry(name.clone()).or_insert_with(|| why.clone());
                    }
                }
                steps.push(Step {
                    run: crate::probe_cost::label(run),
                    adds,
                    height,
                    increment,
                    counters,
                });
                below = heights;
            }
            if steps.len() >= 2 {
                out.push(Staircase {
                    tracer,
                    hook,
                    steps,
                    uncounted,
                });
            }
        }
    }
    out
}

/// Program cost alone: `tracer`'s run in `mode` above our eBPF floor on the same hook site
/// (what its program adds to the cheapest program that counts every hit), per round, with its
/// interval.
pub fn above_floor(
    r: &UsdtResult,
    hook: HookKind,
    tracer: TracerKind,
    mode: &str,
) -> Option<Estimate> {
    let floor = find(r, TracerKind::Ebpf, hook, Some("floor"), Case::Traced)?;
    let run = find(r, tracer, hook, Some(mode), Case::Traced)?;
    let (f, x) = (Extra::of(r, floor)?, Extra::of(r, run)?);
    let (f, x) = (f.per_round(Stat::SteadyMean), x.per_round(Stat::SteadyMean));
    if f.len() != x.len() {
        return None;
    }
    let d: Vec<f64> = x.iter().zip(&f).map(|(x, f)| x - f).collect();
    interval::mean_of(&d, 0.0)
}
