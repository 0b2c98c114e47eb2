//! The Non-Preempt Test loop of `rtrace-bench npt` (Beamonte & Dagenais, seeds 001/002): a tight
//! loop on the measured CPU reads the TSC and records the gap between consecutive iterations;
//! whatever takes the CPU away (an interrupt, the tick, a tracer's consumer or its wake-ups)
//! shows up as a long gap. The loop fires its probe at a capped rate (npt's "tracepoint maximum
//! frequency") so that a tracer has an event stream to consume.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NptConfig {
    pub duration_ns: u64,
    /// Probe firings per second (0: the probe never fires).
    pub event_rate_hz: f64,
    /// CPU to pin the loop to.
    pub cpu: usize,
    /// SCHED_FIFO priority, if any.
    pub priority: Option<i32>,
    /// What fires: `event` (USDT or LTTng-UST tracepoint) or `event-nop5`.
    pub body: crate::Body,
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
    /// alone.
    pub quiet: String,
    /// Gaps (ns) of iterations that fired the probe (encoded histogram): the probe's own cost
    /// plus interference.
    pub fired: String,
}
