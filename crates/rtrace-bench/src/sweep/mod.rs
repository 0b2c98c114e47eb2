//! `rtrace-bench cyclictest-sweep`: wake-up latency of a cyclictest-style loop under each tracer
//! configuration (thesis §3.4, Figs 3.3 and 3.4), one configuration after another with the same
//! parameters, and rt-tests' cyclictest as a cross-check where no instrumentation is needed.
//!
//! Every configuration is preflighted (`Tracer::check`) before anything on the machine changes;
//! one that cannot run here is reported with the reason. The JSON result is rewritten after every
//! run, so an interruption loses nothing already measured.

pub(crate) mod cyclictest;

use crate::cpus::Cpus;
use crate::options::{CommonOptions, OptionsError};
use crate::runner::{self, Plan, Round};
use crate::tracers;
use anyhow::{bail, Context, Result};
use rtrace_measure::sweep::{
    Accounting, AccountingRule, Configuration, RoundLatency, Skipped, Source, Space, SweepConfig,
    SweepResult, SweepRun, Untraced, NANOSLEEP_EXIT,
};
use rtrace_measure::trace_data::TraceData;
use rtrace_measure::usdt::HookKind;
use rtrace_measure::{run_workload_message, Events, Summary};
use rtrace_protocol::{
    decode_histogram, encode_histogram, CyclicConfig, Fire, Message, ProbeAt, WorkloadConfig,
};
use rtrace_tracer::{Attachment, Hook, Instrumentation, Tracer};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `cyclictest-sweep`'s options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    /// CPUs, priority (of the measuring thread: always set), rounds, output, tracers.
    pub common: CommonOptions,
    /// In run order (shuffled with `shuffle_seed` if set).
    pub configs: Vec<Configuration>,
    pub shuffle_seed: Option<u64>,
    pub interval_us: u64,
    /// Wake-ups per configuration, split across the rounds.
    pub loops: u64,
    pub main_cpu: usize,
    /// `--main-cpu`, if given.
    pub main_cpu_requested: Option<usize>,
    pub histogram_us: u64,
    /// Where the built-in loop's user-space tracepoint fires.
    pub probe_at: ProbeAt,
    pub cyclictest: CyclictestChoice,
}

impl Options {
    /// SCHED_FIFO priority of the measuring thread (cyclictest's `--priority`).
    pub fn priority(&self) -> i32 {
        self.common.priority.unwrap_or(99)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SweepOptionsError {
    #[error(transparent)]
    Common(#[from] OptionsError),
    #[error("--interval-us {0} is out of range: use 1..=1000000")]
    Interval(u64),
    #[error("--histogram-us {0} is out of range: use 1..=1000000 (cyclictest keeps at most 1,000,000 buckets)")]
    Histogram(u64),
    #[error("--main-cpu {cpu} is not usable here: this process may use CPUs {usable}")]
    MainCpuNotUsable { cpu: usize, usable: String },
    #[error("--main-cpu {0} is the measured CPU: give the main thread another CPU")]
    SameCpu(usize),
}

/// Whether and which cyclictest runs as cross-check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CyclictestChoice {
    Off,
    /// `cyclictest` on PATH.
    OnPath,
    At(PathBuf),
}

/// The CPU of cyclictest's main thread: `requested`, else the first harness CPU; never the
/// measured one.
pub fn main_cpu(
    requested: Option<usize>,
    cpus: &Cpus,
    usable: &[usize],
) -> Result<usize, SweepOptionsError> {
    let main = requested.unwrap_or(cpus.harness[0]);
    if !usable.contains(&main) {
        return Err(SweepOptionsError::MainCpuNotUsable {
            cpu: main,
            usable: crate::cpus::list(usable),
        });
    }
    if main == cpus.measured {
        return Err(SweepOptionsError::SameCpu(main));
    }
    Ok(main)
}

/// Fisher–Yates with SplitMix64: the same seed always gives the same order.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// A configuration that passed preflight.
struct Prepared {
    config: Configuration,
    /// `None` for `none`.
    tracer: Option<Box<dyn Tracer>>,
    hook: Option<Hook>,
    /// The workload binary of the built-in loop.
    workload: PathBuf,
    /// How the real cyclictest is traced in this configuration; `None`: no cross-check.
    cross: Option<CrossCheck>,
}

/// The cross-check's hook (`None` without a tracer) and what cyclictest runs with.
#[derive(Default)]
struct CrossCheck {
    hook: Option<Hook>,
    /// Environment of cyclictest only (the LTTng preload library).
    env: Vec<(String, String)>,
}

/// Builds and checks one configuration; changes nothing.
fn prepare(o: &Options, config: Configuration) -> Result<Prepared> {
    let bin = crate::workload::bin(&o.common, config.instrumentation())?;
    let workload =
        std::fs::canonicalize(&bin).with_context(|| format!("cannot resolve {}", bin.display()))?;
    let Some(tracer) = tracers::build(config.tracer(), &o.common.tracer)? else {
        return Ok(Prepared {
            config,
            tracer: None,
            hook: None,
            workload,
            cross: None,
        });
    };
    let hook = match config.hook_kind() {
        Some(kind) => crate::workload::hooks(&workload, config.instrumentation(), kind)?.0,
        None => Hook::KernelTracepoint {
            category: NANOSLEEP_EXIT.0.into(),
            name: NANOSLEEP_EXIT.1.into(),
        },
    };
    tracer.check(&hook)?;
    Ok(Prepared {
        config,
        tracer: Some(tracer),
        hook: Some(hook),
        workload,
        cross: None,
    })
}

/// How the real cyclictest is traced in `p`'s configuration (see [`cross_hook`]), checked.
fn prepare_cross(o: &Options, p: &Prepared) -> Result<CrossCheck> {
    let Some(tracer) = &p.tracer else {
        return Ok(CrossCheck::default());
    };
    let (hook, env) = cross_hook(o, p.config, p.hook.as_ref())?;
    tracer.check(&hook)?;
    Ok(CrossCheck {
        hook: Some(hook),
        env,
    })
}

/// The hook that fires in cyclictest where the configuration's tracepoint fires in the built-in
/// loop, without patching rt-tests: the kernel configurations trace the same syscall exit; the
/// uprobe-based tracers put a uretprobe on libc's `clock_nanosleep`, which returns between the
/// wake-up and cyclictest's clock reading; LTTng fires `rtrace:event` there from a preloaded
/// wrapper of `clock_nanosleep` (`librtrace_preload.so`).
fn cross_hook(
    o: &Options,
    config: Configuration,
    hook: Option<&Hook>,
) -> Result<(Hook, Vec<(String, String)>)> {
    match (config.hook_kind(), config.instrumentation()) {
        (Some(HookKind::Uprobe), _) => bail!(
            "no cyclictest cross-check: a uprobe on clock_nanosleep's entry fires before the sleep, outside the measured window (the usdt and uretprobe configurations' cross-checks trace its return)"
        ),
        (Some(_), Instrumentation::Usdt) => {
            let libc = cyclictest::libc()?;
            Ok((Hook::uprobe(&libc, "clock_nanosleep", true)?, Vec::new()))
        }
        (Some(_), Instrumentation::LttngUst) => {
            let lib = o.common.workload_dir.join(cyclictest::PRELOAD);
            let lib = std::fs::canonicalize(&lib).with_context(|| {
                format!(
                    "{} not found: build it with `cargo build --release` or pass --workload-dir DIR",
                    lib.display()
                )
            })?;
            Ok((
                Hook::LttngUst {
                    provider: "rtrace".into(),
                    event: "event".into(),
                },
                vec![("LD_PRELOAD".into(), lib.display().to_string())],
            ))
        }
        _ => Ok((
            hook.cloned()
                .context("a traced configuration without a hook")?,
            Vec::new(),
        )),
    }
}

/// The sweep as the runner's experiment.
struct Sweep {
    o: Options,
    plans: Vec<Prepared>,
    cyclictest: Option<cyclictest::Cyclictest>,
    result: SweepResult,
}

/// One entry of the plan: a configuration (index into `plans`) measured by one source.
type Step = (usize, Source);

impl runner::Experiment for Sweep {
    const NAME: &'static str = "cyclictest-sweep";
    type Entry = Step;
    type Run = SweepRun;

    fn common(&mut self) -> &mut CommonOptions {
        &mut self.o.common
    }

    fn begin(&mut self) -> Result<()> {
        let usable = crate::cpus::usable();
        self.o.main_cpu = main_cpu(self.o.main_cpu_requested, &self.o.common.cpus, &usable)?;
        let kinds: Vec<_> = self.plans.iter().map(|p| p.config.tracer()).collect();
        self.result.config.run = self.o.common.settings(&kinds)?;
        self.result.config.main_cpu = self.o.main_cpu;
        self.result.header.environment = self.o.common.environment();
        Ok(())
    }

    fn plan(&self) -> Plan<Step> {
        Plan::rounds(interleaved(&self.plans))
    }

    fn label(&self, &(i, source): &Step) -> String {
        format!("{} {source}", self.plans[i].config)
    }

    fn describe(&self, &(i, source): &Step) -> String {
        let p = &self.plans[i];
        match (source, p.cross.as_ref().and_then(|c| c.hook.as_ref())) {
            (Source::Cyclictest, Some(h)) => format!("{} traced", h.label()),
            _ => p.config.describe().to_owned(),
        }
    }

    fn run(&mut self, &(i, source): &Step, round: &Round) -> Result<SweepRun> {
        let p = &self.plans[i];
        match source {
            Source::Builtin => run_builtin(&self.o, p, round),
            Source::Cyclictest => {
                let ct = self
                    .cyclictest
                    .as_ref()
                    .context("cyclictest step without cyclictest")?;
                run_cyclictest(&self.o, p, ct, round)
            }
        }
    }

    fn keep(&mut self, _: &Step, run: SweepRun) -> Result<Option<Step>> {
        rtrace_measure::pool::keep(&mut self.result.runs, run)?;
        Ok(None)
    }

    /// A traced run that failed (e.g. bpftrace's flush events not seen, so its losses are
    /// unknown) is run once more; the first failure stays on record.
    fn retries(&self, &(i, _): &Step) -> u32 {
        u32::from(self.plans[i].config != Configuration::None)
    }

    fn retried(&mut self, step: &Step, error: &anyhow::Error) {
        let message = format!("{}: {error:#}", self.label(step));
        self.result.retried.push(message);
    }

    fn failed(&mut self, &(i, source): &Step, error: anyhow::Error) -> Result<()> {
        let failed = skipped(self.plans[i].config, Some(source), &error);
        self.result.failed.push(failed);
        Ok(())
    }

    fn result(&mut self) -> rtrace_report::AnyResult {
        self.result.warnings = rtrace_measure::sweep::warnings(&self.result);
        self.result.clone().into()
    }

    fn notes(&self) -> Vec<String> {
        self.result
            .unavailable
            .iter()
            .map(|u| {
                let what = u.source.map_or(String::new(), |s| format!(" {s}"));
                format!("{}{what} unavailable: {}", u.config, u.reason)
            })
            .collect()
    }
}

pub fn run(o: Options) -> Result<i32> {
    let mut unavailable = Vec::new();
    let mut plans = Vec::new();
    for &config in &o.configs {
        match prepare(&o, config) {
            Ok(p) => plans.push(p),
            Err(e) => unavailable.push(skipped(config, None, &e)),
        }
    }
    if plans.is_empty() {
        let reasons: Vec<String> = unavailable
            .iter()
            .map(|u| format!("{}: {}", u.config, u.reason))
            .collect();
        bail!("no configuration can run here ({})", reasons.join("; "));
    }
    let cyclictest = match cyclictest::find(&o.cyclictest) {
        Ok(c) => c,
        Err(e) => {
            let cyclictest = Some(Source::Cyclictest);
            unavailable.extend(plans.iter().map(|p| skipped(p.config, cyclictest, &e)));
            None
        }
    };
    if cyclictest.is_some() {
        for p in &mut plans {
            match prepare_cross(&o, p) {
                Ok(c) => p.cross = Some(c),
                Err(e) => unavailable.push(skipped(p.config, Some(Source::Cyclictest), &e)),
            }
        }
    }
    let result = SweepResult {
        header: rtrace_measure::Header::new(rtrace_measure::sweep::EXPERIMENT),
        config: SweepConfig {
            configs: o.configs.clone(),
            shuffle_seed: o.shuffle_seed,
            interval_us: o.interval_us,
            loops: o.loops,
            run: Default::default(),
            main_cpu: o.main_cpu,
            histogram_limit_us: o.histogram_us,
            probe_at: Some(o.probe_at),
            cyclictest: cyclictest.as_ref().map(|c| c.path.display().to_string()),
            cyclictest_version: cyclictest.as_ref().map(|c| c.version.clone()),
        },
        runs: Vec::new(),
        unavailable,
        failed: Vec::new(),
        retried: Vec::new(),
        warnings: Vec::new(),
    };
    runner::run(&mut Sweep {
        o,
        plans,
        cyclictest,
        result,
    })
}

/// What could not run, and why.
fn skipped(config: Configuration, source: Option<Source>, e: &anyhow::Error) -> Skipped {
    let reason = format!("{e:#}");
    Skipped {
        config,
        source,
        reason,
    }
}

/// Suffix of a run's files: its round, and for `none`, which runs several times a round, its
/// position too.
fn run_suffix(p: &Prepared, round: &Round) -> String {
    if p.config == Configuration::None {
        format!("{}-run{}", round.dir_suffix(), round.seq + 1)
    } else {
        round.dir_suffix()
    }
}

/// The plan: every configuration by each of its sources, with `none` by the same source before
/// each and after the last, so that every configuration's latency is compared with untraced
/// runs right beside it (`rtrace_measure::sweep::shift`): in a VM the machine's state can change
/// within a round. Without `none` in `plans`, each configuration once per source.
fn interleaved(plans: &[Prepared]) -> Vec<Step> {
    let none = plans.iter().position(|p| p.config == Configuration::None);
    let sources = |i: usize| {
        std::iter::once((i, Source::Builtin))
            .chain(plans[i].cross.is_some().then_some((i, Source::Cyclictest)))
    };
    let mut plan = Vec::new();
    for i in (0..plans.len()).filter(|&i| Some(i) != none) {
        for step in sources(i) {
            if let Some(n) = none.filter(|&n| step.1 == Source::Builtin || plans[n].cross.is_some())
            {
                plan.push((n, step.1));
            }
            plan.push(step);
        }
    }
    if let Some(n) = none {
        plan.extend(sources(n));
    }
    plan
}

/// Attaches `p`'s tracer (if any) to `hook` in process `pid`; trace data goes below `out_dir`.
/// `held`: the program is held before its exec and creates its measuring thread after the
/// attach (cyclictest), whose main thread (the leader) is left out.
fn attach(
    o: &Options,
    p: &Prepared,
    hook: Option<&Hook>,
    pid: u32,
    held: bool,
    out_dir: &Path,
) -> Result<Option<Box<dyn Attachment>>> {
    let (Some(tracer), Some(hook)) = (&p.tracer, hook) else {
        return Ok(None);
    };
    crate::workload::create_dir(out_dir)?;
    let target = o.common.target(hook.clone(), Some(pid), out_dir);
    let target = if held {
        target.following_children().skipping(pid)
    } else {
        target
    };
    tracer.attach(&target).map(Some)
}

/// Stops the tracer and judges its accounting against `hits` (see [`AccountingRule`]).
fn finish(
    attachment: Option<Box<dyn Attachment>>,
    rule: Option<AccountingRule>,
    hits: u64,
) -> Result<Option<Accounting>> {
    let Some(a) = attachment else {
        return Ok(None);
    };
    let stats = a.finish()?;
    let rule = rule.context("a tracer ran in a configuration without accounting")?;
    Ok(Some(Accounting::judge(rule, Events::new(hits, stats))))
}

/// Measures a traced run's data and removes it unless `--keep-traces` keeps it; `None` for a
/// run without tracer.
fn settle(o: &Options, dir: &Path, accounting: Option<&Accounting>) -> Result<Option<TraceData>> {
    let Some(a) = accounting else {
        return Ok(None);
    };
    crate::workload::settle(&o.common, dir, a.ok, a.events.lost > 0).map(Some)
}

/// The workload's cyclic loop under the plan's tracer: one round.
fn run_builtin(o: &Options, p: &Prepared, round: &Round) -> Result<SweepRun> {
    let started = Instant::now();
    let config = WorkloadConfig::Cyclic(CyclicConfig {
        interval_ns: o.interval_us * 1000,
        loops: round.share(o.loops),
        cpu: o.common.cpus.measured,
        main_cpu: Some(o.main_cpu),
        priority: o.priority(),
        fire_event: p.config.space() == Space::User,
        probe_at: o.probe_at,
        fire: match p.config.hook_kind() {
            Some(HookKind::Uprobe | HookKind::Uretprobe) => Fire::Marker,
            _ => Fire::Tracepoint,
        },
        histogram_limit_ns: o.histogram_us * 1000,
    });
    let out_dir = o
        .common
        .out
        .join(format!("{}-builtin{}", p.config, run_suffix(p, round)));
    let env = p
        .tracer
        .as_ref()
        .map_or_else(Vec::new, |t| t.workload_env());
    let (ready, last, attachment) = run_workload_message(&p.workload, &env, &config, |ready| {
        attach(o, p, p.hook.as_ref(), ready.pid, false, &out_dir)
    })?;
    let Message::CyclicDone(done) = last else {
        return Err(crate::workload::outdated(&p.workload, "a cyclic"));
    };
    // User space: one tracepoint per loop; kernel space: one exit per clock_nanosleep call.
    let hits = match p.config.space() {
        Space::Kernel => done.sleeps,
        _ => done.hits,
    };
    let accounting = finish(attachment, p.config.rule(), hits)?;
    let trace_data = settle(o, &out_dir, accounting.as_ref())?;
    let hist = decode_histogram(&done.histogram)?;
    let latency = Summary::of(&hist).context("the workload recorded no latency samples")?;
    // `--probe-at alternate`: the wake-ups without the tracepoint, kept apart.
    let untraced = match &done.untraced {
        Some(h) => Some(Untraced {
            latency: Summary::of(&decode_histogram(h)?)
                .context("the workload recorded no wake-up without its tracepoint")?,
            histogram: h.clone(),
        }),
        None => None,
    };
    let mut this_round = RoundLatency::of(round.index, Some(round.seq), &latency, done.loops);
    this_round.untraced = untraced
        .as_ref()
        .map(|u| (u.latency.p50_ns, u.latency.mean_ns));
    Ok(SweepRun {
        config: p.config,
        source: Source::Builtin,
        tracer: p.config.tracer(),
        hook: p.hook.as_ref().map(Hook::label),
        sites: p
            .hook
            .as_ref()
            .map(Hook::probe_sites)
            .transpose()?
            .unwrap_or_default(),
        program: p.workload.display().to_string(),
        latency,
        histogram: done.histogram,
        overflows: done.overflows,
        loops: done.loops,
        overruns: Some(done.overruns),
        accounting,
        mlocked: Some(ready.mlocked),
        pm_qos_zero: Some(done.pm_qos_zero),
        trace_data,
        wall_s: started.elapsed().as_secs_f64(),
        rounds: vec![this_round],
        untraced,
    })
}

/// rt-tests' cyclictest under the plan's cross-check hook, filtered to its measuring thread:
/// one round.
fn run_cyclictest(
    o: &Options,
    p: &Prepared,
    ct: &cyclictest::Cyclictest,
    round: &Round,
) -> Result<SweepRun> {
    let started = Instant::now();
    let cross = p.cross.as_ref().context("no cross-check planned")?;
    let name = format!("{}-cyclictest{}", p.config, run_suffix(p, round));
    let json = o.common.out.join(format!("{name}.json"));
    let stderr = o.common.out.join(format!("{name}.stderr"));
    let args = cyclictest::args(o, round.share(o.loops), &json);
    let out_dir = o.common.out.join(&name);
    let (report, attachment) = cyclictest::run(ct, &args, &cross.env, &json, &stderr, |pid| {
        attach(o, p, cross.hook.as_ref(), pid, true, &out_dir)
    })?;
    let accounting = finish(attachment, p.config.rule(), report.cycles)?;
    let trace_data = settle(o, &out_dir, accounting.as_ref())?;
    let latency = report.summary().context("cyclictest recorded no samples")?;
    let env: String = cross.env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    let this_round = RoundLatency::of(round.index, Some(round.seq), &latency, report.cycles);
    Ok(SweepRun {
        config: p.config,
        source: Source::Cyclictest,
        tracer: p.config.tracer(),
        hook: cross.hook.as_ref().map(Hook::label),
        sites: (cross.hook.as_ref().map(Hook::probe_sites).transpose()?).unwrap_or_default(),
        program: format!("{env}{} {}", ct.path.display(), args.join(" ")),
        latency,
        histogram: encode_histogram(&report.histogram)?,
        overflows: report.overflows,
        loops: report.cycles,
        overruns: None,
        accounting,
        mlocked: None,
        pm_qos_zero: None,
        trace_data,
        wall_s: started.elapsed().as_secs_f64(),
        rounds: vec![this_round],
        untraced: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Configuration::{KernelEbpf, KernelFtrace, UsdtEbpf, UsdtFtrace};

    fn plan(config: Configuration, cross: bool) -> Prepared {
        Prepared {
            config,
            tracer: None,
            hook: None,
            workload: PathBuf::from("/nonexistent"),
            cross: cross.then(CrossCheck::default),
        }
    }

    use Source::{Builtin as B, Cyclictest as C};

    #[test]
    fn none_runs_by_the_same_source_before_every_configuration_and_after_the_last() {
        let plans = [
            plan(UsdtFtrace, true),
            plan(Configuration::None, true),
            plan(KernelFtrace, false),
        ];
        let want = [
            (1, B),
            (0, B),
            (1, C),
            (0, C),
            (1, B),
            (2, B),
            (1, B),
            (1, C),
        ];
        assert_eq!(interleaved(&plans), want);
    }

    #[test]
    fn without_a_cyclictest_for_none_cross_checks_run_without_neighbours() {
        let plans = [plan(Configuration::None, false), plan(UsdtEbpf, true)];
        assert_eq!(interleaved(&plans), [(0, B), (1, B), (1, C), (0, B)]);
    }

    #[test]
    fn without_none_each_configuration_runs_once_per_source() {
        let plans = [plan(UsdtEbpf, true), plan(KernelEbpf, false)];
        assert_eq!(interleaved(&plans), [(0, B), (0, C), (1, B)]);
    }
}
