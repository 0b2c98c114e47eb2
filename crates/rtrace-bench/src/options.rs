//! Typed, validated options shared by every experiment: one [`CommonOptions`] (CPUs, priority,
//! rounds, output, workload directory, trace data, tracer backends), built once from the command
//! line by `flags` after the experiment's [`Spec`] said which of them it takes and with which
//! defaults. Every rejection is one line that names the fix; nothing on the machine has been
//! touched when it happens. Nothing here sees a clap type.

use crate::cpus::Cpus;
use rtrace_measure::trace_data::KeepTraces;
use rtrace_measure::RunSettings;
use rtrace_tracer::{Hook, RecordMode, Target, TracerKind};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OptionsError {
    #[error("CPU {cpu} is not usable here: this process may use CPUs {usable} (online and allowed by its cpuset); pass one of them, e.g. --cpu {last}")]
    CpuNotUsable {
        cpu: usize,
        usable: String,
        last: usize,
    },
    #[error("measuring on CPU {cpu} leaves no CPU for the harness: this process may use CPUs {usable} only; run on a machine (or cpuset) with two CPUs or more")]
    NoHarnessCpu { cpu: usize, usable: String },
    #[error("CPU {cpu} is measured by another live run ({holder}): wait for it to end, or pass another --cpu")]
    CpuBusy { cpu: usize, holder: String },
    #[error("no CPU left for this run: another live run measures on CPU {busy} ({holder}) and this run needs a measured CPU and a harness CPU apart from it; wait for it to end")]
    NoFreeCpu { busy: String, holder: String },
    #[error("--priority {0} is not a SCHED_FIFO priority: use 1..99")]
    Priority(i32),
    #[error("--{what} must be at least 1")]
    Zero { what: &'static str },
    #[error("--rounds {rounds} does not fit --{what} {total}: pass --rounds 1..{total}")]
    Rounds {
        rounds: u32,
        what: &'static str,
        total: u64,
    },
    #[error("--buffer-size-kb 0 is not a buffer: pass a size of at least 1 KiB per CPU, e.g. --buffer-size-kb 256")]
    Buffer,
    #[error("`{experiment}` does not take {option}: {why}")]
    Refused {
        experiment: &'static str,
        option: &'static str,
        why: &'static str,
    },
    #[error("--probe `{0}` is not PROVIDER:NAME, uprobe:FUNCTION or uretprobe:FUNCTION (e.g. --probe rtrace:event, --probe uprobe:getpid)")]
    ProbeSyntax(String),
    #[error("--tracer all is for experiments; `count` takes one tracer")]
    CountAll,
    #[error("--threads {threads} needs {threads} CPUs, one per loop thread: this process may use {usable} CPUs ({list}); pass --threads 1..{usable}")]
    Threads {
        threads: usize,
        usable: usize,
        list: String,
    },
    #[error("`{experiment}` traces with no ftrace here, so --ftrace-clock would set nothing: {fix}, or drop --ftrace-clock")]
    ClockUnused {
        experiment: &'static str,
        fix: &'static str,
    },
    #[error("{0}")]
    Other(String),
}

/// How an experiment takes one of the shared options: with its own default, or not at all
/// (then giving it is refused with the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take<T> {
    Default(T),
    Refused(&'static str),
}

/// Which shared options an experiment takes, and their defaults.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The experiment's name: messages and the default output directory.
    pub experiment: &'static str,
    pub rounds: Take<u32>,
    /// SCHED_FIFO priority without `--priority`.
    pub priority: Option<i32>,
    pub record: Take<RecordMode>,
    /// Per-CPU buffer size (KiB) without `--buffer-size-kb`.
    pub buffer_size_kb: Take<u64>,
    /// Whether it takes `--tracer strace`, a tracer of system calls that sees no probe.
    pub strace: bool,
    /// How to make an ftrace run, for an `--ftrace-clock` that no run would use.
    pub add_ftrace: &'static str,
}

/// Default per-CPU trace buffer for every tracer (KiB): LTTng's default channel holds 2 MiB per
/// CPU; 4 MiB per CPU holds ~0.1 s of the usdt loop's events in each backend's format.
pub const DEFAULT_BUFFER_KB: u64 = 4096;

/// Backend settings: the buffer, the record mode and each tracer's modes.
#[derive(Debug, Clone)]
pub struct TracerOptions {
    pub buffer_size_kb: Option<u64>,
    pub record: RecordMode,
    pub lttng_subbuf_size: Option<u64>,
    pub lttng_num_subbuf: Option<u32>,
    /// LTTng event kinds, each once, in the order given (at least one).
    pub lttng_events: Vec<rtrace_lttng::EventKind>,
    /// eBPF/bpftrace modes, each a column of its own; never empty.
    pub bpf_modes: Vec<BpfMode>,
    /// ftrace modes, each a column of its own; empty: one column as `record` says.
    pub ftrace_modes: Vec<rtrace_ftrace::FtraceMode>,
    /// perf's recording modes, each a column of its own (`usdt --decompose` only: no flag);
    /// empty: one column as `record` says.
    pub perf_modes: Vec<RecordMode>,
    /// `--ftrace-clock`: the `trace_clock` of every ftrace instance; `None`: the instance's
    /// default. Checked against the kernel's clocks by [`TracerOptions::check_ftrace_clock`].
    pub ftrace_clock: Option<String>,
    /// `npt --lttng-kernel`: kernel events LTTng records beside the UST event, in a kernel
    /// channel of the same session; empty: none.
    pub lttng_kernel: Vec<String>,
    /// `rate --poll-ms`: our own consumers' wait between drains (ftrace's stream reader,
    /// eBPF's ring reader), in ms; `None`: their defaults.
    pub poll_ms: Option<u64>,
}

impl Default for TracerOptions {
    fn default() -> Self {
        TracerOptions {
            buffer_size_kb: Some(DEFAULT_BUFFER_KB),
            record: RecordMode::Stream,
            lttng_subbuf_size: None,
            lttng_num_subbuf: None,
            lttng_events: vec![rtrace_lttng::EventKind::Tracepoint],
            bpf_modes: vec![BpfMode::Record],
            ftrace_modes: Vec::new(),
            perf_modes: Vec::new(),
            ftrace_clock: None,
            lttng_kernel: Vec::new(),
            poll_ms: None,
        }
    }
}

impl TracerOptions {
    /// What a traced run attaches with: the one place a [`Target`] is made. Only events of
    /// process `pid` (when given) count, its threads existing when attached; trace data goes
    /// below `out_dir`; consumers run on `consumer_cpus`.
    pub fn target(
        &self,
        hook: Hook,
        pid: Option<u32>,
        out_dir: &Path,
        consumer_cpus: &[usize],
    ) -> Target {
        Target {
            hook,
            pid,
            follow_children: false,
            tree: false,
            skip_tid: None,
            out_dir: out_dir.to_owned(),
            consumer_cpus: consumer_cpus.to_vec(),
            buffer_size_kb: self.buffer_size_kb,
            record: self.record,
            poll: self.poll_ms.map(std::time::Duration::from_millis),
        }
    }

    /// Backend options as given, for the result's `config.tracer_options`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "record": self.record,
            "lttng_subbuf_size": self.lttng_subbuf_size,
            "lttng_num_subbuf": self.lttng_num_subbuf,
            "lttng_event": self.lttng_events.iter().map(|&k| k.name()).collect::<Vec<_>>(),
            "bpf_modes": self.bpf_modes.iter().map(|&m| bpf_mode_name(m)).collect::<Vec<_>>(),
            "ftrace_modes": self.ftrace_modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "perf_modes": self.perf_modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "ftrace_clock": self.ftrace_clock,
            "lttng_kernel": self.lttng_kernel,
        })
    }

    /// `--ftrace-clock` is one the running kernel offers (read from tracefs) and some ftrace
    /// run will use it (`uses_ftrace`; else `fix` says how): refused before anything runs.
    pub fn check_ftrace_clock(
        &self,
        experiment: &'static str,
        uses_ftrace: bool,
        fix: &'static str,
    ) -> Result<(), OptionsError> {
        check_clock(
            self.ftrace_clock.as_deref(),
            experiment,
            uses_ftrace,
            fix,
            rtrace_ftrace::clock::available,
        )
    }
}

/// [`TracerOptions::check_ftrace_clock`] with the kernel's clocks from `clocks` (read only when
/// a clock is given and used).
fn check_clock(
    clock: Option<&str>,
    experiment: &'static str,
    uses_ftrace: bool,
    fix: &'static str,
    clocks: impl FnOnce() -> anyhow::Result<rtrace_ftrace::clock::TraceClocks>,
) -> Result<(), OptionsError> {
    let Some(clock) = clock else {
        return Ok(());
    };
    if !uses_ftrace {
        return Err(OptionsError::ClockUnused { experiment, fix });
    }
    let clocks =
        clocks().map_err(|e| OptionsError::Other(format!("--ftrace-clock {clock}: {e:#}")))?;
    clocks
        .check(clock)
        .map_err(|e| OptionsError::Other(e.to_string()))
}

/// `--bpf-mode`: eBPF's mode, from which bpftrace's is derived (`crate::tracers::variants`).
pub use rtrace_ebpf::EbpfMode as BpfMode;

/// The name of `--bpf-mode m`, in results and column labels.
pub fn bpf_mode_name(m: BpfMode) -> &'static str {
    match m {
        BpfMode::Record => "record",
        BpfMode::RecordWakeup => "record-wakeup",
        BpfMode::Aggregate => "aggregate",
        BpfMode::Count => "count",
        BpfMode::Floor => "floor",
    }
}

/// Which tracers were asked for: a fixed list, or every one usable here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TracerChoice {
    These(Vec<TracerKind>),
    AllAvailable,
}

impl TracerChoice {
    /// The tracers to try, and whether one that cannot run here is skipped with a note (`all`)
    /// rather than refused.
    pub fn kinds(&self) -> (Vec<TracerKind>, bool) {
        match self {
            TracerChoice::These(k) => (k.clone(), false),
            TracerChoice::AllAvailable => {
                let all = TracerKind::ALL.into_iter().filter(|k| k.in_all());
                (all.collect(), true)
            }
        }
    }
}

/// The options every experiment shares, checked.
#[derive(Debug, Clone, Default)]
pub struct CommonOptions {
    /// Measured and harness CPUs; the runner claims them again at the start (the measured CPU
    /// moves to a free one when `--cpu` was not given).
    pub cpus: Cpus,
    pub priority: Option<i32>,
    /// At least 1.
    pub rounds: u32,
    /// Output directory; the runner replaces it by the directory it claimed.
    pub out: PathBuf,
    /// Whether `--out` gave `out` (else it is the default, created exclusively).
    pub out_given: bool,
    pub json: Option<PathBuf>,
    pub workload_dir: PathBuf,
    pub keep_traces: KeepTraces,
    pub tracer: TracerOptions,
    /// `--machine`: the machine's name in fleet reports (default: the hostname).
    pub machine: Option<String>,
}

impl CommonOptions {
    /// The workload binary `name` in the workload directory; the error names the fix.
    pub fn workload(&self, name: &str) -> Result<PathBuf, OptionsError> {
        let bin = self.workload_dir.join(name);
        if !bin.is_file() {
            return Err(OptionsError::Other(format!(
                "workload binary {} not found: build it with `cargo build --release` or pass --workload-dir DIR",
                bin.display()
            )));
        }
        Ok(bin)
    }

    /// A [`Target`] for a run of this experiment: consumers on the harness CPUs.
    pub fn target(&self, hook: Hook, pid: Option<u32>, out_dir: &Path) -> Target {
        self.tracer.target(hook, pid, out_dir, &self.cpus.harness)
    }

    /// The machine a run measures on, `--machine` its label, with the tracers' versions.
    pub fn environment(&self) -> rtrace_measure::Environment {
        rtrace_measure::Environment {
            label: self.machine.clone(),
            tracer_versions: crate::tracers::versions(),
            ..rtrace_measure::Environment::collect(self.cpus.measured)
        }
    }

    /// What the result's `config` records of these options, for a run using the tracers
    /// `kinds`: the one place every experiment's shared settings are written.
    pub fn settings(&self, kinds: &[TracerKind]) -> anyhow::Result<RunSettings> {
        let kinds = unique(kinds.iter().copied());
        Ok(RunSettings {
            cpu: self.cpus.measured,
            harness_cpus: self.cpus.harness.clone(),
            priority: self.priority,
            rounds: self.rounds,
            buffer_size_kb: self.tracer.buffer_size_kb,
            buffers: crate::tracers::buffers(&kinds, &self.tracer)?,
            unequal: crate::tracers::unequal(&kinds, self.cpus.measured, &self.tracer),
            record: Some(self.tracer.record),
            keep_traces: Some(self.keep_traces),
            tracer_options: self.tracer.json(),
            workload_dir: Some(self.workload_dir.display().to_string()),
        })
    }
}

/// `--priority`: a SCHED_FIFO priority.
pub fn check_priority(p: Option<i32>) -> Result<Option<i32>, OptionsError> {
    match p {
        Some(p) if !(1..=99).contains(&p) => Err(OptionsError::Priority(p)),
        p => Ok(p),
    }
}

/// `--threads N` fits the usable CPUs: one per loop thread.
pub fn check_threads(cpus: &Cpus, threads: usize) -> Result<(), OptionsError> {
    if threads == 0 || threads > cpus.harness.len() + 1 {
        let mut all = cpus.harness.clone();
        all.push(cpus.measured);
        all.sort_unstable();
        return Err(OptionsError::Threads {
            threads,
            usable: all.len(),
            list: crate::cpus::list(&all),
        });
    }
    Ok(())
}

/// A count that must not be 0 (`what` names its option).
pub fn check_nonzero(value: u64, what: &'static str) -> Result<(), OptionsError> {
    match value {
        0 => Err(OptionsError::Zero { what }),
        _ => Ok(()),
    }
}

/// `--rounds` fits `total` (iterations, loops): at least one each.
pub fn check_rounds(rounds: u32, what: &'static str, total: u64) -> Result<(), OptionsError> {
    if u64::from(rounds) > total {
        return Err(OptionsError::Rounds {
            rounds,
            what,
            total,
        });
    }
    Ok(())
}

/// The directory holding rtrace-bench, where cargo also puts the workload binaries.
pub fn default_workload_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `results/<experiment>-<unix seconds>`.
pub fn default_out(experiment: &str) -> PathBuf {
    PathBuf::from(format!(
        "results/{experiment}-{}",
        rtrace_measure::result_model::now_unix()
    ))
}

/// Adds each of `items` once, in the order first given (a repeated mode is not a round).
pub fn unique<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_ftrace::clock::TraceClocks;

    fn here() -> anyhow::Result<TraceClocks> {
        Ok(TraceClocks::parse(
            "[local] global counter uptime perf mono mono_raw boot tai x86-tsc",
        ))
    }

    #[test]
    fn a_clock_is_checked_against_the_kernels_list_only_when_given_and_used() {
        let never = || -> anyhow::Result<TraceClocks> { panic!("the kernel was asked") };
        assert_eq!(check_clock(None, "usdt", true, "x", never), Ok(()));
        let e = check_clock(
            Some("global"),
            "usdt",
            false,
            "add ftrace to --tracer",
            never,
        );
        let e = e.unwrap_err().to_string();
        assert!(e.starts_with("`usdt` traces with no ftrace here"), "{e}");
        assert!(
            e.contains("add ftrace to --tracer, or drop --ftrace-clock"),
            "{e}"
        );
        for ok in ["local", "global", "counter", "x86-tsc"] {
            assert_eq!(
                check_clock(Some(ok), "usdt", true, "x", here),
                Ok(()),
                "{ok}"
            );
        }
        let e = check_clock(Some("glboal"), "usdt", true, "x", here).unwrap_err();
        let e = e.to_string();
        assert!(e.starts_with("--ftrace-clock glboal is not a trace clock of this kernel: pass one of local, global, counter"), "{e}");
        let unreadable = || -> anyhow::Result<TraceClocks> { anyhow::bail!("run as root") };
        let e = check_clock(Some("global"), "usdt", true, "x", unreadable).unwrap_err();
        assert_eq!(e.to_string(), "--ftrace-clock global: run as root");
    }

    #[test]
    fn the_clock_is_recorded_with_the_tracer_options() {
        let mut o = TracerOptions::default();
        assert_eq!(o.json()["ftrace_clock"], serde_json::Value::Null);
        o.ftrace_clock = Some("global".into());
        assert_eq!(o.json()["ftrace_clock"], "global");
    }
}
