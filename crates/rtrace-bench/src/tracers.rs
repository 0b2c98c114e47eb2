//! Which backend implements which tracer, and how to build one from the options.

use crate::options::{BpfMode, TracerOptions};
use anyhow::Result;
use rtrace_tracer::{Tracer, TracerKind};

/// A backend and the mode that tells it apart from other columns of the same tracer.
pub struct Variant {
    /// `record` / `aggregate` for eBPF and bpftrace; `None` where a tracer has one mode.
    pub name: Option<&'static str>,
    pub tracer: Box<dyn Tracer>,
}

/// Every configured variant of `kind` (one per `--bpf-mode` for eBPF and bpftrace); empty for
/// [`TracerKind::None`].
pub fn variants(kind: TracerKind, opts: &TracerOptions) -> Result<Vec<Variant>> {
    let single = |tracer: Box<dyn Tracer>| vec![Variant { name: None, tracer }];
    Ok(match kind {
        TracerKind::None => Vec::new(),
        TracerKind::Ftrace => single(Box::new(rtrace_ftrace::FtraceTracer::new())),
        TracerKind::Lttng => single(Box::new(rtrace_lttng::LttngTracer::new(
            rtrace_lttng::LttngOptions {
                subbuf_size: opts.lttng_subbuf_size,
                num_subbuf: opts.lttng_num_subbuf,
                event_kind: if opts.lttng_tracef {
                    rtrace_lttng::EventKind::Tracef
                } else {
                    rtrace_lttng::EventKind::Tracepoint
                },
            },
        )?)),
        TracerKind::Ebpf => opts
            .bpf_modes
            .iter()
            .map(|&m| Variant {
                name: Some(m.name()),
                tracer: Box::new(rtrace_ebpf::EbpfTracer::new(match m {
                    BpfMode::Record => rtrace_ebpf::EbpfMode::Record,
                    BpfMode::Aggregate => rtrace_ebpf::EbpfMode::Aggregate,
                })),
            })
            .collect(),
        TracerKind::Bpftrace => opts
            .bpf_modes
            .iter()
            .map(|&m| Variant {
                name: Some(m.name()),
                tracer: Box::new(rtrace_bpftrace::BpftraceTracer::new(match m {
                    BpfMode::Record => rtrace_bpftrace::BpftraceMode::Record,
                    BpfMode::Aggregate => rtrace_bpftrace::BpftraceMode::Aggregate,
                })),
            })
            .collect(),
    })
}

/// The backend for `kind` in its first configured mode; `None` for [`TracerKind::None`].
pub fn build(kind: TracerKind, opts: &TracerOptions) -> Result<Option<Box<dyn Tracer>>> {
    Ok(variants(kind, opts)?.into_iter().next().map(|v| v.tracer))
}

/// Removes what runs that are gone left behind, for every backend whatever tracers this run uses
/// (a dead ftrace run's uprobes trap in an eBPF run too): orphaned bpftrace processes, tracefs
/// instances and uprobe events, LTTng sessions and the session daemons runs started; eBPF
/// objects are fd-based and went with their run. Then the lock files of those runs. Ownership is
/// judged by lock (`rtrace_tracer::owner`), never by pid. Prints one note per object removed.
/// Every experiment calls this once, before it changes anything.
pub fn remove_stale() -> Result<()> {
    let mut removed = rtrace_bpftrace::remove_stale()?;
    removed.extend(rtrace_ftrace::remove_stale()?);
    removed.extend(rtrace_lttng::remove_stale()?);
    rtrace_tracer::owner::remove_dead_locks();
    for r in removed {
        eprintln!("note: removed stale {r} left by a killed run");
    }
    Ok(())
}
