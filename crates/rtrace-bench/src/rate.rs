//! `rtrace-bench rate`: the highest event rate each tracer records without loss, per buffer
//! size (Beamonte & Dagenais). The workload fires its probe at a fixed rate for a fixed time
//! and on until the tracer's buffer turned over `--turnovers` times (a steady state, not the
//! buffer absorbing a burst); `rtrace_measure::rate` climbs (from a rate at which that takes
//! about a second, below the consumer's drain rate measured by a first flood point), bisects
//! and confirms. Each search is a plan entry whose runs decide the
//! next one (`rtrace_measure::rate::next`); every point is accounted exactly.

use crate::options::{CommonOptions, TracerOptions};
use crate::runner::{self, Plan, Round};
use crate::workload::{self, Subject};
use anyhow::{bail, Context, Result};
use rtrace_measure::rate::{Next, Phase, Point, RateResult, RateSettings, Search, SearchPlan};
use rtrace_measure::{run_workload_message, Events};
use rtrace_protocol::{Body, Message, RateConfig, WorkloadConfig};
use rtrace_tracer::TracerKind;

/// `rate`'s options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    pub common: CommonOptions,
    /// Tracers to search (never `none`).
    pub tracers: Vec<TracerKind>,
    /// Each its own search; `--buffer-size-kb K` alone makes it `[K]`.
    pub buffer_sizes_kb: Vec<u64>,
    /// `--poll-ms`: our consumers' waits between drains, each its own search at every size;
    /// `[None]`: their defaults.
    pub polls_ms: Vec<Option<u64>>,
    pub duration_ms: u64,
    /// `--turnovers`: buffer-fulls every point fires at least (0: the window alone).
    pub turnovers: u32,
    /// The plan; its start rate is raised per search to where a point's turnovers take
    /// [`START_WINDOW_S`], unless `--start-rate` was given (`start_given`).
    pub plan: SearchPlan,
    pub start_given: bool,
    /// `--threads`: firing threads, at least 1.
    pub threads: usize,
}

/// The climb starts where a point's turnovers take this long (or at `--start-rate`).
const START_WINDOW_S: f64 = 1.0;

/// A search's subject: a tracer variant at one buffer size, checked, with its steady state:
/// each thread's firings per point and the search's plan (its start rate).
struct Searched {
    subject: Subject,
    buffer_size_kb: u64,
    poll_ms: Option<u64>,
    capacity_events: u64,
    min_hits: u64,
    plan: SearchPlan,
}

impl Searched {
    fn new(o: &Options, subject: Subject, kb: u64, poll_ms: Option<u64>) -> Result<Searched> {
        // An upper bound, so that every point fires at least the turnovers asked for.
        let capacity = crate::tracers::capacity_events(subject.kind, &at_size(o, kb, poll_ms))?
            .context("a search without a tracer")?;
        let threads = o.threads.max(1) as u64;
        // Every thread writes its own per-CPU buffer, except into eBPF's one ring.
        let per_buffer = match subject.kind {
            TracerKind::Ebpf => threads,
            _ => 1,
        };
        let min_hits = (u64::from(o.turnovers) * capacity).div_ceil(per_buffer);
        let mut plan = o.plan;
        if !o.start_given {
            let all = (min_hits * threads) as f64;
            plan.start_hz = plan.start_hz.max(all / START_WINDOW_S).min(plan.max_hz);
        }
        Ok(Searched {
            subject,
            buffer_size_kb: kb,
            poll_ms,
            capacity_events: capacity,
            min_hits,
            plan,
        })
    }
}

impl Searched {
    fn label(&self) -> String {
        let poll = self
            .poll_ms
            .map_or(String::new(), |ms| format!(", polled every {ms} ms"));
        format!(
            "{} at {} KiB{poll}",
            self.subject.label(),
            self.buffer_size_kb
        )
    }
}

/// The tracer options of a search at `kb` KiB per CPU, its consumer polling every `poll_ms`.
fn at_size(o: &Options, kb: u64, poll_ms: Option<u64>) -> TracerOptions {
    TracerOptions {
        buffer_size_kb: Some(kb),
        poll_ms,
        ..o.common.tracer.clone()
    }
}

/// Every tracer variant at every size; those that cannot run here with why.
fn subjects(o: &Options) -> (Vec<Searched>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for &kind in &o.tracers {
        for &kb in &o.buffer_sizes_kb {
            for &poll in &o.polls_ms {
                match workload::subjects(&o.common, kind, &at_size(o, kb, poll)) {
                    Ok(m) => {
                        for s in m {
                            match Searched::new(o, s, kb, poll) {
                                Ok(s) => out.push(s),
                                Err(e) => skipped.push(format!("{kind} at {kb} KiB: {e:#}")),
                            }
                        }
                    }
                    Err(e) => skipped.push(format!("{kind} at {kb} KiB: {e:#}")),
                }
            }
        }
    }
    (out, skipped)
}

/// One run of a search: subject `subject` at `rate_hz`; `first` starts a new search.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    subject: usize,
    rate_hz: f64,
    phase: Phase,
    first: bool,
}

/// The rate search as the runner sees it.
struct Rate {
    o: Options,
    subjects: Vec<Searched>,
    /// The points of the search under way.
    points: Vec<Point>,
    /// The round of the search under way.
    round: u32,
    result: RateResult,
}

pub fn run(o: Options) -> Result<i32> {
    let (subjects, skipped) = subjects(&o);
    if subjects.is_empty() {
        bail!("no tracer can run here ({})", skipped.join("; "));
    }
    let result = RateResult {
        header: rtrace_measure::Header::new(rtrace_measure::rate::EXPERIMENT),
        config: RateSettings {
            duration_ms: o.duration_ms,
            turnovers: o.turnovers,
            run: Default::default(),
            plan: o.plan,
            thread_cpus: Vec::new(),
            buffer_sizes_kb: o.buffer_sizes_kb.clone(),
        },
        searches: Vec::new(),
        failed: skipped,
    };
    runner::run(&mut Rate {
        o,
        subjects,
        points: Vec::new(),
        round: 0,
        result,
    })
}

impl runner::Experiment for Rate {
    const NAME: &'static str = "rate";
    type Entry = Entry;
    type Run = Point;

    fn common(&mut self) -> &mut CommonOptions {
        &mut self.o.common
    }

    fn begin(&mut self) -> Result<()> {
        let kinds: Vec<TracerKind> = self.subjects.iter().map(|s| s.subject.kind).collect();
        let c = &mut self.result.config;
        c.run = self.o.common.settings(&kinds)?;
        // Every size searched, by tracer.
        for (tracer, text) in c.run.buffers.iter_mut() {
            let sizes: Vec<&str> = self
                .subjects
                .iter()
                .filter(|s| s.subject.kind.name() == tracer)
                .map(|s| s.subject.buffer.as_str())
                .collect();
            *text = crate::options::unique(sizes).join("; ");
        }
        c.run.buffer_size_kb = match self.o.buffer_sizes_kb[..] {
            [kb] => Some(kb),
            _ => None,
        };
        c.thread_cpus = self.o.common.cpus.loop_cpus(self.o.threads);
        self.result.header.environment = self.o.common.environment();
        Ok(())
    }

    fn plan(&self) -> Plan<Entry> {
        Plan::rounds(
            (0..self.subjects.len())
                .map(|subject| {
                    // A search's first run: the flood point, or the climb's start.
                    let plan = &self.subjects[subject].plan;
                    let (rate_hz, phase) = match rtrace_measure::rate::next(plan, &[]) {
                        Ok(Next::Measure(rate_hz, phase)) => (rate_hz, phase),
                        _ => (plan.start_hz, Phase::Climb),
                    };
                    Entry {
                        subject,
                        rate_hz,
                        phase,
                        first: true,
                    }
                })
                .collect(),
        )
    }

    fn label(&self, e: &Entry) -> String {
        self.subjects[e.subject].label()
    }

    fn describe(&self, e: &Entry) -> String {
        format!("{:?} at {}", e.phase, rtrace_report::rate::rate(e.rate_hz)).to_lowercase()
    }

    fn run(&mut self, e: &Entry, round: &Round) -> Result<Point> {
        if e.first {
            self.points.clear();
            self.round = round.index;
        }
        point(&self.o, &self.subjects[e.subject], e, round.seq)
    }

    fn keep(&mut self, e: &Entry, point: Point) -> Result<Option<Entry>> {
        self.points.push(point);
        Ok(
            match rtrace_measure::rate::next(&self.subjects[e.subject].plan, &self.points)? {
                Next::Measure(rate_hz, phase) => Some(Entry {
                    rate_hz,
                    phase,
                    first: false,
                    ..*e
                }),
                Next::Done(f) => {
                    let s = &self.subjects[e.subject];
                    self.result.searches.push(Search {
                        tracer: s.subject.kind,
                        variant: s.subject.variant.clone(),
                        buffer_size_kb: s.buffer_size_kb,
                        poll_ms: s.poll_ms,
                        buffer: s.subject.buffer.clone(),
                        capacity_events: s.capacity_events,
                        points: f.points,
                        max_lossless_hz: f.max_lossless_hz,
                        max_lossless_asked_hz: f.max_lossless_asked_hz,
                        ceiling: f.ceiling,
                        confirmed: f.confirmed,
                        over_lossy: f.over_lossy,
                        round: (self.o.common.rounds > 1).then_some(self.round),
                    });
                    None
                }
            },
        )
    }

    fn failed(&mut self, e: &Entry, error: anyhow::Error) -> Result<()> {
        self.result
            .failed
            .push(format!("{}: {error:#}", self.subjects[e.subject].label()));
        Ok(())
    }

    fn result(&mut self) -> rtrace_report::AnyResult {
        self.result.clone().into()
    }
}

/// One run of the workload firing at `e`'s rate under `s`'s tracer, accounted exactly (a
/// mismatch fails the search); its trace data is counted and removed unless kept.
fn point(o: &Options, searched: &Searched, e: &Entry, seq: u64) -> Result<Point> {
    let s = &searched.subject;
    let tracer = s.tracer.as_ref().context("a search without a tracer")?;
    let duration_ms = match e.phase {
        Phase::Flood => o.duration_ms.max(searched.plan.flood_ms),
        _ => o.duration_ms,
    };
    let config = WorkloadConfig::Rate(RateConfig {
        rate_hz: e.rate_hz,
        duration_ns: duration_ms * 1_000_000,
        min_hits: searched.min_hits,
        cpu: o.common.cpus.measured,
        priority: o.common.priority,
        body: Body::Event,
        more_threads: o
            .common
            .cpus
            .loop_cpus(o.threads)
            .into_iter()
            .skip(1)
            .collect(),
    });
    let out_dir = o.common.out.join(format!("point-{}", seq + 1));
    workload::create_dir(&out_dir)?;
    let opts = at_size(o, searched.buffer_size_kb, searched.poll_ms);
    let env = tracer.workload_env();
    let (_, last, attachment) = run_workload_message(&s.workload, &env, &config, |ready| {
        let target = opts.target(
            s.hook.clone(),
            Some(ready.pid),
            &out_dir,
            &o.common.cpus.harness,
        );
        tracer.attach(&target)
    })?;
    let Message::RateDone(done) = last else {
        return Err(workload::outdated(&s.workload, "a rate"));
    };
    let events = Events::new(done.hits, attachment.finish()?);
    events
        .check_exact()
        .with_context(|| format!("at {:.0} events/s", e.rate_hz))?;
    workload::settle(&o.common, &out_dir, true, events.lost > 0)?;
    Ok(Point {
        phase: e.phase,
        rate_hz: e.rate_hz,
        achieved_hz: done.achieved_hz,
        late: done.late,
        min_hits: searched.min_hits,
        events,
    })
}
