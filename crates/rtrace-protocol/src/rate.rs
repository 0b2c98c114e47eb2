//! The paced probe loop of `rtrace-bench rate` (Beamonte & Dagenais: the highest event rate a
//! tracer records without loss): the probe fires at a fixed rate for a fixed time.

use serde::{Deserialize, Serialize};

/// Fire the loop's probe `rate_hz` times a second for `duration_ns`, and on until every thread
/// fired `min_hits` times (a steady state: the tracer's buffer turned over several times),
/// paced by busy-waiting on the TSC (no sleep: a sleep's wake-up latency would cap the rate and
/// jitter it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateConfig {
    pub rate_hz: f64,
    pub duration_ns: u64,
    /// Firings of each thread before it may stop (0: `duration_ns` alone decides).
    #[serde(default)]
    pub min_hits: u64,
    /// CPU to pin the loop to.
    pub cpu: usize,
    /// SCHED_FIFO priority, if any.
    pub priority: Option<i32>,
    /// What fires: `event` (USDT or LTTng-UST tracepoint) or `event-nop5`.
    pub body: crate::Body,
    /// CPUs of further firing threads (`rate --threads N`: N - 1 of them); the rate is split
    /// evenly between all threads. Empty: one thread.
    #[serde(default)]
    pub more_threads: Vec<usize>,
}

/// Printed once at the end of a rate run (every thread's together).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateDone {
    /// Probe executions: the ground truth for event accounting.
    pub hits: u64,
    /// Wall time of the loop (ns).
    pub elapsed_ns: u64,
    /// Hits per second actually fired (`hits / elapsed`).
    pub achieved_hz: f64,
    /// Firings more than one period late: it could not keep the rate (the probe costs more
    /// than a period, or the CPU was taken away). The schedule then restarts from that firing:
    /// missed firings are skipped, never fired in a burst.
    pub late: u64,
}
