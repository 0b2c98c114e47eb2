//! The Non-Preempt Test loop of `rtrace-bench npt` (Beamonte & Dagenais, seeds 001/002): a tight
//! loop on the measured CPU reads the TSC and records the gap between consecutive iterations;
//! whatever takes the CPU away (an interrupt, the tick, a tracer's sub-buffer switch or its
//! consumer's wake-ups) shows up as a long gap. As Beamonte ran it, the probe fires in every
//! iteration at the loop's full speed ("doing almost nothing but generating events in a tight
//! infinite loop"); `event_rate_hz` caps it instead (npt's later "tracepoint maximum
//! frequency").

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NptConfig {
    pub duration_ns: u64,
    /// Probe firings per second, capped (0: the probe never fires); `None`: the probe fires in
    /// every iteration.
    pub event_rate_hz: Option<f64>,
    /// CPU to pin the loop to.
    pub cpu: usize,
    /// SCHED_FIFO priority, if any.
    pub priority: Option<i32>,
    /// What fires: `event` (USDT or LTTng-UST tracepoint) or `event-nop5`.
    pub body: crate::Body,
}

/// How many of the largest gaps of firing iterations the loop keeps with their time.
pub const NPT_LARGEST: usize = 256;

/// How many slow gaps (firing gaps at or above [`NptDone::slow_ns`]) the loop keeps, at most.
pub const NPT_SLOW_MAX: usize = 65_536;

/// Firing iterations the loop times before it sets its slow threshold: 8 times their median
/// gap, at least [`NPT_SLOW_MIN_NS`].
pub const NPT_SLOW_AFTER: u64 = 65_536;
pub const NPT_SLOW_MIN_NS: u64 = 1_000;

/// One of the largest gaps of the iterations that fired the probe, with when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NptGap {
    /// The gap (ns).
    pub ns: u64,
    /// When it ended, in `CLOCK_MONOTONIC` ns (the TSC read converted by a line through the
    /// (TSC, `CLOCK_MONOTONIC`) pairs sampled before and after the loop).
    pub end_mono_ns: u64,
    /// The probe's argument in this iteration: the number of the hit (0, 1, …) that fired in
    /// the gap, as the tracer records it.
    pub hit: u64,
}

/// Printed once at the end of an npt run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NptDone {
    /// Probe executions: the ground truth for event accounting.
    pub hits: u64,
    /// Loop iterations (gaps recorded).
    pub iterations: u64,
    /// Wall time of the loop (ns).
    pub elapsed_ns: u64,
    pub tsc_hz: f64,
    /// Gaps (ns) of iterations that did not fire the probe (encoded histogram): interference
    /// alone. Empty when the probe fires in every iteration.
    pub quiet: String,
    /// Gaps (ns) of iterations that fired the probe (encoded histogram): the probe's own cost
    /// plus interference.
    pub fired: String,
    /// The loop's start and end in `CLOCK_MONOTONIC` ns. Absent in files of older versions.
    #[serde(default)]
    pub start_mono_ns: u64,
    #[serde(default)]
    pub end_mono_ns: u64,
    /// The [`NPT_LARGEST`] largest gaps of firing iterations, largest first. Absent in files
    /// of older versions.
    #[serde(default)]
    pub largest: Vec<NptGap>,
    /// Every firing gap of at least `slow_ns` after the loop set that threshold (at
    /// `slow_from_mono_ns`), in time order, up to [`NPT_SLOW_MAX`] (`slow_dropped` more): what
    /// the iteration of each buffer switch cost is looked up here. Absent in files of older
    /// versions and in capped runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow: Vec<NptGap>,
    /// The threshold (ns): 8 times the median firing gap of the first [`NPT_SLOW_AFTER`]
    /// firings, at least [`NPT_SLOW_MIN_NS`]; 0: never set (a capped or short run).
    #[serde(default)]
    pub slow_ns: u64,
    #[serde(default)]
    pub slow_from_mono_ns: u64,
    #[serde(default)]
    pub slow_dropped: u64,
}
