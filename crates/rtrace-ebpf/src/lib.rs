//! eBPF backend: BPF programs from `bpf/rtrace.bpf.c`, compiled at build time into a libbpf
//! skeleton embedded in the binary and loaded with libbpf-rs (vendored libbpf). No clang or LLVM
//! at run time.
//!
//! Hooks: USDT probes (`SEC("usdt")`, attached by libbpf per binary and optionally per pid,
//! semaphores included), function entries and returns (`SEC("uprobe")` / `SEC("uretprobe")`,
//! attached by file offset, optionally per pid) and `syscalls:sys_exit_clock_nanosleep` (filtered to the target's tgid
//! through rodata). A process tree (`Target::tree`: `count`'s command) is followed by attaching
//! to every process and keeping the tree's thread-group ids in the map `tree` (`tree_fork` on
//! `task:task_newtask`, `tree_exit` on `sched:sched_process_exit`); the other hits are counted
//! as `EventStats::outside_tree`. Modes ([`EbpfMode`]):
//! - `record`: one `{ts, cpu, pid, arg}` event per hit into a BPF ring buffer, submitted without
//!   wakeup and drained every [`session::POLL_INTERVAL`] by a consumer thread pinned to
//!   `Target::consumer_cpus`, written to `out_dir/ebpf-events.txt`. recorded = events consumed,
//!   lost = failed ring-buffer reservations (per-CPU map). The ring buffer cannot overwrite, so
//!   `Target::record` does not apply: every event is streamed.
//! - `record-wakeup`: the same program and consumer, but every event wakes the consumer, which
//!   sleeps in epoll (`ring_buffer__poll`) until woken: bpftrace's wake-up policy.
//! - `aggregate`: a per-CPU counter and log2 histogram of the argument, no per-event output;
//!   recorded = the counters' sum, written with the histogram to `out_dir/ebpf-aggregate.txt`.
//!
//! Tracepoint scripts ([`Hook::Tracepoints`], `app`'s `syscalls:sys_enter_*`, `sched:*`): one
//! generic `SEC("tracepoint")` program attached with libbpf-rs to every point of the script, each
//! link carrying the point's index as its BPF cookie (`bpf_get_attach_cookie`, Linux ≥ 5.15;
//! ~720 links for `syscalls:*`). A point that does not attach fails `attach` naming it (and
//! what was attached is detached). `Target::pid` `None` traces every process (what `app` does);
//! `Some(pid)` keeps that thread group's hits only (`target_tgid`, as the nanosleep program),
//! or its tree with `Target::tree`. Modes:
//! - `record`, `record-wakeup`: `script_record`, one event per hit into the ring buffer with
//!   the point's index as `arg`; lost = failed reservations, as above: recorded + lost = hits.
//! - `aggregate`, `count`, `floor`: `script_count`, a per-CPU count per point index (the map
//!   `script_hits`, one entry per point), written as `category:name count` to
//!   `out_dir/ebpf-aggregate.txt`; recorded = their sum, lost = 0 (the points have no common
//!   argument: no histogram).
//!
//! [`Attachment::finish_by_probe`] gives the events per point (`syscalls:sys_enter_read`), every
//! point of the script in its order, in every mode (record modes count the events' indices).
//! Closing a tracepoint's perf event waits for grace periods in the kernel (~70 ms each here,
//! serialised by its `event_mutex`), so a script's links are closed by several threads at once:
//! `finish` takes ~13 s for the 360 `syscalls:sys_enter_*` (24 s on one thread), ~29 s for the
//! 720 `syscalls:*`; attaching takes 0.1-0.2 s.
//!
//! The events suite's programs ([`Hook::Read`], whatever the mode): `bpf/events.bpf.c`, one
//! program per experiment doing what its bpftrace one-liner does on every process, or a
//! per-pid accounting program; experiment 18's ring buffer is sized as `record`'s is. Their
//! attachments' evidence is what the program's map (or its lines) shows of the workload.
//!
//! Cleanup: every BPF object is fd-based and owned by the session thread, which closes them and
//! waits until the kernel has freed them before `finish` or `Drop` returns; a killed process
//! leaves nothing behind, so this backend has no stale cleanup.
//!
//! libbpf's messages never reach the terminal during a run; errors quote the relevant one
//! (e.g. the verifier's reason). `RTRACE_LIBBPF_LOG=1` prints them all to stderr.

mod events;
mod freed;
mod libbpf_log;
mod plan;
mod readout;
mod session;
mod sink;
mod skel;
mod worker;

use anyhow::{Context, Result};
use rtrace_tracer::{Attachment, Hook, Target, Tracer, TracerKind};
use serde::{Deserialize, Serialize};

pub use plan::NANOSLEEP_EXIT;

/// Bytes of the one ring buffer an attachment makes of `buffer_size_kb` per CPU (as `attach`
/// sizes it: the possible CPUs' total, rounded up to a power of two).
pub fn ring_bytes(buffer_size_kb: Option<u64>) -> Result<u64> {
    Ok(u64::from(ring(buffer_size_kb)?.0))
}

/// The bytes of the ring for `buffer_size_kb` per CPU, and the possible CPUs sharing it.
fn ring(buffer_size_kb: Option<u64>) -> Result<(u32, usize)> {
    let ncpus = libbpf_rs::num_possible_cpus().context("cannot count the possible CPUs")?;
    Ok((plan::ring_bytes(buffer_size_kb, ncpus)?, ncpus))
}

/// The ring buffer a run asking for `buffer_size_kb` per CPU gets (one ring shared by all
/// possible CPUs, sized to their total), as the report shows it.
pub fn buffer_description(buffer_size_kb: Option<u64>) -> Result<String> {
    let (bytes, ncpus) = ring(buffer_size_kb)?;
    let bytes = u64::from(bytes);
    Ok(format!(
        "one ring buffer of {} KiB shared by {ncpus} CPUs (= {} KiB per CPU)",
        bytes / 1024,
        bytes / 1024 / ncpus.max(1) as u64
    ))
}
/// The libbpf this backend links: `libbpf 1.7`.
pub fn libbpf_version() -> String {
    // SAFETY: both return a constant of the linked library.
    let (major, minor) = unsafe {
        (
            libbpf_rs::libbpf_sys::libbpf_major_version(),
            libbpf_rs::libbpf_sys::libbpf_minor_version(),
        )
    };
    format!("libbpf {major}.{minor}")
}

pub use session::{AGGREGATE_FILE, EVENTS_FILE, POLL_INTERVAL};
pub use sink::EVENTS_HEADER;

/// What the BPF program does per hit (`--bpf-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EbpfMode {
    /// Tracer pattern: every event into a ring buffer, submitted without waking the reader,
    /// which drains it every [`POLL_INTERVAL`].
    Record,
    /// As `Record`, but every event wakes the reader (`BPF_RB_FORCE_WAKEUP`), which sleeps in
    /// epoll until woken: bpftrace's policy (its printf perf buffer has `wakeup_events = 1`).
    /// The difference to `Record` is the wake-up cost per event.
    RecordWakeup,
    /// Aggregator pattern: per-CPU counter and log2 histogram in maps.
    Aggregate,
    /// The aggregate program reduced to its per-CPU counter (no histogram): a step of the
    /// per-hit cost decomposition.
    Count,
    /// The cheapest program that still counts every hit: one increment of a global variable (no
    /// helper, no map lookup; not atomic, so for one measured thread). The decomposition's floor:
    /// what the hook itself costs (trap or call, uprobe dispatch, BPF program entry).
    Floor,
}

impl EbpfMode {
    /// Whether every event goes into the ring buffer (`record`, `record-wakeup`).
    pub fn records(self) -> bool {
        matches!(self, EbpfMode::Record | EbpfMode::RecordWakeup)
    }
}

/// The eBPF tracer backend.
#[derive(Debug, Clone)]
pub struct EbpfTracer {
    mode: EbpfMode,
}

impl EbpfTracer {
    pub fn new(mode: EbpfMode) -> EbpfTracer {
        EbpfTracer { mode }
    }
}

impl Tracer for EbpfTracer {
    fn kind(&self) -> TracerKind {
        TracerKind::Ebpf
    }

    fn check(&self, hook: &Hook) -> Result<()> {
        rtrace_tracer::require_root("eBPF tracing")?;
        if let Hook::Read(read) = hook {
            return events::check(read);
        }
        plan::check(hook)?;
        hook.check_binary()
    }

    fn attach(&self, target: &Target) -> Result<Box<dyn Attachment>> {
        self.check(&target.hook)?;
        let (ring_bytes, _) = ring(target.buffer_size_kb)?;
        if let Hook::Read(read) = &target.hook {
            let a = events::ReadAttachment::start(read, target, ring_bytes)?;
            return Ok(Box::new(a));
        }
        let plan = session::Plan {
            hook: target.hook.clone(),
            mode: self.mode,
            pid: target.pid,
            tree: target.tree && target.pid.is_some(),
            skip_tid: target.skip_tid,
            ring_bytes,
            out_dir: target.out_dir.clone(),
            consumer_cpus: target.consumer_cpus.clone(),
            poll: target.poll.unwrap_or(session::POLL_INTERVAL),
        };
        Ok(Box::new(session::Session::start(plan)?))
    }

    fn program(&self, hook: &Hook) -> String {
        match hook {
            Hook::Read(read) => events::describe(read.program),
            h => h.label(),
        }
    }

    fn drives_kprobes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_serializes_as_its_name() {
        for (m, name) in [
            (EbpfMode::Record, "record"),
            (EbpfMode::RecordWakeup, "record-wakeup"),
            (EbpfMode::Aggregate, "aggregate"),
        ] {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<EbpfMode>(&json).unwrap(), m);
        }
    }
}
