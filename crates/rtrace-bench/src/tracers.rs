//! Which backend implements which tracer, and how to build one from the options.

use crate::options::{bpf_mode_name, unique, BpfMode, TracerOptions};
use anyhow::Result;
use rtrace_tracer::{Hook, Tracer, TracerKind};

/// A backend and the mode that tells it apart from other columns of the same tracer.
pub struct Variant {
    /// `record` / `record-wakeup` / `aggregate` for eBPF and bpftrace, `tracepoint` / `tracef` for
    /// LTTng; `None` where a tracer has one mode.
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
        TracerKind::Ftrace if opts.ftrace_modes.is_empty() => single(Box::new(
            rtrace_ftrace::FtraceTracer::new().clock(opts.ftrace_clock.clone()),
        )),
        TracerKind::Ftrace => opts
            .ftrace_modes
            .iter()
            .map(|&m| Variant {
                name: Some(m.name()),
                tracer: Box::new(
                    rtrace_ftrace::FtraceTracer::with_mode(m).clock(opts.ftrace_clock.clone()),
                ),
            })
            .collect(),
        TracerKind::Lttng => opts
            .lttng_events
            .iter()
            .map(|&kind| {
                Ok(Variant {
                    name: Some(kind.name()),
                    tracer: Box::new(
                        rtrace_lttng::LttngTracer::new(lttng_options(opts, kind))?
                            .with_kernel_events(opts.lttng_kernel.clone())?,
                    ) as Box<dyn Tracer>,
                })
            })
            .collect::<Result<_>>()?,
        TracerKind::Ebpf => opts
            .bpf_modes
            .iter()
            .map(|&m| Variant {
                name: Some(bpf_mode_name(m)),
                tracer: Box::new(rtrace_ebpf::EbpfTracer::new(m)),
            })
            .collect(),
        // bpftrace's printf always wakes its reader, its `count()` is its aggregate, and it has
        // nothing as small as our floor.
        TracerKind::Bpftrace => unique(opts.bpf_modes.iter().filter_map(|&m| match m {
            BpfMode::Record | BpfMode::RecordWakeup => Some(BpfMode::Record),
            BpfMode::Aggregate | BpfMode::Count => Some(BpfMode::Aggregate),
            BpfMode::Floor => None,
        }))
        .into_iter()
        .map(|m| Variant {
            name: Some(bpf_mode_name(m)),
            tracer: Box::new(rtrace_bpftrace::BpftraceTracer::new(match m {
                BpfMode::Record => rtrace_bpftrace::BpftraceMode::Record,
                _ => rtrace_bpftrace::BpftraceMode::Aggregate,
            })),
        })
        .collect(),
        TracerKind::Perf if opts.perf_modes.is_empty() => {
            single(Box::new(rtrace_perf::PerfTracer::new()))
        }
        TracerKind::Perf => opts
            .perf_modes
            .iter()
            .map(|&m| Variant {
                name: Some(m.name()),
                tracer: Box::new(rtrace_perf::PerfTracer::new().with_record(m)),
            })
            .collect(),
        TracerKind::Strace => single(Box::new(rtrace_strace::StraceTracer::new())),
    })
}

/// Every configured variant of `kind` (see [`variants`]) that passed its check on every hook of
/// `hooks`; changes nothing.
pub fn checked(kind: TracerKind, opts: &TracerOptions, hooks: &[&Hook]) -> Result<Vec<Variant>> {
    let variants = variants(kind, opts)?;
    for v in &variants {
        for hook in hooks {
            v.tracer.check(hook)?;
        }
    }
    Ok(variants)
}

fn lttng_options(
    opts: &TracerOptions,
    event_kind: rtrace_lttng::EventKind,
) -> rtrace_lttng::LttngOptions {
    rtrace_lttng::LttngOptions {
        subbuf_size: opts.lttng_subbuf_size,
        num_subbuf: opts.lttng_num_subbuf,
        event_kind,
    }
}

/// The trace buffer each of `kinds` gets for `--buffer-size-kb` (the same per-CPU size for every
/// tracer by default), described by the backend that sizes it; recorded in the result.
pub fn buffers(
    kinds: &[TracerKind],
    opts: &TracerOptions,
) -> Result<std::collections::BTreeMap<String, String>> {
    let kb = opts.buffer_size_kb;
    let mut out = std::collections::BTreeMap::new();
    for &kind in kinds {
        let text = match kind {
            TracerKind::None => continue,
            TracerKind::Ftrace => {
                rtrace_ftrace::buffer_description(kb, opts.ftrace_clock.as_deref())
            }
            TracerKind::Lttng => {
                lttng_options(opts, rtrace_lttng::EventKind::Tracepoint).buffer_description(kb)
            }
            TracerKind::Ebpf => rtrace_ebpf::buffer_description(kb)?,
            TracerKind::Bpftrace => rtrace_bpftrace::buffer_description(kb)?,
            TracerKind::Perf => rtrace_perf::buffer_description(kb)?,
            TracerKind::Strace => rtrace_strace::BUFFER.to_owned(),
        };
        out.insert(kind.name().to_owned(), text);
    }
    Ok(out)
}

/// An upper bound of the events one buffer of `kind` holds with `opts` (`usdt --steady-state`
/// fires this many before timing): the bytes the backend allocates over the smallest event any
/// tracer writes for the loop's probe (ftrace's are 28 bytes, the eBPF ring's 32, LTTng's 14 with
/// the large header measured here, 12 with the compact one, so 16 bytes for every tracer but
/// LTTng, 12 for LTTng). ftrace's buffer counts whole pages and a reader page, eBPF's one ring
/// serves every CPU, bpftrace's perf buffer is whole pages, and LTTng's overwrite channel has
/// one sub-buffer more than it names (the reader's). `None` for no tracer.
pub fn capacity_events(kind: TracerKind, opts: &TracerOptions) -> Result<Option<u64>> {
    let Some(kb) = opts.buffer_size_kb else {
        anyhow::bail!("a buffer's capacity needs its size: pass --buffer-size-kb");
    };
    let (bytes, event) = match kind {
        TracerKind::None => return Ok(None),
        TracerKind::Strace => anyhow::bail!("strace has no buffer: {}", rtrace_strace::BUFFER),
        TracerKind::Ftrace => ((kb * 1024).div_ceil(4096) * 4096 + 4096, 16),
        TracerKind::Ebpf => (rtrace_ebpf::ring_bytes(Some(kb))?, 16),
        TracerKind::Bpftrace => (rtrace_bpftrace::perf_rb_pages(Some(kb))? * 4096, 16),
        TracerKind::Perf => (
            rtrace_perf::mmap_pages(Some(kb))? * 4096,
            rtrace_perf::SAMPLE_BYTES,
        ),
        TracerKind::Lttng => {
            let o = lttng_options(opts, rtrace_lttng::EventKind::Tracepoint);
            match o.geometry(Some(kb)) {
                (Some(size), Some(n)) => (size * (u64::from(n) + 1), 12),
                _ => anyhow::bail!("a buffer's capacity needs the LTTng channel's size: pass --buffer-size-kb or --lttng-subbuf-size and --lttng-num-subbuf"),
            }
        }
    };
    Ok(Some(bytes / event))
}

/// What could not be made equal between tracers in this run, by tracer name (the report says
/// it beside the buffers): bpftrace's wake-up policy, an LTTng session daemon found running
/// whose threads may share `measured` (a run pins only the daemons it starts), and perf's
/// consumer (a separate process writing a file) with its buffer rounded to a power of two of
/// pages.
pub fn unequal(
    kinds: &[TracerKind],
    measured: usize,
    opts: &TracerOptions,
) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for &kind in kinds {
        match kind {
            TracerKind::Bpftrace => {
                out.insert(kind.name().to_owned(), "its printf perf buffer wakes the reader on every event (bpftrace has no setting for it; eBPF's `record-wakeup` column has the same policy)".to_owned());
            }
            TracerKind::Strace => {
                out.insert(kind.name().to_owned(), rtrace_strace::PLACEMENT.to_owned());
            }
            TracerKind::Lttng => {
                let found = rtrace_lttng::daemons_allowed_on(measured);
                if !found.is_empty() {
                    out.insert(kind.name().to_owned(), format!("a session daemon found running is used as it is, not pinned: {} may run on measured CPU {measured}; stop it (`pkill lttng-sessiond`) so that the run starts its own on the harness CPUs", found.join(", ")));
                }
            }
            TracerKind::Perf => {
                let mut text = "perf record is a separate process on the harness CPUs that copies every CPU's ring into perf.data (in overwrite mode once, at its exit); its uprobe events are ftrace's definitions".to_owned();
                if let Some(r) = rtrace_perf::rounding(opts.buffer_size_kb) {
                    text.push_str("; ");
                    text.push_str(&r);
                }
                out.insert(kind.name().to_owned(), text);
            }
            _ => {}
        }
    }
    out
}

/// The backend for `kind` in its first configured mode; `None` for [`TracerKind::None`].
pub fn build(kind: TracerKind, opts: &TracerOptions) -> Result<Option<Box<dyn Tracer>>> {
    Ok(variants(kind, opts)?.into_iter().next().map(|v| v.tracer))
}

/// Removes what runs that are gone left behind, for every backend whatever tracers this run uses
/// (a dead ftrace run's uprobes trap in an eBPF run too): orphaned perf and bpftrace processes,
/// tracefs instances and uprobe events (perf's too), LTTng sessions and the session daemons runs
/// started; eBPF objects are fd-based and went with their run. Then the lock files of those runs. Ownership is
/// judged by lock (`rtrace_tracer::owner`), never by pid. Prints one note per object removed.
/// Every experiment calls this once, before it changes anything.
pub fn remove_stale() -> Result<()> {
    // strace first (bpftrace's cleanup stops every tagged process of a dead run), then perf:
    // the uprobe events a live perf holds cannot be removed.
    let mut removed = rtrace_strace::remove_stale()?;
    removed.extend(rtrace_perf::remove_stale()?);
    removed.extend(rtrace_bpftrace::remove_stale()?);
    removed.extend(rtrace_ftrace::remove_stale()?);
    removed.extend(rtrace_lttng::remove_stale()?);
    rtrace_tracer::owner::remove_dead_locks();
    for r in removed {
        eprintln!("note: removed stale {r} left by a killed run");
    }
    Ok(())
}

/// The tracers' versions as installed here, for the result's machine identity: LTTng's,
/// bpftrace's and perf's own `--version` line, the libbpf the eBPF backend links, ftrace's kernel. A tool
/// that is not installed is left out.
pub fn versions() -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let uname = nix::sys::utsname::uname().ok();
    if let Some(u) = uname {
        let release = u.release().to_string_lossy().into_owned();
        out.insert(
            TracerKind::Ftrace.name().to_owned(),
            format!("Linux {release}"),
        );
    }
    out.insert(
        TracerKind::Ebpf.name().to_owned(),
        rtrace_ebpf::libbpf_version(),
    );
    for (kind, program) in [
        (TracerKind::Lttng, "lttng"),
        (TracerKind::Bpftrace, "bpftrace"),
        (TracerKind::Strace, "strace"),
    ] {
        if let Some(v) = tool_version(program) {
            out.insert(kind.name().to_owned(), v);
        }
    }
    if let Some(v) = rtrace_perf::version() {
        out.insert(TracerKind::Perf.name().to_owned(), v);
    }
    out
}

/// `program`'s version from its `--version`: `lttng 2.13.9` (from `lttng (LTTng Trace Control)
/// 2.13.9 - Nordicité`), `bpftrace 0.17.0` (from `bpftrace v0.17.0`).
fn tool_version(program: &str) -> Option<String> {
    let o = std::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !o.status.success() {
        return None;
    }
    version_of(program, &String::from_utf8_lossy(&o.stdout))
}

/// The first word of `text` that is a version number (`v` in front dropped), after `program`.
fn version_of(program: &str, text: &str) -> Option<String> {
    let word = text.split_whitespace().find_map(|w| {
        let w = w.strip_prefix('v').unwrap_or(w);
        w.starts_with(|c: char| c.is_ascii_digit()).then_some(w)
    })?;
    Some(format!("{program} {word}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_are_the_tools_numbers() {
        let strace = "strace -- version 6.1\nCopyright (c) 1991-2022 The strace developers\n";
        assert_eq!(super::version_of("strace", strace).unwrap(), "strace 6.1");
        let lttng = "lttng (LTTng Trace Control) 2.13.9 - Nordicité\n";
        assert_eq!(super::version_of("lttng", lttng).unwrap(), "lttng 2.13.9");
        let bpftrace = "bpftrace v0.17.0\n";
        assert_eq!(
            super::version_of("bpftrace", bpftrace).unwrap(),
            "bpftrace 0.17.0"
        );
        assert_eq!(super::version_of("x", "no number"), None);
    }

    use super::*;
    use crate::options::TracerOptions;
    use rtrace_ftrace::FtraceMode::{Off, Overwrite, Stream};
    use rtrace_tracer::RecordMode;
    use BpfMode::{Aggregate, Count, Floor, Record, RecordWakeup};
    use TracerKind::{Bpftrace, Ebpf, Ftrace};

    fn opts(bpf_modes: Vec<BpfMode>) -> TracerOptions {
        let buffer_size_kb = None;
        TracerOptions {
            buffer_size_kb,
            bpf_modes,
            ..TracerOptions::default()
        }
    }

    /// The variants' names, `-` for none.
    fn names(kind: TracerKind, o: &TracerOptions) -> Vec<&'static str> {
        variants(kind, o)
            .unwrap()
            .iter()
            .map(|v| v.name.unwrap_or("-"))
            .collect()
    }

    #[test]
    fn decomposition_modes_are_columns_where_a_tracer_has_them() {
        let mut o = opts(vec![Floor, Count, Aggregate, Record]);
        assert_eq!(names(Ebpf, &o), ["floor", "count", "aggregate", "record"]);
        // bpftrace: count() is its aggregate, and it has no floor.
        assert_eq!(names(Bpftrace, &o), ["aggregate", "record"]);
        assert_eq!(names(Ftrace, &o), ["-"]);
        o.ftrace_modes = vec![Off, Overwrite, Stream];
        assert_eq!(names(Ftrace, &o), ["off", "overwrite", "stream"]);
    }

    /// Every tracer's buffer line says `want`; the eBPF ring is shared and rounded up to a
    /// power of two: equal when the CPU count is a power of two.
    fn assert_buffers(o: &TracerOptions, want: &str) {
        let b = buffers(&TracerKind::ALL, o).unwrap();
        assert_eq!(b.len(), TracerKind::ALL.len() - 1, "{b:?}");
        for (tracer, text) in &b {
            if tracer == "strace" {
                assert!(text.starts_with("none"), "{text}");
            } else if tracer != "ebpf" || possible_cpus().is_power_of_two() {
                assert!(text.contains(want), "{tracer}: {text}");
            }
        }
    }

    #[test]
    fn every_tracer_gets_the_same_per_cpu_buffer_by_default() {
        assert_buffers(&TracerOptions::default(), "4096 KiB per CPU");
    }

    /// Possible CPUs as the kernel lists them (`0-1` -> 2).
    fn possible_cpus() -> usize {
        let s = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
        s.trim()
            .split(',')
            .map(|r| match r.split_once('-') {
                Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
                None => 1,
            })
            .sum()
    }

    #[test]
    fn the_events_suites_options_carry_its_buffer_size_to_every_backend() {
        let o = TracerOptions {
            buffer_size_kb: Some(64),
            record: RecordMode::Overwrite,
            ..TracerOptions::default()
        };
        for kind in TracerKind::ALL {
            let n = variants(kind, &o).unwrap().len();
            assert_eq!(n, usize::from(kind != TracerKind::None));
        }
        assert_buffers(&o, "64 KiB per CPU");
        let default = buffers(
            &TracerKind::ALL,
            &TracerOptions {
                buffer_size_kb: None,
                ..o
            },
        );
        let default = default.unwrap();
        assert!(
            default.values().all(|t| !t.contains("64 KiB")),
            "{default:?}"
        );
    }

    #[test]
    fn record_wakeup_is_an_ebpf_column_and_bpftrace_record() {
        let o = opts(vec![Record, RecordWakeup, Aggregate]);
        assert_eq!(names(Ebpf, &o), ["record", "record-wakeup", "aggregate"]);
        assert_eq!(names(Bpftrace, &o), ["record", "aggregate"]);
        let only = opts(vec![RecordWakeup]);
        assert_eq!(names(Bpftrace, &only), ["record"]);
        assert_eq!(names(Ftrace, &only), ["-"]);
    }
}
