//! The `read(2)` loop of `rtrace-bench events` (Gregg's per-event cost benchmark, seed 004): a
//! pinned loop of 1-byte reads from `/dev/zero`, the tighter form of Gregg's
//! `dd if=/dev/zero of=/dev/null bs=1`. The loop is timed on the TSC and every read counted:
//! the ground truth of each experiment's events. No other `read` happens in the workload after
//! its ready message (it waits for "go" with `readv(2)`, which neither the `read` syscall's
//! tracepoints nor libc's `read` see).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadsConfig {
    /// 1-byte reads from /dev/zero.
    pub reads: u64,
    /// CPU to pin the loop to.
    pub cpu: usize,
    /// SCHED_FIFO priority, if any.
    pub priority: Option<i32>,
}

/// Printed once at the end of a reads run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadsDone {
    /// `read` calls that returned 1 byte: the ground truth for every experiment's events.
    pub reads: u64,
    /// TSC time of the whole loop (ns).
    pub elapsed_ns: u64,
    /// The process's command name (what bpftrace's `comm` shows).
    pub comm: String,
}
