//! `rtrace-bench npt`: Beamonte & Dagenais' Non-Preempt Test. A tight TSC loop on the measured
//! CPU records the gaps between its iterations while it fires its probe at a capped rate; each
//! tracer in turn consumes that event stream (its consumer on the harness CPUs), and the run with
//! no tracer is the baseline. Every tracer run is accounted exactly. Nothing changes on the
//! machine before every tracer was checked.

use crate::options::{default_out, default_workload_dir, TracerOptions};
use crate::usdt::{hooks, tracer_options_json, workload_bin};
use crate::{output, tracers};
use anyhow::{bail, Context, Result};
use rtrace_measure::npt::{NptResult, NptRun, NptSettings, Osnoise};
use rtrace_measure::trace_data::{KeepTraces, TraceData};
use rtrace_measure::{run_workload_message, Environment, Events};
use rtrace_protocol::{Body, Message, NptConfig, WorkloadConfig};
use rtrace_tracer::{Hook, Target, Tracer, TracerKind};
use std::path::PathBuf;

/// `npt`'s options, checked.
#[derive(Debug, Clone)]
pub struct NptOptions {
    pub tracers: Vec<TracerKind>,
    pub duration_ms: u64,
    pub event_rate_hz: f64,
    pub cpus: crate::cpus::Cpus,
    pub priority: Option<i32>,
    pub tracer: TracerOptions,
    pub json: Option<PathBuf>,
    pub out: PathBuf,
    pub out_given: bool,
    pub workload_dir: PathBuf,
}

impl TryFrom<crate::cli::NptArgs> for NptOptions {
    type Error = anyhow::Error;

    fn try_from(a: crate::cli::NptArgs) -> Result<NptOptions> {
        if a.duration_ms == 0 {
            bail!("--duration-ms must be at least 1");
        }
        if !(a.event_rate.is_finite() && a.event_rate >= 0.0) {
            bail!("--event-rate must be 0 (no events) or a positive rate, e.g. --event-rate 10000");
        }
        if let Some(p) = a.priority {
            if !(1..=99).contains(&p) {
                bail!("--priority {p} is not a SCHED_FIFO priority: use 1..99");
            }
        }
        // The run without a tracer is the baseline of every other: always first.
        let mut tracers = vec![TracerKind::None];
        tracers.extend(
            crate::options::tracer_kinds(&a.tracer)
                .into_iter()
                .filter(|k| *k != TracerKind::None),
        );
        Ok(NptOptions {
            tracers,
            duration_ms: a.duration_ms,
            event_rate_hz: a.event_rate,
            cpus: crate::cpus::Cpus::from_request(a.cpu)?,
            priority: a.priority,
            tracer: a.tracer_args.into(),
            json: a.json,
            out_given: a.out.is_some(),
            out: a.out.unwrap_or_else(|| default_out("npt")),
            workload_dir: a.workload_dir.unwrap_or_else(default_workload_dir),
        })
    }
}

/// One tracer variant (or no tracer), checked.
struct Subject {
    kind: TracerKind,
    variant: Option<String>,
    buffer: String,
    tracer: Option<Box<dyn Tracer>>,
    workload: PathBuf,
    hook: Hook,
}

impl Subject {
    fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{} ({v})", self.kind),
            None => self.kind.to_string(),
        }
    }
}

fn subjects(o: &NptOptions) -> (Vec<Subject>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for &kind in &o.tracers {
        let made = (|| -> Result<Vec<Subject>> {
            let instrumentation = kind.instrumentation();
            let workload = workload_bin(&o.workload_dir, instrumentation);
            if !workload.is_file() {
                bail!(
                    "workload binary {} not found: build it with `cargo build --release` or pass --workload-dir DIR",
                    workload.display()
                );
            }
            let (hook, _) = hooks(
                &workload,
                instrumentation,
                rtrace_measure::usdt::HookKind::Usdt,
            )?;
            if kind == TracerKind::None {
                return Ok(vec![Subject {
                    kind,
                    variant: None,
                    buffer: String::new(),
                    tracer: None,
                    workload,
                    hook,
                }]);
            }
            let buffer = tracers::buffers(&[kind], &o.tracer)?
                .into_values()
                .next()
                .unwrap_or_default();
            let mut made = Vec::new();
            for v in tracers::variants(kind, &o.tracer)? {
                v.tracer.check(&hook)?;
                made.push(Subject {
                    kind,
                    variant: v.name.map(str::to_owned),
                    buffer: buffer.clone(),
                    tracer: Some(v.tracer),
                    workload: workload.clone(),
                    hook: hook.clone(),
                });
            }
            Ok(made)
        })();
        match made {
            Ok(m) => out.extend(m),
            Err(e) => skipped.push(format!("{kind}: {e:#}")),
        }
    }
    (out, skipped)
}

pub fn run(mut o: NptOptions) -> Result<i32> {
    let (subjects, skipped) = subjects(&o);
    if !subjects.iter().any(|s| s.tracer.is_some()) && o.tracers.len() > 1 {
        bail!("no tracer can run here ({})", skipped.join("; "));
    }
    for s in &skipped {
        eprintln!("note: {s}");
    }
    let started = crate::start::start(&o.cpus, &o.out, o.out_given, o.json.as_deref())?;
    o.cpus = started.cpus.clone();
    o.out = started.out.clone();
    let mut result = NptResult {
        experiment: "npt".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_unix: crate::start::now_unix(),
        environment: Environment::collect(o.cpus.measured),
        config: NptSettings {
            duration_ms: o.duration_ms,
            event_rate_hz: o.event_rate_hz,
            cpu: o.cpus.measured,
            priority: o.priority,
            tracer_options: tracer_options_json(&o.tracer),
        },
        runs: Vec::new(),
        osnoise: Osnoise::Absent("not run yet".into()),
        failed: skipped,
    };
    write_json(&o, &result)?;
    let progress = crate::progress::Progress::new(subjects.len() as u64 + 1);
    for (seq, s) in subjects.iter().enumerate() {
        progress.start(format!(
            "{}: the npt loop for {} ms",
            s.label(),
            o.duration_ms
        ));
        let run = one(&o, s, seq);
        progress.done();
        if rtrace_measure::spawn::interrupted() {
            return Err(rtrace_measure::WorkloadError::Interrupted.into());
        }
        match run {
            Ok(r) => result.runs.push(r),
            Err(e) => {
                eprintln!("error: {}: {e:#}", s.label());
                result.failed.push(format!("{}: {e:#}", s.label()));
            }
        }
        write_json(&o, &result)?;
    }
    progress.start("rtla osnoise, where this kernel has it".into());
    result.osnoise = osnoise(&o);
    progress.done();
    progress.finish();
    write_json(&o, &result)?;
    let one = rtrace_report::Report::one(rtrace_report::AnyResult::Npt(result.clone()));
    let report = crate::report::write_dir(&o.out, &one)?;
    print!(
        "{}",
        rtrace_report::terminal::text(&one, crate::report::paint())
    );
    eprintln!("results: {}", o.out.display());
    eprintln!("report: {}", report.display());
    if !result.failed.is_empty() {
        bail!("{} run(s) failed (see above)", result.failed.len());
    }
    Ok(0)
}

/// One npt run under `s`'s tracer, accounted exactly; its trace data is counted and removed.
fn one(o: &NptOptions, s: &Subject, seq: usize) -> Result<NptRun> {
    let config = WorkloadConfig::Npt(NptConfig {
        duration_ns: o.duration_ms * 1_000_000,
        event_rate_hz: o.event_rate_hz,
        cpu: o.cpus.measured,
        priority: o.priority,
        body: Body::Event,
    });
    let out_dir = o.out.join(format!("run-{seq}"));
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let env = s
        .tracer
        .as_ref()
        .map(|t| t.workload_env())
        .unwrap_or_default();
    let (_, last, attachment) = run_workload_message(&s.workload, &env, &config, |ready| {
        let Some(tracer) = &s.tracer else {
            return Ok(None);
        };
        let target = Target {
            hook: s.hook.clone(),
            pid: Some(ready.pid),
            follow_children: false,
            skip_tid: None,
            out_dir: out_dir.clone(),
            consumer_cpus: o.cpus.harness.clone(),
            buffer_size_kb: o.tracer.buffer_size_kb,
            record: o.tracer.record,
        };
        tracer.attach(&target).map(Some)
    })?;
    let Message::NptDone(done) = last else {
        bail!(
            "{} answered without an npt result: rebuild the workload binaries (`cargo build --release`)",
            s.workload.display()
        );
    };
    let events = match attachment {
        Some(a) => {
            let events = Events::new(done.hits, a.finish()?);
            events.check_exact()?;
            TraceData::settle(&out_dir, KeepTraces::None, true, events.lost > 0).with_context(
                || format!("cannot settle the trace data in {}", out_dir.display()),
            )?;
            Some(events)
        }
        None => {
            let _ = std::fs::remove_dir(&out_dir);
            None
        }
    };
    Ok(NptRun::new(
        s.kind,
        s.variant.clone(),
        s.buffer.clone(),
        done,
        events,
    )?)
}

/// `rtla osnoise top` on the measured CPU for the run's duration where the kernel has the
/// osnoise tracer; otherwise why not.
fn osnoise(o: &NptOptions) -> Osnoise {
    let tracers = match rtrace_ftrace::Tracefs::find() {
        Some(t) => t.read("available_tracers").unwrap_or_default(),
        None => return Osnoise::Absent("tracefs is not mounted".into()),
    };
    if !tracers.split_whitespace().any(|t| t == "osnoise") {
        return Osnoise::Absent(format!(
            "this kernel has no osnoise tracer (CONFIG_OSNOISE_TRACER is off: available_tracers lists only {})",
            tracers.split_whitespace().collect::<Vec<_>>().join(", ")
        ));
    }
    let seconds = o.duration_ms.div_ceil(1000).max(1);
    let out = std::process::Command::new("rtla")
        .args(["osnoise", "top", "-q", "-c"])
        .arg(o.cpus.measured.to_string())
        .args(["-d", &format!("{seconds}s")])
        .output();
    match out {
        Ok(out) if out.status.success() => {
            Osnoise::Measured(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Ok(out) => Osnoise::Absent(format!(
            "rtla osnoise failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Osnoise::Absent(format!(
            "the kernel has osnoise but rtla does not run ({e}): apt install rtla"
        )),
    }
}

fn write_json(o: &NptOptions, r: &NptResult) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(r)?;
    let default = o.out.join("npt.json");
    for path in std::iter::once(&default).chain(o.json.as_ref()) {
        output::write_atomic(path, &bytes)?;
    }
    Ok(())
}
