//! `rtrace-bench cyclictest-sweep`: wake-up latency of a cyclictest-style loop under each tracer
//! configuration (thesis §3.4, Figs 3.3 and 3.4), one configuration after another with the same
//! parameters, and rt-tests' cyclictest as a cross-check where no instrumentation is needed.
//!
//! Every configuration is preflighted (`Tracer::check`) before anything on the machine changes;
//! one that cannot run here is reported with the reason. The JSON result is rewritten after every
//! run, so an interruption loses nothing already measured.

pub(crate) mod cyclictest;
pub mod options;

use crate::runner::{self, Round, Setup};
use crate::tracers;
use crate::usdt::{tracer_options_json, workload_bin};
use anyhow::{bail, Context, Result};
use options::SweepOptions;
use rtrace_measure::sweep::{
    Accounting, AccountingRule, Configuration, RoundLatency, Skipped, Source, Space, SweepConfig,
    SweepResult, SweepRun, Untraced, NANOSLEEP_EXIT,
};
use rtrace_measure::trace_data::TraceData;
use rtrace_measure::usdt::HookKind;
use rtrace_measure::{run_workload_message, Environment, Events, Summary};
use rtrace_protocol::{
    decode_histogram, encode_histogram, CyclicConfig, Fire, Message, WorkloadConfig,
};
use rtrace_tracer::{Attachment, Hook, Instrumentation, Target, Tracer};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A configuration that passed preflight.
struct Plan {
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
struct CrossCheck {
    hook: Option<Hook>,
    /// Environment of cyclictest only (the LTTng preload library).
    env: Vec<(String, String)>,
}

/// Builds and checks one configuration; changes nothing.
fn prepare(o: &SweepOptions, config: Configuration) -> Result<Plan> {
    let bin = workload_bin(&o.workload_dir, config.instrumentation());
    let workload = std::fs::canonicalize(&bin).with_context(|| {
        format!(
            "workload binary {} not found: build it with `cargo build --release` or pass --workload-dir DIR",
            bin.display()
        )
    })?;
    let Some(tracer) = tracers::build(config.tracer(), &o.tracer)? else {
        return Ok(Plan {
            config,
            tracer: None,
            hook: None,
            workload,
            cross: None,
        });
    };
    let hook = match (config.hook_kind(), config.instrumentation()) {
        (Some(kind @ (HookKind::Uprobe | HookKind::Uretprobe)), _) => Hook::uprobe(
            &workload,
            rtrace_protocol::MARKER_HIT,
            kind == HookKind::Uretprobe,
        )?,
        (Some(_), Instrumentation::Usdt) => Hook::Usdt {
            binary: workload.clone(),
            sites: rtrace_sdt::find(&workload, "rtrace", "event")?,
        },
        (Some(_), Instrumentation::LttngUst) => Hook::LttngUst {
            provider: "rtrace".into(),
            event: "event".into(),
        },
        (None, _) => Hook::KernelTracepoint {
            category: NANOSLEEP_EXIT.0.into(),
            name: NANOSLEEP_EXIT.1.into(),
        },
    };
    tracer.check(&hook)?;
    Ok(Plan {
        config,
        tracer: Some(tracer),
        hook: Some(hook),
        workload,
        cross: None,
    })
}

/// How the real cyclictest is traced in `p`'s configuration (see [`cross_hook`]), checked.
fn prepare_cross(o: &SweepOptions, p: &Plan) -> Result<CrossCheck> {
    let Some(tracer) = &p.tracer else {
        return Ok(CrossCheck {
            hook: None,
            env: Vec::new(),
        });
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
    o: &SweepOptions,
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
            let lib = o.workload_dir.join(cyclictest::PRELOAD);
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
    o: SweepOptions,
    plans: Vec<Plan>,
    cyclictest: Option<cyclictest::Cyclictest>,
    result: SweepResult,
}

/// One entry of the plan: a configuration (index into `plans`) measured by one source.
type Step = (usize, Source);

impl runner::Experiment for Sweep {
    const NAME: &'static str = "cyclictest-sweep";
    type Step = Step;
    type Run = SweepRun;

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

    fn runs(&mut self) -> &mut Vec<SweepRun> {
        &mut self.result.runs
    }

    fn failed(&mut self, &(i, source): &Step, error: anyhow::Error) -> Result<()> {
        self.result.failed.push(Skipped {
            config: self.plans[i].config,
            source: Some(source),
            reason: format!("{error:#}"),
        });
        Ok(())
    }

    fn json(&mut self) -> Result<Vec<u8>> {
        self.result.warnings = rtrace_measure::warnings::sweep(&self.result);
        self.result().to_json()
    }

    fn result(&self) -> rtrace_report::AnyResult {
        rtrace_report::AnyResult::Sweep(self.result.clone())
    }

    fn terminal(&self) -> String {
        rtrace_report::terminal::text(
            &rtrace_report::Report::one(self.result()),
            crate::report::paint(),
        )
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

pub fn run(mut o: SweepOptions) -> Result<i32> {
    let mut unavailable = Vec::new();
    let mut plans = Vec::new();
    for &config in &o.configs {
        match prepare(&o, config) {
            Ok(p) => plans.push(p),
            Err(e) => unavailable.push(Skipped {
                config,
                source: None,
                reason: format!("{e:#}"),
            }),
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
            for p in &plans {
                unavailable.push(Skipped {
                    config: p.config,
                    source: Some(Source::Cyclictest),
                    reason: format!("{e:#}"),
                });
            }
            None
        }
    };
    if cyclictest.is_some() {
        for p in &mut plans {
            match prepare_cross(&o, p) {
                Ok(c) => p.cross = Some(c),
                Err(e) => unavailable.push(Skipped {
                    config: p.config,
                    source: Some(Source::Cyclictest),
                    reason: format!("{e:#}"),
                }),
            }
        }
    }

    // Every check passed; take the CPUs and the output directory (the first changes).
    if let Some(j) = &o.json {
        crate::output::check_file("--json", j)?;
    }
    let (cpus, _cpu) = o.cpus.claim()?;
    o.cpus = cpus;
    o.main_cpu = options::main_cpu(o.main_cpu_requested, &o.cpus, &crate::cpus::usable())?;
    let run_dir = crate::output::claim_dir("--out", &o.out, o.out_given)?;
    o.out = run_dir.path.clone();

    let result = SweepResult {
        experiment: "cyclictest-sweep".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        environment: Environment::collect(o.cpus.measured),
        config: SweepConfig {
            configs: o.configs.clone(),
            shuffle_seed: o.shuffle_seed,
            interval_us: o.interval_us,
            loops: o.loops,
            rounds: Some(o.rounds),
            cpu: o.cpus.measured,
            main_cpu: o.main_cpu,
            harness_cpus: o.cpus.harness.clone(),
            priority: o.priority,
            histogram_limit_us: o.histogram_us,
            buffer_size_kb: o.tracer.buffer_size_kb,
            probe_at: Some(o.probe_at),
            keep_traces: Some(o.keep_traces),
            tracer_options: tracer_options_json(&o.tracer),
            cyclictest: cyclictest.as_ref().map(|c| c.path.display().to_string()),
            cyclictest_version: cyclictest.as_ref().map(|c| c.version.clone()),
        },
        runs: Vec::new(),
        unavailable,
        failed: Vec::new(),
        warnings: Vec::new(),
    };
    let plan = interleaved(&plans);
    let setup = Setup {
        out: o.out.clone(),
        json: o.json.clone(),
        harness: o.cpus.harness.clone(),
        rounds: o.rounds,
    };
    let mut sweep = Sweep {
        o,
        plans,
        cyclictest,
        result,
    };
    runner::run(&mut sweep, &plan, &setup)
}

/// Suffix of a run's files: its round, and for `none`, which runs several times a round, its
/// position too.
fn run_suffix(p: &Plan, round: &Round) -> String {
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
fn interleaved(plans: &[Plan]) -> Vec<Step> {
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

/// Attaches `tracer` (if any) to `hook` in process `pid`; trace data goes below `out_dir`.
/// `held`: the program is held before its exec and creates its measuring thread after the
/// attach (cyclictest), whose main thread (the leader) is left out.
fn attach(
    o: &SweepOptions,
    tracer: Option<&dyn Tracer>,
    hook: Option<&Hook>,
    pid: u32,
    held: bool,
    out_dir: &Path,
) -> Result<Option<Box<dyn Attachment>>> {
    let (Some(tracer), Some(hook)) = (tracer, hook) else {
        return Ok(None);
    };
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let target = Target {
        hook: hook.clone(),
        pid: Some(pid),
        follow_children: held,
        skip_tid: held.then_some(pid),
        out_dir: out_dir.to_owned(),
        consumer_cpus: o.cpus.harness.clone(),
        buffer_size_kb: o.tracer.buffer_size_kb,
        record: o.tracer.record,
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
fn settle(
    o: &SweepOptions,
    dir: &Path,
    accounting: Option<&Accounting>,
) -> Result<Option<TraceData>> {
    let Some(a) = accounting else {
        return Ok(None);
    };
    TraceData::settle(dir, o.keep_traces, a.ok, a.events.lost > 0)
        .map(Some)
        .with_context(|| format!("cannot settle the trace data in {}", dir.display()))
}

/// The workload's cyclic loop under the plan's tracer: one round.
fn run_builtin(o: &SweepOptions, p: &Plan, round: &Round) -> Result<SweepRun> {
    let started = Instant::now();
    let config = WorkloadConfig::Cyclic(CyclicConfig {
        interval_ns: o.interval_us * 1000,
        loops: round.share(o.loops),
        cpu: o.cpus.measured,
        main_cpu: Some(o.main_cpu),
        priority: o.priority,
        fire_event: p.config.space() == Space::User,
        probe_at: o.probe_at,
        fire: match p.config.hook_kind() {
            Some(HookKind::Uprobe | HookKind::Uretprobe) => Fire::Marker,
            _ => Fire::Tracepoint,
        },
        histogram_limit_ns: o.histogram_us * 1000,
    });
    let out_dir = o
        .out
        .join(format!("{}-builtin{}", p.config, run_suffix(p, round)));
    let env = p
        .tracer
        .as_ref()
        .map_or_else(Vec::new, |t| t.workload_env());
    let (ready, last, attachment) = run_workload_message(&p.workload, &env, &config, |ready| {
        attach(
            o,
            p.tracer.as_deref(),
            p.hook.as_ref(),
            ready.pid,
            false,
            &out_dir,
        )
    })?;
    let Message::CyclicDone(done) = last else {
        bail!(
            "{} answered without a cyclic result: rebuild the workload binaries (`cargo build --release`)",
            p.workload.display()
        );
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
    o: &SweepOptions,
    p: &Plan,
    ct: &cyclictest::Cyclictest,
    round: &Round,
) -> Result<SweepRun> {
    let started = Instant::now();
    let cross = p.cross.as_ref().context("no cross-check planned")?;
    let name = format!("{}-cyclictest{}", p.config, run_suffix(p, round));
    let json = o.out.join(format!("{name}.json"));
    let stderr = o.out.join(format!("{name}.stderr"));
    let args = cyclictest::args(o, round.share(o.loops), &json);
    let out_dir = o.out.join(&name);
    let (report, attachment) = cyclictest::run(ct, &args, &cross.env, &json, &stderr, |pid| {
        attach(
            o,
            p.tracer.as_deref(),
            cross.hook.as_ref(),
            pid,
            true,
            &out_dir,
        )
    })?;
    let accounting = finish(attachment, p.config.rule(), report.cycles)?;
    let trace_data = settle(o, &out_dir, accounting.as_ref())?;
    let latency = report.summary().context("cyclictest recorded no samples")?;
    let env: String = cross.env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    Ok(SweepRun {
        config: p.config,
        source: Source::Cyclictest,
        tracer: p.config.tracer(),
        hook: cross.hook.as_ref().map(Hook::label),
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
        rounds: vec![RoundLatency::of(
            round.index,
            Some(round.seq),
            &latency,
            report.cycles,
        )],
        untraced: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(config: Configuration, cross: bool) -> Plan {
        Plan {
            config,
            tracer: None,
            hook: None,
            workload: PathBuf::from("/nonexistent"),
            cross: cross.then(|| CrossCheck {
                hook: None,
                env: Vec::new(),
            }),
        }
    }

    use Source::{Builtin as B, Cyclictest as C};

    #[test]
    fn none_runs_by_the_same_source_before_every_configuration_and_after_the_last() {
        let plans = [
            plan(Configuration::UsdtFtrace, true),
            plan(Configuration::None, true),
            plan(Configuration::KernelFtrace, false),
        ];
        assert_eq!(
            interleaved(&plans),
            [
                (1, B),
                (0, B),
                (1, C),
                (0, C),
                (1, B),
                (2, B),
                (1, B),
                (1, C)
            ]
        );
    }

    #[test]
    fn without_a_cyclictest_for_none_cross_checks_run_without_neighbours() {
        let plans = [
            plan(Configuration::None, false),
            plan(Configuration::UsdtEbpf, true),
        ];
        assert_eq!(interleaved(&plans), [(0, B), (1, B), (1, C), (0, B)]);
    }

    #[test]
    fn without_none_each_configuration_runs_once_per_source() {
        let plans = [
            plan(Configuration::UsdtEbpf, true),
            plan(Configuration::KernelEbpf, false),
        ];
        assert_eq!(interleaved(&plans), [(0, B), (0, C), (1, B)]);
    }
}
