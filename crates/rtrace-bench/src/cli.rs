//! Command-line syntax. Raw values never leave `options.rs`, which turns them into typed options.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "rtrace-bench", version, about = "Measure the observer effect of Linux tracers on real-time workloads", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Per-probe microbenchmark (thesis §3.3, Table 3.1): cases 0-3 per tracer.
    Usdt(UsdtArgs),
    /// Run any command with one USDT probe, uprobe or uretprobe traced; report hits recorded and
    /// lost.
    Count(CountArgs),
    /// List the USDT probes of an ELF binary or shared library (or, with --symbols, its
    /// functions: uprobe/uretprobe targets).
    Probes(ProbesArgs),
    /// Wake-up latency under each tracer, cyclictest's method (thesis §3.4, Figs 3.3-3.4), with
    /// rt-tests' cyclictest as cross-check.
    #[command(name = "cyclictest-sweep")]
    CyclictestSweep(crate::sweep::options::SweepArgs),
    /// The highest event rate each tracer records without loss, per buffer size (Beamonte):
    /// climb, bisect, confirm 3 times, and lose events in one of up to 3 runs at 1.5 times
    /// that rate.
    Rate(RateArgs),
    /// Beamonte's Non-Preempt Test: gaps of a tight TSC loop on the measured CPU with no tracer
    /// and with each tracer consuming the loop's event stream.
    Npt(NptArgs),
    /// Gregg's per-event cost benchmark (BPF Performance Tools ch. 18, as rerun by Piotrowski
    /// 2024): a pinned loop of 1-byte reads traced by each experiment's program (bpftrace's
    /// published one-liners, our eBPF equivalents, ftrace events), per-event cost per experiment
    /// and tracer beside the published bpftrace 0.17 numbers.
    Events(EventsArgs),
    /// Overlay two cyclictest-sweep results (e.g. PREEMPT vs PREEMPT_RT): per-percentile differences.
    Compare(crate::compare::CompareArgs),
    /// Regenerate a report (HTML, Markdown, CSV, SVG figures) from result files.
    Report(crate::report::ReportArgs),
    /// Internal: wait for a byte on fd 3, then exec the command (used by `count`).
    #[command(hide = true, name = "__hold-exec")]
    HoldExec(HoldExecArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TracerArg {
    None,
    Ftrace,
    Ebpf,
    Lttng,
    Bpftrace,
    /// Every tracer available on this machine.
    All,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    Loop,
    Dd,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaseArg {
    #[value(name = "0")]
    C0,
    #[value(name = "1")]
    C1,
    #[value(name = "2")]
    C2,
    #[value(name = "3")]
    C3,
    All,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookArg {
    /// The USDT probe `rtrace:event` (LTTng-UST's tracepoint for lttng): static instrumentation.
    Usdt,
    /// The USDT probe `rtrace:event_nop5`: its site is `nop; nop5`, which Linux >= 6.18 can
    /// optimise into a call (no int3 trap) for tracers that attach to the `nop5`, as libbpf does.
    UsdtNop5,
    /// A uprobe on the entry of the exported marker function the loop calls.
    Uprobe,
    /// A uretprobe on the return of that function.
    Uretprobe,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordArg {
    /// Flight recorder: fixed buffer, oldest events overwritten (lost = overwritten).
    Overwrite,
    /// A consumer on another CPU drains every event to files in the output directory.
    Stream,
}

/// Default per-CPU trace buffer for every tracer (KiB): LTTng's default channel holds 2 MiB per
/// CPU; 4 MiB per CPU holds ~0.1 s of this workload's events in each backend's format.
pub const DEFAULT_BUFFER_KB: u64 = 4096;

/// Options every tracer backend takes.
#[derive(Args, Debug, Clone)]
pub struct TracerArgs {
    /// Per-CPU trace buffer size in KiB, the same for every tracer so that none is favoured:
    /// ftrace's instance `buffer_size_kb`, LTTng's sub-buffers (4 × size/4 unless
    /// --lttng-subbuf-size), the eBPF ring buffer (one ring shared by all CPUs: size × CPUs),
    /// bpftrace's perf buffer (`BPFTRACE_PERF_RB_PAGES`). Each tracer's buffer is recorded in the
    /// result and shown in the report.
    #[arg(long, value_name = "KIB", default_value_t = DEFAULT_BUFFER_KB)]
    pub buffer_size_kb: u64,
    /// Recording mode: `stream` keeps every event on disk (the thesis' case 1, "storing all
    /// logs"); `overwrite` is a flight recorder (ftrace ring buffer, LTTng snapshot session).
    #[arg(long, value_enum, default_value_t = RecordArg::Stream)]
    pub record: RecordArg,
    /// LTTng sub-buffer size in bytes (power of two, at least 4096); default: LTTng's.
    #[arg(long, value_name = "BYTES")]
    pub lttng_subbuf_size: Option<u64>,
    /// LTTng sub-buffer count (power of two); default: LTTng's.
    #[arg(long, value_name = "N")]
    pub lttng_num_subbuf: Option<u32>,
    /// LTTng loop events (comma separated: each one is measured as its own column, named in the
    /// report): the structured tracepoint `rtrace:event`, and/or the thesis'
    /// `lttng_ust_tracef("%s (%d)", "event", i)`.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "tracepoint")]
    pub lttng_event: Vec<LttngEventArg>,
    /// eBPF and bpftrace modes (comma separated: each one is measured as its own column):
    /// `record` sends every event to a file (ring buffer / printf), `aggregate` only counts
    /// (per-CPU counter and log2 histogram / `count()`). `record-wakeup` is eBPF's record with
    /// bpftrace's wake-up policy (every event wakes the reader); for bpftrace, whose printf
    /// always does, it is `record`. eBPF's `count` (counter without histogram) and `floor` (one
    /// global increment) are the decomposition's lower steps; bpftrace's `count` is `aggregate`
    /// and it has no `floor`.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "record",
        alias = "ebpf-mode"
    )]
    pub bpf_mode: Vec<BpfModeArg>,
    /// ftrace modes (comma separated, each its own column): `off` (events enabled, instance
    /// tracing off: the trap, the uprobe handler and a failed ring-buffer reservation; hits
    /// counted from uprobe_profile), `overwrite` (ring buffer, no consumer), `stream` (a
    /// consumer drains it). Default: one column as --record says.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub ftrace_mode: Vec<FtraceModeArg>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtraceModeArg {
    Off,
    Overwrite,
    Stream,
}

/// `--keep-traces`: which runs keep their trace data once its events are counted.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepTracesArg {
    /// Remove every run's trace data once its counts are verified (a run whose accounting
    /// fails keeps it).
    None,
    /// Keep the data of runs that lost events.
    Lossy,
    /// Keep every run's data.
    All,
}

impl From<KeepTracesArg> for rtrace_measure::trace_data::KeepTraces {
    fn from(a: KeepTracesArg) -> Self {
        use rtrace_measure::trace_data::KeepTraces;
        match a {
            KeepTracesArg::None => KeepTraces::None,
            KeepTracesArg::Lossy => KeepTraces::Lossy,
            KeepTracesArg::All => KeepTraces::All,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BpfModeArg {
    /// Every event to a file; our ring buffer never wakes the reader, which polls.
    Record,
    /// As `record`, every event waking the reader (bpftrace's policy).
    RecordWakeup,
    /// Counts only.
    Aggregate,
    /// eBPF only: the per-CPU counter without the histogram (a decomposition step).
    Count,
    /// eBPF only: one increment of a global counter, the cheapest program that counts every hit
    /// (the decomposition's floor; one measured thread).
    Floor,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LttngEventArg {
    Tracepoint,
    Tracef,
}

#[derive(Args, Debug)]
pub struct UsdtArgs {
    /// Tracers to compare (comma separated or repeated).
    #[arg(
        long,
        short,
        value_enum,
        value_delimiter = ',',
        default_value = "ftrace"
    )]
    pub tracer: Vec<TracerArg>,
    /// Cases to run (comma separated): 0 baseline, 1 traced, 2 dormant tracer, 3 instrumented only.
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub case: Vec<CaseArg>,
    /// Hooks the tracers attach to (comma separated; each is its own set of rows): static USDT,
    /// or dynamic uprobe / uretprobe on a function the loop calls (every case's body is then
    /// that call; the barrier baseline is kept so the plain call cost shows).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "usdt")]
    pub hook: Vec<HookArg>,
    /// Timed iterations per case (the thesis used 10,000,000).
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    pub iterations: u64,
    /// Untimed warm-up iterations per case and round (the probe still fires and is accounted).
    #[arg(long, default_value_t = 10_000)]
    pub warmup: u64,
    /// Repeat every run this often, each round a separate workload process, alternating the
    /// order (A B C, C B A, ...) so that a drift of the machine weighs on every tracer alike;
    /// the iterations are split across rounds, each run pools its rounds, and every interval is
    /// made over the rounds (one round: no interval). Default: 10, at most the iterations.
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Keep case-1 runs that dropped events in the ratios (by default they are marked and left
    /// out: dropping an event is cheaper than recording it; events a flight recorder
    /// overwrote were written first and do not count).
    #[arg(long)]
    pub allow_loss: bool,
    /// Decompose each tracer's per-hit cost into steps that add one mechanism at a time, on the
    /// usdt and usdt-nop5 sites (the report's staircase): every available tracer, eBPF
    /// floor/count/aggregate/record/record-wakeup, ftrace off/overwrite/stream, LTTng case 3,
    /// tracepoint and tracef, bpftrace aggregate and record.
    #[arg(
        long,
        conflicts_with_all = ["tracer", "case", "hook", "bpf_mode", "ftrace_mode", "lttng_event"]
    )]
    pub decompose: bool,
    /// Loop threads firing the probe at the same time, each on its own CPU (the measured CPU,
    /// then harness CPUs from the last): per-hit cost under concurrency, shared buffers against
    /// per-CPU ones. A thread on a harness CPU shares it with the harness and the consumers.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// CPU the workload runs on (default: the last CPU); the harness stays off it.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the workload (1-99); default: normal scheduling.
    #[arg(long)]
    pub priority: Option<i32>,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
    /// Which runs keep their trace data once its events are counted (its size is always in
    /// the result and the report).
    #[arg(long, value_enum, default_value = "none")]
    pub keep_traces: KeepTracesArg,
    /// Write the JSON result here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for trace data and results (default: results/usdt-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Directory holding the workload binaries (default: next to rtrace-bench).
    #[arg(long, value_name = "DIR")]
    pub workload_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RateArgs {
    /// Tracers to search (comma separated; `all`: every tracer available here).
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub tracer: Vec<TracerArg>,
    /// Per-CPU buffer sizes to search at (KiB, comma separated), each its own search.
    #[arg(long, value_delimiter = ',', default_value = "256,4096")]
    pub buffer_sizes_kb: Vec<u64>,
    /// How long the probe fires at each rate (ms).
    #[arg(long, default_value_t = 1000)]
    pub duration_ms: u64,
    /// First rate of the climb (events/s); it doubles until events are lost.
    #[arg(long, default_value_t = 10_000.0)]
    pub start_rate: f64,
    /// Highest rate tried (events/s).
    #[arg(long, default_value_t = 50_000_000.0)]
    pub max_rate: f64,
    /// Bisection steps between the last lossless and the first lossy rate.
    #[arg(long, default_value_t = 5)]
    pub bisections: u32,
    /// Threads firing the probe, each on its own CPU (the measured CPU, then harness CPUs from
    /// the last), the rate split evenly between them: past one thread's ceiling, and onto the
    /// consumers' CPU.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// CPU the workload fires on (default: the last CPU); consumers stay off it.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the workload (1-99); default: normal scheduling.
    #[arg(long)]
    pub priority: Option<i32>,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
    /// Write the JSON result here too.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for results and the report (default: results/rate-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Directory holding the workload binaries (default: next to rtrace-bench).
    #[arg(long, value_name = "DIR")]
    pub workload_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct NptArgs {
    /// Tracers that consume the loop's events, each in its own run after the run with no tracer
    /// (comma separated; `all`: every tracer available here).
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub tracer: Vec<TracerArg>,
    /// How long each run's loop spins (ms).
    #[arg(long, default_value_t = 5000)]
    pub duration_ms: u64,
    /// Probe firings per second in the loop: the event stream each tracer consumes (0: none).
    #[arg(long, default_value_t = 10_000.0)]
    pub event_rate: f64,
    /// CPU the loop spins on (default: the last CPU); consumers stay off it.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the loop (1-99); default: normal scheduling.
    #[arg(long)]
    pub priority: Option<i32>,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
    /// Write the JSON result here too.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for results and the report (default: results/npt-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Directory holding the workload binaries (default: next to rtrace-bench).
    #[arg(long, value_name = "DIR")]
    pub workload_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Tracers (comma separated): bpftrace (Gregg's one-liners), ebpf (our programs, same
    /// semantics), ftrace (events, filters, hist triggers), lttng (kernel tracer: needs
    /// lttng-modules); `all`: every one, those that cannot run here listed with the reason.
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub tracer: Vec<TracerArg>,
    /// Experiments by Gregg's number (comma separated, ranges allowed: 1,4-7,15).
    #[arg(long, short, value_delimiter = ',', default_value = "1-18")]
    pub experiments: Vec<String>,
    /// 1-byte reads per run (the events of each experiment; Gregg's dd made 10,000,000).
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    pub reads: u64,
    /// What makes the reads (comma separated): `loop`, our pinned loop of read(2) calls timed
    /// on the TSC (the tighter number); `dd`, Gregg's `dd if=/dev/zero of=/dev/null bs=1`
    /// timed from its start to its exit (his and Piotrowski's workload).
    #[arg(
        long,
        short,
        value_enum,
        value_delimiter = ',',
        default_value = "loop,dd"
    )]
    pub workload: Vec<WorkloadArg>,
    /// Rounds: each runs every experiment once between two untraced runs, in alternating order;
    /// intervals are made over rounds.
    #[arg(long, default_value_t = 5)]
    pub rounds: u32,
    /// CPU the loop runs on (default: the last CPU); tracer consumers stay off it.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the loop (1-99); default: normal scheduling.
    #[arg(long)]
    pub priority: Option<i32>,
    /// Write the JSON result here too.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for results and the report (default: results/events-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Directory holding the workload binaries (default: next to rtrace-bench).
    #[arg(long, value_name = "DIR")]
    pub workload_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CountArgs {
    /// Tracer to count with.
    #[arg(long, short, value_enum, default_value_t = TracerArg::Ftrace)]
    pub tracer: TracerArg,
    /// The probe: PROVIDER:NAME (USDT), uprobe:FUNCTION (function entry) or
    /// uretprobe:FUNCTION (function return).
    #[arg(long, short)]
    pub probe: String,
    /// ELF file holding the probe or function (default: the command itself), e.g. a shared
    /// library such as /lib/x86_64-linux-gnu/libc.so.6.
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
    /// The number of times the command fires the probe, if you know it (the ground truth):
    /// any other count of events (recorded + lost) is an error. Without it, `count` reports
    /// what the tracer saw and checks nothing.
    #[arg(long, value_name = "N")]
    pub expect: Option<u64>,
    /// Write the counts as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for trace data (default: a temporary directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ProbesArgs {
    /// ELF executable or shared library.
    pub binary: PathBuf,
    /// List function symbols matching this glob (uprobe/uretprobe targets) instead of USDT probes.
    #[arg(long, value_name = "PATTERN")]
    pub symbols: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct HoldExecArgs {
    /// `KEY=VALUE` set for the command only (e.g. LD_PRELOAD, which must not load into us).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}
