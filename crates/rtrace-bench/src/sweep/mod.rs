//! `rtrace-bench cyclictest-sweep`: wake-up latency of a cyclictest-style loop under each tracer
//! configuration (thesis §3.4, Figs 3.3 and 3.4), one configuration after another with the same
//! parameters, and rt-tests' cyclictest as a cross-check where no instrumentation is needed.
//!
//! Every configuration is preflighted (`Tracer::check`) before anything on the machine changes;
//! one that cannot run here is reported with the reason. The JSON result is rewritten after every
//! run, so an interruption loses nothing already measured.

mod cyclictest;
pub mod options;

use crate::usdt::{tracer_options_json, workload_bin};
use crate::{signals, tracers};
use anyhow::{bail, Context, Result};
use options::SweepOptions;
use rtrace_measure::sweep::{
    Accounting, AccountingRule, Configuration, Skipped, Source, Space, SweepConfig, SweepResult,
    SweepRun, NANOSLEEP_EXIT,
};
use rtrace_measure::trace_data::TraceData;
use rtrace_measure::{run_workload_message, Environment, Events, Summary, WorkloadError};
use rtrace_protocol::{decode_histogram, encode_histogram, CyclicConfig, Message, WorkloadConfig};
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
        });
    };
    let hook = match (config.space(), config.instrumentation()) {
        (Space::User, Instrumentation::Usdt) => Hook::Usdt {
            binary: workload.clone(),
            sites: rtrace_sdt::find(&workload, "rtrace", "event")?,
        },
        (Space::User, Instrumentation::LttngUst) => Hook::LttngUst {
            provider: "rtrace".into(),
            event: "event".into(),
        },
        _ => Hook::KernelTracepoint {
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
    })
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
    let cyclictest = if plans.iter().any(|p| p.config.cross_checked()) {
        match cyclictest::find(&o.cyclictest) {
            Ok(c) => c,
            Err(e) => {
                for p in plans.iter().filter(|p| p.config.cross_checked()) {
                    unavailable.push(Skipped {
                        config: p.config,
                        source: Some(Source::Cyclictest),
                        reason: format!("{e:#}"),
                    });
                }
                None
            }
        }
    } else {
        None
    };
    if plans.is_empty() {
        let reasons: Vec<String> = unavailable
            .iter()
            .map(|u| format!("{}: {}", u.config, u.reason))
            .collect();
        bail!("no configuration can run here ({})", reasons.join("; "));
    }
    for u in &unavailable {
        let what = u.source.map_or(String::new(), |s| format!(" {s}"));
        eprintln!("note: {}{what} unavailable: {}", u.config, u.reason);
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
    signals::pin_harness(&o.cpus.harness)?;
    signals::install();
    tracers::remove_stale()?;
    std::fs::create_dir_all(&o.out)
        .with_context(|| format!("cannot create output directory {}", o.out.display()))?;

    let mut result = SweepResult {
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
    write_json(&o, &result)?;

    let cross_checks = |p: &Plan| cyclictest.is_some() && p.config.cross_checked();
    let steps = plans.iter().map(|p| 1 + cross_checks(p) as u64).sum();
    let progress = crate::progress::Progress::new(steps);
    for p in &plans {
        progress.start(format!(
            "{} builtin ({}): {} loops every {} us",
            p.config,
            p.config.describe(),
            o.loops,
            o.interval_us
        ));
        let builtin = run_builtin(&o, p);
        record(&mut result, p.config, Source::Builtin, builtin)?;
        write_json(&o, &result)?;
        progress.done();
        if let Some(ct) = cyclictest.as_ref().filter(|_| cross_checks(p)) {
            progress.start(format!("{} cyclictest", p.config));
            let cross = run_cyclictest(&o, p, ct);
            record(&mut result, p.config, Source::Cyclictest, cross)?;
            write_json(&o, &result)?;
            progress.done();
        }
    }
    progress.finish();
    let report = crate::report::write_dir(
        &o.out,
        &rtrace_report::Report::one(rtrace_report::AnyResult::Sweep(result.clone())),
    )?;

    print!("{}", rtrace_report::sweep_terminal::sweep(&result));
    let warnings = rtrace_measure::warnings::sweep(&result);
    print!(
        "{}",
        rtrace_report::terminal::warnings(&warnings, crate::report::paint())
    );
    if let Some(j) = &o.json {
        eprintln!("results: {}", j.display());
    }
    eprintln!(
        "results, cyclictest files and trace data: {}",
        o.out.display()
    );
    eprintln!("report: {}", report.display());
    let mut problems: Vec<String> = result
        .failed
        .iter()
        .map(|f| format!("{} {} failed", f.config, f.source.map_or("", Source::name)))
        .collect();
    problems.extend(
        result
            .runs
            .iter()
            .filter(|r| r.accounting.as_ref().is_some_and(|a| !a.ok))
            .map(|r| format!("{} {}: event accounting failed", r.config, r.source)),
    );
    if !problems.is_empty() {
        bail!("{} (see the table above)", problems.join("; "));
    }
    Ok(0)
}

/// Keeps a finished run, or its error in `failed`. An interruption is returned as is: the
/// caller unwinds (dropping every attachment) and exits.
fn record(
    result: &mut SweepResult,
    config: Configuration,
    source: Source,
    run: Result<SweepRun>,
) -> Result<()> {
    if rtrace_measure::spawn::interrupted() {
        // Ctrl-C sent to the whole process group may end a run "successfully" (cyclictest stops
        // early on SIGINT): keep nothing measured after the interruption.
        return Err(run
            .err()
            .unwrap_or_else(|| WorkloadError::Interrupted.into()));
    }
    match run {
        Ok(r) => result.runs.push(r),
        Err(e) => {
            eprintln!("error: {config} {source}: {e:#}");
            result.failed.push(Skipped {
                config,
                source: Some(source),
                reason: format!("{e:#}"),
            });
        }
    }
    Ok(())
}

fn write_json(o: &SweepOptions, r: &SweepResult) -> Result<()> {
    let r = &SweepResult {
        warnings: rtrace_measure::warnings::sweep(r),
        ..r.clone()
    };
    let bytes = rtrace_report::json::sweep(r)?;
    let default = o.out.join("cyclictest-sweep.json");
    for path in std::iter::once(&default).chain(o.json.as_ref()) {
        crate::output::write_atomic(path, &bytes)?;
    }
    Ok(())
}

/// Attaches the plan's tracer (if any) to `pid`; trace data goes below `out_dir`.
/// `follow_children`: the program creates its measuring thread after the attach (cyclictest).
fn attach(
    o: &SweepOptions,
    p: &Plan,
    pid: u32,
    follow_children: bool,
    out_dir: &Path,
) -> Result<Option<Box<dyn Attachment>>> {
    let (Some(tracer), Some(hook)) = (&p.tracer, &p.hook) else {
        return Ok(None);
    };
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let target = Target {
        hook: hook.clone(),
        pid: Some(pid),
        follow_children,
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

/// The workload's cyclic loop under the plan's tracer.
fn run_builtin(o: &SweepOptions, p: &Plan) -> Result<SweepRun> {
    let started = Instant::now();
    let config = WorkloadConfig::Cyclic(CyclicConfig {
        interval_ns: o.interval_us * 1000,
        loops: o.loops,
        cpu: o.cpus.measured,
        main_cpu: Some(o.main_cpu),
        priority: o.priority,
        fire_event: p.config.space() == Space::User,
        probe_at: o.probe_at,
        histogram_limit_ns: o.histogram_us * 1000,
    });
    let out_dir = o.out.join(format!("{}-builtin", p.config));
    let env = p
        .tracer
        .as_ref()
        .map_or_else(Vec::new, |t| t.workload_env());
    let (ready, last, attachment) = run_workload_message(&p.workload, &env, &config, |ready| {
        attach(o, p, ready.pid, false, &out_dir)
    })?;
    let Message::CyclicDone(done) = last else {
        bail!(
            "{} answered without a cyclic result: rebuild the workload binaries (`cargo build --release`)",
            p.workload.display()
        );
    };
    let rule = p.config.rule();
    let hits = match rule {
        Some(AccountingRule::AtLeast) => done.sleeps,
        _ => done.hits,
    };
    let accounting = finish(attachment, rule, hits)?;
    let trace_data = settle(o, &out_dir, accounting.as_ref())?;
    let hist = decode_histogram(&done.histogram)?;
    Ok(SweepRun {
        config: p.config,
        source: Source::Builtin,
        tracer: p.config.tracer(),
        hook: p.hook.as_ref().map(Hook::label),
        program: p.workload.display().to_string(),
        latency: Summary::of(&hist).context("the workload recorded no latency samples")?,
        histogram: done.histogram,
        overflows: done.overflows,
        loops: done.loops,
        overruns: Some(done.overruns),
        accounting,
        mlocked: Some(ready.mlocked),
        pm_qos_zero: Some(done.pm_qos_zero),
        trace_data,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// rt-tests' cyclictest under the plan's tracer, filtered to its pid.
fn run_cyclictest(o: &SweepOptions, p: &Plan, ct: &cyclictest::Cyclictest) -> Result<SweepRun> {
    let started = Instant::now();
    let json = o.out.join(format!("{}-cyclictest.json", p.config));
    let stderr = o.out.join(format!("{}-cyclictest.stderr", p.config));
    let args = cyclictest::args(o, &json);
    let out_dir = o.out.join(format!("{}-cyclictest", p.config));
    let (report, attachment) = cyclictest::run(ct, &args, &json, &stderr, |pid| {
        attach(o, p, pid, true, &out_dir)
    })?;
    let accounting = finish(attachment, p.config.rule(), report.cycles)?;
    let trace_data = settle(o, &out_dir, accounting.as_ref())?;
    Ok(SweepRun {
        config: p.config,
        source: Source::Cyclictest,
        tracer: p.config.tracer(),
        hook: p.hook.as_ref().map(Hook::label),
        program: format!("{} {}", ct.path.display(), args.join(" ")),
        latency: report.summary().context("cyclictest recorded no samples")?,
        histogram: encode_histogram(&report.histogram)?,
        overflows: report.overflows,
        loops: report.cycles,
        overruns: None,
        accounting,
        mlocked: None,
        pm_qos_zero: None,
        trace_data,
        wall_s: started.elapsed().as_secs_f64(),
    })
}
