//! bpftrace backend: runs the real `bpftrace` (Debian 12 ships 0.17) as an external reference,
//! with the thesis' kind of script.
//!
//! - `record`: `printf("%llu %u %u %lld\n", nsecs, cpu, pid, arg)` per event into
//!   `out_dir/bpftrace-events.txt` (`-o`); recorded = event lines, lost = the "Lost N events"
//!   reports (a perf buffer reports a loss only with its next record: `flush` writes one per
//!   CPU after the run, so that losses at its end are reported too).
//! - `aggregate`: `@c = count();`; recorded = the `@c` bpftrace prints when stopped.
//! - The events suite's programs ([`Hook::Read`], whatever the mode): Gregg's one-liners as
//!   published and per-pid accounting scripts (module `events`), with the same perf buffer;
//!   their attachments' evidence is what the printed maps or lines show of the workload.
//!
//! - Tracepoint scripts ([`Hook::Tracepoints`], `app`): the one-liner
//!   `tracepoint:syscalls:sys_enter_* { @[probe] = count(); }` on the script's patterns, every
//!   process (or one pid's by predicate), aggregate mode only; recorded = the map's sum, lost = 0,
//!   per probe through `finish_by_probe` (module `scripts`).
//!
//! `attach` returns once bpftrace reports its probes attached (it prints
//! [`output::NOTIFY_ATTACHED`] when asked; "Attaching N probes..." comes *before* attaching).
//! `finish` stops bpftrace with SIGINT; dropping the attachment kills it; it dies with the
//! thread that attached it, and [`remove_stale`] stops one whose run is gone.
//!
//! One process (`Target::pid`): USDT counts use `-p PID` (bpftrace 0.17 resolves the probes
//! through that process's memory maps, so it must already run the binary, not be a shell about
//! to exec it). Printed events and kernel tracepoints use a `/pid == N/` predicate instead: with
//! `-p`, bpftrace 0.17 exits as soon as the process ends and drops what is still in its perf
//! buffers without a "Lost" report (measured: 459 of 100,000 events), see `script::PidFilter`.

mod child;
mod events;
mod flush;
mod output;
mod script;
mod scripts;

use anyhow::{ensure, Context, Result};
use rtrace_tracer::{Attachment, EventStats, Hook, Target, Tracer, TracerKind};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use output::NOTIFY_ATTACHED;

/// The perf buffer a run asking for `buffer_size_kb` per CPU gets (`BPFTRACE_PERF_RB_PAGES`), as
/// the report shows it.
pub fn buffer_description(buffer_size_kb: Option<u64>) -> Result<String> {
    let pages = perf_rb_pages(buffer_size_kb)?;
    Ok(format!(
        "perf buffer of {pages} pages = {} KiB per CPU",
        pages * 4
    ))
}

/// Where Debian installs bpftrace.
pub const BPFTRACE: &str = "/usr/bin/bpftrace";

/// File below `Target::out_dir` that record mode writes.
pub const EVENTS_FILE: &str = "bpftrace-events.txt";

/// What the bpftrace script does per hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BpftraceMode {
    /// `printf` of every event to a file.
    Record,
    /// `@c = count();`.
    Aggregate,
}

/// Per-CPU perf buffer when `Target::buffer_size_kb` is not given (KiB).
pub const DEFAULT_BUFFER_KB: u64 = 8 << 10;

/// The bpftrace tracer backend.
#[derive(Debug, Clone)]
pub struct BpftraceTracer {
    mode: BpftraceMode,
    program: PathBuf,
}

impl BpftraceTracer {
    pub fn new(mode: BpftraceMode) -> BpftraceTracer {
        BpftraceTracer {
            mode,
            program: PathBuf::from(BPFTRACE),
        }
    }

    /// Uses another bpftrace executable than [`BPFTRACE`].
    pub fn with_program(mut self, program: impl Into<PathBuf>) -> BpftraceTracer {
        self.program = program.into();
        self
    }
}

impl Tracer for BpftraceTracer {
    fn kind(&self) -> TracerKind {
        TracerKind::Bpftrace
    }

    fn check(&self, hook: &Hook) -> Result<()> {
        rtrace_tracer::tool::require("bpftrace", "bpftrace", &self.program)?;
        if let Hook::Read(read) = hook {
            return events::program(read).map(drop);
        }
        if let Hook::Tracepoints(s) = hook {
            return scripts::program(s, self.mode, None, false).map(drop);
        }
        script::program(hook, self.mode, script::PidFilter::None, None, None)?;
        hook.check_binary()
    }

    fn attach(&self, target: &Target) -> Result<Box<dyn Attachment>> {
        self.check(&target.hook)?;
        let pages = perf_rb_pages(target.buffer_size_kb)?;
        if let Hook::Read(read) = &target.hook {
            let a = events::ReadAttachment::start(&self.program, read, target, pages)?;
            return Ok(Box::new(a));
        }
        if let Hook::Tracepoints(script) = &target.hook {
            let a = scripts::ScriptAttachment::start(&self.program, script, self.mode, target)?;
            return Ok(Box::new(a));
        }
        let (events, flush) = match self.mode {
            BpftraceMode::Record => {
                let f = target.out_dir.join(EVENTS_FILE);
                std::fs::File::create(&f)
                    .with_context(|| format!("cannot create {} (check --out-dir)", f.display()))?;
                (Some(f), flush::probe())
            }
            BpftraceMode::Aggregate => (None, None),
        };
        let args = script::args(
            &target.hook,
            self.mode,
            (target.pid, target.tree),
            target.skip_tid,
            events.as_deref(),
            flush.as_ref().map(|f| f.probe.as_str()),
        )?;
        let env = vec![("BPFTRACE_PERF_RB_PAGES", pages.to_string())];
        let bpftrace = child::Bpftrace::start(&self.program, &args, &env, &target.consumer_cpus)
            .map_err(|e| explain_attach(e, &target.hook, target.pid, &args))?;
        Ok(Box::new(BpftraceAttachment {
            bpftrace,
            mode: self.mode,
            events,
            flush: flush.map(|f| f.token),
        }))
    }

    fn program(&self, hook: &Hook) -> String {
        match hook {
            Hook::Read(read) => events::program(read).unwrap_or_else(|e| format!("{e:#}")),
            h => h.label(),
        }
    }

    fn drives_kprobes(&self) -> bool {
        true
    }
}

/// `BPFTRACE_PERF_RB_PAGES` for a target asking for `buffer_size_kb` per CPU. bpftrace's own
/// default (64 pages per CPU) overflows within milliseconds at our hit rates, and bpftrace 0.17
/// then under-reports its losses; without an explicit size, it gets as much buffer as the eBPF
/// backend's default ring (16 MiB, shared by all CPUs): [`DEFAULT_BUFFER_KB`].
pub fn perf_rb_pages(buffer_size_kb: Option<u64>) -> Result<u64> {
    script::perf_rb_pages(buffer_size_kb.unwrap_or(DEFAULT_BUFFER_KB))
}

/// Stops the bpftrace processes of runs that are gone (they carry the run's tag in
/// `RTRACE_BENCH_RUN`, see [`rtrace_tracer::owner`]): a bpftrace that outlived its run keeps its
/// probes on the traced binary, and every later run would pay their trap. Any other process
/// tagged with a dead run (a child of one) goes too, named by its command. Returns what was
/// stopped.
pub fn remove_stale() -> Result<Vec<String>> {
    Ok(rtrace_tracer::owner::stop_dead_runs_processes(None))
}

/// Adds the fix for bpftrace 0.17's "No probes to attach" with `-p`.
fn explain_attach(
    e: anyhow::Error,
    hook: &Hook,
    pid: Option<u32>,
    args: &[std::ffi::OsString],
) -> anyhow::Error {
    let msg = format!("{e:#}");
    // bpftrace's error points into its program: show the program with it.
    let e = match script::program_of(args) {
        Some(p) => anyhow::anyhow!("{msg} (bpftrace program: {p})"),
        None => e,
    };
    match (hook, pid) {
        (Hook::Usdt { binary, .. } | Hook::Uprobe { binary, .. }, Some(pid))
            if msg.contains("No probes to attach") =>
        {
            anyhow::anyhow!(
                "{msg}: with -p, bpftrace finds USDT probes in the memory maps of process {pid}; start tracing once it runs {} (after exec)",
                binary.display()
            )
        }
        _ => e,
    }
}

/// A running bpftrace; killed if dropped without `finish`.
pub struct BpftraceAttachment {
    bpftrace: child::Bpftrace,
    mode: BpftraceMode,
    events: Option<PathBuf>,
    /// The token of the record program's flush probe (`flush`), if it has one.
    flush: Option<u64>,
}

impl Attachment for BpftraceAttachment {
    fn finish(self: Box<Self>) -> Result<EventStats> {
        let mut flushed = None;
        if let Some(file) = &self.events {
            wait_until_caught_up(file, CAUGHT_UP, CATCH_UP_TIMEOUT)?;
            if let Some(token) = self.flush {
                // Every CPU's pending loss report, then its flush line (see `flush`).
                flushed = Some(flush::each_cpu(token)?);
                wait_until_caught_up(file, CAUGHT_UP, CATCH_UP_TIMEOUT)?;
            }
        }
        let exited = self.bpftrace.stop()?;
        let mut out = output::Tally::default();
        for l in &exited.stdout {
            out.line(l)?;
        }
        match self.mode {
            BpftraceMode::Aggregate => {
                let recorded = out.count.with_context(|| {
                    format!(
                        "bpftrace printed no @c count ({}): check its version (0.17 or later)",
                        child::why(&exited)
                    )
                })?;
                Ok(EventStats::new(recorded, out.lost))
            }
            BpftraceMode::Record => {
                let file = self.events.as_deref().expect("record mode has a file");
                let file_tally = read_tally(file)?;
                if let Some(fired) = flushed {
                    ensure!(
                        file_tally.flushes == fired,
                        "bpftrace printed {} of its {fired} flush events: a perf buffer was still full after its reader caught up, so the losses at the end of the run are unknown; rerun with a larger --buffer-size-kb",
                        file_tally.flushes
                    );
                }
                Ok(EventStats::new(
                    file_tally.events,
                    file_tally.lost + out.lost,
                ))
            }
        }
    }
}

/// How long the events file must stay unchanged before bpftrace counts as caught up.
const CAUGHT_UP: Duration = Duration::from_millis(500);
/// Longest wait for bpftrace to catch up with its perf buffers.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(120);

/// Waits until bpftrace's output file has stopped growing. bpftrace 0.17 discards the rest of
/// the batch it is printing when SIGINT arrives, without a "Lost" report (measured: 12,454 of
/// 100,000 events when stopped right after the workload), so it must be idle before `finish`
/// stops it.
fn wait_until_caught_up(file: &Path, quiet: Duration, timeout: Duration) -> Result<()> {
    let size = || std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    let start = Instant::now();
    let mut last = size();
    let mut since = Instant::now();
    while since.elapsed() < quiet {
        ensure!(
            start.elapsed() < timeout,
            "bpftrace is still writing {} after {} s: rerun with fewer events or a faster disk",
            file.display(),
            timeout.as_secs()
        );
        std::thread::sleep(Duration::from_millis(50));
        let now = size();
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
    Ok(())
}

fn read_tally(file: &Path) -> Result<output::Tally> {
    use std::io::BufRead;
    let f = std::fs::File::open(file)
        .with_context(|| format!("cannot read bpftrace's output {}", file.display()))?;
    let mut t = output::Tally::default();
    for line in std::io::BufReader::new(f).lines() {
        t.line(&line.with_context(|| format!("cannot read {}", file.display()))?)?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_serializes_lowercase() {
        let record = serde_json::to_string(&BpftraceMode::Record).unwrap();
        assert_eq!(record, "\"record\"");
        let m: BpftraceMode = serde_json::from_str("\"aggregate\"").unwrap();
        assert_eq!(m, BpftraceMode::Aggregate);
    }

    #[test]
    fn the_perf_buffer_is_the_targets_size() {
        assert_eq!(perf_rb_pages(Some(64)).unwrap(), 16);
        assert_eq!(perf_rb_pages(None).unwrap(), DEFAULT_BUFFER_KB / 4);
        assert!(buffer_description(Some(64))
            .unwrap()
            .contains("64 KiB per CPU"));
    }

    #[test]
    fn missing_bpftrace_is_one_line_naming_the_fix() {
        let t = BpftraceTracer::new(BpftraceMode::Aggregate).with_program("/nonexistent/bpftrace");
        let hook = Hook::KernelTracepoint {
            category: "syscalls".into(),
            name: "sys_exit_clock_nanosleep".into(),
        };
        let err = format!("{:#}", t.check(&hook).unwrap_err());
        let fix = "bpftrace not found: apt-get install bpftrace";
        assert!(err.starts_with(fix) && !err.contains('\n'), "{err}");
    }
}
