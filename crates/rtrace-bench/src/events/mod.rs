//! `rtrace-bench events`: Gregg's per-event cost benchmark (BPF Performance Tools, ch. 18), as
//! Piotrowski reran it (seed 004), across tracers. The workload is a pinned loop of 1-byte
//! `read(2)` calls from /dev/zero (the tight form of Gregg's `dd bs=1`); each experiment's
//! program (bpftrace's published one-liner, our eBPF program doing the same, the ftrace event:
//! `Hook::Read`, run by each tracer's backend through `Tracer` like every other hook, with the
//! run's buffer size) traces every process while the loop runs, and its cost per event is the loop's extra time
//! over an untraced run of the same round, divided by the reads. Every timed run's output is
//! checked against the workload's reads where it has one; accounting runs check, per tracer and
//! hook, that the tracer sees exactly the workload's reads (the empty-action experiments print
//! nothing to check).

mod dd;

use crate::options::CommonOptions;
use crate::runner::{self, Plan, Round};
use anyhow::{bail, Context, Result};
use rtrace_measure::events::{
    Cell, EventsResult, EventsSettings, FeatureRun, HookCheck, Outcome, Workload,
};
use rtrace_measure::pool::Accounted;
use rtrace_measure::run_workload_message;
use rtrace_protocol::{Message, ReadsConfig, WorkloadConfig};
use rtrace_tracer::features::{Evidence, Feature, Read, ReadHook, ReadProgram, Unsupported};
use rtrace_tracer::{Hook, Instrumentation, Tracer, TracerKind};
use std::path::PathBuf;

/// Reads of an accounting run (enough to see any miscount; not timed).
const ACCOUNT_READS: u64 = 100_000;

/// `events`' options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    /// CPUs, priority, rounds, output, buffer size (every backend's), trace data.
    pub common: CommonOptions,
    /// Never `none` (the untraced runs are always made).
    pub tracers: Vec<TracerKind>,
    pub features: Vec<Feature>,
    pub workloads: Vec<Workload>,
    pub reads: u64,
}

/// `1,4-7,15` → experiments 1, 4, 5, 6, 7, 15 in order, each once.
pub fn parse_features(items: &[String]) -> Result<Vec<Feature>> {
    let mut out = Vec::new();
    for item in items {
        let bad = || {
            anyhow::anyhow!(
                "--experiments {item:?} is not an experiment number or range: use numbers 1-18, e.g. --experiments 1,4-7,15"
            )
        };
        let (lo, hi) = match item.trim().split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (item.trim(), item.trim()),
        };
        let lo: u8 = lo.parse().map_err(|_| bad())?;
        let hi: u8 = hi.parse().map_err(|_| bad())?;
        if lo > hi {
            return Err(bad());
        }
        for n in lo..=hi {
            out.push(Feature::from_number(n).ok_or_else(bad)?);
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// A cell to measure.
#[derive(Debug, Clone)]
struct Subject {
    feature: Feature,
    tracer: TracerKind,
    hook: String,
    /// Where its events come from: each (tracer, hook) gets an accounting run.
    hooks: Vec<ReadHook>,
    program: String,
}

/// What every run needs.
struct Setup {
    workload: PathBuf,
    libc: PathBuf,
    libc_read: u64,
    /// Whether the kernel has kprobes.
    kprobes: bool,
    /// One backend per requested tracer, in the order asked.
    tracers: Vec<(TracerKind, Box<dyn Tracer>)>,
}

impl Setup {
    fn tracer(&self, kind: TracerKind) -> &dyn Tracer {
        self.tracers
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, t)| t.as_ref())
            .expect("every planned tracer is built")
    }

    /// Whether `tracer`'s programs hook `vfs_read` as Gregg's do: the kernel has kprobes and
    /// the backend drives them (else they hook the `read` syscall's tracepoints).
    fn kprobes(&self, tracer: TracerKind) -> bool {
        self.kprobes && self.tracer(tracer).drives_kprobes()
    }

    /// `program` as `tracer` runs it here.
    fn hook(&self, tracer: TracerKind, program: ReadProgram) -> Hook {
        Hook::Read(Read {
            program,
            libc: self.libc.clone(),
            read_offset: self.libc_read,
            kprobes: self.kprobes(tracer),
        })
    }
}

fn setup(o: &Options) -> Result<Setup> {
    rtrace_tracer::require_root("the events suite")?;
    let fs = rtrace_ftrace::Tracefs::mount_if_needed()?;
    let workload = crate::workload::bin(&o.common, Instrumentation::Usdt)?;
    let libc = crate::sweep::cyclictest::libc()?;
    let libc_read = rtrace_sdt::function(&libc, "read")
        .with_context(|| format!("no `read` in {}", libc.display()))?
        .offset;
    let mut tracers = Vec::new();
    for &kind in &o.tracers {
        if let Some(t) = crate::tracers::build(kind, &o.common.tracer)? {
            tracers.push((kind, t));
        }
    }
    Ok(Setup {
        workload,
        libc,
        libc_read,
        kprobes: fs.path("kprobe_events").exists(),
        tracers,
    })
}

/// Every cell of the table: the ones to measure, and the others with why not (each backend's
/// `check` says why).
fn plan(o: &Options, s: &Setup) -> (Vec<Subject>, Vec<Cell>) {
    let mut run = Vec::new();
    let mut not = Vec::new();
    for (kind, tracer) in &s.tracers {
        for &feature in &o.features {
            let program = ReadProgram::Feature(feature);
            let hook = s.hook(*kind, program);
            match tracer.check(&hook) {
                Ok(()) => run.push(Subject {
                    feature,
                    tracer: *kind,
                    hook: hook.label(),
                    hooks: program.hooks(s.kprobes(*kind)),
                    program: tracer.program(&hook),
                }),
                Err(e) => not.push(Cell {
                    workload: Workload::Loop, // set per workload by `run`
                    feature,
                    tracer: *kind,
                    hook: hook.label(),
                    program: String::new(),
                    outcome: not_run(e),
                }),
            }
        }
    }
    (run, not)
}

/// A check's refusal as the cell shows it: unavailable here or inexpressible, as the backend
/// says; any other refusal (a missing tool) is unavailable.
fn not_run(e: anyhow::Error) -> Outcome {
    match e.downcast_ref::<Unsupported>() {
        Some(Unsupported::Inexpressible(why)) => Outcome::Inexpressible(why.clone()),
        Some(Unsupported::Unavailable(why)) => Outcome::Unavailable(why.clone()),
        None => Outcome::Unavailable(format!("{e:#}")),
    }
}

pub fn run(o: Options) -> Result<i32> {
    let s = setup(&o)?;
    let (subjects, not_run) = plan(&o, &s);
    if subjects.is_empty() {
        bail!("no experiment can run here with these tracers: try --tracer bpftrace,ebpf");
    }
    let mut cells = Vec::new();
    for &w in &o.workloads {
        cells.extend(not_run.iter().cloned().map(|c| Cell { workload: w, ..c }));
        for sub in &subjects {
            cells.push(Cell {
                workload: w,
                feature: sub.feature,
                tracer: sub.tracer,
                hook: sub.hook.clone(),
                program: sub.program.clone(),
                outcome: Outcome::Measured(Vec::new()),
            });
        }
    }
    let result = EventsResult {
        header: rtrace_measure::Header::new(rtrace_measure::events::EXPERIMENT),
        config: EventsSettings {
            reads: o.reads,
            run: Default::default(),
            kprobes: s.kprobes,
            libc: s.libc.display().to_string(),
            read_site: Some(rtrace_sdt::probe_site(&s.libc, s.libc_read)?),
            workloads: o.workloads.clone(),
        },
        baseline: Vec::new(),
        cells,
        hook_checks: Vec::new(),
        failed: Vec::new(),
        retried: Vec::new(),
        unavailable: vec![crate::systemtap::check()],
    };
    runner::run(&mut Events {
        o,
        s,
        subjects,
        result,
    })
}

/// One entry of the plan: an accounting run (once, first), an untraced run of a workload (at
/// the start and end of each round), or a cell's timed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Account(Workload, TracerKind, ReadHook),
    Untraced(Workload),
    Cell(Workload, usize),
}

/// What an entry measured.
enum Measured {
    Check(HookCheck),
    Timed(FeatureRun),
}

impl Accounted for Measured {
    fn accounting(&self) -> Result<(), String> {
        match self {
            Measured::Check(c) if !c.exact() => Err(format!(
                "{} events (+{} lost) of the workload's {} reads (+{} at start-up)",
                c.recorded, c.lost, c.reads, c.startup
            )),
            // A timed run's output was checked against its reads when it ran.
            _ => Ok(()),
        }
    }
}

/// The events suite as the runner sees it.
struct Events {
    o: Options,
    s: Setup,
    subjects: Vec<Subject>,
    result: EventsResult,
}

impl runner::Experiment for Events {
    const NAME: &'static str = "events";
    type Entry = Entry;
    type Run = Measured;

    fn common(&mut self) -> &mut CommonOptions {
        &mut self.o.common
    }

    fn begin(&mut self) -> Result<()> {
        let kinds: Vec<TracerKind> = self.subjects.iter().map(|s| s.tracer).collect();
        self.result.config.run = self.o.common.settings(&kinds)?;
        self.result.header.environment = self.o.common.environment();
        Ok(())
    }

    fn plan(&self) -> Plan<Entry> {
        let checks = hook_checks(&self.subjects);
        let mut plan = Plan::rounds(Vec::new());
        for &w in &self.o.workloads {
            plan.first
                .extend(checks.iter().map(|&(t, h)| Entry::Account(w, t, h)));
            plan.rounds.push(Entry::Untraced(w));
            plan.rounds
                .extend((0..self.subjects.len()).map(|i| Entry::Cell(w, i)));
            plan.rounds.push(Entry::Untraced(w));
        }
        plan
    }

    fn label(&self, e: &Entry) -> String {
        match *e {
            Entry::Account(w, t, h) => format!("{}: {t}: accounting on {}", w.name(), h.label()),
            Entry::Untraced(w) => format!("{}, untraced", w.name()),
            Entry::Cell(w, i) => {
                let sub = &self.subjects[i];
                format!("{}, {} {}", w.name(), sub.tracer, sub.feature)
            }
        }
    }

    fn run(&mut self, e: &Entry, round: &Round) -> Result<Measured> {
        let (o, s) = (&self.o, &self.s);
        Ok(match *e {
            Entry::Account(w, t, h) => Measured::Check(account(o, s, w, t, h)?),
            Entry::Untraced(w) => Measured::Timed(timed(o, s, w, None, round.index, &[])?),
            Entry::Cell(w, i) => Measured::Timed(timed(
                o,
                s,
                w,
                Some(&self.subjects[i]),
                round.index,
                &self.result.hook_checks,
            )?),
        })
    }

    fn keep(&mut self, e: &Entry, run: Measured) -> Result<Option<Entry>> {
        match (run, *e) {
            (Measured::Check(c), _) => {
                if let Err(why) = Measured::Check(c.clone()).accounting() {
                    self.result.failed.push(format!(
                        "{}: {} on {}: {why}",
                        c.workload.name(),
                        c.tracer,
                        c.hook
                    ));
                }
                self.result.hook_checks.push(c);
            }
            (Measured::Timed(run), Entry::Cell(w, i)) => {
                if let Outcome::Measured(runs) = &mut self.cell(w, i).outcome {
                    runs.push(run);
                } // failed in an earlier round: stays failed
            }
            (Measured::Timed(run), _) => self.result.baseline.push(run),
        }
        Ok(None)
    }

    fn failed(&mut self, e: &Entry, error: anyhow::Error) -> Result<()> {
        let message = format!("{}: {error:#}", self.label(e));
        match *e {
            Entry::Untraced(_) => return Err(error),
            Entry::Cell(w, i) => self.cell(w, i).outcome = Outcome::Failed(format!("{error:#}")),
            Entry::Account(..) => {}
        }
        self.result.failed.push(message);
        Ok(())
    }

    /// One retry of a cell: a tracer that fails once (bpftrace 0.17 now and then does not exit
    /// on SIGINT) does not cost the cell every later round; the failure stays on record.
    fn retries(&self, e: &Entry) -> u32 {
        u32::from(matches!(e, Entry::Cell(..)))
    }

    fn retried(&mut self, e: &Entry, error: &anyhow::Error) {
        let message = format!("{}: {error:#}", self.label(e));
        self.result.retried.push(message);
    }

    fn result(&mut self) -> rtrace_report::AnyResult {
        self.result.clone().into()
    }
}

impl Events {
    /// The result's cell of subject `i` on workload `w`.
    fn cell(&mut self, w: Workload, i: usize) -> &mut Cell {
        let sub = &self.subjects[i];
        self.result
            .cells
            .iter_mut()
            .find(|c| c.workload == w && c.feature == sub.feature && c.tracer == sub.tracer)
            .expect("planned")
    }
}

/// (tracer, hook) pairs the measured cells use: each gets one accounting run.
fn hook_checks(subjects: &[Subject]) -> Vec<(TracerKind, ReadHook)> {
    crate::options::unique(
        subjects
            .iter()
            .flat_map(|sub| sub.hooks.iter().map(|&h| (sub.tracer, h))),
    )
}

fn run_dir(o: &Options, name: &str) -> Result<PathBuf> {
    let d = o.common.out.join(name);
    crate::workload::create_dir(&d)?;
    Ok(d)
}

/// What one run of a workload did.
pub struct Ran {
    pub pid: u32,
    /// Its command name (bpftrace's `comm`).
    pub comm: String,
    /// Its ground truth: reads made (loop) or blocks copied (dd).
    pub reads: u64,
    pub elapsed_ns: u64,
}

/// The command name of a workload's process.
fn comm(w: Workload) -> &'static str {
    match w {
        Workload::Loop => "workload",
        Workload::Dd => "dd",
    }
}

/// Runs workload `w` making `reads` reads, with `attach(pid)` run before it starts.
fn run_traced<A>(
    o: &Options,
    s: &Setup,
    w: Workload,
    reads: u64,
    attach: impl FnOnce(u32) -> Result<A>,
) -> Result<(Ran, A)> {
    let (cpu, priority) = (o.common.cpus.measured, o.common.priority);
    match w {
        Workload::Loop => {
            let config = WorkloadConfig::Reads(ReadsConfig {
                reads,
                cpu,
                priority,
            });
            let (ready, last, a) =
                run_workload_message(&s.workload, &[], &config, |ready| attach(ready.pid))?;
            let Message::ReadsDone(done) = last else {
                return Err(crate::workload::outdated(&s.workload, "a reads"));
            };
            Ok((
                Ran {
                    pid: ready.pid,
                    comm: done.comm,
                    reads: done.reads,
                    elapsed_ns: done.elapsed_ns,
                },
                a,
            ))
        }
        Workload::Dd => dd::run(cpu, priority, reads, attach),
    }
}

/// One timed run of workload `w`, untraced (`None`) or under `sub`. `startup`: the events of
/// the process outside its copy loop on each hook, by tracer (dd's loader reads).
fn timed(
    o: &Options,
    s: &Setup,
    w: Workload,
    sub: Option<&Subject>,
    round: u32,
    startup: &[HookCheck],
) -> Result<FeatureRun> {
    let dir = match sub {
        Some(sub) => run_dir(
            o,
            &format!(
                "{}-{}-{:02}-round{round}",
                comm(w),
                sub.tracer,
                sub.feature.number()
            ),
        )?,
        None => o.common.out.clone(),
    };
    // An experiment's program traces every process: it is attached before the workload starts,
    // but not to its pid; strace's traces the one process it attaches to.
    let (ran, attached) = run_traced(o, s, w, o.reads, |pid| {
        let Some(sub) = sub else {
            return Ok(None);
        };
        let hook = s.hook(sub.tracer, ReadProgram::Feature(sub.feature));
        let tracer = s.tracer(sub.tracer);
        let pid = tracer.attaches_to_process().then_some(pid);
        tracer.attach(&o.common.target(hook, pid, &dir)).map(Some)
    })?;
    let evidence = match (attached, sub) {
        (Some(a), Some(sub)) => {
            let ev = a.evidence(ran.pid, &ran.comm)?;
            // Beyond the copy loop, the process makes the events the accounting run measured
            // on the cell's (first) hook.
            let extra = sub
                .hooks
                .first()
                .and_then(|h| {
                    startup
                        .iter()
                        .find(|c| c.workload == w && c.tracer == sub.tracer && c.hook == h.label())
                })
                .map_or(0, |c| c.startup);
            ev.check(ran.reads + extra).map_err(anyhow::Error::msg)?;
            ev
        }
        _ => Evidence::default(),
    };
    if sub.is_some() {
        // Empty unless the backend keeps a trace there (per-event lines are counted, then
        // removed by their backends; perf's perf.data stays): its counts are verified, so it
        // goes unless --keep-traces keeps it.
        if o.common.keep_traces.keeps(true, evidence.lost > 0) {
            let _ = std::fs::remove_dir(&dir);
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    Ok(FeatureRun {
        workload: w,
        round,
        elapsed_ns: ran.elapsed_ns,
        reads: ran.reads,
        evidence,
    })
}

/// The accounting run of `tracer` on `hook` for workload `w`: the workload's events, the
/// tracer kept to its process. dd's process also reads outside its copy loop (the dynamic
/// loader reads its libraries): a run copying nothing measures that first, with the same
/// tracer, and the copying run must then see exactly blocks + that.
fn account(
    o: &Options,
    s: &Setup,
    w: Workload,
    tracer: TracerKind,
    hook: ReadHook,
) -> Result<HookCheck> {
    let startup = match w {
        Workload::Loop => 0,
        Workload::Dd => {
            let (_, recorded, lost) = account_run(o, s, w, tracer, hook, 0)?;
            recorded + lost
        }
    };
    let (reads, recorded, lost) = account_run(o, s, w, tracer, hook, ACCOUNT_READS.min(o.reads))?;
    Ok(HookCheck {
        workload: w,
        tracer,
        hook: hook.label().into(),
        reads,
        startup,
        recorded,
        lost,
    })
}

/// One accounting run: (reads made, events recorded, events lost).
fn account_run(
    o: &Options,
    s: &Setup,
    w: Workload,
    tracer: TracerKind,
    hook: ReadHook,
    reads: u64,
) -> Result<(u64, u64, u64)> {
    let dir = run_dir(
        o,
        &format!("account-{}-{tracer}-{hook:?}", comm(w)).to_lowercase(),
    )?;
    let (ran, attached) = run_traced(o, s, w, reads, |pid| {
        let hook = s.hook(tracer, ReadProgram::Account(hook));
        s.tracer(tracer)
            .attach(&o.common.target(hook, Some(pid), &dir))
    })?;
    let ev = attached.evidence(ran.pid, &ran.comm)?;
    let recorded = ev.workload.with_context(|| {
        format!(
            "{tracer}'s accounting program on {} gave no count of the workload's events (a bug: please report it)",
            hook.label()
        )
    })?;
    let lost = ev.lost;
    let _ = std::fs::remove_dir_all(&dir);
    Ok((ran.reads, recorded, lost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_lists_and_ranges() {
        let f = parse_features(&["1".into(), "4-7".into(), "15".into(), "5".into()]).unwrap();
        let n: Vec<u8> = f.iter().map(|f| f.number()).collect();
        assert_eq!(n, vec![1, 4, 5, 6, 7, 15]);
        assert_eq!(parse_features(&["1-18".into()]).unwrap().len(), 18);
        for bad in ["0", "19", "7-4", "x", "3-"] {
            let e = parse_features(&[bad.into()]).unwrap_err().to_string();
            assert!(e.contains("--experiments"), "{e}");
        }
    }
}
