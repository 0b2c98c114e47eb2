//! Which backend implements which tracer, and how to build one from the options.

use crate::options::TracerOptions;
use anyhow::{bail, Result};
use rtrace_tracer::{Tracer, TracerKind};

/// The backend for `kind`; `None` for [`TracerKind::None`].
pub fn build(kind: TracerKind, opts: &TracerOptions) -> Result<Option<Box<dyn Tracer>>> {
    Ok(match kind {
        TracerKind::None => None,
        TracerKind::Ftrace => Some(Box::new(rtrace_ftrace::FtraceTracer::new())),
        TracerKind::Lttng => Some(Box::new(rtrace_lttng::LttngTracer::new(
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
        TracerKind::Ebpf | TracerKind::Bpftrace => {
            bail!("tracer `{kind}` is not available in this build yet: use --tracer ftrace")
        }
    })
}
