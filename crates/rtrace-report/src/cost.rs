//! One experiment's per-hit cost of a tracer on a kind of hook, with what its result records
//! about how it was measured: the tracer's mode, the probed site, how far apart the hits came,
//! the buffer the events went to.

use crate::site::SiteClass;
use rtrace_measure::decompose::builds_on;
use rtrace_measure::interval::Estimate;
use rtrace_measure::usdt::HookKind;
use rtrace_tracer::{Instrumentation, TracerKind};
use std::cmp::Ordering;

/// The experiment that measured a cost. Rows follow this order, hot loops first: the first
/// cost of a hook is the reference of the modes plain `usdt` did not measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Experiment {
    Usdt,
    Decompose,
    Events,
    Npt,
    Sweep,
}

/// A kind of hook: one of `usdt`'s user-space hooks, or a kernel tracepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Hook {
    User(HookKind),
    Kernel,
}

impl Experiment {
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Usdt => "usdt",
            Experiment::Decompose => "decompose",
            Experiment::Events => "events",
            Experiment::Npt => "npt",
            Experiment::Sweep => "sweep",
        }
    }
}

impl Hook {
    pub fn name(self) -> &'static str {
        match self {
            Hook::User(h) => h.name(),
            Hook::Kernel => "kernel tp",
        }
    }
}

/// How far apart the hits came.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spacing {
    /// Back to back in a loop: the probe's path stays hot.
    Hot,
    /// At a capped rate in a spinning loop (npt).
    Paced { hz: f64 },
    /// After a sleep of the period (the sweep), on every `every`-th wake-up (2 with
    /// `--probe-at alternate`): the probe's path is cold.
    AfterSleep { interval_us: u64, every: u64 },
}

impl Spacing {
    /// `hot loop`, `paced, 10000 hits/s`, `cold, 1 hit per 30 µs wake-up`.
    pub fn label(self) -> String {
        match self {
            Spacing::Hot => "hot loop".into(),
            Spacing::Paced { hz } => format!("paced, {hz:.0} hits/s"),
            Spacing::AfterSleep {
                interval_us,
                every: 1,
            } => format!("cold, 1 hit per {interval_us} µs wake-up"),
            Spacing::AfterSleep { interval_us, every } => {
                format!("cold, 1 hit per {every} wake-ups {interval_us} µs apart")
            }
        }
    }

    /// Whether hits come apart in time (paced or after a sleep): the path has gone cold by
    /// the next one, as it never does back to back.
    pub fn apart(self) -> bool {
        self != Spacing::Hot
    }
}

/// The mode of the BPF tracers' programs of events 04–07: Gregg's one-liners `{ 1 }` (our
/// eBPF programs `return 0`): nothing but the hook.
pub const EMPTY_ACTION: &str = "empty action";

/// One per-hit cost.
#[derive(Debug, Clone)]
pub struct Cost {
    pub experiment: Experiment,
    /// Where in the report, short: `usdt`, `events 06 loop`, `cyclictest (usdt-ftrace)`.
    pub source: String,
    pub tracer: TracerKind,
    pub hook: Hook,
    /// The tracer's mode: its run's variant, else its result's ([`RunSettings::mode`]);
    /// [`EMPTY_ACTION`] for the BPF programs of events 04–07.
    ///
    /// [`RunSettings::mode`]: rtrace_measure::settings::RunSettings::mode
    pub mode: Option<String>,
    /// What the hook attached to, as the result names it without the kind in front:
    /// `rtrace:event`, `rtrace_marker_hit`, `libc:read`, `sys_enter_read`; `None`: not named.
    pub site: Option<String>,
    /// How the kernel executes the probed instruction ([`crate::site`]); `None`: not recorded.
    pub class: Option<SiteClass>,
    /// Extra ns per hit, with its 95% interval where the source has one.
    pub ns: Estimate,
    pub spacing: Spacing,
    /// The buffer every event is written to (`config.buffers`), in a mode that writes one.
    pub buffer: Option<String>,
    /// LTTng's `--record` (`stream`, or `overwrite`: a snapshot session), in a mode that
    /// writes: the one backend besides ftrace (whose mode it is) whose buffer it changes.
    pub kept: Option<String>,
    /// Only the hook's return lies in the measured interval: cyclictest's uretprobe on
    /// `clock_nanosleep`, whose entry trap fires before the sleep.
    pub return_only: bool,
}

impl Cost {
    /// A uprobe is placed on the site: a user-space hook of a tracer that is not LTTng-UST.
    pub fn probed(&self) -> bool {
        matches!(self.hook, Hook::User(_)) && self.tracer.instrumentation() == Instrumentation::Usdt
    }

    /// The site as shown: `-` when the result names none.
    pub fn site_label(&self) -> &str {
        self.site.as_deref().unwrap_or("-")
    }

    /// The mode as shown: `-` without one.
    pub fn mode_label(&self) -> &str {
        self.mode.as_deref().unwrap_or("-")
    }
}

/// Whether `mode` of `tracer` wakes the reader on every event: eBPF's `record-wakeup`,
/// bpftrace's `record` (its printf perf buffer; `config.unequal` records it).
pub fn wakes(tracer: TracerKind, mode: &str) -> bool {
    matches!(
        (tracer, mode),
        (TracerKind::Ebpf, "record-wakeup") | (TracerKind::Bpftrace, "record")
    )
}

/// Whether `mode` of `tracer` writes every event into the tracer's buffer (not a map, not
/// tracing off, not an empty program).
pub fn writes(tracer: TracerKind, mode: Option<&str>) -> bool {
    match (tracer, mode) {
        (TracerKind::Ftrace | TracerKind::Perf, Some(m)) => matches!(m, "overwrite" | "stream"),
        (TracerKind::Ebpf, Some(m)) => matches!(m, "record" | "record-wakeup"),
        (TracerKind::Bpftrace, Some(m)) => m == "record",
        (TracerKind::Lttng, m) => m != Some(EMPTY_ACTION),
        _ => false,
    }
}

/// How `a`'s work compares with `b`'s for `tracer`: `Greater` when `a` is `b` plus mechanisms
/// (a rung above it on one of `usdt --decompose`'s paths, or `b` is [`EMPTY_ACTION`]), `Less`
/// the other way round, `Equal` for the same mode; `None` when they are not ordered.
pub fn work(tracer: TracerKind, a: &str, b: &str) -> Option<Ordering> {
    match (a, b) {
        _ if a == b => Some(Ordering::Equal),
        (EMPTY_ACTION, _) => Some(Ordering::Less),
        (_, EMPTY_ACTION) => Some(Ordering::Greater),
        _ if builds_on(tracer, b, a) => Some(Ordering::Greater),
        _ if builds_on(tracer, a, b) => Some(Ordering::Less),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TracerKind::{Bpftrace, Ebpf, Ftrace};

    #[test]
    fn modes_order_by_the_mechanisms_they_add() {
        assert_eq!(
            work(Ebpf, "record-wakeup", "record"),
            Some(Ordering::Greater)
        );
        assert_eq!(work(Ftrace, "overwrite", "stream"), Some(Ordering::Less));
        assert_eq!(work(Ebpf, EMPTY_ACTION, "floor"), Some(Ordering::Less));
        assert_eq!(work(Ebpf, "aggregate", "record"), None);
        assert!(wakes(Bpftrace, "record") && !wakes(Ebpf, "record"));
        assert!(writes(Ftrace, Some("overwrite")) && !writes(Ftrace, Some("off")));
        assert!(!writes(Ebpf, Some(EMPTY_ACTION)) && !writes(Ebpf, Some("aggregate")));
    }
}
