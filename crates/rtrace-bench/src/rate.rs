//! `rtrace-bench rate`: the highest event rate each tracer records without loss, per buffer
//! size (Beamonte & Dagenais). The workload fires its probe at a fixed rate for a fixed time;
//! `rtrace_measure::rate::search` climbs, bisects and confirms; every point is accounted
//! exactly. Nothing changes on the machine before every tracer was checked.

use crate::options::{default_out, default_workload_dir, TracerOptions};
use crate::usdt::{hooks, tracer_options_json, workload_bin};
use crate::{output, tracers};
use anyhow::{bail, Context, Result};
use rtrace_measure::rate::{search, Phase, Point, RateResult, RateSettings, Search, SearchPlan};
use rtrace_measure::trace_data::{KeepTraces, TraceData};
use rtrace_measure::{run_workload_message, Environment, Events};
use rtrace_protocol::{Body, Message, RateConfig, WorkloadConfig};
use rtrace_tracer::{Hook, Target, Tracer, TracerKind};
use std::path::PathBuf;

/// `rate`'s options, checked.
#[derive(Debug, Clone)]
pub struct RateOptions {
    pub tracers: Vec<TracerKind>,
    pub buffer_sizes_kb: Vec<u64>,
    pub duration_ms: u64,
    pub plan: SearchPlan,
    pub cpus: crate::cpus::Cpus,
    /// `--threads`: firing threads, at least 1.
    pub threads: usize,
    pub priority: Option<i32>,
    pub tracer: TracerOptions,
    pub json: Option<PathBuf>,
    pub out: PathBuf,
    pub out_given: bool,
    pub workload_dir: PathBuf,
}

impl TryFrom<crate::cli::RateArgs> for RateOptions {
    type Error = anyhow::Error;

    fn try_from(a: crate::cli::RateArgs) -> Result<RateOptions> {
        if a.duration_ms == 0 {
            bail!("--duration-ms must be at least 1");
        }
        if a.buffer_sizes_kb.is_empty() || a.buffer_sizes_kb.contains(&0) {
            bail!(
                "--buffer-sizes-kb needs sizes of at least 1 KiB, e.g. --buffer-sizes-kb 256,4096"
            );
        }
        if !(a.start_rate > 0.0 && a.max_rate >= a.start_rate) {
            bail!("--start-rate must be positive and at most --max-rate");
        }
        if let Some(p) = a.priority {
            if !(1..=99).contains(&p) {
                bail!("--priority {p} is not a SCHED_FIFO priority: use 1..99");
            }
        }
        let tracers: Vec<TracerKind> = crate::options::tracer_kinds(&a.tracer)
            .into_iter()
            .filter(|k| *k != TracerKind::None)
            .collect();
        if tracers.is_empty() {
            bail!("--tracer names no tracer: pick ftrace, ebpf, lttng, bpftrace or all");
        }
        let cpus = crate::cpus::Cpus::from_request(a.cpu)?;
        crate::options::check_threads(&cpus, a.threads)?;
        Ok(RateOptions {
            tracers,
            buffer_sizes_kb: a.buffer_sizes_kb,
            duration_ms: a.duration_ms,
            plan: SearchPlan {
                start_hz: a.start_rate,
                max_hz: a.max_rate,
                bisections: a.bisections,
                ..SearchPlan::default()
            },
            cpus,
            threads: a.threads,
            priority: a.priority,
            tracer: a.tracer_args.into(),
            json: a.json,
            out_given: a.out.is_some(),
            out: a.out.unwrap_or_else(|| default_out("rate")),
            workload_dir: a.workload_dir.unwrap_or_else(default_workload_dir),
        })
    }
}

/// One tracer variant at one buffer size, checked.
struct Subject {
    kind: TracerKind,
    variant: Option<String>,
    buffer_size_kb: u64,
    buffer: String,
    tracer: Box<dyn Tracer>,
    workload: PathBuf,
    hook: Hook,
}

fn subjects(o: &RateOptions) -> (Vec<Subject>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for &kind in &o.tracers {
        for &kb in &o.buffer_sizes_kb {
            let opts = TracerOptions {
                buffer_size_kb: Some(kb),
                ..o.tracer.clone()
            };
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
                let buffer = tracers::buffers(&[kind], &opts)?
                    .into_values()
                    .next()
                    .unwrap_or_default();
                let mut made = Vec::new();
                for v in tracers::variants(kind, &opts)? {
                    v.tracer.check(&hook)?;
                    made.push(Subject {
                        kind,
                        variant: v.name.map(str::to_owned),
                        buffer_size_kb: kb,
                        buffer: buffer.clone(),
                        tracer: v.tracer,
                        workload: workload.clone(),
                        hook: hook.clone(),
                    });
                }
                Ok(made)
            })();
            match made {
                Ok(m) => out.extend(m),
                Err(e) => skipped.push(format!("{kind} at {kb} KiB: {e:#}")),
            }
        }
    }
    (out, skipped)
}

pub fn run(mut o: RateOptions) -> Result<i32> {
    let (subjects, skipped) = subjects(&o);
    if subjects.is_empty() {
        bail!("no tracer can run here ({})", skipped.join("; "));
    }
    for s in &skipped {
        eprintln!("note: {s}");
    }
    let started = crate::start::start(&o.cpus, &o.out, o.out_given, o.json.as_deref())?;
    o.cpus = started.cpus.clone();
    o.out = started.out.clone();
    let mut result = RateResult {
        experiment: "rate".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_unix: crate::start::now_unix(),
        environment: Environment::collect(o.cpus.measured),
        config: RateSettings {
            duration_ms: o.duration_ms,
            cpu: o.cpus.measured,
            priority: o.priority,
            plan: o.plan,
            thread_cpus: o.cpus.loop_cpus(o.threads),
            buffer_sizes_kb: o.buffer_sizes_kb.clone(),
            tracer_options: tracer_options_json(&o.tracer),
        },
        searches: Vec::new(),
        failed: skipped,
    };
    write_json(&o, &result)?;
    let progress = crate::progress::Progress::new(subjects.len() as u64);
    let mut seq = 0u64;
    for s in &subjects {
        let name = format!(
            "{}{} at {} KiB",
            s.kind,
            s.variant
                .as_deref()
                .map_or(String::new(), |v| format!(" ({v})")),
            s.buffer_size_kb
        );
        progress.start(format!("{name}: searching the highest lossless rate"));
        let found = search(&o.plan, |rate, phase| {
            seq += 1;
            point(&o, s, rate, phase, seq)
        });
        progress.done();
        if rtrace_measure::spawn::interrupted() {
            return Err(rtrace_measure::WorkloadError::Interrupted.into());
        }
        match found {
            Ok(f) => result.searches.push(Search {
                tracer: s.kind,
                variant: s.variant.clone(),
                buffer_size_kb: s.buffer_size_kb,
                buffer: s.buffer.clone(),
                points: f.points,
                max_lossless_hz: f.max_lossless_hz,
                ceiling: f.ceiling,
                confirmed: f.confirmed,
                over_lossy: f.over_lossy,
            }),
            Err(e) => {
                eprintln!("error: {name}: {e:#}");
                result.failed.push(format!("{name}: {e:#}"));
            }
        }
        write_json(&o, &result)?;
    }
    progress.finish();
    let one = rtrace_report::Report::one(rtrace_report::AnyResult::Rate(result.clone()));
    let report = crate::report::write_dir(&o.out, &one)?;
    print!(
        "{}",
        rtrace_report::terminal::text(&one, crate::report::paint())
    );
    eprintln!("results: {}", o.out.display());
    eprintln!("report: {}", report.display());
    if !result.failed.is_empty() {
        bail!("{} search(es) failed (see above)", result.failed.len());
    }
    Ok(0)
}

/// One run of the workload firing at `rate` under `s`'s tracer, accounted exactly; its trace
/// data is counted and removed.
fn point(o: &RateOptions, s: &Subject, rate: f64, phase: Phase, seq: u64) -> Result<Point> {
    let config = WorkloadConfig::Rate(RateConfig {
        rate_hz: rate,
        duration_ns: o.duration_ms * 1_000_000,
        cpu: o.cpus.measured,
        priority: o.priority,
        body: Body::Event,
        more_threads: o.cpus.loop_cpus(o.threads).into_iter().skip(1).collect(),
    });
    let out_dir = o.out.join(format!("point-{seq}"));
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let env = s.tracer.workload_env();
    let (_, last, attachment) = run_workload_message(&s.workload, &env, &config, |ready| {
        let target = Target {
            hook: s.hook.clone(),
            pid: Some(ready.pid),
            follow_children: false,
            skip_tid: None,
            out_dir: out_dir.clone(),
            consumer_cpus: o.cpus.harness.clone(),
            buffer_size_kb: Some(s.buffer_size_kb),
            record: o.tracer.record,
        };
        s.tracer.attach(&target)
    })?;
    let Message::RateDone(done) = last else {
        bail!(
            "{} answered without a rate result: rebuild the workload binaries (`cargo build --release`)",
            s.workload.display()
        );
    };
    let events = Events::new(done.hits, attachment.finish()?);
    events
        .check_exact()
        .with_context(|| format!("at {rate:.0} events/s"))?;
    TraceData::settle(&out_dir, KeepTraces::None, true, events.lost > 0)
        .with_context(|| format!("cannot settle the trace data in {}", out_dir.display()))?;
    Ok(Point {
        phase,
        rate_hz: rate,
        achieved_hz: done.achieved_hz,
        late: done.late,
        events,
    })
}

fn write_json(o: &RateOptions, r: &RateResult) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(r)?;
    let default = o.out.join("rate.json");
    for path in std::iter::once(&default).chain(o.json.as_ref()) {
        output::write_atomic(path, &bytes)?;
    }
    Ok(())
}
