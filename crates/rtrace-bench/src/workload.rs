//! The workload binaries and the probe sites they carry: `rtrace:event` / `rtrace:idle` (USDT,
//! or LTTng-UST tracepoints in the LTTng build), their `nop5` forms, and the marker functions
//! the uprobe hooks attach to.

use crate::options::{CommonOptions, TracerOptions};
use anyhow::{anyhow, Context, Result};
use rtrace_measure::trace_data::TraceData;
use rtrace_measure::usdt::HookKind;
use rtrace_tracer::{Hook, Instrumentation, Tracer, TracerKind};
use std::path::{Path, PathBuf};

/// The workload binary carrying `instrumentation`; the error names the fix.
pub fn bin(o: &CommonOptions, instrumentation: Instrumentation) -> Result<PathBuf> {
    Ok(o.workload(match instrumentation {
        Instrumentation::Usdt => "workload",
        Instrumentation::LttngUst => "workload-lttng",
    })?)
}

/// The error of workload binary `bin` that answered without `what` result (`an npt`): an older
/// build.
pub fn outdated(bin: &Path, what: &str) -> anyhow::Error {
    anyhow!(
        "{} answered without {what} result: rebuild the workload binaries (`cargo build --release`)",
        bin.display()
    )
}

/// Creates `dir`, a run's trace-data directory.
pub fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

/// [`TraceData::settle`] of the run's trace data in `dir`, kept as `--keep-traces` says.
pub fn settle(o: &CommonOptions, dir: &Path, verified: bool, lossy: bool) -> Result<TraceData> {
    TraceData::settle(dir, o.keep_traces, verified, lossy)
        .with_context(|| format!("cannot settle the trace data in {}", dir.display()))
}

/// The `rtrace:event` / `rtrace:idle` hooks of a workload binary (`rtrace:event_nop5` /
/// `rtrace:idle_nop5` for the usdt-nop5 kind, `_stepped` for usdt-stepped), or for uprobe kinds the entry or return of its
/// marker functions `rtrace_marker_hit` / `rtrace_marker_idle`.
pub fn hooks(bin: &Path, instrumentation: Instrumentation, kind: HookKind) -> Result<(Hook, Hook)> {
    if kind.is_dynamic() {
        let ret = kind == HookKind::Uretprobe;
        return Ok((
            Hook::uprobe(bin, rtrace_protocol::MARKER_HIT, ret)?,
            Hook::uprobe(bin, rtrace_protocol::MARKER_IDLE, ret)?,
        ));
    }
    let suffix = match kind {
        HookKind::UsdtNop5 => "_nop5",
        HookKind::UsdtStepped => "_stepped",
        _ => "",
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

/// A tracer variant (or no tracer) checked on the `rtrace:event` hook of its own build of the
/// workload, with the buffer its backend makes: what `rate` and `npt` fire at.
pub struct Subject {
    pub kind: TracerKind,
    pub variant: Option<String>,
    /// `None` for [`TracerKind::None`].
    pub tracer: Option<Box<dyn Tracer>>,
    pub workload: PathBuf,
    pub hook: Hook,
    /// What the backend made of the buffer size (empty without a tracer).
    pub buffer: String,
}

impl Subject {
    /// `ebpf (record)`, `none`.
    pub fn label(&self) -> String {
        self.kind.label(self.variant.as_deref())
    }
}

/// Every variant of `kind` in `opts` on `rtrace:event`, checked (`none`: one subject without a
/// tracer); changes nothing.
pub fn subjects(o: &CommonOptions, kind: TracerKind, opts: &TracerOptions) -> Result<Vec<Subject>> {
    let instrumentation = kind.instrumentation();
    let workload = bin(o, instrumentation)?;
    let (hook, _) = hooks(&workload, instrumentation, HookKind::Usdt)?;
    let buffer = crate::tracers::buffers(&[kind], opts)?
        .into_values()
        .next()
        .unwrap_or_default();
    let variants = crate::tracers::checked(kind, opts, &[&hook])?;
    if kind != TracerKind::None && variants.is_empty() {
        // Never an untraced run under a tracer's name.
        anyhow::bail!(
            "none of the --bpf-mode modes asked for runs with {kind} (it has no floor): add one it runs, e.g. --bpf-mode record"
        );
    }
    if kind == TracerKind::None {
        return Ok(vec![Subject {
            kind,
            variant: None,
            tracer: None,
            workload,
            hook,
            buffer,
        }]);
    }
    Ok(variants
        .into_iter()
        .map(|v| Subject {
            kind,
            variant: v.name.map(str::to_owned),
            tracer: Some(v.tracer),
            workload: workload.clone(),
            hook: hook.clone(),
            buffer: buffer.clone(),
        })
        .collect())
}
