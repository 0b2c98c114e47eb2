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

/// Every configured variant of `kind` (one per `--bpf-mode` for eBPF and bpftrace: bpftrace's
/// record mode already wakes its reader per event, so `record-wakeup` is its `record`); empty for
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
                    BpfMode::RecordWakeup => rtrace_ebpf::EbpfMode::RecordWakeup,
                    BpfMode::Aggregate => rtrace_ebpf::EbpfMode::Aggregate,
                })),
            })
            .collect(),
        TracerKind::Bpftrace => {
            let mut modes: Vec<BpfMode> = Vec::new();
            for m in opts.bpf_modes.iter().map(|&m| match m {
                BpfMode::RecordWakeup => BpfMode::Record,
                m => m,
            }) {
                if !modes.contains(&m) {
                    modes.push(m);
                }
            }
            modes
                .into_iter()
                .map(|m| Variant {
                    name: Some(m.name()),
                    tracer: Box::new(rtrace_bpftrace::BpftraceTracer::new(match m {
                        BpfMode::Aggregate => rtrace_bpftrace::BpftraceMode::Aggregate,
                        BpfMode::Record | BpfMode::RecordWakeup => {
                            rtrace_bpftrace::BpftraceMode::Record
                        }
                    })),
                })
                .collect()
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::TracerOptions;
    use rtrace_tracer::RecordMode;

    fn opts(bpf_modes: Vec<BpfMode>) -> TracerOptions {
        TracerOptions {
            buffer_size_kb: None,
            record: RecordMode::Stream,
            lttng_subbuf_size: None,
            lttng_num_subbuf: None,
            lttng_tracef: false,
            bpf_modes,
        }
    }

    fn names(kind: TracerKind, o: &TracerOptions) -> Vec<Option<&'static str>> {
        variants(kind, o).unwrap().iter().map(|v| v.name).collect()
    }

    #[test]
    fn record_wakeup_is_an_ebpf_column_and_bpftrace_record() {
        let o = opts(vec![
            BpfMode::Record,
            BpfMode::RecordWakeup,
            BpfMode::Aggregate,
        ]);
        assert_eq!(
            names(TracerKind::Ebpf, &o),
            [Some("record"), Some("record-wakeup"), Some("aggregate")]
        );
        assert_eq!(
            names(TracerKind::Bpftrace, &o),
            [Some("record"), Some("aggregate")]
        );
        let only = opts(vec![BpfMode::RecordWakeup]);
        assert_eq!(names(TracerKind::Bpftrace, &only), [Some("record")]);
        assert_eq!(names(TracerKind::Ftrace, &only), [None]);
    }
}
