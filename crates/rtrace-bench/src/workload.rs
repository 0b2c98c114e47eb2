//! The workload binaries and the probe sites they carry: `rtrace:event` / `rtrace:idle` (USDT,
//! or LTTng-UST tracepoints in the LTTng build), their `nop5` forms, and the marker functions
//! the uprobe hooks attach to.

use crate::options::CommonOptions;
use anyhow::Result;
use rtrace_measure::usdt::HookKind;
use rtrace_tracer::{Hook, Instrumentation};
use std::path::{Path, PathBuf};

/// The workload binary carrying `instrumentation`; the error names the fix.
pub fn bin(o: &CommonOptions, instrumentation: Instrumentation) -> Result<PathBuf> {
    Ok(o.workload(match instrumentation {
        Instrumentation::Usdt => "workload",
        Instrumentation::LttngUst => "workload-lttng",
    })?)
}

/// The `rtrace:event` / `rtrace:idle` hooks of a workload binary (`rtrace:event_nop5` /
/// `rtrace:idle_nop5` for the usdt-nop5 kind), or for uprobe kinds the entry or return of its
/// marker functions `rtrace_marker_hit` / `rtrace_marker_idle`.
pub fn hooks(bin: &Path, instrumentation: Instrumentation, kind: HookKind) -> Result<(Hook, Hook)> {
    if kind.is_dynamic() {
        let ret = kind == HookKind::Uretprobe;
        return Ok((
            Hook::uprobe(bin, rtrace_protocol::MARKER_HIT, ret)?,
            Hook::uprobe(bin, rtrace_protocol::MARKER_IDLE, ret)?,
        ));
    }
    let suffix = if kind == HookKind::UsdtNop5 {
        "_nop5"
    } else {
        ""
    };
    let hook = |name: &str| -> Result<Hook> {
        let name = format!("{name}{suffix}");
        Ok(match instrumentation {
            Instrumentation::Usdt => Hook::Usdt {
                binary: bin.to_owned(),
                sites: rtrace_sdt::find(bin, "rtrace", &name)?,
            },
            Instrumentation::LttngUst => Hook::LttngUst {
                provider: "rtrace".into(),
                event: name,
            },
        })
    };
    Ok((hook("event")?, hook("idle")?))
}

/// The binary and the `rtrace:event` hook a tracer of `kind` fires in every iteration of a
/// loop (`rate`, `npt`): its own instrumentation's build.
pub fn event_hook(o: &CommonOptions, kind: rtrace_tracer::TracerKind) -> Result<(PathBuf, Hook)> {
    let instrumentation = kind.instrumentation();
    let bin = bin(o, instrumentation)?;
    let (hook, _) = hooks(&bin, instrumentation, HookKind::Usdt)?;
    Ok((bin, hook))
}
