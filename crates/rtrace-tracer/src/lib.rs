//! The interface every tracer backend implements, and the small helpers they share.
//!
//! Lifecycle: [`Tracer::check`] (preflight, changes nothing) → [`Tracer::attach`] (creates the
//! backend's kernel/daemon state and returns an [`Attachment`]) → [`Attachment::finish`] (stops
//! tracing, drains, counts, removes the state). Dropping an [`Attachment`] without `finish` must
//! also remove everything it created: that is how error paths and Ctrl-C clean up.
//!
//! The events suite's programs are hooks too ([`Hook::Read`]): a backend that can run one
//! says so in `check` (or why not, as [`features::Unsupported`]), names it with
//! [`Tracer::program`], and its attachment tells what its output shows of the workload with
//! [`Attachment::evidence`].

pub mod features;
mod names;
pub mod owner;
mod process;
pub mod procs;
pub mod tool;
pub mod tracepoints;

pub use names::{validate_name, NameError};
pub use owner::{run_tag, PREFIX};
pub use process::{
    cpu_list, cpu_set, in_initial_pid_namespace, is_alive, parse_cpu_list, pin, require_root,
    wait_or_kill, NotRoot,
};
pub use procs::is_running;

use features::{Evidence, Read};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The tracers rtrace-bench knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TracerKind {
    /// No tracer at all (baseline).
    None,
    /// ftrace uprobe / trace events, written to tracefs directly.
    Ftrace,
    /// Our CO-RE BPF programs loaded with libbpf-rs.
    Ebpf,
    /// LTTng-UST (user space) / LTTng kernel modules.
    Lttng,
    /// The real `bpftrace`, as an external reference.
    Bpftrace,
    /// The real `perf record`, as an external reference.
    Perf,
    /// `strace -f -o /dev/null -p PID` (ptrace): the events suite's syscall experiments only.
    Strace,
}

impl TracerKind {
    pub const ALL: [TracerKind; 7] = [
        TracerKind::None,
        TracerKind::Ftrace,
        TracerKind::Ebpf,
        TracerKind::Lttng,
        TracerKind::Bpftrace,
        TracerKind::Perf,
        TracerKind::Strace,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TracerKind::None => "none",
            TracerKind::Ftrace => "ftrace",
            TracerKind::Ebpf => "ebpf",
            TracerKind::Lttng => "lttng",
            TracerKind::Bpftrace => "bpftrace",
            TracerKind::Perf => "perf",
            TracerKind::Strace => "strace",
        }
    }

    /// Whether `--tracer all` tries it. strace is left out: a ptrace stop at every system
    /// call costs about 100 times a kernel tracer's event here, so that `events --tracer all`
    /// would take hours; it runs where it is named.
    pub fn in_all(self) -> bool {
        self != TracerKind::Strace
    }

    /// `ftrace`, or `ebpf (aggregate)` with a variant (a mode, an event kind).
    pub fn label(self, variant: Option<&str>) -> String {
        match variant {
            Some(v) => format!("{self} ({v})"),
            None => self.to_string(),
        }
    }

    /// Which instrumentation the workload must carry for this tracer.
    pub fn instrumentation(self) -> Instrumentation {
        match self {
            TracerKind::Lttng => Instrumentation::LttngUst,
            _ => Instrumentation::Usdt,
        }
    }
}

impl std::fmt::Display for TracerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of static instrumentation compiled into a workload binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Instrumentation {
    /// `.note.stapsdt` USDT probes (uprobe based tracers: ftrace, eBPF, bpftrace).
    Usdt,
    /// LTTng-UST tracepoints (liblttng-ust linked in).
    LttngUst,
}

/// What to trace.
#[derive(Debug, Clone)]
pub enum Hook {
    /// All sites of one USDT probe of `binary` (as found by `rtrace_sdt::find`).
    Usdt {
        binary: PathBuf,
        sites: Vec<rtrace_sdt::Probe>,
    },
    /// An LTTng-UST tracepoint `provider:event`.
    LttngUst { provider: String, event: String },
    /// A kernel tracepoint such as `syscalls:sys_exit_clock_nanosleep`.
    KernelTracepoint { category: String, name: String },
    /// A tracing script of some breadth (`app`): every kernel tracepoint matching one of its
    /// patterns (`syscalls:sys_enter_*`, `syscalls:*`, `sched:*`), expanded once by
    /// [`tracepoints::expand`] into `points` (category, name). Traced in every process
    /// (`Target::pid` is `None`), as Piotrowski's scripts; strace, which cannot, follows
    /// `Target::pid`'s tree and takes the `syscalls` category only.
    Tracepoints(tracepoints::Script),
    /// Dynamic instrumentation: the entry (`ret: false`, uprobe) or the return (`ret: true`,
    /// uretprobe) of `function` in `binary`, whose first instruction is at file offset `offset`
    /// (as found by `rtrace_sdt::function`; see [`Hook::uprobe`]).
    Uprobe {
        binary: PathBuf,
        function: String,
        offset: u64,
        ret: bool,
    },
    /// A program of the events suite (Gregg's per-event cost benchmark) on the `read` calls:
    /// an experiment's program, which traces every process (`Target::pid` is `None`), or the
    /// accounting program of one hook, which counts the events of `Target::pid` only.
    Read(Read),
}

impl Hook {
    /// A short human name: `rtrace:event`, `syscalls:sys_exit_clock_nanosleep`.
    pub fn label(&self) -> String {
        match self {
            Hook::Usdt { sites, .. } => sites
                .first()
                .map(|p| format!("{}:{}", p.provider, p.name))
                .unwrap_or_default(),
            Hook::LttngUst { provider, event } => format!("{provider}:{event}"),
            Hook::KernelTracepoint { category, name } => format!("{category}:{name}"),
            Hook::Tracepoints(script) => script.label(),
            Hook::Uprobe { function, ret, .. } => {
                format!("{}:{function}", if *ret { "uretprobe" } else { "uprobe" })
            }
            Hook::Read(r) => r.program.site(r.kprobes),
        }
    }

    /// The binary of a user-space hook (USDT, uprobe).
    pub fn binary(&self) -> Option<&std::path::Path> {
        match self {
            Hook::Usdt { binary, .. } | Hook::Uprobe { binary, .. } => Some(binary),
            _ => None,
        }
    }

    /// Fails unless a user-space hook's binary is a file; the error names the fix.
    pub fn check_binary(&self) -> anyhow::Result<()> {
        match self.binary() {
            Some(b) if !b.is_file() => {
                anyhow::bail!("cannot read {}: check the path of the binary", b.display())
            }
            _ => Ok(()),
        }
    }

    /// The instructions a uprobe replaces for this hook, one per distinct instruction among its
    /// sites, each classified by how the kernel runs it (emulated, single-stepped, nop5); empty
    /// where no uprobe is placed (LTTng-UST, kernel tracepoints, kprobes). A uretprobe's is its
    /// function's entry: the return is reached through the trampoline the entry's trap sets.
    pub fn probe_sites(&self) -> Result<Vec<rtrace_sdt::ProbeSite>, rtrace_sdt::SdtError> {
        let (binary, offsets): (_, Vec<u64>) = match self {
            Hook::Usdt { binary, sites } => (binary, sites.iter().map(|p| p.offset).collect()),
            Hook::Uprobe { binary, offset, .. } => (binary, vec![*offset]),
            Hook::Read(r) => {
                let mut out = Vec::new();
                for hook in r.hooks().into_iter().filter_map(|h| r.ordinary(h)) {
                    out.extend(hook.probe_sites()?);
                }
                out.dedup();
                return Ok(out);
            }
            Hook::LttngUst { .. } | Hook::KernelTracepoint { .. } | Hook::Tracepoints(_) => {
                return Ok(Vec::new())
            }
        };
        let file = rtrace_sdt::ProbeSites::read(binary)?;
        let mut out: Vec<rtrace_sdt::ProbeSite> = Vec::new();
        for offset in offsets {
            let site = file.at(offset)?;
            if !out.contains(&site) {
                out.push(site);
            }
        }
        Ok(out)
    }

    /// A uprobe (`ret: false`) or uretprobe (`ret: true`) on the function `name` of `binary`,
    /// resolved to its file offset; the error names `rtrace-bench probes BIN --symbols`.
    pub fn uprobe(
        binary: &std::path::Path,
        name: &str,
        ret: bool,
    ) -> Result<Hook, rtrace_sdt::SdtError> {
        let f = rtrace_sdt::function(binary, name)?;
        Ok(Hook::Uprobe {
            binary: binary.to_owned(),
            function: f.name,
            offset: f.offset,
            ret,
        })
    }
}

/// How events are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RecordMode {
    /// Flight recorder: a fixed in-memory buffer, oldest events overwritten (Gebai's method).
    #[default]
    Overwrite,
    /// Every event drained by a consumer on another CPU to a file (the thesis' "storing all logs").
    Stream,
}

impl RecordMode {
    pub fn name(self) -> &'static str {
        match self {
            RecordMode::Overwrite => "overwrite",
            RecordMode::Stream => "stream",
        }
    }
}

/// Everything a backend needs to attach.
#[derive(Debug, Clone)]
pub struct Target {
    pub hook: Hook,
    /// Only events of this process (and, where the backend can, its children) count.
    /// `None`: every process.
    pub pid: Option<u32>,
    /// Whether threads and children `pid` creates after the attach count too (rt-tests'
    /// cyclictest starts its measuring thread after we attach; a foreign command may fork).
    /// `false` when every thread that fires exists already: ftrace then filters on their ids
    /// (`common_pid`) instead of `set_event_pid`, which hooks the scheduler's tracepoints
    /// (a cost on the wake-up path, and a text-patching of `__schedule` that hung a PREEMPT
    /// guest under TCG). Backends that filter by process (eBPF, LTTng, bpftrace) ignore it.
    pub follow_children: bool,
    /// Whether every process `pid` starts later counts, however it is started (fork, exec,
    /// setsid, another user through runuser/su/sudo): `count`'s command tree. ftrace follows it
    /// with `set_event_pid` + `event-fork`; eBPF and bpftrace attach to every process mapping
    /// the binary (so that the kernel raises USDT semaphores in processes started later) and
    /// keep the tree's hits by a set of thread-group ids fed by the `task_newtask` tracepoint.
    /// Implies `follow_children`.
    pub tree: bool,
    /// Events of this thread do not count (rt-tests' cyclictest: its main thread, whose
    /// `usleep` also calls `clock_nanosleep`, is the process leader `pid`). ftrace, eBPF,
    /// bpftrace and LTTng's kernel tracer filter it in the kernel (event filter, BPF,
    /// predicate, `$ctx.tid`); LTTng-UST does not (its sweep tracepoint fires only in the
    /// measuring thread, and a UST filter would add its interpreter to every hit).
    pub skip_tid: Option<u32>,
    /// The run's output directory: trace files go below it.
    pub out_dir: PathBuf,
    /// CPUs that consumers (drain threads, daemons we start) may run on: never the measured CPU.
    pub consumer_cpus: Vec<usize>,
    /// Backend buffer size per CPU in KiB (ftrace `buffer_size_kb`, ring buffer, sub-buffers).
    pub buffer_size_kb: Option<u64>,
    pub record: RecordMode,
    /// How long our own consumer waits between drains of the buffer (ftrace's stream reader,
    /// eBPF's ring reader); `None`: its default. Tracers read by their own tools ignore it
    /// (experiments that offer it refuse them).
    pub poll: Option<std::time::Duration>,
}

impl Target {
    /// Threads and children that `pid` creates after the attach count too (see
    /// [`Target::follow_children`]).
    pub fn following_children(mut self) -> Target {
        self.follow_children = true;
        self
    }

    /// Every process `pid` starts later counts too (see [`Target::tree`]).
    pub fn following_tree(mut self) -> Target {
        self.follow_children = true;
        self.tree = true;
        self
    }

    /// Events of thread `tid` do not count (see [`Target::skip_tid`]).
    pub fn skipping(mut self, tid: u32) -> Target {
        self.skip_tid = Some(tid);
        self
    }
}

/// Event accounting reported by a backend. `recorded + lost` must equal the ground-truth number
/// of hits; the harness checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EventStats {
    /// Events the tracer kept (in its buffer, in its files, or counted in its maps).
    pub recorded: u64,
    /// Events the tracer knows it dropped or overwrote.
    pub lost: u64,
    /// Of `lost`, the events a flight-recorder buffer overwrote after they were written (ftrace
    /// overwrite mode's `overrun`): their writer paid the whole cost of recording them, unlike a
    /// dropped event's. Absent in files of older versions.
    #[serde(default)]
    pub overwritten: u64,
    /// Tree mode ([`Target::tree`]): hits of processes outside the command's tree, left out of
    /// `recorded` and `lost`, where the backend counts them (eBPF); 0 elsewhere.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outside_tree: u64,
}

impl EventStats {
    /// `recorded` kept and `lost` lost, none overwritten, none outside a tree.
    pub fn new(recorded: u64, lost: u64) -> EventStats {
        EventStats {
            recorded,
            lost,
            ..EventStats::default()
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A tracer backend.
pub trait Tracer {
    fn kind(&self) -> TracerKind;

    /// Preflight: is this tracer usable here for this hook? Changes nothing. The error's message
    /// is one line that names the fix. Where the backend cannot run a [`Hook::Read`] program,
    /// the error is a [`features::Unsupported`] saying whether this machine lacks the mechanism
    /// or the tracer cannot express the program.
    fn check(&self, hook: &Hook) -> anyhow::Result<()>;

    /// What this backend runs for `hook`, as the events report's "program" column shows it
    /// (the bpftrace one-liner, the ftrace event and filter). The hook's label by default.
    fn program(&self, hook: &Hook) -> String {
        hook.label()
    }

    /// Whether this backend's [`Hook::Read`] programs hook `vfs_read` with kprobes where
    /// Gregg's one-liners do, on a kernel that has them (ftrace's kprobe events and LTTng's
    /// `--probe` are not driven: they hook the syscall's tracepoints). False by default.
    fn drives_kprobes(&self) -> bool {
        false
    }

    /// Whether this backend's [`Hook::Read`] programs trace one process, which it attaches to
    /// (strace's `-p PID`), rather than every process as Gregg's one-liners do: the events
    /// suite then gives their target the workload's pid. False by default.
    fn attaches_to_process(&self) -> bool {
        false
    }

    /// Starts tracing `target`. Everything created is owned by the returned attachment.
    fn attach(&self, target: &Target) -> anyhow::Result<Box<dyn Attachment>>;

    /// Environment the workload must run with for this tracer (e.g. which LTTng event kind the
    /// LTTng workload fires). Empty by default.
    fn workload_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A live tracing session. Dropping it without `finish` removes its state too.
pub trait Attachment {
    /// Stops tracing, drains what is buffered, counts, and removes everything created.
    fn finish(self: Box<Self>) -> anyhow::Result<EventStats>;

    /// As `finish`, with the recorded events of each probe where the backend tells them apart
    /// cheaply (a [`Hook::Tracepoints`] script's tracepoints, named `category:name`); by
    /// default `finish` and no breakdown (an empty vec).
    fn finish_by_probe(self: Box<Self>) -> anyhow::Result<(EventStats, Vec<(String, u64)>)> {
        Ok((self.finish()?, Vec::new()))
    }

    /// As `finish`, but returns what the run's output shows of the workload `pid` (its command
    /// name `comm`), to be checked against its reads. By default every event of the output
    /// counts, of every process: `all` = recorded + lost. The events suite's attachments tell
    /// the workload's events apart where their output does (maps keyed by pid or comm, lines
    /// with a pid, the accounting programs).
    fn evidence(self: Box<Self>, pid: u32, comm: &str) -> anyhow::Result<Evidence> {
        let _ = (pid, comm);
        let st = self.finish()?;
        Ok(Evidence::of_every_process(st))
    }
}
