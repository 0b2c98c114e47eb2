//! The cyclictest-style latency loop (thesis §3.4): configuration and result.

use serde::{Deserialize, Serialize};

/// Where the loop's tracepoint fires relative to the latency measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeAt {
    /// Between the wake-up and reading the clock: the probe's cost is part of the measured
    /// latency, as in the thesis' modified cyclictest ("a tracepoint between the expected and
    /// actual timing measurements", §3.4.2).
    #[default]
    Window,
    /// After the latency is taken, before the next sleep: with an absolute timer the probe's
    /// cost never enters a latency (it only shortens the sleep).
    After,
    /// As `Window`, on every other wake-up only; the latencies of the wake-ups without it are
    /// kept apart (`CyclicDone::untraced`), so the probe's in-window cost is paired within one
    /// run, 2 periods apart, whatever state the machine is in.
    Alternate,
}

impl ProbeAt {
    pub fn name(self) -> &'static str {
        match self {
            ProbeAt::Window => "window",
            ProbeAt::After => "after",
            ProbeAt::Alternate => "alternate",
        }
    }

    /// What the placement means, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            ProbeAt::Window => "the tracepoint fires between the wake-up and the clock reading (inside the measured latency, as in the thesis' modified cyclictest)",
            ProbeAt::After => "the tracepoint fires after the latency is taken, before the next sleep (its cost never enters a latency)",
            ProbeAt::Alternate => "the tracepoint fires between the wake-up and the clock reading on every other wake-up; the latencies of the others, without it, are kept apart and the shift is paired within each run",
        }
    }
}

/// What fires once per loop when `fire_event` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fire {
    /// The workload's tracepoint (USDT `rtrace:event`, or LTTng-UST in `workload-lttng`).
    #[default]
    Tracepoint,
    /// A call of the marker function `rtrace_marker_hit` (uprobe / uretprobe hooks).
    Marker,
}

/// What the cyclic loop runs: cyclictest's method with one measuring thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CyclicConfig {
    /// Period of the measuring thread (ns).
    pub interval_ns: u64,
    /// Measured wake-ups.
    pub loops: u64,
    /// CPU of the measuring thread.
    pub cpu: usize,
    /// CPU of the main thread (`None`: the inherited affinity).
    pub main_cpu: Option<usize>,
    /// SCHED_FIFO priority of the measuring thread.
    pub priority: i32,
    /// Fire the loop's tracepoint once per loop (where: `probe_at`). `false`: the tracepoint
    /// never fires.
    pub fire_event: bool,
    /// Where the tracepoint fires.
    #[serde(default)]
    pub probe_at: ProbeAt,
    /// What fires.
    #[serde(default)]
    pub fire: Fire,
    /// Latencies above this bound (ns) count as histogram overflows (cyclictest's `--histogram`).
    pub histogram_limit_ns: u64,
}

/// Printed once at the end of a cyclic run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CyclicDone {
    /// Latency samples recorded (one per loop).
    pub loops: u64,
    /// Tracepoint executions: the ground truth for event accounting (0 unless `fire_event`).
    pub hits: u64,
    /// `clock_nanosleep` calls of the measuring thread (loops plus retries after EINTR).
    pub sleeps: u64,
    /// Periods skipped because a wake-up came after the next period had begun.
    pub overruns: u64,
    /// Samples above `histogram_limit_ns` (still in `histogram`).
    pub overflows: u64,
    /// Wake-up latency, actual − expected, in ns (encoded histogram, every sample).
    pub histogram: String,
    /// With `ProbeAt::Alternate`: the latencies of the wake-ups without the tracepoint
    /// (`histogram` then holds those with it); `None` otherwise.
    #[serde(default)]
    pub untraced: Option<String>,
    /// `/dev/cpu_dma_latency` was held at 0 during the run (as cyclictest does).
    pub pm_qos_zero: bool,
    /// Peak resident set size of the workload (KiB, from getrusage).
    pub max_rss_kb: u64,
}
