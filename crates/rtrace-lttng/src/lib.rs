//! LTTng backend: drives the `lttng` command-line tool (one run-unique recording session per
//! attachment), reads the discarded-event count LTTng keeps, and counts the recorded events in
//! the trace with babeltrace2.
//!
//! # Use
//!
//! ```no_run
//! use rtrace_lttng::{EventKind, LttngOptions, LttngTracer};
//! let tracer = LttngTracer::new(LttngOptions {
//!     subbuf_size: Some(4096),
//!     num_subbuf: Some(2),
//!     event_kind: EventKind::Tracepoint,
//! })?;
//! # anyhow::Ok(())
//! ```
//!
//! # Hooks
//!
//! - [`Hook::LttngUst`] `{provider, event}`: `lttng enable-event -u provider:event`. With
//!   [`EventKind::Tracef`] a hook on the event named `event` (the workload's loop event) is
//!   traced as `lttng_ust_tracef:event` instead, because that is what the workload then fires;
//!   other hooks (the never-fired `rtrace:idle` of case 2) are unchanged.
//! - [`Hook::KernelTracepoint`] `{category: "syscalls", name: "sys_exit_NAME" | "sys_enter_NAME"}`:
//!   `lttng enable-event -k --syscall NAME` (needs root and the lttng-modules kernel modules).
//!   LTTng records entry and exit; the hooked direction is counted as recorded, and `lost` is
//!   derived exactly from LTTng's channel-wide discarded count, assuming each call of the
//!   traced process produced one entry and one exit during the session.
//! - [`Hook::Read`] (the events suite's programs): experiments 04 and 05 and the accounting of
//!   the `read` syscall's tracepoints as the kernel hook above, with the same channel geometry
//!   (module `events`); the other experiments are refused as [`Unsupported`].
//!
//! # Sessions and the session daemon
//!
//! `attach` uses the running `lttng-sessiond` of this user, or starts one (`--daemonize`,
//! pinned to `Target::consumer_cpus`; the consumer daemons inherit that, and the run's tag in
//! `RTRACE_BENCH_DAEMON`). Every [`LttngTracer`] that uses a daemon holds a shared lock on it
//! until it and its attachments are dropped; the last one stops a daemon that a run started,
//! even if another run started it (module `daemon`). Each attachment owns a session named
//! [`rtrace_tracer::run_tag`] (`rtrace_<tag>_<seq>`) with one channel `rtrace`; `finish` and
//! `Drop` destroy it, and [`remove_stale`] destroys the sessions of runs that are gone and
//! stops daemons runs started that nobody uses.
//!
//! # Record modes and accounting
//!
//! - [`RecordMode::Stream`] (the thesis' default): a normal session written to
//!   `out_dir/lttng/<session>` by the consumer daemon, channel in discard mode.
//!   `recorded` = events in the trace, `lost` = the channel's "discarded events".
//! - [`RecordMode::Overwrite`]: a snapshot session (flight recorder, channel in overwrite mode),
//!   one snapshot written at `finish` (and one right after `lttng start`, read and removed:
//!   the packets the start opened empty). LTTng does not count overwritten events; the
//!   packets missing from each stream's `packet_seq_num` sequence were overwritten, and each
//!   held a full packet's events when every event has one size: `overwritten` = that count ×
//!   missing packets, `lost` = discarded + overwritten (module `overwrite`, which fails with the
//!   measured reason where that is not exact: events of several sizes as `tracef`'s, a 64-bit
//!   timestamp header, a packet closed early). Kernel sessions still fail when any packet was
//!   overwritten.
//!
//! In both modes `recorded + lost == hits` holds when LTTng is consistent; the harness checks it.

mod cli;
mod ctf;
pub use ctf::{switches, Switches};
mod daemon;
mod events;
pub mod kernel;
mod mi;
mod overwrite;
mod session;

pub use cli::{ToolsMissing, TOOLS};
pub use daemon::daemons_allowed_on;
pub use session::kernel_modules_available;

use anyhow::{bail, Result};
use daemon::Sessiond;
use rtrace_tracer::features::{Ordinary, ReadHook, Unsupported};
use rtrace_tracer::{Attachment, Hook, Target, Tracer, TracerKind};
use std::sync::{Arc, Mutex};

/// How the workload emits its loop event, and so which LTTng event case 1 enables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventKind {
    /// `rtrace:event`, a `LTTNG_UST_TRACEPOINT_EVENT` with one integer field (default).
    #[default]
    Tracepoint,
    /// The thesis' `lttng_ust_tracef("%s (%d)", "event", i)`: LTTng event
    /// `lttng_ust_tracef:event`. The workload must run with [`EventKind::WORKLOAD_ENV`] set to
    /// [`EventKind::name`].
    Tracef,
}

impl EventKind {
    /// Environment variable read once by `workload-lttng` to pick its loop event.
    pub const WORKLOAD_ENV: &'static str = "RTRACE_LTTNG_EVENT";

    /// `tracepoint` or `tracef`: the value of [`EventKind::WORKLOAD_ENV`] for this kind, and its
    /// column name in results (they always say which kind a row measured).
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Tracepoint => "tracepoint",
            EventKind::Tracef => "tracef",
        }
    }

    /// The LTTng-UST event enabled for hook `provider:event`.
    pub fn ust_event(self, provider: &str, event: &str) -> String {
        match self {
            EventKind::Tracef if event == "event" => "lttng_ust_tracef:event".to_owned(),
            _ => format!("{provider}:{event}"),
        }
    }
}

/// Channel geometry and event kind. Unset sizes come from `Target::buffer_size_kb` (split into
/// `num_subbuf` sub-buffers, default 4, each rounded up to a power of two ≥ 4 KiB), else from
/// LTTng's defaults (UST: 4 × 512 KiB per CPU; kernel: 4 × 1 MiB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LttngOptions {
    /// Sub-buffer size in bytes: a power of two, at least 4096 (`--subbuf-size`).
    pub subbuf_size: Option<u64>,
    /// Sub-buffers per CPU ring buffer, at least 2 (`--num-subbuf`).
    pub num_subbuf: Option<u32>,
    pub event_kind: EventKind,
}

impl LttngOptions {
    /// `(subbuf_size, num_subbuf)` for a target asking for `buffer_size_kb` per CPU.
    pub fn geometry(&self, buffer_size_kb: Option<u64>) -> (Option<u64>, Option<u32>) {
        match (self.subbuf_size, buffer_size_kb) {
            (None, Some(kb)) => {
                let n = self.num_subbuf.unwrap_or(4);
                let size = (kb * 1024 / u64::from(n)).next_power_of_two().max(4096);
                (Some(size), Some(n))
            }
            _ => (self.subbuf_size, self.num_subbuf),
        }
    }

    /// The channel a run asking for `buffer_size_kb` per CPU gets, as the report shows it.
    pub fn buffer_description(&self, buffer_size_kb: Option<u64>) -> String {
        match self.geometry(buffer_size_kb) {
            (Some(size), Some(n)) => format!(
                "{n} sub-buffers × {} KiB = {} KiB per CPU",
                size / 1024,
                size / 1024 * u64::from(n)
            ),
            (size, n) => format!(
                "{} sub-buffers × {} per CPU (LTTng's default where not given: 4 × 512 KiB in user space, 4 × 1 MiB in the kernel)",
                n.map_or("default".into(), |n| n.to_string()),
                size.map_or("default size".into(), |s| format!("{} KiB", s / 1024))
            ),
        }
    }

    fn validate(&self) -> Result<()> {
        if let Some(s) = self.subbuf_size {
            if s < 4096 || !s.is_power_of_two() {
                bail!("LTTng sub-buffer size {s} is invalid: use a power of two of at least 4096 bytes");
            }
        }
        if let Some(n) = self.num_subbuf {
            if n < 2 || !n.is_power_of_two() {
                bail!("LTTng sub-buffer count {n} is invalid: use a power of two of at least 2");
            }
        }
        Ok(())
    }
}

/// The LTTng backend. See the crate documentation for the lifecycle.
#[derive(Debug)]
pub struct LttngTracer {
    options: LttngOptions,
    /// Kernel events recorded beside a UST hook in a kernel channel of the same session
    /// (module `kernel`); empty: none.
    kernel_events: Vec<String>,
    /// The session daemon in use, once `attach` (or [`LttngTracer::ensure_sessiond`]) found or
    /// started it; shared with the attachments so a daemon we started outlives them.
    sessiond: Mutex<Option<Arc<Sessiond>>>,
}

impl LttngTracer {
    /// A tracer with `options`; fails on an invalid channel geometry. Starts nothing.
    pub fn new(options: LttngOptions) -> Result<LttngTracer> {
        options.validate()?;
        Ok(LttngTracer {
            options,
            kernel_events: Vec::new(),
            sessiond: Mutex::new(None),
        })
    }

    /// The tracer recording kernel events `events` beside every UST hook, in a kernel channel
    /// of the same session (stream mode; needs root and the lttng-modules kernel modules).
    pub fn with_kernel_events(mut self, events: Vec<String>) -> Result<LttngTracer> {
        if !events.is_empty() {
            kernel::validate_events(&events)?;
        }
        self.kernel_events = events;
        Ok(self)
    }

    pub fn options(&self) -> &LttngOptions {
        &self.options
    }

    /// Finds or starts the session daemon now (pinned to `consumer_cpus` if we start it).
    /// Optional: `attach` does it too, but an LTTng-UST application registers faster when the
    /// daemon is already up when it starts. Returns the pid of a daemon we started.
    pub fn ensure_sessiond(&self, consumer_cpus: &[usize]) -> Result<Option<u32>> {
        Ok(self.sessiond(consumer_cpus)?.started)
    }

    fn sessiond(&self, consumer_cpus: &[usize]) -> Result<Arc<Sessiond>> {
        cli::require_tools()?;
        let mut guard = self.sessiond.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = guard.as_ref() {
            if cli::lttng(&["list"]).is_ok() {
                return Ok(d.clone());
            }
        }
        let d = Arc::new(Sessiond::ensure(consumer_cpus)?);
        *guard = Some(d.clone());
        Ok(d)
    }
}

impl Tracer for LttngTracer {
    fn kind(&self) -> TracerKind {
        TracerKind::Lttng
    }

    fn program(&self, hook: &Hook) -> String {
        match hook {
            Hook::Read(read) => events::describe(read.program),
            h => h.label(),
        }
    }

    fn workload_env(&self) -> Vec<(String, String)> {
        vec![(
            EventKind::WORKLOAD_ENV.to_owned(),
            self.options.event_kind.name().to_owned(),
        )]
    }

    fn check(&self, hook: &Hook) -> Result<()> {
        cli::require_tools()?;
        match hook {
            Hook::LttngUst { provider, event } => {
                rtrace_tracer::validate_name("LTTng-UST provider", provider)?;
                rtrace_tracer::validate_name("LTTng-UST event", event)?;
                if !self.kernel_events.is_empty() {
                    rtrace_tracer::require_root("LTTng kernel tracing")?;
                    session::kernel_modules_available()?;
                }
                Ok(())
            }
            Hook::KernelTracepoint { category, name } => {
                session::syscall(category, name)?;
                rtrace_tracer::require_root("LTTng kernel tracing")?;
                session::kernel_modules_available()
            }
            Hook::Tracepoints(_) => {
                rtrace_tracer::require_root("LTTng kernel tracing")?;
                session::kernel_modules_available()?;
                bail!("LTTng's kernel tracer runs one syscall here, not a tracepoint script: use --tracer ftrace|ebpf|bpftrace|perf")
            }
            Hook::Usdt { .. } => bail!(
                "LTTng traces LTTng-UST tracepoints, not USDT probes: use the workload-lttng binary (or --tracer ftrace|ebpf|bpftrace for USDT)"
            ),
            Hook::Uprobe { .. } => bail!(
                "LTTng has no uprobe/uretprobe hook: use --tracer ftrace|ebpf|bpftrace for dynamic instrumentation"
            ),
            Hook::Read(read) => {
                // This machine first (no kernel modules: every program is unavailable), then
                // the program.
                let syscall = read.ordinary(ReadHook::Enter).expect("a tracepoint");
                self.check(&syscall)
                    .map_err(|e| Unsupported::Unavailable(format!("{e:#}")))?;
                events::plan(read.program)?;
                Ok(())
            }
        }
    }

    fn attach(&self, target: &Target) -> Result<Box<dyn Attachment>> {
        self.check(&target.hook)?;
        if let Hook::Read(read) = &target.hook {
            let hook = events::plan(read.program)?;
            return Ordinary::attach(read.program, target, hook, |t| self.attach(t));
        }
        let sessiond = self.sessiond(&target.consumer_cpus)?;
        Ok(Box::new(session::LttngSession::start(
            &self.options,
            &self.kernel_events,
            target,
            sessiond,
        )?))
    }
}

/// Destroys the sessions of runs that are gone, then stops the session daemons runs started
/// if nobody uses them any more (see `daemon`); nothing without lttng-tools. Returns what was
/// removed.
pub fn remove_stale() -> Result<Vec<String>> {
    if cli::require_tools().is_err() {
        return Ok(Vec::new());
    }
    let mut removed = session::remove_stale()?;
    removed.extend(daemon::stop_if_unused()?);
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_tracer::features::{Feature, Read, ReadProgram};

    #[test]
    fn buffer_size_becomes_power_of_two_subbuffers() {
        let o = LttngOptions::default();
        assert_eq!(o.geometry(None), (None, None));
        // 64: the events suite's programs are kernel sessions of the same geometry.
        for (kb, subbuf) in [(1024, 262_144), (1000, 262_144), (4, 4096), (64, 16384)] {
            assert_eq!(o.geometry(Some(kb)), (Some(subbuf), Some(4)), "{kb}");
        }
        let described = o.buffer_description(Some(64));
        assert!(described.contains("4 sub-buffers × 16 KiB = 64 KiB per CPU"));
        let (subbuf_size, num_subbuf) = (Some(8192), Some(2));
        let explicit = LttngOptions {
            subbuf_size,
            num_subbuf,
            ..o
        };
        assert_eq!(explicit.geometry(Some(1024)), (Some(8192), Some(2)));
    }

    #[test]
    fn rejects_geometry_lttng_would_reject() {
        for (subbuf_size, num_subbuf) in [
            (Some(1000), None),
            (Some(2048), None),
            (None, Some(1)),
            (None, Some(3)),
        ] {
            let o = LttngOptions {
                subbuf_size,
                num_subbuf,
                ..Default::default()
            };
            assert!(LttngTracer::new(o).is_err(), "{o:?}");
        }
        assert!(LttngTracer::new(LttngOptions::default()).is_ok());
    }

    #[test]
    fn tracef_replaces_only_the_loop_event() {
        let (tp, tracef) = (EventKind::Tracepoint, EventKind::Tracef);
        assert_eq!(tp.ust_event("rtrace", "event"), "rtrace:event");
        let event = tracef.ust_event("rtrace", "event");
        assert_eq!(event, "lttng_ust_tracef:event");
        assert_eq!(tracef.ust_event("rtrace", "idle"), "rtrace:idle");
    }

    #[test]
    fn usdt_hooks_are_refused_with_the_fix_and_maps_are_inexpressible() {
        let t = LttngTracer::new(LttngOptions::default()).unwrap();
        let hook = Hook::Usdt {
            binary: "/bin/true".into(),
            sites: Vec::new(),
        };
        let msg = format!("{:#}", t.check(&hook).expect_err("USDT accepted"));
        let names_fix = msg.contains("workload-lttng") || msg.contains("apt-get");
        assert!(names_fix, "{msg}");
        let hook = Hook::Read(Read {
            program: ReadProgram::Feature(Feature::Histogram),
            libc: "/lib/libc.so.6".into(),
            read_offset: 1,
            kprobes: false,
        });
        assert!(t.program(&hook).contains("no in-kernel maps"));
    }
}
