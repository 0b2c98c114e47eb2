//! Where a traced hit's nanoseconds go (`usdt --decompose`): per tracer and hook site, the
//! configurations that add one mechanism at a time, measured in the same run and rounds, as a
//! staircase. Each step's height is its extra ns per hit over case 0 (`crate::probe_cost`); its
//! increment is the difference to the step below, round by round, with a t interval over the
//! rounds. The increments add up to the top step's cost by construction (they telescope);
//! what the staircase shows is where that cost is spent, and the first step is the floor this
//! kernel sets for the hook: the trap or call and the uprobe dispatch with the least work a
//! tracer can do and still count every hit. The check that the steps measure what users get is
//! against a separate invocation: [`measured_alone`] finds the top configuration in a plain
//! `usdt` result.

use crate::interval::{self, Estimate};
use crate::probe_cost::{Extra, Stat};
use crate::usdt::{Case, CaseResult, HookKind, UsdtResult};
use rtrace_tracer::TracerKind;
use serde::Serialize;

/// One rung of a path: (tracer, mode, case, what it adds to the rung below).
type Rung = (TracerKind, &'static str, Case, &'static str);

const FTRACE_FLOOR: Rung = (TracerKind::Ftrace, "off", Case::Traced, "floor: the int3 trap, the uprobe handler, the event's argument fetch; tracing off, the ring-buffer reservation fails");

const EBPF_FLOOR: Rung = (TracerKind::Ebpf, "floor", Case::Traced, "floor: the hook (int3 trap or nop5 call), uprobe dispatch, a BPF program that increments one global counter (the argument not read)");

/// Each tracer's paths: a staircase from its floor up to one full configuration, every rung
/// adding one mechanism to the rung below it, so that the increments are what each mechanism
/// costs (bpftrace's rungs replace the floor's program by its own on the same hook: their
/// increment is its program's cost above the least one). A tracer with two kinds of output
/// (maps or a ring buffer, a tracepoint or tracef) has a path for each.
fn paths(tracer: TracerKind, hook: HookKind) -> Vec<(&'static str, Vec<Rung>)> {
    match tracer {
        TracerKind::Ebpf => vec![
            ("maps", vec![
                EBPF_FLOOR,
                (tracer, "count", Case::Traced, "+ a per-CPU map lookup and its counter"),
                (tracer, "aggregate", Case::Traced, "+ reading the argument (USDT: its spec looked up by attach cookie) and its log2 histogram"),
            ]),
            ("ring buffer", vec![
                EBPF_FLOOR,
                (tracer, "record", Case::Traced, "+ reading the argument and a 32-byte event (argument, timestamp, CPU, pid) reserved and submitted in the ring buffer, no wake-up"),
                (tracer, "record-wakeup", Case::Traced, "+ waking the reader on every event"),
            ]),
        ],
        TracerKind::Ftrace => vec![("ring buffer", vec![
            FTRACE_FLOOR,
            (tracer, "overwrite", Case::Traced, "+ the ring-buffer write (tracing on, no consumer; events overwritten once the buffer is full were written first)"),
            (tracer, "stream", Case::Traced, "+ a consumer draining the buffer on another CPU"),
        ])],
        TracerKind::Lttng => ["tracepoint", "tracef"]
            .into_iter()
            .map(|kind| {
                (kind, vec![
                    (tracer, kind, Case::Instrumented, "floor: the dormant tracepoint's inline enabled check (no session)"),
                    (tracer, kind, Case::Traced, if kind == "tracef" {
                        "+ the probe: the arguments formatted printf-style (tracef) and written into the shared ring buffer from user space"
                    } else {
                        "+ the probe: the event's fields written into the shared ring buffer from user space"
                    }),
                ])
            })
            .collect(),
        // bpftrace attaches where our eBPF floor does only on the plain USDT site (on
        // `usdt-nop5` libbpf calls through the nop5, bpftrace still traps at the note's address).
        TracerKind::Bpftrace if hook == HookKind::Usdt => vec![
            ("count()", vec![
                EBPF_FLOOR,
                (tracer, "aggregate", Case::Traced, "+ bpftrace's count() program instead of the floor's (the same hook and dispatch)"),
            ]),
            ("printf", vec![
                EBPF_FLOOR,
                (tracer, "record", Case::Traced, "+ bpftrace's printf program, its perf-buffer output and the reader's wake-up on every event"),
            ]),
        ],
        // perf records ftrace's uprobe event (the same definition): ftrace's floor is the
        // hook, dispatch and argument fetch of both, and perf's first rung replaces ftrace's
        // failed reservation by perf's sample.
        TracerKind::Perf => vec![("perf ring", vec![
            FTRACE_FLOOR,
            (tracer, "overwrite", Case::Traced, "+ perf's handler instead of ftrace's: its per-task filter, the sample (IP, TID, time, CPU, period, raw argument) written to perf's ring, no consumer (perf record --overwrite reads it at its exit)"),
            (tracer, "stream", Case::Traced, "+ perf record draining the ring into perf.data on another CPU"),
        ])],
        TracerKind::Bpftrace | TracerKind::None | TracerKind::Strace => Vec::new(),
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

/// One tracer's staircase on one hook site, up one of its paths.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Staircase {
    pub tracer: TracerKind,
    pub hook: HookKind,
    /// Which of the tracer's full configurations the path climbs to (`maps`, `ring buffer`,
    /// `tracepoint`, `printf`).
    pub path: &'static str,
    /// The top step's mode: the full configuration.
    pub top_mode: &'static str,
    pub steps: Vec<Step>,
    /// Counters that could not be counted, with the reason.
    pub uncounted: std::collections::BTreeMap<String, String>,
}

impl Staircase {
    /// The increments' sum: the top step's height up to rounding (they telescope), the full
    /// cost the steps decompose.
    pub fn sum(&self) -> f64 {
        self.steps.iter().map(|s| s.increment.estimate).sum()
    }
}

/// The same full configuration measured on its own, in a separate invocation (a plain `usdt`
/// run): what the staircase's steps must add up to if the decomposition measures what users
/// get. `alone` is that invocation's result.
pub fn measured_alone(s: &Staircase, alone: &UsdtResult) -> Option<Estimate> {
    let run = find(alone, s.tracer, s.hook, s.top_mode, Case::Traced)?;
    if !alone.in_ratios(run) {
        return None;
    }
    crate::probe_cost::per_hit(alone, run)
}

fn find<'a>(
    r: &'a UsdtResult,
    tracer: TracerKind,
    hook: HookKind,
    wanted: &str,
    case: Case,
) -> Option<&'a CaseResult> {
    r.runs.iter().find(|c| {
        c.tracer == tracer
            && c.hook_kind == hook
            && c.case == case
            && r.run_mode(c).as_deref() == Some(wanted)
    })
}

/// Whether `upper` is `lower` plus mechanisms for `tracer`: both rungs of one of its paths,
/// `lower` below (eBPF `floor` → `count` → `aggregate`, `floor` → `record` → `record-wakeup`;
/// ftrace `off` → `overwrite` → `stream`). Modes on different paths (`record`, `aggregate`) are
/// not ordered. The plain USDT site has every path.
pub fn builds_on(tracer: TracerKind, lower: &str, upper: &str) -> bool {
    paths(tracer, HookKind::Usdt).iter().any(|(_, rungs)| {
        let at = |mode: &str| {
            rungs
                .iter()
                .position(|&(t, m, case, _)| (t, m, case) == (tracer, mode, Case::Traced))
        };
        matches!((at(lower), at(upper)), (Some(l), Some(u)) if l < u)
    })
}

/// Whether `r` is a decomposition (`usdt --decompose`, or floor modes asked for by hand): it
/// has a run of eBPF's floor or of ftrace with tracing off. A plain `usdt` result is not, even
/// when its LTTng runs would make a two-step path.
pub fn is_decomposition(r: &UsdtResult) -> bool {
    r.runs.iter().any(|c| {
        c.case == Case::Traced
            && matches!(
                (c.tracer, r.run_mode(c).as_deref()),
                (TracerKind::Ebpf, Some("floor")) | (TracerKind::Ftrace, Some("off"))
            )
    })
}

/// Every staircase of a decomposition `r` ([`is_decomposition`]), per hook kind, tracer and
/// path: a path with a rung not measured (or that dropped events) has none.
pub fn staircases(r: &UsdtResult) -> Vec<Staircase> {
    let mut out = Vec::new();
    if !is_decomposition(r) {
        return out;
    }
    for hook in HookKind::ALL {
        for tracer in TracerKind::ALL {
            for (path, rungs) in paths(tracer, hook) {
                if let Some(s) = climb(r, tracer, hook, path, &rungs) {
                    out.push(s);
                }
            }
        }
    }
    out
}

/// One path's staircase, if every rung of it was measured and kept in ratios.
fn climb(
    r: &UsdtResult,
    tracer: TracerKind,
    hook: HookKind,
    path: &'static str,
    rungs: &[Rung],
) -> Option<Staircase> {
    let mut steps: Vec<Step> = Vec::new();
    let mut below: Vec<f64> = Vec::new();
    let mut uncounted = std::collections::BTreeMap::new();
    for &(rung_tracer, rung_mode, case, adds) in rungs {
        let run = find(r, rung_tracer, hook, rung_mode, case)?;
        if case == Case::Traced && !r.in_ratios(run) {
            return None;
        }
        let extra = Extra::of(r, run)?;
        let heights = extra.per_round(Stat::SteadyMean);
        let height = interval::mean_of(&heights, 0.0)?;
        let increments: Vec<f64> = if below.is_empty() {
            heights.clone()
        } else if below.len() == heights.len() {
            heights.iter().zip(&below).map(|(h, b)| h - b).collect()
        } else {
            return None;
        };
        let increment = interval::mean_of(&increments, 0.0)?;
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
    let top_mode = rungs.last()?.1;
    (steps.len() >= 2).then_some(Staircase {
        tracer,
        hook,
        path,
        top_mode,
        steps,
        uncounted,
    })
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
    let floor = find(r, TracerKind::Ebpf, hook, "floor", Case::Traced)?;
    let run = find(r, tracer, hook, mode, Case::Traced)?;
    let (f, x) = (Extra::of(r, floor)?, Extra::of(r, run)?);
    let (f, x) = (f.per_round(Stat::SteadyMean), x.per_round(Stat::SteadyMean));
    if f.len() != x.len() {
        return None;
    }
    let d: Vec<f64> = x.iter().zip(&f).map(|(x, f)| x - f).collect();
    interval::mean_of(&d, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TracerKind::{Bpftrace, Ebpf, Ftrace};

    #[test]
    fn a_mode_builds_on_the_rungs_below_it_on_one_path() {
        assert!(builds_on(Ebpf, "floor", "aggregate"));
        assert!(builds_on(Ebpf, "record", "record-wakeup"));
        assert!(builds_on(Ftrace, "overwrite", "stream"));
        assert!(!builds_on(Ftrace, "stream", "overwrite"), "upside down");
        assert!(!builds_on(Ebpf, "record", "aggregate"), "two paths");
        assert!(!builds_on(Bpftrace, "aggregate", "record"), "two paths");
        assert!(!builds_on(Ebpf, "record", "record"));
    }
}
