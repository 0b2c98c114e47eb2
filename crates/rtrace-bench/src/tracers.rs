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
