//! Result model of the cyclictest sweep (`rtrace-bench cyclictest-sweep`, thesis §3.4): wake-up
//! latency of a cyclictest-style loop under each tracer configuration, with the real
//! `cyclictest` as a cross-check for the configurations that need no workload instrumentation.

use crate::interval::Estimate;
use crate::warnings::{environment, iterations, lost, not_locked, outliers, Warning, WarningKind};
use crate::{AccountingError, Events, Summary};
use hdrhistogram::Histogram;
use rtrace_tracer::{Instrumentation, TracerKind};
use serde::{Deserialize, Serialize};

/// The histogram every latency sample goes into (ns, 3 significant digits, up to 60 s).
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// The kernel tracepoint of the kernel-space configurations: one exit per wake-up.
pub const NANOSLEEP_EXIT: (&str, &str) = ("syscalls", "sys_exit_clock_nanosleep");

/// One tracer configuration of the sweep (thesis Figs 3.3 and 3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Configuration {
    /// No tracer, no tracepoint fired.
    None,
    /// The loop's USDT probe traced by an ftrace uprobe event.
    UsdtFtrace,
    /// The loop's USDT probe traced by our BPF program.
    UsdtEbpf,
    /// The loop's USDT probe traced by bpftrace.
    UsdtBpftrace,
    /// The loop's LTTng-UST tracepoint (LTTng workload) traced by LTTng.
    UsdtLttng,
    /// The loop's USDT probe traced by `perf record` (on ftrace's uprobe event).
    UsdtPerf,
    /// A uprobe on the marker function the loop calls, traced by ftrace.
    UprobeFtrace,
    /// A uprobe on the marker function, traced by our BPF program.
    UprobeEbpf,
    /// A uprobe on the marker function, traced by bpftrace.
    UprobeBpftrace,
    /// A uretprobe on the marker function, traced by ftrace.
    UretprobeFtrace,
    /// A uretprobe on the marker function, traced by our BPF program.
    UretprobeEbpf,
    /// A uretprobe on the marker function, traced by bpftrace.
    UretprobeBpftrace,
    /// `syscalls:sys_exit_clock_nanosleep` enabled in our tracefs instance.
    KernelFtrace,
    /// `syscalls:sys_exit_clock_nanosleep` traced by our BPF tracepoint program.
    KernelEbpf,
    /// The `clock_nanosleep` syscall traced by LTTng's kernel tracer (needs lttng-modules).
    KernelLttng,
    /// `syscalls:sys_exit_clock_nanosleep` recorded by `perf record`.
    KernelPerf,
}

/// Where a configuration's events come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    /// Nothing traced.
    None,
    /// A tracepoint the workload fires once per loop.
    User,
    /// The kernel's `clock_nanosleep` exit: the workload is not instrumented.
    Kernel,
}

impl Configuration {
    pub const ALL: [Configuration; 16] = [
        Configuration::None,
        Configuration::UsdtFtrace,
        Configuration::UsdtEbpf,
        Configuration::UsdtBpftrace,
        Configuration::UsdtLttng,
        Configuration::UsdtPerf,
        Configuration::UprobeFtrace,
        Configuration::UprobeEbpf,
        Configuration::UprobeBpftrace,
        Configuration::UretprobeFtrace,
        Configuration::UretprobeEbpf,
        Configuration::UretprobeBpftrace,
        Configuration::KernelFtrace,
        Configuration::KernelEbpf,
        Configuration::KernelLttng,
        Configuration::KernelPerf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Configuration::None => "none",
            Configuration::UsdtFtrace => "usdt-ftrace",
            Configuration::UsdtEbpf => "usdt-ebpf",
            Configuration::UsdtBpftrace => "usdt-bpftrace",
            Configuration::UsdtLttng => "usdt-lttng",
            Configuration::UsdtPerf => "usdt-perf",
            Configuration::UprobeFtrace => "uprobe-ftrace",
            Configuration::UprobeEbpf => "uprobe-ebpf",
            Configuration::UprobeBpftrace => "uprobe-bpftrace",
            Configuration::UretprobeFtrace => "uretprobe-ftrace",
            Configuration::UretprobeEbpf => "uretprobe-ebpf",
            Configuration::UretprobeBpftrace => "uretprobe-bpftrace",
            Configuration::KernelFtrace => "kernel-ftrace",
            Configuration::KernelEbpf => "kernel-ebpf",
            Configuration::KernelLttng => "kernel-lttng",
            Configuration::KernelPerf => "kernel-perf",
        }
    }

    pub fn tracer(self) -> TracerKind {
        match self {
            Configuration::None => TracerKind::None,
            Configuration::UsdtFtrace
            | Configuration::UprobeFtrace
            | Configuration::UretprobeFtrace
            | Configuration::KernelFtrace => TracerKind::Ftrace,
            Configuration::UsdtEbpf
            | Configuration::UprobeEbpf
            | Configuration::UretprobeEbpf
            | Configuration::KernelEbpf => TracerKind::Ebpf,
            Configuration::UsdtBpftrace
            | Configuration::UprobeBpftrace
            | Configuration::UretprobeBpftrace => TracerKind::Bpftrace,
            Configuration::UsdtLttng | Configuration::KernelLttng => TracerKind::Lttng,
            Configuration::UsdtPerf | Configuration::KernelPerf => TracerKind::Perf,
        }
    }

    pub fn space(self) -> Space {
        match self {
            Configuration::None => Space::None,
            Configuration::KernelFtrace
            | Configuration::KernelEbpf
            | Configuration::KernelLttng
            | Configuration::KernelPerf => Space::Kernel,
            _ => Space::User,
        }
    }

    /// The user-space hook of the built-in loop: the USDT probe (or LTTng-UST tracepoint), or
    /// the entry or return of the marker function; `None` outside user space.
    pub fn hook_kind(self) -> Option<crate::usdt::HookKind> {
        use crate::usdt::HookKind;
        match self {
            Configuration::UprobeFtrace
            | Configuration::UprobeEbpf
            | Configuration::UprobeBpftrace => Some(HookKind::Uprobe),
            Configuration::UretprobeFtrace
            | Configuration::UretprobeEbpf
            | Configuration::UretprobeBpftrace => Some(HookKind::Uretprobe),
            c if c.space() == Space::User => Some(HookKind::Usdt),
            _ => None,
        }
    }

    /// The workload flavour the built-in loop runs in (LTTng-UST only for `usdt-lttng`).
    pub fn instrumentation(self) -> Instrumentation {
        match self {
            Configuration::UsdtLttng => Instrumentation::LttngUst,
            _ => Instrumentation::Usdt,
        }
    }

    /// How this configuration's event accounting is judged.
    pub fn rule(self) -> Option<AccountingRule> {
        match self.space() {
            Space::None => None,
            // The built-in loop counts its clock_nanosleep calls; cyclictest's main thread is
            // filtered out: one exit per call of the measuring thread, nothing else.
            Space::User | Space::Kernel => Some(AccountingRule::Exact),
        }
    }

    pub fn describe(self) -> &'static str {
        match self.space() {
            Space::None => "no tracer",
            Space::User => match self.hook_kind() {
                Some(crate::usdt::HookKind::Uprobe) => {
                    "marker function called once per loop, its entry traced"
                }
                Some(crate::usdt::HookKind::Uretprobe) => {
                    "marker function called once per loop, its return traced"
                }
                _ => "tracepoint fired once per loop, traced",
            },
            Space::Kernel => "sys_exit_clock_nanosleep traced, loop not instrumented",
        }
    }
}

impl std::fmt::Display for Configuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which loop measured the latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The workload's cyclic mode (`workload` / `workload-lttng`).
    Builtin,
    /// rt-tests' `cyclictest` (cross-check).
    Cyclictest,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Builtin => "builtin",
            Source::Cyclictest => "cyclictest",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How `recorded + lost` must relate to the hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccountingRule {
    /// One tracepoint hit per loop: `recorded + lost == hits`.
    Exact,
    /// One syscall exit per sleep at least: `recorded + lost >= hits` (files of older versions,
    /// which counted cyclictest's main thread too).
    AtLeast,
}

/// Event accounting of one traced run, judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounting {
    pub rule: AccountingRule,
    /// `hits`: tracepoint executions (user space) or the loop's `clock_nanosleep` calls
    /// (kernel space), counted by the measuring program itself.
    pub events: Events,
    /// `recorded + lost − hits`: events from outside the measured loop (kernel space).
    pub extra: i64,
    /// The rule holds.
    pub ok: bool,
    /// Why it does not hold.
    pub error: Option<String>,
}

impl Accounting {
    pub fn judge(rule: AccountingRule, events: Events) -> Accounting {
        let check: Result<(), AccountingError> = match rule {
            AccountingRule::Exact => events.check_exact(),
            AccountingRule::AtLeast => events.check_at_least(),
        };
        Accounting {
            rule,
            events,
            extra: (events.recorded + events.lost) as i64 - events.hits as i64,
            ok: check.is_ok(),
            error: check.err().map(|e| e.to_string()),
        }
    }
}

/// The whole result file of `rtrace-bench cyclictest-sweep`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepResult {
    /// `experiment`, `tool_version`, `started_unix`, `environment`.
    #[serde(flatten)]
    pub header: crate::Header,
    pub config: SweepConfig,
    /// One entry per (configuration, source) measured, in run order.
    pub runs: Vec<SweepRun>,
    /// Configurations or cross-checks that could not run here, with the reason.
    pub unavailable: Vec<Skipped>,
    /// Runs that started but failed, with the error.
    pub failed: Vec<Skipped>,
    /// Runs that failed once and were run again (the reason each first failed); absent in
    /// files of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retried: Vec<String>,
    /// What makes these numbers less trustworthy, each with what to do
    /// (`rtrace_measure::sweep::warnings`); absent in files of older versions.
    #[serde(default)]
    pub warnings: Vec<crate::Warning>,
}

/// How the sweep was run (mirrors the thesis' cyclictest command line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepConfig {
    /// Requested configurations in run order (after `--shuffle`).
    pub configs: Vec<Configuration>,
    /// Seed of the shuffled order; `None`: not shuffled.
    pub shuffle_seed: Option<u64>,
    /// Period of the measuring thread (µs).
    pub interval_us: u64,
    /// Wake-ups per configuration and source (split across the rounds).
    pub loops: u64,
    /// CPUs, priority (SCHED_FIFO of the measuring thread), rounds, buffers, record mode,
    /// trace data, backend options.
    #[serde(flatten)]
    pub run: crate::settings::RunSettings,
    /// CPU of the workload's (and cyclictest's) main thread.
    pub main_cpu: usize,
    /// Latencies above this bound (µs) count as histogram overflows.
    pub histogram_limit_us: u64,
    /// Where the built-in loop's user-space tracepoint fired; absent in files of older
    /// versions (which fired it after the latency was taken).
    #[serde(default)]
    pub probe_at: Option<rtrace_protocol::ProbeAt>,
    /// The cyclictest binary of the cross-check (`None`: not run).
    pub cyclictest: Option<String>,
    /// Its version (`rt_test_version`).
    pub cyclictest_version: Option<String>,
}

/// One (configuration, source) measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRun {
    pub config: Configuration,
    pub source: Source,
    pub tracer: TracerKind,
    /// What the tracer was attached to (`rtrace:event`, `syscalls:sys_exit_clock_nanosleep`).
    pub hook: Option<String>,
    /// The instructions the hook's uprobe replaced, classified by how the kernel runs them;
    /// empty without a uprobe and in files of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<rtrace_sdt::ProbeSite>,
    /// The program measured: workload path, or the cyclictest command line.
    pub program: String,
    /// Wake-up latency (ns).
    pub latency: Summary,
    /// Wake-up latency (ns): hdrhistogram V2+deflate, base64; reload with
    /// `rtrace_protocol::decode_histogram`. cyclictest's overflows are recorded at its max.
    pub histogram: String,
    /// Samples above `histogram_limit_us`.
    pub overflows: u64,
    /// Measured wake-ups.
    pub loops: u64,
    /// Periods skipped after late wake-ups (built-in loop only).
    pub overruns: Option<u64>,
    /// Event accounting; `None` without a tracer.
    pub accounting: Option<Accounting>,
    /// Memory locked (built-in loop only; cyclictest always runs with --mlockall).
    pub mlocked: Option<bool>,
    /// `/dev/cpu_dma_latency` held at 0 (built-in loop; cyclictest does it by default).
    pub pm_qos_zero: Option<bool>,
    /// Wall time of the run including attach/detach (s).
    /// Trace data the tracer wrote and whether it is kept; `None` without a tracer or in
    /// files of older versions.
    #[serde(default)]
    pub trace_data: Option<crate::trace_data::TraceData>,
    pub wall_s: f64,
    /// Each round's latency statistics, in round order (`--rounds`); empty in files of older
    /// versions.
    #[serde(default)]
    pub rounds: Vec<RoundLatency>,
    /// `--probe-at alternate`: the wake-ups of this run without the tracepoint (`latency` and
    /// `histogram` then hold those with it), pooled as `histogram` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced: Option<Untraced>,
}

/// The wake-ups of an alternating run without the tracepoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Untraced {
    pub latency: Summary,
    /// Encoded as `SweepRun::histogram`.
    pub histogram: String,
}

/// One round's wake-up latency statistics (ns): the unit of the sweep's intervals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundLatency {
    /// 0-based round index (rounds of different configurations pair by it).
    pub round: u32,
    /// Position of the run in the invocation (`none` runs between the configurations pair
    /// with their neighbours by it); `None` in files of older versions.
    #[serde(default)]
    pub seq: Option<u64>,
    pub loops: u64,
    pub p50_ns: f64,
    pub mean_ns: f64,
    pub p99_ns: f64,
    pub max_ns: f64,
    /// `--probe-at alternate`: the same round's wake-ups without the tracepoint, p50 and mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced: Option<(f64, f64)>,
}

impl RoundLatency {
    pub fn of(round: u32, seq: Option<u64>, s: &Summary, loops: u64) -> RoundLatency {
        RoundLatency {
            round,
            seq,
            loops,
            p50_ns: s.p50_ns,
            mean_ns: s.mean_ns,
            p99_ns: s.p99_ns,
            max_ns: s.max_ns,
            untraced: None,
        }
    }
}

impl crate::Pool for SweepRun {
    fn is_same_run(&self, other: &SweepRun) -> bool {
        self.config == other.config && self.source == other.source
    }

    /// Histograms add up, counts and event accounting sum (judged again on the sums), the
    /// rounds' statistics are kept for the intervals.
    fn absorb(&mut self, round: SweepRun) -> anyhow::Result<()> {
        use crate::pool::merge;
        anyhow::ensure!(
            self.is_same_run(&round),
            "cannot pool {} {} with {} {}",
            self.config,
            self.source,
            round.config,
            round.source
        );
        let pooled;
        (self.histogram, pooled) = crate::pool::histograms(&self.histogram, &round.histogram)?;
        self.latency = Summary::of(&pooled).unwrap_or(self.latency);
        self.overflows += round.overflows;
        self.loops += round.loops;
        self.overruns = crate::pool::sum(self.overruns, round.overruns);
        self.accounting = merge(self.accounting.take(), round.accounting, |a, b| {
            Accounting::judge(a.rule, a.events + b.events)
        });
        self.mlocked = merge(self.mlocked, round.mlocked, |a, b| a && b);
        self.pm_qos_zero = merge(self.pm_qos_zero, round.pm_qos_zero, |a, b| a && b);
        self.trace_data = crate::pool::sum(self.trace_data, round.trace_data);
        self.wall_s += round.wall_s;
        self.rounds.extend(round.rounds);
        self.untraced = match (self.untraced.take(), round.untraced) {
            (Some(a), Some(b)) => {
                let (histogram, pooled) = crate::pool::histograms(&a.histogram, &b.histogram)?;
                let latency = Summary::of(&pooled).unwrap_or(a.latency);
                Some(Untraced { latency, histogram })
            }
            (a, b) => a.or(b),
        };
        Ok(())
    }
}

impl crate::pool::Accounted for SweepRun {
    fn accounting(&self) -> Result<(), String> {
        match &self.accounting {
            Some(a) if !a.ok => Err(a
                .error
                .clone()
                .unwrap_or_else(|| "event accounting failed".into())),
            _ => Ok(()),
        }
    }
}

/// A statistic of a round's latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyStat {
    P50,
    Mean,
    P99,
}

impl LatencyStat {
    fn of(self, r: &RoundLatency) -> f64 {
        match self {
            LatencyStat::P50 => r.p50_ns,
            LatencyStat::Mean => r.mean_ns,
            LatencyStat::P99 => r.p99_ns,
        }
    }
}

/// `run`'s latency minus `base`'s (ns), by `stat`: the mean of the per-round differences, with
/// its t interval over the rounds. Each of `run`'s rounds is compared with `base`'s runs of the
/// same round right before and after it (their mean): the sweep runs `none` between every two
/// configurations, so the pair shares the machine's state, which in a VM can change within a
/// round. Files of older versions (no positions) pair rounds by index. Falls back to the pooled
/// difference without interval for files without rounds.
pub fn shift(run: &SweepRun, base: &SweepRun, stat: LatencyStat) -> Option<Estimate> {
    let diffs: Vec<f64> = run
        .rounds
        .iter()
        .filter_map(|r| Some(stat.of(r) - neighbours(r, base, stat)?))
        .collect();
    if diffs.is_empty() {
        let pooled = |s: &Summary| match stat {
            LatencyStat::P50 => s.p50_ns,
            LatencyStat::Mean => s.mean_ns,
            LatencyStat::P99 => s.p99_ns,
        };
        return crate::interval::mean_of(&[pooled(&run.latency) - pooled(&base.latency)], 0.0);
    }
    mean_difference(&diffs, run.latency.p50_ns.max(base.latency.p50_ns))
}

/// The mean of per-round latency differences with its t interval. A difference is no finer
/// than the histogram's 3 significant digits at latencies around `p50_ns`: that resolution
/// bounds each round's variance from below.
fn mean_difference(diffs: &[f64], p50_ns: f64) -> Option<Estimate> {
    let resolution = (p50_ns / 1000.0).max(1.0);
    crate::interval::mean_of(diffs, 2.0 * resolution * resolution / 12.0)
}

/// An alternating run's latency minus its own wake-ups without the tracepoint (ns), by `stat`
/// (p50 or mean): the mean of the per-round differences with its t interval; `None` for a run
/// that did not alternate. Both halves share the machine's state, 2 periods apart.
pub fn paired_shift(run: &SweepRun, stat: LatencyStat) -> Option<Estimate> {
    let diffs: Vec<f64> = run
        .rounds
        .iter()
        .filter_map(|r| {
            let (p50, mean) = r.untraced?;
            Some(match stat {
                LatencyStat::P50 => r.p50_ns - p50,
                LatencyStat::Mean => r.mean_ns - mean,
                LatencyStat::P99 => return None,
            })
        })
        .collect();
    if diffs.is_empty() {
        return None;
    }
    mean_difference(&diffs, run.latency.p50_ns)
}

/// Rounds of one run whose paired shifts (p50 with the tracepoint minus p50 without it) fall
/// into two separate groups: the machine was in one of two states round by round.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoStates {
    /// The rounds of the smaller shifts: their count, mean shift and mean untraced p50 (ns).
    pub low: (usize, f64, f64),
    /// The same for the larger shifts.
    pub high: (usize, f64, f64),
}

/// [`TwoStates`] of `run`'s paired rounds: split at the widest gap between sorted shifts, when
/// each side has two rounds or more and the gap is over 1 µs and over 4 standard deviations of
/// either side's shifts; `None` otherwise (one state, or too few rounds to tell).
pub fn two_states(run: &SweepRun) -> Option<TwoStates> {
    let mut rounds: Vec<(f64, f64)> = (run.rounds.iter())
        .filter_map(|r| Some((r.p50_ns - r.untraced?.0, r.untraced?.0)))
        .collect();
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = rounds.len();
    let (at, gap) = (2..n.saturating_sub(1))
        .map(|i| (i, rounds[i].0 - rounds[i - 1].0))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let group = |g: &[(f64, f64)]| {
        let k = g.len() as f64;
        let mean = g.iter().map(|x| x.0).sum::<f64>() / k;
        let sd = (g.iter().map(|x| (x.0 - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
        let untraced = g.iter().map(|x| x.1).sum::<f64>() / k;
        (g.len(), mean, untraced, sd)
    };
    let (low, high) = (group(&rounds[..at]), group(&rounds[at..]));
    (gap > 1000.0 && gap > 4.0 * low.3.max(high.3)).then_some(TwoStates {
        low: (low.0, low.1, low.2),
        high: (high.0, high.1, high.2),
    })
}

/// `stat` of `base`'s runs of `r`'s round nearest before and after `r` (their mean, or the one
/// there is); without positions, its first run of that round.
fn neighbours(r: &RoundLatency, base: &SweepRun, stat: LatencyStat) -> Option<f64> {
    let same: Vec<&RoundLatency> = base.rounds.iter().filter(|b| b.round == r.round).collect();
    let (Some(at), true) = (r.seq, same.iter().all(|b| b.seq.is_some())) else {
        return same.first().map(|b| stat.of(b));
    };
    let before = same
        .iter()
        .filter(|b| b.seq < Some(at))
        .max_by_key(|b| b.seq);
    let after = same
        .iter()
        .filter(|b| b.seq > Some(at))
        .min_by_key(|b| b.seq);
    match (before, after) {
        (Some(a), Some(b)) => Some((stat.of(a) + stat.of(b)) / 2.0),
        (Some(x), None) | (None, Some(x)) => Some(stat.of(x)),
        (None, None) => None,
    }
}

/// A configuration or cross-check that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub config: Configuration,
    /// `None`: the whole configuration.
    pub source: Option<Source>,
    /// One line naming the fix.
    pub reason: String,
}

impl SweepResult {
    /// The run of `config` measured by `source`, if any.
    pub fn run(&self, config: Configuration, source: Source) -> Option<&SweepRun> {
        self.runs
            .iter()
            .find(|r| r.config == config && r.source == source)
    }
}

/// `experiment` of a cyclictest-sweep result file.
pub const EXPERIMENT: &str = "cyclictest-sweep";

crate::result_model!(SweepResult, warnings);

/// Every warning about a cyclictest-sweep result.
pub fn warnings(r: &SweepResult) -> Vec<Warning> {
    let mut w = environment(&r.header.environment, r.config.run.cpu);
    w.extend(iterations("loops", r.config.loops, "--loops"));
    for run in &r.runs {
        let scope = format!("{}/{}", run.config, run.source);
        if let Some(acc) = &run.accounting {
            w.extend(lost(&scope, &acc.events));
            if let Some(e) = acc.error.as_ref().filter(|_| !acc.ok) {
                w.push(Warning::about(WarningKind::AccountingFailed, &scope, format!(
                    "{e}; the numbers of this run are not trustworthy: report it with the result file"
                )));
            }
        }
        if run.mlocked == Some(false) {
            w.push(not_locked(&scope));
        }
    }
    let listed = |f: &dyn Fn(&crate::sweep::SweepRun) -> u64| -> Option<String> {
        let hit: Vec<String> = r
            .runs
            .iter()
            .filter(|run| f(run) > 0)
            .map(|run| format!("{}/{} {}", run.config, run.source, f(run)))
            .collect();
        (!hit.is_empty()).then(|| hit.join(", "))
    };
    if let Some(list) = listed(&|run| run.overruns.unwrap_or(0)) {
        w.push(Warning::new(WarningKind::Overruns, format!(
            "periods overran, a wake-up coming after the next period began ({list}): the loop could not keep up; use a larger --interval-us"
        )));
    }
    let cyclictest_overflows = |run: &crate::sweep::SweepRun| {
        if run.source == Source::Cyclictest {
            run.overflows
        } else {
            0
        }
    };
    if let Some(list) = listed(&cyclictest_overflows) {
        w.push(Warning::new(WarningKind::Overflows, format!(
            "samples above cyclictest's histogram limit of {} µs count at its max ({list}): its tail percentiles are upper bounds; raise --histogram-us",
            r.config.histogram_limit_us
        )));
    }
    w.extend(outliers(
        r.runs
            .iter()
            .map(|run| (format!("{}/{}", run.config, run.source), &run.latency)),
        (1000.0, "µs"),
    ));
    for f in &r.failed {
        let scope = match f.source {
            Some(s) => format!("{}/{s}", f.config),
            None => f.config.to_string(),
        };
        w.push(Warning::about(
            WarningKind::RunFailed,
            &scope,
            f.reason.clone(),
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccountingRule::{AtLeast, Exact};
    use Configuration::{KernelLttng, UsdtEbpf, UsdtFtrace, UsdtLttng};
    use LatencyStat::{Mean, P50};
    use Source::Builtin;

    #[test]
    fn names_round_trip_through_serde() {
        for c in Configuration::ALL {
            let s = serde_json::to_string(&c).unwrap();
            assert_eq!(s, format!("\"{}\"", c.name()));
            assert_eq!(serde_json::from_str::<Configuration>(&s).unwrap(), c);
        }
    }

    #[test]
    fn every_traced_configuration_is_accounted_exactly() {
        for c in Configuration::ALL {
            let expected = (c != Configuration::None).then_some(Exact);
            assert_eq!(c.rule(), expected, "{c}");
        }
        assert_eq!(UsdtLttng.instrumentation(), Instrumentation::LttngUst);
        assert_eq!(KernelLttng.tracer(), TracerKind::Lttng);
    }

    #[test]
    fn accounting_rules() {
        let ev = Events::of;
        let exact = Accounting::judge(Exact, ev(100, 90, 10));
        assert!(exact.ok && exact.extra == 0);
        let bad = Accounting::judge(Exact, ev(100, 101, 0));
        assert!(!bad.ok && bad.error.is_some());
        let kernel = Accounting::judge(AtLeast, ev(100, 103, 0));
        assert!(kernel.ok && kernel.extra == 3);
        let short = Accounting::judge(AtLeast, ev(100, 98, 1));
        assert!(!short.ok && short.extra == -1);
    }

    /// A run of `config` whose rounds have these (round, seq, p50 in µs).
    #[test]
    fn rounds_in_two_machine_states_are_told_apart_and_one_state_is_not_split() {
        let mut run = run_with(Configuration::UsdtBpftrace, &[(0, Some(0), 30.0)]);
        let round = |i: u32, traced: f64, untraced: f64| RoundLatency {
            untraced: Some((untraced, untraced)),
            p50_ns: traced,
            ..RoundLatency::of(i, Some(u64::from(i)), &run.latency, 100)
        };
        // inv1 of #31: bpftrace's rounds at ~26/19 µs and ~36/17.5 µs.
        let measured = [
            (25_900.0, 18_800.0),
            (25_800.0, 19_600.0),
            (26_000.0, 18_700.0),
            (37_700.0, 17_900.0),
            (38_200.0, 18_300.0),
            (26_000.0, 18_300.0),
            (36_700.0, 17_700.0),
        ];
        run.rounds = (0..)
            .zip(measured)
            .map(|(i, (t, u))| round(i, t, u))
            .collect();
        let s = two_states(&run).expect("two states");
        assert_eq!((s.low.0, s.high.0), (4, 3));
        assert!(
            (s.low.1 - 7_075.0).abs() < 1.0 && (s.high.1 - 19_566.7).abs() < 1.0,
            "{s:?}"
        );
        run.rounds.retain(|r| r.p50_ns < 30_000.0);
        assert_eq!(two_states(&run), None, "one state");
    }

    fn run_with(config: Configuration, rounds: &[(u32, Option<u64>, f64)]) -> SweepRun {
        let summary = |p50: f64| Summary {
            count: 100,
            min_ns: p50,
            max_ns: p50,
            mean_ns: p50,
            stddev_ns: 0.0,
            p50_ns: p50,
            p99_ns: p50,
            p999_ns: p50,
            p9999_ns: p50,
        };
        SweepRun {
            rounds: rounds
                .iter()
                .map(|&(round, seq, p50)| RoundLatency::of(round, seq, &summary(p50 * 1000.0), 100))
                .collect(),
            ..crate::testing::sweep_run(config, Builtin, summary(rounds[0].2 * 1000.0))
        }
    }

    #[test]
    fn a_shift_is_taken_against_the_untraced_runs_beside_it() {
        // The machine is 10 µs slower in the second half of round 0: `none` before and after
        // each configuration sees it as the configuration does.
        let none = run_with(
            Configuration::None,
            &[
                (0, Some(0), 10.0),
                (0, Some(2), 10.0),
                (0, Some(4), 20.0),
                (1, Some(5), 20.0),
                (1, Some(7), 10.0),
            ],
        );
        let usdt = run_with(UsdtFtrace, &[(0, Some(1), 11.0), (1, Some(6), 16.0)]);
        let s = shift(&usdt, &none, P50).unwrap();
        // Round 0: 11 - 10; round 1: 16 - (20 + 10) / 2.
        assert!((s.estimate - 1000.0).abs() < 1e-6, "{s:?}");
        let later = run_with(UsdtEbpf, &[(0, Some(3), 17.0), (1, Some(8), 12.0)]);
        // Round 0: 17 - (10 + 20) / 2; round 1: only a `none` before it.
        let s = shift(&later, &none, P50).unwrap();
        assert!((s.estimate - 2000.0).abs() < 1e-6, "{s:?}");
        // Files of older versions: no positions, rounds pair by index.
        let old_none = run_with(Configuration::None, &[(0, None, 10.0), (1, None, 20.0)]);
        let old = run_with(UsdtFtrace, &[(0, None, 12.0), (1, None, 23.0)]);
        let s = shift(&old, &old_none, P50).unwrap();
        assert!((s.estimate - 2500.0).abs() < 1e-6, "{s:?}");
    }

    #[test]
    fn an_alternating_run_is_paired_with_its_own_untraced_wake_ups() {
        let mut run = run_with(UsdtEbpf, &[(0, Some(1), 11.0), (1, Some(3), 15.0)]);
        run.rounds[0].untraced = Some((10_000.0, 10_500.0));
        run.rounds[1].untraced = Some((14_000.0, 14_500.0));
        let p50 = paired_shift(&run, P50).unwrap();
        assert!(
            (p50.estimate - 1000.0).abs() < 1e-6 && p50.rounds == 2,
            "{p50:?}"
        );
        let mean = paired_shift(&run, Mean).unwrap();
        assert!((mean.estimate - 500.0).abs() < 1e-6, "{mean:?}");
        run.rounds.iter_mut().for_each(|r| r.untraced = None);
        assert_eq!(paired_shift(&run, P50), None, "not alternating");
    }
}
