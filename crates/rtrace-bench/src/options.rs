//! Typed, validated options. Every rejection is one line that names the fix; nothing on the
//! machine has been touched when it happens.

use crate::cli::{CaseArg, CountArgs, HookArg, RecordArg, TracerArg, TracerArgs, UsdtArgs};
use crate::cpus::Cpus;
use rtrace_measure::usdt::{Case, HookKind};
use rtrace_tracer::{RecordMode, TracerKind};
use std::path::PathBuf;

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
    #[error("--iterations must be at least 1")]
    Iterations,
    #[error(
        "--rounds {rounds} does not fit --iterations {iterations}: pass --rounds 1..{iterations}"
    )]
    Rounds { rounds: u32, iterations: u64 },
    #[error("--probe `{0}` is not PROVIDER:NAME, uprobe:FUNCTION or uretprobe:FUNCTION (e.g. --probe rtrace:event, --probe uprobe:getpid)")]
    ProbeSyntax(String),
    #[error("--tracer all is for `usdt`; `count` takes one tracer")]
    CountAll,
    #[error("--threads {threads} needs {threads} CPUs, one per loop thread: this process may use {usable} CPUs ({list}); pass --threads 1..{usable}")]
    Threads {
        threads: usize,
        usable: usize,
        list: String,
    },
}

/// Backend settings shared by `usdt` and `count`.
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
}

/// Tracer pattern (every event to a file) or aggregator pattern (counts in maps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpfMode {
    Record,
    /// eBPF: record, waking the reader on every event; bpftrace: record (its printf always does).
    RecordWakeup,
    Aggregate,
    /// eBPF: the aggregate program's per-CPU counter alone; bpftrace: `aggregate` (`count()`).
    Count,
    /// eBPF: one increment of a global counter, the decomposition's floor; bpftrace: none.
    Floor,
}

impl BpfMode {
    pub fn name(self) -> &'static str {
        match self {
            BpfMode::Record => "record",
            BpfMode::RecordWakeup => "record-wakeup",
            BpfMode::Aggregate => "aggregate",
            BpfMode::Count => "count",
            BpfMode::Floor => "floor",
        }
    }
}

impl From<TracerArgs> for TracerOptions {
    fn from(a: TracerArgs) -> Self {
        TracerOptions {
            buffer_size_kb: Some(a.buffer_size_kb),
            record: match a.record {
                RecordArg::Overwrite => RecordMode::Overwrite,
                RecordArg::Stream => RecordMode::Stream,
            },
            lttng_subbuf_size: a.lttng_subbuf_size,
            lttng_num_subbuf: a.lttng_num_subbuf,
            lttng_events: {
                let mut k: Vec<rtrace_lttng::EventKind> = Vec::new();
                for kind in a.lttng_event.iter().map(|e| match e {
                    crate::cli::LttngEventArg::Tracepoint => rtrace_lttng::EventKind::Tracepoint,
                    crate::cli::LttngEventArg::Tracef => rtrace_lttng::EventKind::Tracef,
                }) {
                    if !k.contains(&kind) {
                        k.push(kind);
                    }
                }
                if k.is_empty() {
                    k.push(rtrace_lttng::EventKind::Tracepoint);
                }
                k
            },
            bpf_modes: {
                // Each mode once, in the order first given: a repeated mode is not a round.
                let mut m: Vec<BpfMode> = Vec::new();
                for mode in a.bpf_mode.iter().map(|m| match m {
                    crate::cli::BpfModeArg::Record => BpfMode::Record,
                    crate::cli::BpfModeArg::RecordWakeup => BpfMode::RecordWakeup,
                    crate::cli::BpfModeArg::Aggregate => BpfMode::Aggregate,
                    crate::cli::BpfModeArg::Count => BpfMode::Count,
                    crate::cli::BpfModeArg::Floor => BpfMode::Floor,
                }) {
                    if !m.contains(&mode) {
                        m.push(mode);
                    }
                }
                if m.is_empty() {
                    m.push(BpfMode::Record);
                }
                m
            },
            ftrace_modes: {
                let mut m = Vec::new();
                for mode in a.ftrace_mode.iter().map(|m| match m {
                    crate::cli::FtraceModeArg::Off => rtrace_ftrace::FtraceMode::Off,
                    crate::cli::FtraceModeArg::Overwrite => rtrace_ftrace::FtraceMode::Overwrite,
                    crate::cli::FtraceModeArg::Stream => rtrace_ftrace::FtraceMode::Stream,
                }) {
                    if !m.contains(&mode) {
                        m.push(mode);
                    }
                }
                m
            },
        }
    }
}

/// Which tracers were asked for: a fixed list, or every one usable here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TracerChoice {
    These(Vec<TracerKind>),
    AllAvailable,
}

#[derive(Debug, Clone)]
pub struct UsdtOptions {
    pub tracers: TracerChoice,
    pub cases: Vec<Case>,
    /// Hook kinds, each its own set of rows, in `HookKind::ALL` order; never empty.
    pub hooks: Vec<HookKind>,
    pub iterations: u64,
    pub warmup: u64,
    /// At least 1 and at most `iterations`.
    pub rounds: u32,
    /// `--allow-loss`: lossy case-1 runs stay in ratios.
    pub allow_loss: bool,
    /// `--keep-traces`.
    pub keep_traces: rtrace_measure::trace_data::KeepTraces,
    pub cpus: Cpus,
    pub priority: Option<i32>,
    pub tracer: TracerOptions,
    pub json: Option<PathBuf>,
    pub out: PathBuf,
    /// Whether `--out` gave `out` (else it is the default, created exclusively).
    pub out_given: bool,
    pub workload_dir: PathBuf,
    /// `--decompose`: every tracer in the modes of its staircase, case 3 for LTTng only.
    pub decompose: bool,
    /// `--threads`: loop threads, each on its own CPU (the measured CPU first, then harness
    /// CPUs from the last); at least 1.
    pub threads: usize,
}

impl UsdtOptions {
    /// CPUs of every loop thread (see [`Cpus::loop_cpus`]).
    pub fn thread_cpus(&self) -> Vec<usize> {
        self.cpus.loop_cpus(self.threads)
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

/// The modes `--decompose` measures (the steps of `rtrace_measure::staircase`).
fn decompose(a: &mut UsdtArgs) {
    use crate::cli::{BpfModeArg, FtraceModeArg, HookArg, LttngEventArg};
    a.tracer = vec![TracerArg::All];
    a.case = vec![CaseArg::C0, CaseArg::C1, CaseArg::C3];
    a.hook = vec![HookArg::Usdt, HookArg::UsdtNop5];
    a.tracer_args.bpf_mode = vec![
        BpfModeArg::Floor,
        BpfModeArg::Count,
        BpfModeArg::Aggregate,
        BpfModeArg::Record,
        BpfModeArg::RecordWakeup,
    ];
    a.tracer_args.ftrace_mode = vec![
        FtraceModeArg::Off,
        FtraceModeArg::Overwrite,
        FtraceModeArg::Stream,
    ];
    a.tracer_args.lttng_event = vec![LttngEventArg::Tracepoint, LttngEventArg::Tracef];
}

/// The tracers `--tracer` names, in order, without repeats (`all`: every tracer, `none`
/// included).
pub fn tracer_kinds(args: &[TracerArg]) -> Vec<TracerKind> {
    let mut out: Vec<TracerKind> = Vec::new();
    for &t in args {
        let kinds = tracer_kind(t).map_or_else(|| TracerKind::ALL.to_vec(), |k| vec![k]);
        for k in kinds {
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
}

fn tracer_kind(t: TracerArg) -> Option<TracerKind> {
    match t {
        TracerArg::None => Some(TracerKind::None),
        TracerArg::Ftrace => Some(TracerKind::Ftrace),
        TracerArg::Ebpf => Some(TracerKind::Ebpf),
        TracerArg::Lttng => Some(TracerKind::Lttng),
        TracerArg::Bpftrace => Some(TracerKind::Bpftrace),
        TracerArg::All => None,
    }
}

fn parse_cases(args: &[CaseArg]) -> Vec<Case> {
    let mut cases: Vec<Case> = if args.contains(&CaseArg::All) {
        Case::ALL.to_vec()
    } else {
        args.iter()
            .map(|c| match c {
                CaseArg::C0 => Case::Baseline,
                CaseArg::C1 => Case::Traced,
                CaseArg::C2 => Case::Dormant,
                CaseArg::C3 | CaseArg::All => Case::Instrumented,
            })
            .collect()
    };
    cases.sort();
    cases.dedup();
    cases
}

fn parse_hooks(args: &[HookArg]) -> Vec<HookKind> {
    let mut hooks: Vec<HookKind> = args
        .iter()
        .map(|h| match h {
            HookArg::Usdt => HookKind::Usdt,
            HookArg::UsdtNop5 => HookKind::UsdtNop5,
            HookArg::Uprobe => HookKind::Uprobe,
            HookArg::Uretprobe => HookKind::Uretprobe,
        })
        .collect();
    hooks.sort();
    hooks.dedup();
    if hooks.is_empty() {
        hooks.push(HookKind::Usdt);
    }
    hooks
}

fn check_priority(p: Option<i32>) -> Result<Option<i32>, OptionsError> {
    match p {
        Some(p) if !(1..=99).contains(&p) => Err(OptionsError::Priority(p)),
        p => Ok(p),
    }
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
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("results/{experiment}-{now}"))
}

/// Rounds of `usdt` without `--rounds`: enough for a t interval over rounds whose width means
/// something (t(9) = 2.26 against 1.96 for infinitely many).
pub const DEFAULT_ROUNDS: u32 = 10;

impl TryFrom<UsdtArgs> for UsdtOptions {
    type Error = OptionsError;

    fn try_from(mut a: UsdtArgs) -> Result<Self, OptionsError> {
        if a.decompose {
            decompose(&mut a);
        }
        if a.iterations == 0 {
            return Err(OptionsError::Iterations);
        }
        let rounds = a
            .rounds
            .unwrap_or(DEFAULT_ROUNDS.min(a.iterations.min(u64::from(u32::MAX)) as u32));
        if rounds == 0 || u64::from(rounds) > a.iterations {
            return Err(OptionsError::Rounds {
                rounds,
                iterations: a.iterations,
            });
        }
        let tracers = if a.tracer.contains(&TracerArg::All) {
            TracerChoice::AllAvailable
        } else {
            let mut t: Vec<TracerKind> = Vec::new();
            for k in a.tracer.iter().filter_map(|&t| tracer_kind(t)) {
                if !t.contains(&k) {
                    t.push(k);
                }
            }
            TracerChoice::These(t)
        };
        let cpus = Cpus::from_request(a.cpu)?;
        check_threads(&cpus, a.threads)?;
        Ok(UsdtOptions {
            tracers,
            cases: parse_cases(&a.case),
            hooks: parse_hooks(&a.hook),
            iterations: a.iterations,
            warmup: a.warmup,
            rounds,
            allow_loss: a.allow_loss,
            cpus,
            priority: check_priority(a.priority)?,
            keep_traces: a.keep_traces.into(),
            tracer: a.tracer_args.into(),
            json: a.json,
            out_given: a.out.is_some(),
            out: a.out.unwrap_or_else(|| default_out("usdt")),
            workload_dir: a.workload_dir.unwrap_or_else(default_workload_dir),
            decompose: a.decompose,
            threads: a.threads,
        })
    }
}

#[derive(Debug, Clone)]
pub struct CountOptions {
    pub tracer: TracerKind,
    pub probe: CountProbe,
    pub binary: Option<PathBuf>,
    pub tracer_opts: TracerOptions,
    /// `--expect N`: the ground truth, when the user knows it.
    pub expect: Option<u64>,
    pub json: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub command: Vec<String>,
    pub cpus: Cpus,
}

/// What `count` traces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountProbe {
    /// A USDT probe `PROVIDER:NAME`.
    Usdt { provider: String, name: String },
    /// The entry (`uprobe:NAME`) or return (`uretprobe:NAME`, `ret`) of a function.
    Function { name: String, ret: bool },
}

impl std::fmt::Display for CountProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CountProbe::Usdt { provider, name } => write!(f, "{provider}:{name}"),
            CountProbe::Function { name, ret: false } => write!(f, "uprobe:{name}"),
            CountProbe::Function { name, ret: true } => write!(f, "uretprobe:{name}"),
        }
    }
}

/// `uprobe:FUNCTION`, `uretprobe:FUNCTION` (these prefixes win over a USDT provider of the same
/// name), else a USDT `PROVIDER:NAME`; all names C identifiers.
pub fn parse_count_probe(s: &str) -> Result<CountProbe, OptionsError> {
    let (kind, name) = s
        .split_once(':')
        .ok_or_else(|| OptionsError::ProbeSyntax(s.to_owned()))?;
    let ret = match kind {
        "uprobe" => false,
        "uretprobe" => true,
        _ => {
            let (provider, name) = parse_probe(s)?;
            return Ok(CountProbe::Usdt { provider, name });
        }
    };
    rtrace_tracer::validate_name("function", name)
        .map_err(|_| OptionsError::ProbeSyntax(s.to_owned()))?;
    Ok(CountProbe::Function {
        name: name.to_owned(),
        ret,
    })
}

/// Splits `PROVIDER:NAME`, both C identifiers.
pub fn parse_probe(s: &str) -> Result<(String, String), OptionsError> {
    let bad = || OptionsError::ProbeSyntax(s.to_owned());
    let (p, n) = s.split_once(':').ok_or_else(bad)?;
    rtrace_tracer::validate_name("provider", p).map_err(|_| bad())?;
    rtrace_tracer::validate_name("probe", n).map_err(|_| bad())?;
    Ok((p.to_owned(), n.to_owned()))
}

impl TryFrom<CountArgs> for CountOptions {
    type Error = OptionsError;

    fn try_from(a: CountArgs) -> Result<Self, OptionsError> {
        let tracer = tracer_kind(a.tracer).ok_or(OptionsError::CountAll)?;
        let probe = parse_count_probe(&a.probe)?;
        // `count` measures nothing: its consumers take every usable CPU but the last.
        let usable = crate::cpus::usable();
        let harness = match usable.split_last() {
            Some((_, rest)) if !rest.is_empty() => rest.to_vec(),
            _ => usable.clone(),
        };
        Ok(CountOptions {
            tracer,
            probe,
            binary: a.binary,
            tracer_opts: a.tracer_args.into(),
            expect: a.expect,
            json: a.json,
            out: a.out,
            command: a.command,
            cpus: Cpus {
                measured: usable.last().copied().unwrap_or(0),
                harness,
                requested: None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn usdt(args: &[&str]) -> Result<UsdtOptions, OptionsError> {
        let mut v = vec!["rtrace-bench", "usdt"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).unwrap().command {
            crate::cli::Command::Usdt(a) => UsdtOptions::try_from(a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn out_of_range_cpu_message_names_the_fix() {
        let e = usdt(&["--cpu", "4096"]).unwrap_err().to_string();
        assert!(
            e.contains("CPU 4096 is not usable") && e.contains("--cpu "),
            "{e}"
        );
    }

    #[test]
    fn rounds_must_fit_the_iterations() {
        assert_eq!(usdt(&[]).unwrap().rounds, DEFAULT_ROUNDS);
        assert_eq!(usdt(&["-n", "3"]).unwrap().rounds, 3, "default capped");
        assert!(!usdt(&[]).unwrap().allow_loss);
        assert!(usdt(&["--allow-loss"]).unwrap().allow_loss);
        assert_eq!(usdt(&["--rounds", "4", "-n", "8"]).unwrap().rounds, 4);
        for bad in [["--rounds", "0", "-n", "8"], ["--rounds", "9", "-n", "8"]] {
            let e = usdt(&bad).unwrap_err().to_string();
            assert!(e.contains("pass --rounds 1..8"), "{e}");
        }
    }

    #[test]
    fn cases_are_sorted_and_deduplicated() {
        let o = usdt(&["--case", "3,1,3"]).unwrap();
        assert_eq!(o.cases, vec![Case::Traced, Case::Instrumented]);
        assert_eq!(usdt(&[]).unwrap().cases, Case::ALL.to_vec());
    }

    #[test]
    fn tracers_and_defaults() {
        let o = usdt(&["-t", "ftrace,ebpf", "-t", "ftrace"]).unwrap();
        assert_eq!(
            o.tracers,
            TracerChoice::These(vec![TracerKind::Ftrace, TracerKind::Ebpf])
        );
        assert_eq!(o.iterations, 1_000_000);
        assert_eq!(
            usdt(&["-t", "all"]).unwrap().tracers,
            TracerChoice::AllAvailable
        );
    }

    #[test]
    fn bad_values_are_rejected() {
        assert_eq!(
            usdt(&["--priority", "100"]).unwrap_err(),
            OptionsError::Priority(100)
        );
        assert_eq!(usdt(&["-n", "0"]).unwrap_err(), OptionsError::Iterations);
        let mut v = vec!["rtrace-bench", "usdt", "--tracer", "dtrace"];
        assert!(Cli::try_parse_from(v.drain(..)).is_err(), "unknown tracer");
    }

    #[test]
    fn bpf_modes_keep_their_order_without_repeats() {
        assert_eq!(usdt(&[]).unwrap().tracer.bpf_modes, [BpfMode::Record]);
        assert_eq!(
            usdt(&[]).unwrap().tracer.buffer_size_kb,
            Some(crate::cli::DEFAULT_BUFFER_KB),
            "one buffer size for every tracer by default"
        );
        let o = usdt(&["--bpf-mode", "record-wakeup,record,record-wakeup,aggregate"]).unwrap();
        assert_eq!(
            o.tracer.bpf_modes,
            [BpfMode::RecordWakeup, BpfMode::Record, BpfMode::Aggregate]
        );
    }

    #[test]
    fn a_repeated_bpf_mode_is_one_column() {
        let o = usdt(&["-t", "ebpf", "--bpf-mode", "record,aggregate,record"]).unwrap();
        assert_eq!(
            o.tracer.bpf_modes,
            vec![BpfMode::Record, BpfMode::Aggregate]
        );
        let o = usdt(&["--bpf-mode", "aggregate", "--bpf-mode", "record,aggregate"]).unwrap();
        assert_eq!(
            o.tracer.bpf_modes,
            vec![BpfMode::Aggregate, BpfMode::Record]
        );
    }

    #[test]
    fn hooks_are_ordered_and_default_to_usdt() {
        assert_eq!(usdt(&[]).unwrap().hooks, vec![HookKind::Usdt]);
        let o = usdt(&["--hook", "uretprobe,usdt,uprobe,usdt-nop5,uretprobe"]).unwrap();
        assert_eq!(o.hooks, HookKind::ALL.to_vec());
        let mut v = vec!["rtrace-bench", "usdt", "--hook", "kprobe"];
        assert!(Cli::try_parse_from(v.drain(..)).is_err(), "unknown hook");
    }

    #[test]
    fn count_probe_syntax() {
        assert_eq!(
            parse_count_probe("uprobe:getpid").unwrap(),
            CountProbe::Function {
                name: "getpid".into(),
                ret: false
            }
        );
        let r = parse_count_probe("uretprobe:rtrace_marker_hit").unwrap();
        assert_eq!(r.to_string(), "uretprobe:rtrace_marker_hit");
        assert_eq!(
            parse_count_probe("rtest:hit").unwrap(),
            CountProbe::Usdt {
                provider: "rtest".into(),
                name: "hit".into()
            }
        );
        for bad in ["uprobe:", "uprobe:a b", "uretprobe:x/y", "getpid"] {
            let e = parse_count_probe(bad).unwrap_err().to_string();
            assert!(e.contains("uprobe:FUNCTION"), "{bad}: {e}");
        }
    }

    #[test]
    fn probe_syntax() {
        assert_eq!(
            parse_probe("rtrace:event").unwrap(),
            ("rtrace".to_owned(), "event".to_owned())
        );
        for bad in ["rtrace", "a:b/c", ":x", "a:", "a b:c"] {
            assert!(parse_probe(bad).is_err(), "{bad}");
        }
    }
}
