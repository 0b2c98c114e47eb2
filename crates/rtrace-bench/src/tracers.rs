//! Which backend implements which tracer, and how to build one from the options.

use crate::options::TracerOptions;
use anyhow::{bail, Result};
use rtrace_tracer::{Tracer, TracerKind};

/// The backend for `kind`; `None` for [`TracerKind::None`].
pub fn build(kind: TracerKind, _opts: &TracerOptions) -> Result<Option<Box<dyn Tracer>>> {
    Ok(match kind {
        TracerKind::None => None,
        TracerKind::Ftrace => Some(Box::new(rtrace_ftrace::FtraceTracer::new())),
        TracerKind::Ebpf | TracerKind::Lttng | TracerKind::Bpftrace => {
            bail!("tracer `{kind}` is not available in this build yet: use --tracer ftrace")
        }
    })
}
