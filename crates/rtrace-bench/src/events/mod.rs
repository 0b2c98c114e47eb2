//! `rtrace-bench events`: Gregg's per-event cost benchmark (BPF Performance Tools, ch. 18), as
//! Piotrowski reran it (seed 004), across tracers. The workload is a pinned loop of 1-byte
//! `read(2)` calls from /dev/zero (the tight form of Gregg's `dd bs=1`); each experiment's
//! program (bpftrace's published one-liner, our eBPF program doing the same, the ftrace event)
//! traces every process while the loop runs, and its cost per event is the loop's extra time
//! over an untraced run of the same round, divided by the reads. Every timed run's output is
//! checked against the workload's reads where it has one; accounting runs check, per tracer and
//! hook, that the tracer sees exactly the workload's reads (the empty-action experiments print
//! nothing to check).

mod dd;

use crate::options::{default_out, default_workload_dir};
use crate::output;
use crate::usdt::workload_bin;
use anyhow::{bail, Context, Result};
use rtrace_measure::events::{
    Cell, EventsResult, EventsSettings, FeatureRun, HookCheck, Outcome, Workload,
};
use rtrace_measure::{run_workload_message, Environment};
use rtrace_protocol::{Message, ReadsConfig, ReadsDone, WorkloadConfig};
use rtrace_tracer::features::{Evidence, Feature, ReadHook};
use rtrace_tracer::{Hook, Instrumentation, RecordMode, Target, Tracer, TracerKind};
use std::path::{Path, PathBuf};

/// Reads of an accounting run (enough to see any miscount; not timed).
const ACCOUNT_READS: u64 = 100_000;

#[derive(Debug, Clone)]
pub struct EventsOptions {
    pub tracers: Vec<TracerKind>,
    pub features: Vec<Feature>,
    pub workloads: Vec<Workload>,
    pub reads: u64,
    pub rounds: u32,
    pub cpus: crate::cpus::Cpus,
    pub priority: Option<i32>,
    pub json: Option<PathBuf>,
    pub out: PathBuf,
    pub out_given: bool,
    pub workload_dir: PathBuf,
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
            let f = Feature::from_number(n).ok_or_else(bad)?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out.sort();
    Ok(out)
}

impl TryFrom<crate::cli::EventsArgs> for EventsOptions {
    type Error = anyhow::Error;

    fn try_from(a: crate::cli::EventsArgs) -> Result<EventsOptions> {
        if a.reads == 0 {
            bail!("--reads must be at least 1, e.g. --reads 1000000");
        }
        if a.rounds == 0 {
            bail!("--rounds must be at least 1 (2 or more give intervals)");
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
            bail!("--tracer none measures nothing here: name a tracer, e.g. --tracer bpftrace,ebpf (the untraced runs are always made)");
        }
        Ok(EventsOptions {
            tracers,
            features: parse_features(&a.experiments)?,
            workloads: {
                let mut w: Vec<Workload> = Vec::new();
                for x in &a.workload {
                    let x = match x {
                        crate::cli::WorkloadArg::Loop => Workload::Loop,
                        crate::cli::WorkloadArg::Dd => Workload::Dd,
                    };
                    if !w.contains(&x) {
                        w.push(x);
                    }
                }
                w
            },
            reads: a.reads,
            rounds: a.rounds,
            cpus: crate::cpus::Cpus::from_request(a.cpu)?,
            priority: a.priority,
            json: a.json,
            out_given: a.out.is_some(),
            out: a.out.unwrap_or_else(|| default_out("events")),
            workload_dir: a.workload_dir.unwrap_or_else(default_workload_dir),
        })
    }
}

/// How a cell runs.
#[derive(Debug, Clone)]
enum How {
    Ebpf,
    Bpftrace(String),
    /// `syscalls:EVENT` in an ftrace instance: filter, hist trigger.
    FtraceEvent(&'static str, Option<&'static str>, Option<&'static str>),
    FtraceUprobe(bool),
    /// LTTng's kernel tracer on the read syscall (`exit`: its exit, else its entry).
    Lttng(bool),
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
    how: How,
}

/// What every run needs.
struct Setup {
    workload: PathBuf,
    libc: PathBuf,
    libc_read: u64,
    kprobes: bool,
    bpftrace: PathBuf,
}

fn setup(o: &EventsOptions) -> Result<Setup> {
    rtrace_tracer::require_root("the events suite")?;
    rtrace_ftrace::Tracefs::available()?;
    let workload = workload_bin(&o.workload_dir, Instrumentation::Usdt);
    if !workload.is_file() {
        bail!(
            "workload binary {} not found: build it with `cargo build --release` or pass --workload-dir DIR",
            workload.display()
        );
    }
    let libc = crate::sweep::cyclictest::libc()?;
    let libc_read = rtrace_sdt::function(&libc, "read")
        .with_context(|| format!("no `read` in {}", libc.display()))?
        .offset;
    let kprobes =
        rtrace_ftrace::Tracefs::find().is_some_and(|fs| fs.path("kprobe_events").exists());
    Ok(Setup {
        workload,
        libc,
        libc_read,
        kprobes,
        bpftrace: PathBuf::from(rtrace_bpftrace::BPFTRACE),
    })
}

/// Every cell of the table: the ones to measure, and the others with why not.
fn plan(o: &EventsOptions, s: &Setup) -> Result<(Vec<Subject>, Vec<Cell>)> {
    let mut run = Vec::new();
    let mut not = Vec::new();
    let fs = rtrace_ftrace::Tracefs::mount_if_needed()?;
    let lttng = lttng_tracer().and_then(|t| {
        t.check(&syscall_hook(ReadHook::Enter))?;
        Ok(t)
    });
    for &tracer in &o.tracers {
        for &feature in &o.features {
            // ftrace and LTTng always hook the syscall's tracepoints (their kprobe events are
            // not driven here); the BPF tracers hook where Gregg did when the kernel can.
            let bpf = matches!(tracer, TracerKind::Ebpf | TracerKind::Bpftrace);
            let kprobes = s.kprobes && bpf;
            let hook = if kprobes {
                feature.published_hook()
            } else {
                feature.hook_without_kprobes()
            }
            .to_owned();
            let cell = |outcome: Outcome| Cell {
                workload: Workload::Loop, // set per workload by `run`
                feature,
                tracer,
                hook: hook.clone(),
                program: String::new(),
                outcome,
            };
            let hooks = ReadHook::of(feature, kprobes).to_vec();
            let subject = |how: How, program: String| Subject {
                feature,
                tracer,
                hook: hook.clone(),
                hooks: hooks.clone(),
                program,
                how,
            };
            let kprobes_absent =
                "kprobes are unavailable on this kernel (no kprobe_events in tracefs): the QEMU guests run it as a functional check";
            match tracer {
                TracerKind::Bpftrace => {
                    if !s.bpftrace.is_file() {
                        not.push(cell(Outcome::Unavailable(
                            "bpftrace not found: apt-get install bpftrace".into(),
                        )));
                        continue;
                    }
                    match rtrace_bpftrace::events::script(feature, s.kprobes, &s.libc) {
                        Some(p) => run.push(subject(How::Bpftrace(p.clone()), p)),
                        None => not.push(cell(Outcome::Unavailable(kprobes_absent.into()))),
                    }
                }
                TracerKind::Ebpf => match rtrace_ebpf::events::check_feature(feature, s.kprobes) {
                    Ok(()) => run.push(subject(
                        How::Ebpf,
                        format!("bpf/events.bpf.c, experiment {:02}", feature.number()),
                    )),
                    Err(_) => not.push(cell(Outcome::Unavailable(kprobes_absent.into()))),
                },
                TracerKind::Ftrace => {
                    use rtrace_ftrace::features::FtracePlan;
                    match rtrace_ftrace::features::plan(feature, &fs) {
                        FtracePlan::Event {
                            event,
                            filter,
                            trigger,
                        } => {
                            let program = match (event, filter, trigger) {
                                ("", _, _) => "an instance with nothing enabled".to_owned(),
                                (e, _, Some(t)) => format!("syscalls:{e} trigger '{t}'"),
                                (e, Some(f), None) => {
                                    format!("syscalls:{e} with filter '{f}'")
                                }
                                (e, None, None) => format!("syscalls:{e} enabled in an instance"),
                            };
                            run.push(subject(How::FtraceEvent(event, filter, trigger), program));
                        }
                        FtracePlan::Uprobe { ret } => run.push(subject(
                            How::FtraceUprobe(ret),
                            format!("{} event on libc read", if ret { "r:" } else { "p:" }),
                        )),
                        FtracePlan::Unavailable(why) => not.push(cell(Outcome::Unavailable(why))),
                        FtracePlan::Inexpressible(why) => {
                            not.push(cell(Outcome::Inexpressible(why)))
                        }
                    }
                }
                TracerKind::Lttng => not_lttng(feature, &lttng).map_or_else(
                    || {
                        let exit = feature == Feature::TracepointReturn;
                        run.push(subject(
                            How::Lttng(exit),
                            if exit {
                                "lttng enable-event -k --syscall read, exit only (filter on ret)"
                            } else {
                                "lttng enable-event -k --syscall read (entry and exit recorded, entries counted)"
                            }
                            .into(),
                        ))
                    },
                    |o| not.push(cell(o)),
                ),
                TracerKind::None => {}
            }
        }
    }
    Ok((run, not))
}

/// Why LTTng's kernel tracer does not run `feature`, or `None` when it does (04, 05).
fn not_lttng(feature: Feature, lttng: &Result<rtrace_lttng::LttngTracer>) -> Option<Outcome> {
    if let Err(e) = lttng {
        return Some(Outcome::Unavailable(format!("{e:#}")));
    }
    let not_driven = |what: &str| {
        Outcome::Unavailable(format!(
            "LTTng can ({what}), but this suite does not drive it yet"
        ))
    };
    match feature {
        Feature::TracepointEntry | Feature::TracepointReturn => None,
        Feature::Control => Some(not_driven("a session with nothing enabled")),
        Feature::Kprobe | Feature::Kretprobe => Some(not_driven("--probe / --function")),
        Feature::Uprobe | Feature::Uretprobe => Some(not_driven("--userspace-probe")),
        Feature::Filter => Some(not_driven("--filter 'count > 0'")),
        Feature::PerEvent => Some(Outcome::Inexpressible(
            "LTTng has no printf: its per-event output is the record of 04".into(),
        )),
        _ => Some(Outcome::Inexpressible(
            "LTTng records events; it has no in-kernel maps, stacks or histograms".into(),
        )),
    }
}

fn lttng_tracer() -> Result<rtrace_lttng::LttngTracer> {
    rtrace_lttng::LttngTracer::new(rtrace_lttng::LttngOptions {
        subbuf_size: None,
        num_subbuf: None,
        event_kind: rtrace_lttng::EventKind::Tracepoint,
    })
}

fn syscall_hook(hook: ReadHook) -> Hook {
    Hook::KernelTracepoint {
        category: "syscalls".into(),
        name: if hook == ReadHook::Exit {
            "sys_exit_read"
        } else {
            "sys_enter_read"
        }
        .into(),
    }
}

pub fn run(mut o: EventsOptions) -> Result<i32> {
    let s = setup(&o)?;
    let (subjects, not_run) = plan(&o, &s)?;
    if subjects.is_empty() {
        bail!("no experiment can run here with these tracers: try --tracer bpftrace,ebpf");
    }
    let started = crate::start::start(&o.cpus, &o.out, o.out_given, o.json.as_deref())?;
    o.cpus = started.cpus.clone();
    o.out = started.out.clone();
    let mut result = EventsResult {
        experiment: "events".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_unix: crate::start::now_unix(),
        environment: Environment::collect(o.cpus.measured),
        config: EventsSettings {
            reads: o.reads,
            rounds: o.rounds,
            cpu: o.cpus.measured,
            priority: o.priority,
            kprobes: s.kprobes,
            libc: s.libc.display().to_string(),
            workloads: o.workloads.clone(),
        },
        baseline: Vec::new(),
        cells: Vec::new(),
        hook_checks: Vec::new(),
        failed: Vec::new(),
        retried: Vec::new(),
    };
    for &w in &o.workloads {
        result
            .cells
            .extend(not_run.iter().cloned().map(|c| Cell { workload: w, ..c }));
        for sub in &subjects {
            result.cells.push(Cell {
                workload: w,
                feature: sub.feature,
                tracer: sub.tracer,
                hook: sub.hook.clone(),
                program: sub.program.clone(),
                outcome: Outcome::Measured(Vec::new()),
            });
        }
    }
    let checks = hook_checks(&subjects);
    let workloads = o.workloads.len() as u64;
    let progress = crate::progress::Progress::new(
        workloads * (checks.len() as u64 + u64::from(o.rounds) * (subjects.len() as u64 + 2)),
    );
    for &w in &o.workloads {
        for (tracer, hook) in &checks {
            progress.start(format!(
                "{}: {tracer}: accounting on {}",
                w.name(),
                hook.label()
            ));
            let r = account(&o, &s, w, *tracer, *hook);
            progress.done();
            interrupted()?;
            match r {
                Ok(c) => {
                    if !c.exact() {
                        result.failed.push(format!(
                            "{}: {tracer} on {}: {} events (+{} lost) of the workload's {} reads (+{} at start-up)",
                            w.name(),
                            c.hook,
                            c.recorded,
                            c.lost,
                            c.reads,
                            c.startup
                        ));
                    }
                    result.hook_checks.push(c);
                }
                Err(e) => result.failed.push(format!(
                    "{}: {tracer}: accounting on {}: {e:#}",
                    w.name(),
                    hook.label()
                )),
            }
        }
    }
    write_json(&o, &result)?;
    for round in 0..o.rounds {
        for &w in &o.workloads {
            one_round(&o, &s, w, round, &subjects, &mut result, &progress)?;
        }
        write_json(&o, &result)?;
    }
    progress.finish();
    write_json(&o, &result)?;
    let one = rtrace_report::Report::one(rtrace_report::AnyResult::Events(result.clone()));
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

/// One round of workload `w`: an untraced run, every subject (in alternating order), an
/// untraced run.
fn one_round(
    o: &EventsOptions,
    s: &Setup,
    w: Workload,
    round: u32,
    subjects: &[Subject],
    result: &mut EventsResult,
    progress: &crate::progress::Progress,
) -> Result<()> {
    let order: Vec<&Subject> = if round.is_multiple_of(2) {
        subjects.iter().collect()
    } else {
        subjects.iter().rev().collect()
    };
    let untraced = |result: &mut EventsResult| -> Result<()> {
        progress.start(format!("round {}: {}, untraced", round + 1, w.name()));
        let base = timed(o, s, w, None, round, &[])?;
        result.baseline.push(base);
        progress.done();
        Ok(())
    };
    untraced(result)?;
    for sub in order {
        progress.start(format!(
            "round {}: {}, {} {}",
            round + 1,
            w.name(),
            sub.tracer,
            sub.feature
        ));
        let mut r = timed(o, s, w, Some(sub), round, &result.hook_checks);
        interrupted()?;
        if let Err(e) = &r {
            // One retry: a tracer that fails once (bpftrace 0.17 now and then does not exit on
            // SIGINT) does not cost the cell every later round; the failure stays on record.
            result.retried.push(format!(
                "{}, {} {}, round {}: {e:#}",
                w.name(),
                sub.tracer,
                sub.feature,
                round + 1
            ));
            r = timed(o, s, w, Some(sub), round, &result.hook_checks);
            interrupted()?;
        }
        progress.done();
        let cell = result
            .cells
            .iter_mut()
            .find(|c| c.workload == w && c.feature == sub.feature && c.tracer == sub.tracer)
            .expect("planned");
        match (r, &mut cell.outcome) {
            (Ok(run), Outcome::Measured(runs)) => runs.push(run),
            (Err(e), _) => {
                let msg = format!("{e:#}");
                eprintln!("error: {}, {} {}: {msg}", w.name(), sub.tracer, sub.feature);
                result.failed.push(format!(
                    "{}, {} {}: {msg}",
                    w.name(),
                    sub.tracer,
                    sub.feature
                ));
                cell.outcome = Outcome::Failed(msg);
            }
            (Ok(_), _) => {} // failed in an earlier round: stays failed
        }
    }
    untraced(result)
}

fn interrupted() -> Result<()> {
    if rtrace_measure::spawn::interrupted() {
        return Err(rtrace_measure::WorkloadError::Interrupted.into());
    }
    Ok(())
}

/// (tracer, hook) pairs the measured cells use: each gets one accounting run.
fn hook_checks(subjects: &[Subject]) -> Vec<(TracerKind, ReadHook)> {
    let mut out = Vec::new();
    for sub in subjects {
        for &h in &sub.hooks {
            if !out.contains(&(sub.tracer, h)) {
                out.push((sub.tracer, h));
            }
        }
    }
    out
}

fn reads_config(o: &EventsOptions, reads: u64) -> WorkloadConfig {
    WorkloadConfig::Reads(ReadsConfig {
        reads,
        cpu: o.cpus.measured,
        priority: o.priority,
    })
}

fn reads_done(s: &Setup, last: Message) -> Result<ReadsDone> {
    match last {
        Message::ReadsDone(d) => Ok(d),
        _ => bail!(
            "{} answered without a reads result: rebuild the workload binaries (`cargo build --release`)",
            s.workload.display()
        ),
    }
}

/// A tracer attached to the workload for one run.
enum Running {
    Ebpf(rtrace_ebpf::events::FeatureSession),
    Bpftrace(rtrace_bpftrace::events::FeatureRun),
    FtraceEvent(rtrace_ftrace::features::FeatureEvent),
    Backend(Box<dyn rtrace_tracer::Attachment>),
}

impl Running {
    fn finish(self, pid: u32, comm: &str) -> Result<Evidence> {
        match self {
            Running::Ebpf(e) => e.finish(),
            Running::Bpftrace(b) => b.finish(pid, comm),
            Running::FtraceEvent(f) => f.finish(pid),
            Running::Backend(a) => {
                let st = a.finish()?;
                Ok(Evidence {
                    all: Some(st.recorded + st.lost),
                    source: format!(
                        "{} events written ({} kept, {} lost or overwritten; every process)",
                        st.recorded + st.lost,
                        st.recorded,
                        st.lost
                    ),
                    ..Evidence::default()
                })
            }
        }
    }
}

fn libc_hook(s: &Setup, ret: bool) -> Hook {
    Hook::Uprobe {
        binary: s.libc.clone(),
        function: "read".into(),
        offset: s.libc_read,
        ret,
    }
}

fn run_dir(o: &EventsOptions, name: &str) -> Result<PathBuf> {
    let d = o.out.join(name);
    std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    Ok(d)
}

/// One timed run of the loop, untraced (`None`) or under `sub`.
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
    o: &EventsOptions,
    s: &Setup,
    w: Workload,
    reads: u64,
    attach: impl FnOnce(u32) -> Result<A>,
) -> Result<(Ran, A)> {
    match w {
        Workload::Loop => {
            let (ready, last, a) =
                run_workload_message(&s.workload, &[], &reads_config(o, reads), |ready| {
                    attach(ready.pid)
                })?;
            let done = reads_done(s, last)?;
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
        Workload::Dd => dd::run(o.cpus.measured, o.priority, reads, attach),
    }
}

/// One timed run of workload `w`, untraced (`None`) or under `sub`. `startup`: the events of
/// the process outside its copy loop on each hook, by tracer (dd's loader reads).
fn timed(
    o: &EventsOptions,
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
        None => o.out.clone(),
    };
    let (ran, running) = run_traced(o, s, w, o.reads, |pid| {
        let Some(sub) = sub else {
            return Ok(None);
        };
        start(o, s, w, sub, pid, &dir).map(Some)
    })?;
    let evidence = match (running, sub) {
        (Some(r), Some(sub)) => {
            let ev = r.finish(ran.pid, &ran.comm)?;
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
        // Keep the outputs small: bpftrace's and our per-event lines are counted, not kept.
        for f in [
            rtrace_bpftrace::events::OUTPUT_FILE,
            rtrace_ebpf::events::LINES_FILE,
        ] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(FeatureRun {
        workload: w,
        round,
        elapsed_ns: ran.elapsed_ns,
        reads: ran.reads,
        evidence,
    })
}

fn start(
    o: &EventsOptions,
    s: &Setup,
    w: Workload,
    sub: &Subject,
    pid: u32,
    dir: &Path,
) -> Result<Running> {
    Ok(match &sub.how {
        How::Ebpf => Running::Ebpf(rtrace_ebpf::events::FeatureSession::start(
            rtrace_ebpf::events::FeaturePlan {
                feature: sub.feature,
                account: None,
                libc_read: Some((s.libc.clone(), s.libc_read)),
                workload_pid: pid,
                workload_comm: comm(w).into(),
                kprobes: s.kprobes,
                out_dir: dir.to_owned(),
                consumer_cpus: o.cpus.harness.clone(),
            },
        )?),
        How::Bpftrace(program) => Running::Bpftrace(rtrace_bpftrace::events::FeatureRun::start(
            &s.bpftrace,
            sub.feature,
            program,
            dir,
            &o.cpus.harness,
        )?),
        How::FtraceEvent(event, filter, trigger) => Running::FtraceEvent(
            rtrace_ftrace::features::FeatureEvent::start(event, *filter, *trigger)?,
        ),
        How::Lttng(exit) => {
            let hook = syscall_hook(if *exit {
                ReadHook::Exit
            } else {
                ReadHook::Enter
            });
            Running::Backend(lttng_tracer()?.attach(&target(o, hook, None, dir))?)
        }
        How::FtraceUprobe(ret) => {
            let t = rtrace_ftrace::FtraceTracer::new();
            Running::Backend(t.attach(&target(o, libc_hook(s, *ret), None, dir))?)
        }
    })
}

fn target(o: &EventsOptions, hook: Hook, pid: Option<u32>, dir: &Path) -> Target {
    Target {
        hook,
        pid,
        follow_children: false,
        skip_tid: None,
        out_dir: dir.to_owned(),
        consumer_cpus: o.cpus.harness.clone(),
        buffer_size_kb: None,
        record: RecordMode::Overwrite,
    }
}

/// The accounting run of `tracer` on `hook` for workload `w`: the workload's events, the
/// tracer kept to its process. dd's process also reads outside its copy loop (the dynamic
/// loader reads its libraries): a run copying nothing measures that first, with the same
/// tracer, and the copying run must then see exactly blocks + that.
fn account(
    o: &EventsOptions,
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
    o: &EventsOptions,
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
    let (ran, running) = run_traced(o, s, w, reads, |pid| -> Result<Running> {
        Ok(match tracer {
            TracerKind::Ebpf => Running::Ebpf(rtrace_ebpf::events::FeatureSession::start(
                rtrace_ebpf::events::FeaturePlan {
                    feature: Feature::SingleKey,
                    account: Some(hook),
                    libc_read: Some((s.libc.clone(), s.libc_read)),
                    workload_pid: pid,
                    workload_comm: comm(w).into(),
                    kprobes: s.kprobes,
                    out_dir: dir.clone(),
                    consumer_cpus: o.cpus.harness.clone(),
                },
            )?),
            TracerKind::Bpftrace => Running::Bpftrace(rtrace_bpftrace::events::FeatureRun::start(
                &s.bpftrace,
                Feature::SingleKey,
                &rtrace_bpftrace::events::account_script(hook, &s.libc),
                &dir,
                &o.cpus.harness,
            )?),
            TracerKind::Lttng => Running::Backend(lttng_tracer()?.attach(&target(
                o,
                syscall_hook(hook),
                Some(pid),
                &dir,
            ))?),
            _ => {
                let h = match hook {
                    ReadHook::Enter | ReadHook::Exit => syscall_hook(hook),
                    ReadHook::Uprobe => libc_hook(s, false),
                    ReadHook::Uretprobe => libc_hook(s, true),
                    ReadHook::Kprobe | ReadHook::Kretprobe => {
                        bail!("ftrace kprobe events are not driven by this suite")
                    }
                };
                let t = rtrace_ftrace::FtraceTracer::new();
                Running::Backend(t.attach(&target(o, h, Some(pid), &dir))?)
            }
        })
    })?;
    let (recorded, lost) = match running {
        // The ordinary backends keep to the process (ftrace: its threads' events only).
        Running::Backend(a) => {
            let st = a.finish()?;
            (st.recorded, st.lost)
        }
        r => {
            let ev = r.finish(ran.pid, &ran.comm)?;
            (ev.workload.unwrap_or(0), ev.lost)
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    Ok((ran.reads, recorded, lost))
}

fn write_json(o: &EventsOptions, r: &EventsResult) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(r)?;
    let default = o.out.join("events.json");
    for path in std::iter::once(&default).chain(o.json.as_ref()) {
        output::write_atomic(path, &bytes)?;
    }
    Ok(())
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
