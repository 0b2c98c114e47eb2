//! `rtrace-bench npt`: Beamonte & Dagenais' Non-Preempt Test. A tight TSC loop on the measured
//! CPU records the gaps between its iterations while it fires its probe in every iteration (as
//! Beamonte ran it) or at a capped rate (`--event-rate`); each tracer in turn consumes that event
//! stream (its consumer on the harness CPUs), and the run with no tracer is the baseline. Every
//! tracer run is accounted exactly, and its largest gaps are placed against the tracer's buffer
//! switches (`switches`). Nothing changes on the machine before every tracer was checked.

mod kernel;
mod switches;

use crate::options::CommonOptions;
use crate::runner::{self, Plan, Round};
use crate::workload::{self, Subject};
use anyhow::{bail, Result};
use rtrace_measure::npt::{NptResult, NptRun, NptSettings, Osnoise};
use rtrace_measure::pool::Accounted;
use rtrace_measure::{run_workload_message, Events};
use rtrace_protocol::{Body, Message, NptConfig, WorkloadConfig};
use rtrace_tracer::TracerKind;

/// `npt`'s options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    pub common: CommonOptions,
    /// `none` first (the baseline of every other), then each tracer.
    pub tracers: Vec<TracerKind>,
    pub duration_ms: u64,
    /// Capped firings per second; `None`: in every iteration.
    pub event_rate_hz: Option<f64>,
}

/// Every tracer's subjects, `none` first; those that cannot run here with why.
fn subjects(o: &Options) -> (Vec<Subject>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for &kind in &o.tracers {
        match workload::subjects(&o.common, kind, &o.common.tracer) {
            Ok(m) => out.extend(m),
            Err(e) => skipped.push(format!("{kind}: {e:#}")),
        }
    }
    (out, skipped)
}

pub fn run(o: Options) -> Result<i32> {
    let (subjects, skipped) = subjects(&o);
    if !subjects.iter().any(|s| s.tracer.is_some()) && o.tracers.len() > 1 {
        bail!("no tracer can run here ({})", skipped.join("; "));
    }
    let result = NptResult {
        header: rtrace_measure::Header::new(rtrace_measure::npt::EXPERIMENT),
        config: NptSettings {
            duration_ms: o.duration_ms,
            event_rate_hz: o.event_rate_hz,
            lttng_kernel: o.common.tracer.lttng_kernel.clone(),
            run: Default::default(),
        },
        runs: Vec::new(),
        osnoise: Osnoise::Absent("not run yet".into()),
        failed: skipped.clone(),
    };
    runner::run(&mut Npt {
        o,
        subjects,
        skipped,
        result,
    })
}

/// One entry of the plan: the loop under a subject, or rtla osnoise at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Loop(usize),
    Osnoise,
}

/// What an entry measured.
enum Measured {
    Loop(Box<NptRun>),
    Osnoise(Osnoise),
}

impl Accounted for Measured {
    fn accounting(&self) -> Result<(), String> {
        match self {
            Measured::Loop(r) => r.accounting(),
            Measured::Osnoise(_) => Ok(()),
        }
    }
}

/// npt as the runner sees it.
struct Npt {
    o: Options,
    subjects: Vec<Subject>,
    /// Tracers that could not run here, with why (notes).
    skipped: Vec<String>,
    result: NptResult,
}

impl runner::Experiment for Npt {
    const NAME: &'static str = "npt";
    type Entry = Entry;
    type Run = Measured;

    fn common(&mut self) -> &mut CommonOptions {
        &mut self.o.common
    }

    fn begin(&mut self) -> Result<()> {
        let kinds: Vec<TracerKind> = self.subjects.iter().map(|s| s.kind).collect();
        self.result.config.run = self.o.common.settings(&kinds)?;
        self.result.header.environment = self.o.common.environment();
        Ok(())
    }

    fn plan(&self) -> Plan<Entry> {
        Plan {
            first: Vec::new(),
            rounds: (0..self.subjects.len()).map(Entry::Loop).collect(),
            last: vec![Entry::Osnoise],
        }
    }

    fn label(&self, e: &Entry) -> String {
        match e {
            Entry::Loop(i) => self.subjects[*i].label(),
            Entry::Osnoise => "rtla osnoise".into(),
        }
    }

    fn describe(&self, e: &Entry) -> String {
        match e {
            Entry::Loop(_) => format!(
                "the npt loop for {} ms, the probe {}",
                self.o.duration_ms,
                match self.o.event_rate_hz {
                    None => "in every iteration".into(),
                    Some(hz) => format!("{hz} times a second"),
                }
            ),
            Entry::Osnoise => "where this kernel has it".into(),
        }
    }

    fn run(&mut self, e: &Entry, round: &Round) -> Result<Measured> {
        Ok(match e {
            Entry::Loop(i) => {
                Measured::Loop(Box::new(one(&self.o, &self.subjects[*i], round.seq)?))
            }
            Entry::Osnoise => Measured::Osnoise(osnoise(&self.o)),
        })
    }

    fn keep(&mut self, _: &Entry, run: Measured) -> Result<Option<Entry>> {
        match run {
            Measured::Loop(r) => rtrace_measure::pool::keep(&mut self.result.runs, *r)?,
            Measured::Osnoise(o) => self.result.osnoise = o,
        }
        Ok(None)
    }

    fn failed(&mut self, e: &Entry, error: anyhow::Error) -> Result<()> {
        self.result
            .failed
            .push(format!("{}: {error:#}", self.label(e)));
        Ok(())
    }

    fn result(&mut self) -> rtrace_report::AnyResult {
        self.result.clone().into()
    }

    fn notes(&self) -> Vec<String> {
        self.skipped.clone()
    }
}

/// One npt run under `s`'s tracer, accounted exactly; its trace data is counted and removed.
fn one(o: &Options, s: &Subject, seq: u64) -> Result<NptRun> {
    let config = WorkloadConfig::Npt(NptConfig {
        duration_ns: o.duration_ms * 1_000_000,
        event_rate_hz: o.event_rate_hz,
        cpu: o.common.cpus.measured,
        priority: o.common.priority,
        body: Body::Event,
    });
    let out_dir = o.common.out.join(format!("run-{seq}"));
    workload::create_dir(&out_dir)?;
    let env = s
        .tracer
        .as_ref()
        .map(|t| t.workload_env())
        .unwrap_or_default();
    let (_, last, attachment) = run_workload_message(&s.workload, &env, &config, |ready| {
        let Some(tracer) = &s.tracer else {
            return Ok(None);
        };
        tracer
            .attach(&o.common.target(s.hook.clone(), Some(ready.pid), &out_dir))
            .map(Some)
    })?;
    let Message::NptDone(done) = last else {
        return Err(workload::outdated(&s.workload, "an npt"));
    };
    let (events, placed, kernel) = match attachment {
        Some(a) => {
            let events = Events::new(done.hits, a.finish()?);
            events.check_exact()?;
            let placed = switches::place(s.kind, &out_dir, o.common.cpus.measured, &done);
            let kernel = match s.kind {
                TracerKind::Lttng if !o.common.tracer.lttng_kernel.is_empty() => {
                    kernel::read(&out_dir, o.common.cpus.measured, &done).map(Some)
                }
                _ => Ok(None),
            };
            workload::settle(&o.common, &out_dir, true, events.lost > 0)?;
            (Some(events), placed?, kernel?)
        }
        None => {
            let _ = std::fs::remove_dir(&out_dir);
            (None, None, None)
        }
    };
    let mut done = done;
    // The slow gaps served to place the switches; the result keeps what they showed.
    done.slow = Vec::new();
    let mut run = NptRun::new(s.kind, s.variant.clone(), s.buffer.clone(), done, events)?;
    run.kernel = kernel;
    Ok(match placed {
        Some(p) => run.with_switches(p.switches, p.largest, p.at_switches),
        None => run,
    })
}

/// `rtla osnoise top` on the measured CPU for the run's duration where the kernel has the
/// osnoise tracer; otherwise why not.
fn osnoise(o: &Options) -> Osnoise {
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
        .arg(o.common.cpus.measured.to_string())
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
