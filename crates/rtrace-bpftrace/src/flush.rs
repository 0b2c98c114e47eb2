//! Flushing a perf buffer's pending loss report. The kernel writes a `PERF_RECORD_LOST` only
//! with the next record that fits into the buffer after the loss: losses while a buffer stayed
//! full up to the end of a run are never reported unless something writes to that CPU's buffer
//! once more. bpftrace's record program therefore carries a second probe, on this process's
//! USDT probe `rtrace_bench:bpftrace_flush`, and `finish` fires it once on every CPU after the
//! reader caught up: each CPU's pending loss is reported (bpftrace prints "Lost N events")
//! before that CPU's flush line.

use anyhow::{Context, Result};
use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The first word of the flush probe's line.
pub const LINE: &str = "rtrace-flush";

/// One attachment's flush probe: its token tells its firings from another attachment's of the
/// same process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flush {
    pub token: u64,
    /// `usdt:"EXE":rtrace_bench:bpftrace_flush /pid == PID && arg0 == TOKEN/ { printf(...) }`.
    pub probe: String,
}

/// A new flush probe for this process; `None` when its executable cannot be named (deleted, or
/// a path bpftrace cannot parse) or lacks the probe's note, and the end-of-run losses then go
/// unreported (the run's accounting, recorded + lost against hits, then tells).
pub fn probe() -> Option<Flush> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    static HAS_NOTE: OnceLock<bool> = OnceLock::new();
    let exe = std::env::current_exe().ok()?;
    let path = crate::script::plain_path(&exe).ok()?;
    let has_note = *HAS_NOTE.get_or_init(|| {
        rtrace_sdt::find(&exe, "rtrace_bench", "bpftrace_flush").is_ok_and(|s| !s.is_empty())
    });
    let token = NEXT.fetch_add(1, Ordering::Relaxed);
    (has_note && exe.is_file()).then(|| Flush {
        token,
        probe: format!(
            "usdt:\"{path}\":rtrace_bench:bpftrace_flush /pid == {} && arg0 == {token}/ {{ printf(\"{LINE} %u\\n\", cpu); }}",
            std::process::id()
        ),
    })
}

/// Fires the flush probe with `token` once on every CPU this process may run on; returns how
/// many.
pub fn each_cpu(token: u64) -> Result<u64> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut fired = 0;
            for cpu in 0..CpuSet::count() {
                let mut set = CpuSet::new();
                if set.set(cpu).is_err() || sched_setaffinity(Pid::from_raw(0), &set).is_err() {
                    continue; // offline, absent, or outside our cpuset
                }
                fire(token);
                fired += 1;
            }
            fired
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the flush thread panicked"))
    })
    .context("flushing bpftrace's perf buffers")
}

#[inline(never)]
fn fire(token: u64) {
    probe::probe!(rtrace_bench, bpftrace_flush, token);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_names_this_process_and_attachment_and_fires_on_every_cpu() {
        let f = probe().expect("the test binary has a plain path and the probe's note");
        let p = &f.probe;
        assert!(p.contains(":rtrace_bench:bpftrace_flush /pid == "), "{p}");
        let me = format!("/pid == {} && arg0 == {}/", std::process::id(), f.token);
        assert!(p.contains(&me), "{p}");
        assert_ne!(
            probe().unwrap().token,
            f.token,
            "every attachment its own token"
        );
        assert!(each_cpu(f.token).unwrap() >= 1);
    }
}
