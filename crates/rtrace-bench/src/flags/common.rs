//! The option groups several commands share, and their lowering into typed options: the shared
//! experiment options ([`CommonArgs`] → [`CommonOptions`], checked once against the
//! experiment's [`Spec`]) and the tracer backends' modes ([`TracerArgs`] → [`TracerOptions`]).

use crate::cpus::Cpus;
use crate::options::{
    check_priority, default_out, default_workload_dir, unique, BpfMode, CommonOptions,
    OptionsError, Spec, Take, TracerChoice, TracerOptions,
};
use clap::{Args, ValueEnum};
use rtrace_measure::trace_data::KeepTraces;
use rtrace_tracer::{RecordMode, TracerKind};
use std::path::PathBuf;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TracerArg {
    None,
    Ftrace,
    Ebpf,
    Lttng,
    Bpftrace,
    /// The real `perf record` on our uprobe events.
    Perf,
    /// strace (ptrace): `events` only, experiments 04 and 05.
    Strace,
    /// Every tracer available on this machine (strace only where named).
    All,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordArg {
    /// Flight recorder: fixed buffer, oldest events overwritten (lost = overwritten).
    Overwrite,
    /// A consumer on another CPU drains every event to files in the output directory.
    Stream,
}

/// `--keep-traces`: which runs keep their trace data once its events are counted.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeepTracesArg {
    /// Remove every run's trace data once its counts are verified (a run whose accounting
    /// fails keeps it).
    #[default]
    None,
    /// Keep the data of runs that lost events.
    Lossy,
    /// Keep every run's data.
    All,
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
pub enum FtraceModeArg {
    Off,
    Overwrite,
    Stream,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LttngEventArg {
    Tracepoint,
    Tracef,
}

/// The trace buffer and how events are kept: every command that attaches a tracer.
#[derive(Args, Debug, Clone, Default)]
pub struct BufferArgs {
    /// Per-CPU trace buffer size in KiB, the same for every tracer so that none is favoured:
    /// ftrace's instance `buffer_size_kb`, LTTng's sub-buffers (4 × size/4 unless
    /// --lttng-subbuf-size), the eBPF ring buffer (one ring shared by all CPUs: size × CPUs),
    /// bpftrace's perf buffer (`BPFTRACE_PERF_RB_PAGES`). Each tracer's buffer is recorded in the
    /// result and shown in the report. Default: 4096.
    #[arg(long, value_name = "KIB")]
    pub buffer_size_kb: Option<u64>,
    /// Recording mode: `stream` keeps every event on disk (the thesis' case 1, "storing all
    /// logs"); `overwrite` is a flight recorder (ftrace ring buffer, LTTng snapshot session).
    /// Default: stream.
    #[arg(long, value_enum)]
    pub record: Option<RecordArg>,
    /// ftrace's trace clock, written to each private instance's `trace_clock` (never the
    /// global one): one the kernel lists in tracefs' `trace_clock`, e.g. local (per CPU),
    /// global (one clock, a spin lock shared by every CPU), counter (an atomic counter),
    /// x86-tsc. Recorded in the result. Default: the instance's (local).
    #[arg(long, value_name = "CLOCK")]
    pub ftrace_clock: Option<String>,
}

/// The options every experiment shares (`usdt`, `cyclictest-sweep`, `rate`, `npt`, `events`).
#[derive(Args, Debug, Clone, Default)]
pub struct CommonArgs {
    /// CPU the workload runs on (default: the last CPU that is online and in this process's
    /// cpuset); the harness and every consumer stay off it.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the measured thread (1-99); default: normal scheduling
    /// (cyclictest-sweep: 99, as cyclictest's --priority).
    #[arg(long)]
    pub priority: Option<i32>,
    /// Repeat every run of the plan this often, each round separate processes, alternating the
    /// order (A B C, C B A, ...) so that a drift of the machine weighs on every run alike;
    /// intervals are made over rounds. Default: usdt 10, cyclictest-sweep 3, events 5, rate and
    /// npt 1.
    #[arg(long)]
    pub rounds: Option<u32>,
    #[command(flatten)]
    pub buffer: BufferArgs,
    /// Which runs keep their trace data once its events are counted (its size is always in
    /// the result and the report).
    #[arg(long, value_enum, default_value = "none")]
    pub keep_traces: KeepTracesArg,
    /// Write the JSON result here too.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for results, trace data and the report (default:
    /// results/<experiment>-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Directory holding the workload binaries (default: next to rtrace-bench).
    #[arg(long, value_name = "DIR")]
    pub workload_dir: Option<PathBuf>,
    /// This machine's name in reports over several machines' results (a fleet): letters,
    /// digits, `.`, `_`, `-`, at most 64. Recorded in the result's environment. Default: the
    /// hostname.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
}

/// The tracer backends' modes: commands that attach the ordinary backends.
#[derive(Args, Debug, Clone, Default)]
pub struct TracerArgs {
    /// LTTng sub-buffer size in bytes (power of two, at least 4096); default: LTTng's.
    #[arg(long, value_name = "BYTES")]
    pub lttng_subbuf_size: Option<u64>,
    /// LTTng sub-buffer count (power of two); default: LTTng's.
    #[arg(long, value_name = "N")]
    pub lttng_num_subbuf: Option<u32>,
    /// LTTng loop events (comma separated: each one is measured as its own column, named in the
    /// report): the structured tracepoint `rtrace:event`, and/or the thesis'
    /// `lttng_ust_tracef("%s (%d)", "event", i)`. Default: tracepoint.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub lttng_event: Vec<LttngEventArg>,
    /// eBPF and bpftrace modes (comma separated: each one is measured as its own column):
    /// `record` sends every event to a file (ring buffer / printf), `aggregate` only counts
    /// (per-CPU counter and log2 histogram / `count()`). `record-wakeup` is eBPF's record with
    /// bpftrace's wake-up policy (every event wakes the reader); for bpftrace, whose printf
    /// always does, it is `record`. eBPF's `count` (counter without histogram) and `floor` (one
    /// global increment) are the decomposition's lower steps; bpftrace's `count` is `aggregate`
    /// and it has no `floor`. Default: record.
    #[arg(long, value_enum, value_delimiter = ',', alias = "ebpf-mode")]
    pub bpf_mode: Vec<BpfModeArg>,
    /// ftrace modes (comma separated, each its own column): `off` (events enabled, instance
    /// tracing off: the trap, the uprobe handler and a failed ring-buffer reservation; hits
    /// counted from uprobe_profile), `overwrite` (ring buffer, no consumer), `stream` (a
    /// consumer drains it). Default: one column as --record says.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub ftrace_mode: Vec<FtraceModeArg>,
}

impl From<KeepTracesArg> for KeepTraces {
    fn from(a: KeepTracesArg) -> Self {
        match a {
            KeepTracesArg::None => KeepTraces::None,
            KeepTracesArg::Lossy => KeepTraces::Lossy,
            KeepTracesArg::All => KeepTraces::All,
        }
    }
}

impl From<RecordArg> for RecordMode {
    fn from(a: RecordArg) -> Self {
        match a {
            RecordArg::Overwrite => RecordMode::Overwrite,
            RecordArg::Stream => RecordMode::Stream,
        }
    }
}

impl BufferArgs {
    /// The buffer and record mode, with `record` and `buffer` the defaults of the command
    /// (refused when it does not take them).
    fn lower(&self, spec: &Spec, modes: TracerArgs) -> Result<TracerOptions, OptionsError> {
        let record = match (spec.record, self.record) {
            (Take::Refused(why), Some(_)) => return Err(refused(spec, "--record", why)),
            (_, Some(r)) => r.into(),
            (Take::Default(r), None) => r,
            (Take::Refused(_), None) => RecordMode::Overwrite,
        };
        let buffer_size_kb = match (spec.buffer_size_kb, self.buffer_size_kb) {
            (_, Some(0)) => return Err(OptionsError::Buffer),
            (Take::Refused(why), Some(_)) => return Err(refused(spec, "--buffer-size-kb", why)),
            (_, Some(kb)) => Some(kb),
            (Take::Default(kb), None) => Some(kb),
            (Take::Refused(_), None) => None,
        };
        Ok(TracerOptions {
            buffer_size_kb,
            record,
            ftrace_clock: self.ftrace_clock.clone(),
            ..modes.lower()
        })
    }
}

fn refused(spec: &Spec, option: &'static str, why: &'static str) -> OptionsError {
    OptionsError::Refused {
        experiment: spec.experiment,
        option,
        why,
    }
}

impl TracerArgs {
    /// The modes, each once in the order given; the buffer and record mode at their defaults.
    pub fn lower(self) -> TracerOptions {
        let d = TracerOptions::default();
        let lttng_events = unique(self.lttng_event.iter().map(|e| match e {
            LttngEventArg::Tracepoint => rtrace_lttng::EventKind::Tracepoint,
            LttngEventArg::Tracef => rtrace_lttng::EventKind::Tracef,
        }));
        let bpf_modes = unique(self.bpf_mode.iter().map(|m| match m {
            BpfModeArg::Record => BpfMode::Record,
            BpfModeArg::RecordWakeup => BpfMode::RecordWakeup,
            BpfModeArg::Aggregate => BpfMode::Aggregate,
            BpfModeArg::Count => BpfMode::Count,
            BpfModeArg::Floor => BpfMode::Floor,
        }));
        TracerOptions {
            lttng_subbuf_size: self.lttng_subbuf_size,
            lttng_num_subbuf: self.lttng_num_subbuf,
            lttng_events: if lttng_events.is_empty() {
                d.lttng_events.clone()
            } else {
                lttng_events
            },
            bpf_modes: if bpf_modes.is_empty() {
                d.bpf_modes.clone()
            } else {
                bpf_modes
            },
            ftrace_modes: unique(self.ftrace_mode.iter().map(|m| match m {
                FtraceModeArg::Off => rtrace_ftrace::FtraceMode::Off,
                FtraceModeArg::Overwrite => rtrace_ftrace::FtraceMode::Overwrite,
                FtraceModeArg::Stream => rtrace_ftrace::FtraceMode::Stream,
            })),
            ..d
        }
    }
}

impl CommonArgs {
    /// The shared options of `spec`'s experiment with the backends' `modes`, checked once.
    pub fn lower(
        self,
        spec: &Spec,
        modes: TracerArgs,
        tracers: &[TracerKind],
    ) -> Result<CommonOptions, OptionsError> {
        self.lower_on(spec, modes, tracers, &crate::cpus::usable())
    }

    /// [`CommonArgs::lower`] on a machine whose usable CPUs are `usable`.
    pub fn lower_on(
        self,
        spec: &Spec,
        modes: TracerArgs,
        tracers: &[TracerKind],
        usable: &[usize],
    ) -> Result<CommonOptions, OptionsError> {
        let tracer = self.buffer.lower(spec, modes)?;
        check_tracers(spec, tracers, &tracer)?;
        let rounds = match (spec.rounds, self.rounds) {
            (_, Some(0)) => return Err(OptionsError::Zero { what: "rounds" }),
            (Take::Refused(why), Some(_)) => return Err(refused(spec, "--rounds", why)),
            (_, Some(r)) => r,
            (Take::Default(r), None) => r,
            (Take::Refused(_), None) => 1,
        };
        Ok(CommonOptions {
            cpus: Cpus::choose(self.cpu, usable, &[], crate::cpus::smt_siblings)?,
            priority: check_priority(self.priority.or(spec.priority))?,
            rounds,
            out_given: self.out.is_some(),
            out: self.out.unwrap_or_else(|| default_out(spec.experiment)),
            json: self.json,
            workload_dir: self.workload_dir.unwrap_or_else(default_workload_dir),
            keep_traces: self.keep_traces.into(),
            tracer,
            machine: self.machine.map(check_machine).transpose()?,
        })
    }
}

/// `--machine NAME`: a name that fits a file name and a table cell.
fn check_machine(name: String) -> Result<String, OptionsError> {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.len() > 64 || !name.chars().all(ok) {
        return Err(OptionsError::Other(format!(
            "--machine {name:?}: give a name of 1 to 64 letters, digits, `.`, `_` or `-` (e.g. --machine lab-rt-1)"
        )));
    }
    Ok(name)
}

/// The buffer and record mode of a command that measures nothing (`count`): the defaults every
/// experiment has, and its tracer checked against the same policy.
pub fn count_tracer(
    buffer: BufferArgs,
    modes: TracerArgs,
    tracer: TracerKind,
) -> Result<TracerOptions, OptionsError> {
    let spec = Spec {
        experiment: "count",
        rounds: Take::Default(1),
        priority: None,
        record: Take::Default(RecordMode::Stream),
        buffer_size_kb: Take::Default(crate::options::DEFAULT_BUFFER_KB),
        strace: false,
        add_ftrace: "pass --tracer ftrace",
    };
    let options = buffer.lower(&spec, modes)?;
    check_tracers(&spec, &[tracer], &options)?;
    Ok(options)
}

/// The experiment's tracer policy (its `Spec`) on the tracers its runs will use: strace only
/// where it takes it, `--ftrace-clock` only where an ftrace run uses it.
fn check_tracers(
    spec: &Spec,
    tracers: &[TracerKind],
    options: &TracerOptions,
) -> Result<(), OptionsError> {
    if !spec.strace && tracers.contains(&TracerKind::Strace) {
        return Err(OptionsError::Other(format!(
            "{} --tracer strace: {}",
            spec.experiment,
            rtrace_strace::SYSCALLS_ONLY
        )));
    }
    let uses_ftrace = tracers.contains(&TracerKind::Ftrace);
    options.check_ftrace_clock(spec.experiment, uses_ftrace, spec.add_ftrace)
}

/// The tracers `--tracer` names, in order, without repeats (`all`: every tracer usable here).
pub fn tracer_choice(args: &[TracerArg]) -> TracerChoice {
    if args.contains(&TracerArg::All) {
        return TracerChoice::AllAvailable;
    }
    TracerChoice::These(unique(args.iter().filter_map(|&t| tracer_kind(t))))
}

/// The tracers `--tracer` names but `none` (`all`: every tracer): experiments whose untraced runs
/// are always made.
pub fn tracers(args: &[TracerArg]) -> Vec<TracerKind> {
    let (kinds, _) = tracer_choice(args).kinds();
    kinds
        .into_iter()
        .filter(|k| *k != TracerKind::None)
        .collect()
}

/// The tracer `t` names (the value's name is the tracer's); `None` for `all`.
pub fn tracer_kind(t: TracerArg) -> Option<TracerKind> {
    let value = t.to_possible_value()?;
    TracerKind::ALL
        .into_iter()
        .find(|k| k.name() == value.get_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tracer_value_but_all_names_one_tracer() {
        let kinds: Vec<Option<TracerKind>> = TracerArg::value_variants()
            .iter()
            .map(|&t| tracer_kind(t))
            .collect();
        let want: Vec<Option<TracerKind>> = TracerKind::ALL.into_iter().map(Some).collect();
        assert_eq!(kinds, [want, vec![None]].concat());
    }
}
