//! `rtrace-bench app`: what tracing costs a real program (Piotrowski's Benchmark 2, seed 004 §V):
//! a kernel build, pgbench, or the user's command after `--`, timed untraced and under tracing
//! scripts of growing breadth (`syscalls:sys_enter_*`, `syscalls:*`, `sched:*`, both), each
//! tracer tracing every process as his scripts did (strace: the command's tree), in alternating
//! rounds after a warm-up. Before the first traced run it predicts each cell's extra CPU time
//! from the script's hits in the program (one run under ftrace, counting per tracepoint) and the
//! tracer's cost per event under the same script on a calibration loop; the report sets the
//! prediction beside what the rounds measured.

pub mod kbuild;
pub mod pgbench;
mod run;
pub mod workload;

use crate::flags::common::{tracers, BpfModeArg, CommonArgs, TracerArg, TracerArgs};
use crate::options::{CommonOptions, OptionsError, Spec, Take, DEFAULT_BUFFER_KB};
use crate::runner::{self, Plan, Round};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use rtrace_measure::app::{
    self as model, AppConfig, AppResult, AppRun, NotRun, ScriptConfig, ScriptCount,
};
use rtrace_measure::pool::Accounted;
use rtrace_tracer::{Hook, RecordMode, Tracer, TracerKind};
use workload::AppWorkload;

pub const SPEC: Spec = Spec {
    experiment: model::EXPERIMENT,
    rounds: Take::Default(3),
    priority: None,
    record: Take::Default(RecordMode::Stream),
    buffer_size_kb: Take::Default(DEFAULT_BUFFER_KB),
    strace: true,
    add_ftrace: "add ftrace to --tracer",
};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    /// Linux from Debian's linux-source-6.1, tinyconfig, `make -j<CPUs>` of a fixed part
    /// (`--full`: the whole image), the object tree cleaned before every run.
    Kbuild,
    /// Debian's PostgreSQL 15 in a fresh cluster on a tmpfs, pgbench with a fixed transaction
    /// count.
    Pgbench,
}

/// Piotrowski's scripts (Table VII) that this kernel expresses without kprobes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptArg {
    /// `syscalls:sys_enter_*`: every system call's entry ("syscall entry").
    SysEnter,
    /// `syscalls:*`: every system call's entry and exit ("syscall all").
    Syscalls,
    /// `sched:*`: the scheduler's tracepoints ("sched").
    Sched,
    /// `syscalls:*` and `sched:*` together.
    SyscallsSched,
}

impl ScriptArg {
    fn name(self) -> &'static str {
        match self {
            ScriptArg::SysEnter => "sys_enter",
            ScriptArg::Syscalls => "syscalls",
            ScriptArg::Sched => "sched",
            ScriptArg::SyscallsSched => "syscalls+sched",
        }
    }

    fn patterns(self) -> Vec<String> {
        let p: &[&str] = match self {
            ScriptArg::SysEnter => &["syscalls:sys_enter_*"],
            ScriptArg::Syscalls => &["syscalls:*"],
            ScriptArg::Sched => &["sched:*"],
            ScriptArg::SyscallsSched => &["syscalls:*", "sched:*"],
        };
        p.iter().map(|s| s.to_string()).collect()
    }
}

#[derive(Args, Debug)]
pub struct AppArgs {
    /// The program to time (default: kbuild); or give your own command after `--`.
    #[arg(long, value_enum)]
    pub workload: Option<WorkloadArg>,
    /// Tracers (comma separated; `all`: every tracer available here; strace where named).
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub tracer: Vec<TracerArg>,
    /// Tracing scripts, each a column (comma separated). Default: syscalls, or none with --probe.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub script: Vec<ScriptArg>,
    /// Kernel tracepoints as one script of your own (`CATEGORY:NAME`, `*` globs in the name;
    /// repeat or comma separate), e.g. --probe syscalls:sys_enter_read.
    #[arg(long, value_delimiter = ',', value_name = "CATEGORY:NAME")]
    pub probe: Vec<String>,
    /// A USDT probe of the program as a script of its own (`PROVIDER:NAME`, comma separated;
    /// pgbench: PostgreSQL's, e.g. postgresql:transaction__commit, whose hits pgbench's output
    /// gives exactly; your command: its own binary's).
    #[arg(long, value_delimiter = ',', value_name = "PROVIDER:NAME")]
    pub usdt: Vec<String>,
    /// Untimed runs of the program before the first round.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub warmup: u32,
    /// Runs of the calibration loop per tracer × script, and untraced.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub calibration_runs: u32,
    /// Round trips of the calibration loop (`perf bench sched pipe -l N`): long enough that
    /// each tracer's extra CPU time there is many of /proc/stat's 10 ms ticks.
    #[arg(long, default_value_t = 200_000, value_name = "N")]
    pub calibration_loops: u64,
    /// kbuild: build the whole image (the paper's scale) instead of the fixed part.
    #[arg(long)]
    pub full: bool,
    /// kbuild: the directories built (comma separated; default init/,lib/: about 8 s here).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "DIR/",
        conflicts_with = "full"
    )]
    pub make_target: Vec<String>,
    /// pgbench: transactions per client (2 clients, as many as CPUs here).
    #[arg(long, default_value_t = pgbench::DEFAULT_TRANSACTIONS, value_name = "N")]
    pub transactions: u64,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
    /// Your program and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// What `app` times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    Kbuild { target: kbuild::Target },
    Pgbench { transactions: u64 },
    Command(Vec<String>),
}

/// `app`'s options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    pub common: CommonOptions,
    pub tracers: Vec<TracerKind>,
    /// Whether a tracer that cannot run here is listed rather than refused (`--tracer all`).
    pub skip_unavailable: bool,
    pub program: Program,
    /// (name, patterns).
    pub scripts: Vec<(String, Vec<String>)>,
    /// `--usdt`: (provider, name), each a script of its own.
    pub usdt: Vec<(String, String)>,
    pub warmup: u32,
    pub calibration_runs: u32,
    pub calibration_loops: u64,
}

impl AppArgs {
    pub fn lower(self) -> Result<Options, OptionsError> {
        if self.common.priority.is_some() {
            return Err(OptionsError::Refused {
                experiment: SPEC.experiment,
                option: "--priority",
                why: "the program runs with the scheduling it has, as you run it",
            });
        }
        let kbuild_only = self.full || !self.make_target.is_empty();
        let program = match (self.workload, self.command.is_empty()) {
            (Some(_), false) => {
                return Err(OptionsError::Other(
                    "give either --workload or a command after `--`, not both".into(),
                ))
            }
            (None, false) => Program::Command(self.command),
            (Some(WorkloadArg::Pgbench), true) => Program::Pgbench {
                transactions: self.transactions,
            },
            (Some(WorkloadArg::Kbuild) | None, true) => Program::Kbuild {
                target: match self.make_target.is_empty() {
                    true => kbuild::Target::new(self.full),
                    false => kbuild::Target::Dirs(self.make_target),
                },
            },
        };
        if kbuild_only && !matches!(program, Program::Kbuild { .. }) {
            return Err(OptionsError::Other(
                "--full and --make-target choose what the kernel build makes: they are for --workload kbuild".into(),
            ));
        }
        if self.transactions != pgbench::DEFAULT_TRANSACTIONS
            && !matches!(program, Program::Pgbench { .. })
        {
            return Err(OptionsError::Other(
                "--transactions is pgbench's: pass --workload pgbench".into(),
            ));
        }
        crate::options::check_nonzero(self.transactions, "transactions")?;
        if self.calibration_runs == 0 {
            return Err(OptionsError::Zero {
                what: "calibration-runs",
            });
        }
        crate::options::check_nonzero(self.calibration_loops, "calibration-loops")?;
        let mut scripts: Vec<(String, Vec<String>)> = crate::options::unique(self.script)
            .into_iter()
            .map(|s| (s.name().to_owned(), s.patterns()))
            .collect();
        if !self.probe.is_empty() {
            let probes = crate::options::unique(self.probe);
            scripts.push((probes.join(","), probes));
        }
        let mut usdt = Vec::new();
        for p in crate::options::unique(self.usdt) {
            match crate::count::parse_probe(&p)? {
                crate::count::CountProbe::Usdt { provider, name } => usdt.push((provider, name)),
                _ => return Err(OptionsError::ProbeSyntax(p)),
            }
        }
        if scripts.is_empty() && usdt.is_empty() {
            scripts.push((
                ScriptArg::Syscalls.name().into(),
                ScriptArg::Syscalls.patterns(),
            ));
        }
        let all = self.tracer.contains(&TracerArg::All);
        let mut tracer_args = self.tracer_args;
        if tracer_args.bpf_mode.is_empty() {
            // eBPF as the paper's scripts (per-probe counts) and recording every event;
            // bpftrace's one-liner counts.
            tracer_args.bpf_mode = vec![BpfModeArg::Record, BpfModeArg::Aggregate];
        }
        let mut kinds = tracers(&self.tracer);
        // `all,strace`: strace beside every other tracer (`all` leaves it out).
        if self.tracer.contains(&TracerArg::Strace) && !kinds.contains(&TracerKind::Strace) {
            kinds.push(TracerKind::Strace);
        }
        if kinds.is_empty() {
            return Err(OptionsError::Other(
                "--tracer names no tracer: pick ftrace, ebpf, bpftrace, perf, strace or all".into(),
            ));
        }
        let common = self.common.lower(&SPEC, tracer_args, &kinds)?;
        Ok(Options {
            common,
            tracers: kinds,
            skip_unavailable: all,
            program,
            scripts,
            usdt,
            warmup: self.warmup,
            calibration_runs: self.calibration_runs,
            calibration_loops: self.calibration_loops,
        })
    }
}

/// A tracer variant that runs some script here.
struct Variant {
    label: String,
    tracer: Box<dyn Tracer>,
}

/// One tracer variant under one script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cell {
    variant: usize,
    script: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Warmup,
    Count(usize),
    Calibrate(Option<Cell>),
    Run(Option<Cell>),
}

/// What one entry measured.
enum Done {
    Warmup(AppRun),
    Count(ScriptCount),
    Calibrated(AppRun),
    Timed(AppRun),
}

impl Accounted for Done {
    fn accounting(&self) -> Result<(), String> {
        match self {
            Done::Warmup(r) | Done::Calibrated(r) | Done::Timed(r) => r.accounting(),
            Done::Count(c) if c.hits == 0 => Err(format!(
                "ftrace counted no hit of {} in the program: nothing to predict from",
                c.script
            )),
            Done::Count(_) => Ok(()),
        }
    }
}

struct App {
    o: Options,
    workload: Box<dyn AppWorkload>,
    scripts: Vec<(String, Hook)>,
    variants: Vec<Variant>,
    cells: Vec<Cell>,
    /// eBPF in its counting mode, for the hits per script.
    counter: Option<Box<dyn Tracer>>,
    calibration: workload::Timed,
    result: AppResult,
}

pub fn run(o: Options) -> Result<i32> {
    let fs = rtrace_ftrace::Tracefs::find().context(
        "tracefs is not mounted: mount it with `mount -t tracefs nodev /sys/kernel/tracing`",
    )?;
    let events = fs.path("events");
    let workload = workload_of(&o.program)?;
    let mut scripts: Vec<(String, Hook)> = o
        .scripts
        .iter()
        .map(|(name, p)| {
            let script = rtrace_tracer::tracepoints::expand(&events, p)?;
            Ok((name.clone(), Hook::Tracepoints(script)))
        })
        .collect::<Result<_>>()?;
    for (provider, name) in &o.usdt {
        scripts.push((
            format!("{provider}:{name}"),
            usdt_hook(&*workload, provider, name)?,
        ));
    }
    let mut variants = Vec::new();
    let mut cells = Vec::new();
    let mut not_run = Vec::new();
    for &kind in &o.tracers {
        let mut why = Vec::new();
        for v in crate::tracers::variants(kind, &o.common.tracer)? {
            let label = kind.label(v.name);
            let mut runs = false;
            for (s, (name, script)) in scripts.iter().enumerate() {
                match v.tracer.check(script) {
                    Ok(()) => {
                        runs = true;
                        cells.push(Cell {
                            variant: variants.len(),
                            script: s,
                        });
                    }
                    Err(e) => {
                        why.push(format!("{label} × {name}: {e:#}"));
                        not_run.push(NotRun {
                            tracer: label.clone(),
                            script: name.clone(),
                            why: format!("{e:#}"),
                        })
                    }
                }
            }
            if runs {
                variants.push(Variant {
                    label,
                    tracer: v.tracer,
                });
            }
        }
        // A tracer named (not by `all`) that runs nothing is refused; strace, which sees
        // system calls only, is listed with why beside scripts of other events.
        let named = !o.skip_unavailable && kind != TracerKind::Strace;
        if named && !variants.iter().any(|v| v.label.starts_with(kind.name())) {
            bail!("{kind} runs none of the scripts here: {}", why.join("; "));
        }
    }
    if cells.is_empty() {
        let why: Vec<String> = not_run
            .iter()
            .map(|n| format!("{}: {}", n.tracer, n.why))
            .collect();
        bail!("no tracer runs a script here ({})", why.join("; "));
    }
    // ftrace streaming, which counts each tracepoint's events exactly (recorded + lost) and
    // comes off at once (a perf-event tracepoint, eBPF's or perf's, takes a grace period each).
    let counter: Box<dyn Tracer> = Box::new(rtrace_ftrace::FtraceTracer::with_mode(
        rtrace_ftrace::FtraceMode::Stream,
    ));
    let counter = match scripts.iter().try_for_each(|(_, s)| counter.check(s)) {
        Ok(()) => Some(counter),
        Err(e) => {
            not_run.push(NotRun {
                tracer: "prediction".into(),
                script: "every script".into(),
                why: format!("ftrace cannot count the hits here, so nothing is predicted: {e:#}"),
            });
            None
        }
    };
    let calibration = workload::Timed {
        argv: ["perf", "bench", "sched", "pipe", "-l"]
            .iter()
            .map(|s| s.to_string())
            .chain([o.calibration_loops.to_string()])
            .collect(),
        env: Vec::new(),
        cwd: None,
    };
    let command = workload.command().argv;
    let result = AppResult {
        header: rtrace_measure::Header::new(model::EXPERIMENT),
        config: AppConfig {
            run: Default::default(),
            workload: workload.name().into(),
            describe: workload.describe(),
            command,
            calibration_command: calibration.argv.clone(),
            scripts: scripts
                .iter()
                .map(|(name, hook)| match hook {
                    Hook::Tracepoints(s) => ScriptConfig {
                        name: name.clone(),
                        patterns: s.patterns.clone(),
                        tracepoints: s.points.len(),
                    },
                    hook => ScriptConfig {
                        name: name.clone(),
                        patterns: vec![format!("usdt:{}", hook.label())],
                        tracepoints: hook.probe_sites().map_or(0, |s| s.len()),
                    },
                })
                .collect(),
            warmup: o.warmup,
            calibration_runs: o.calibration_runs,
        },
        counts: Vec::new(),
        calibration: Vec::new(),
        predictions: Vec::new(),
        runs: Vec::new(),
        not_run,
        failures: Vec::new(),
    };
    runner::run(&mut App {
        o,
        workload,
        scripts,
        variants,
        cells,
        counter,
        calibration,
        result,
    })
}

impl App {
    fn cell_names(&self, c: Cell) -> (String, String) {
        (
            self.variants[c.variant].label.clone(),
            self.scripts[c.script].0.clone(),
        )
    }

    /// One timed run of `cmd`, traced by `tracer` under script `script` when given; its trace
    /// data settled in a directory of its own.
    fn timed(
        &self,
        cmd: &workload::Timed,
        traced: Option<(&dyn Tracer, usize)>,
        dir: &str,
        cpus: &[usize],
    ) -> Result<run::Ran> {
        let data = self.o.common.out.join(dir);
        crate::workload::create_dir(&data)?;
        let scratch = tempfile::tempdir_in(&self.o.common.out)?;
        let hook = traced.map(|(_, s)| self.scripts[s].1.clone());
        let target = |pid| {
            let t = self
                .o
                .common
                .target(hook.clone().expect("traced"), pid, &data);
            if pid.is_some() {
                t.following_tree()
            } else {
                t
            }
        };
        let outside = || self.workload.cpu_outside_ns();
        let ran = run::timed(
            cmd,
            traced.map(|(t, _)| (t, &target as &dyn Fn(Option<u32>) -> rtrace_tracer::Target)),
            &outside,
            scratch.path(),
            cpus,
        );
        let verified = ran.as_ref().is_ok_and(|r| r.run.accounting().is_ok());
        let lossy = ran
            .as_ref()
            .is_ok_and(|r| r.run.events.is_some_and(|e| e.lost > 0));
        crate::workload::settle(&self.o.common, &data, verified, lossy)?;
        ran
    }

    /// The predictions, once: the untraced runs so far give the program's parallelism.
    fn predict(&mut self) {
        if !self.result.predictions.is_empty() {
            return;
        }
        let untraced: Vec<&AppRun> = self
            .result
            .runs
            .iter()
            .filter(|r| r.script.is_none())
            .collect();
        let wall: u64 = untraced.iter().map(|r| r.wall_ns).sum();
        let busy: u64 = untraced.iter().map(|r| r.machine_cpu_ns).sum();
        let parallelism = if wall > 0 {
            busy as f64 / wall as f64
        } else {
            1.0
        };
        for &c in &self.cells {
            let (tracer, script) = self.cell_names(c);
            let Some(count) = self.result.counts.iter().find(|k| k.script == script) else {
                continue;
            };
            if let Some(p) = model::predict(
                &self.result.calibration,
                &tracer,
                &script,
                count.hits,
                parallelism,
            ) {
                self.result.predictions.push(p);
            }
        }
    }
}

impl runner::Experiment for App {
    const NAME: &'static str = model::EXPERIMENT;
    type Entry = Entry;
    type Run = Done;

    fn common(&mut self) -> &mut CommonOptions {
        &mut self.o.common
    }

    fn begin(&mut self) -> Result<()> {
        let kinds: Vec<TracerKind> = crate::options::unique(self.o.tracers.iter().copied());
        self.result.config.run = self.o.common.settings(&kinds)?;
        self.result.header.environment = self.o.common.environment();
        self.workload.prepare()
    }

    fn plan(&self) -> Plan<Entry> {
        let mut first: Vec<Entry> = (0..self.o.warmup).map(|_| Entry::Warmup).collect();
        if self.counter.is_some() {
            first.extend((0..self.scripts.len()).map(Entry::Count));
            for _ in 0..self.o.calibration_runs {
                first.push(Entry::Calibrate(None));
                // The loop fires no USDT probe of the program: those cells are not predicted.
                first.extend(
                    self.cells
                        .iter()
                        .filter(|c| matches!(self.scripts[c.script].1, Hook::Tracepoints(_)))
                        .map(|&c| Entry::Calibrate(Some(c))),
                );
            }
        }
        let mut rounds = vec![Entry::Run(None)];
        rounds.extend(self.cells.iter().map(|&c| Entry::Run(Some(c))));
        Plan {
            first,
            rounds,
            last: Vec::new(),
        }
    }

    fn label(&self, e: &Entry) -> String {
        let cell = |c: &Option<Cell>| match c {
            Some(c) => {
                let (t, s) = self.cell_names(*c);
                format!("{t}, {s}")
            }
            None => "untraced".into(),
        };
        match e {
            Entry::Warmup => format!("{} warm-up", self.workload.name()),
            Entry::Count(s) => format!("counting {}", self.scripts[*s].0),
            Entry::Calibrate(c) => format!("calibration loop {}", cell(c)),
            Entry::Run(c) => format!("{} {}", self.workload.name(), cell(c)),
        }
    }

    fn run(&mut self, e: &Entry, round: &Round) -> Result<Done> {
        let seq = round.seq;
        // The program runs on every CPU, as it would without us.
        let every = crate::cpus::usable_at_start();
        match *e {
            Entry::Warmup => {
                self.workload.reset()?;
                let ran = self.timed(
                    &self.workload.command(),
                    None,
                    &format!("warmup-{seq}"),
                    every,
                )?;
                Ok(Done::Warmup(AppRun {
                    tracer: "none".into(),
                    warmup: true,
                    round: seq as u32,
                    ..ran.run
                }))
            }
            Entry::Count(s) => {
                self.workload.reset()?;
                let counter = self.counter.as_deref().context("no counter")?;
                let ran = self.timed(
                    &self.workload.command(),
                    Some((counter, s)),
                    &format!("count-{seq}"),
                    every,
                )?;
                let mut top = ran.run.by_probe.clone();
                top.sort_by_key(|p| std::cmp::Reverse(p.1));
                top.truncate(20);
                Ok(Done::Count(ScriptCount {
                    script: self.scripts[s].0.clone(),
                    hits: ran.run.events_total().unwrap_or(0),
                    top,
                    wall_ns: ran.run.wall_ns,
                }))
            }
            Entry::Calibrate(c) => {
                let traced = c.map(|c| (self.variants[c.variant].tracer.as_ref(), c.script));
                // Both processes of the loop on the measured CPU, the consumers off it: every wake-up
                // stays on one busy CPU (across CPUs, each would idle it between ticks, which
                // /proc/stat then counts as idle).
                let on = [self.o.common.cpus.measured];
                let ran = self.timed(
                    &self.calibration,
                    traced,
                    &format!("calibration-{seq}"),
                    &on,
                )?;
                Ok(Done::Calibrated(self.named(ran.run, c, seq as u32)))
            }
            Entry::Run(c) => {
                if c.is_some() {
                    self.predict();
                }
                self.workload.reset()?;
                let traced = c.map(|c| (self.variants[c.variant].tracer.as_ref(), c.script));
                let ran = self.timed(
                    &self.workload.command(),
                    traced,
                    &format!("run-{seq}"),
                    every,
                )?;
                let outcome = self.workload.outcome(&ran.stdout, &ran.stderr)?;
                let truth = c
                    .and(self.workload.ground_truth(&outcome))
                    .filter(|(probe, _)| c.is_some_and(|c| self.scripts[c.script].0 == *probe));
                Ok(Done::Timed(AppRun {
                    metrics: outcome.metrics,
                    ground_truth: truth,
                    ..self.named(ran.run, c, round.index)
                }))
            }
        }
    }

    fn keep(&mut self, _: &Entry, done: Done) -> Result<Option<Entry>> {
        match done {
            Done::Warmup(r) | Done::Timed(r) => self.result.runs.push(r),
            Done::Count(c) => self.result.counts.push(c),
            Done::Calibrated(r) => self.result.calibration.push(r),
        }
        Ok(None)
    }

    fn failed(&mut self, e: &Entry, error: anyhow::Error) -> Result<()> {
        let (tracer, script) = match e {
            Entry::Run(Some(c)) | Entry::Calibrate(Some(c)) => {
                let (t, s) = self.cell_names(*c);
                (t, Some(s))
            }
            _ => ("none".into(), None),
        };
        self.result.failures.push(model::Failure {
            tracer,
            script,
            error: format!("{}: {error:#}", self.label(e)),
        });
        // Without untraced runs or counts nothing compares: those end the experiment.
        match e {
            Entry::Run(Some(_)) | Entry::Calibrate(Some(_)) => Ok(()),
            _ => Err(error),
        }
    }

    fn result(&mut self) -> rtrace_report::AnyResult {
        self.result.clone().into()
    }
}

impl App {
    fn named(&self, run: AppRun, c: Option<Cell>, round: u32) -> AppRun {
        let (tracer, script) = match c {
            Some(c) => {
                let (t, s) = self.cell_names(c);
                (t, Some(s))
            }
            None => ("none".into(), None),
        };
        AppRun {
            tracer,
            script,
            round,
            ..run
        }
    }
}

/// The workload `program` names, checked where it can be before anything changes.
fn workload_of(program: &Program) -> Result<Box<dyn AppWorkload>> {
    Ok(match program {
        Program::Command(argv) => {
            let path = crate::count::resolve(&argv[0])?;
            if !path.is_file() {
                bail!("command `{}` not found: check its path", argv[0]);
            }
            Box::new(workload::Command { argv: argv.clone() })
        }
        Program::Kbuild { target } => Box::new(kbuild::Kbuild::new(
            target.clone(),
            kbuild::Kbuild::default_jobs(),
        )),
        Program::Pgbench { transactions } => Box::new(pgbench::Pgbench::new(
            pgbench::DEFAULT_CLIENTS,
            *transactions,
        )),
    })
}

/// The USDT probe `provider:name` of `workload`'s binaries as a hook on every process.
fn usdt_hook(workload: &dyn AppWorkload, provider: &str, name: &str) -> Result<Hook> {
    let binaries = workload.usdt_binaries();
    for binary in &binaries {
        if let Ok(sites) = rtrace_sdt::find(binary, provider, name) {
            return Ok(Hook::Usdt {
                binary: binary.clone(),
                sites,
            });
        }
    }
    let listed: Vec<String> = binaries.iter().map(|b| b.display().to_string()).collect();
    match listed.first() {
        Some(b) => bail!(
            "no USDT probe {provider}:{name} in {}: see `rtrace-bench probes {b}`",
            listed.join(", ")
        ),
        None => bail!("the {} workload has no USDT probes: --usdt is for pgbench, or your command's own binary", workload.name()),
    }
}
