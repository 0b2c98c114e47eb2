//! `rtrace-bench usdt`: the thesis' per-probe microbenchmark (§3.3) for each tracer, on the
//! static USDT probe and, with `--hook`, on dynamic uprobe/uretprobe hooks of a marker function
//! (each hook kind its own set of rows).

use crate::options::{CommonOptions, TracerChoice};
use crate::runner::{self, Plan, Round};
use crate::{tracers, workload};
use anyhow::{Context, Result};
use rtrace_measure::usdt::{
    Case, CaseResult, HookKind, RoundSummary, SteadyState, UsdtConfig, UsdtResult,
};
use rtrace_measure::{run_workload, Events, Summary};
use rtrace_protocol::{decode_histogram, MicroConfig, Pacing, WorkloadConfig};
use rtrace_tracer::{Attachment, Hook, Instrumentation, Tracer, TracerKind};
use std::path::PathBuf;
use std::time::Instant;

/// `usdt`'s options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    pub common: CommonOptions,
    pub tracers: TracerChoice,
    pub cases: Vec<Case>,
    /// Hook kinds, each its own set of rows, in `HookKind::ALL` order; never empty.
    pub hooks: Vec<HookKind>,
    pub iterations: u64,
    pub warmup: u64,
    /// `--allow-loss`: lossy case-1 runs stay in ratios.
    pub allow_loss: bool,
    /// `--decompose`: every tracer in the modes of its staircase (`crate::decompose`), case 3
    /// for LTTng only.
    pub decompose: bool,
    /// `--threads`: loop threads, each on its own CPU (the measured CPU first, then harness
    /// CPUs from the last); at least 1.
    pub threads: usize,
    /// `--steady-state`: case-1 runs warm up until the tracer's buffer is full (see
    /// [`steady_warmup`]).
    pub steady_state: bool,
    /// `--spacing-us`: the loop sleeps this long before every timed hit (the cold path).
    pub spacing_us: Option<u64>,
}

impl Options {
    /// CPUs of every loop thread (see [`crate::cpus::Cpus::loop_cpus`]).
    pub fn thread_cpus(&self) -> Vec<usize> {
        self.common.cpus.loop_cpus(self.threads)
    }
}

/// Timer-overhead samples taken before every case.
const TIMER_SAMPLES: u64 = 100_000;

/// Iterations of the untimed priming run.
const PRIMING_ITERATIONS: u64 = 20_000;

/// A tracer ready to run: its backend and the two hooks of its workload flavour.
struct Column {
    kind: TracerKind,
    hook_kind: HookKind,
    /// Backend mode when a tracer has several (`record`, `aggregate`), then the dynamic hook
    /// kind (`HookKind::variant`).
    variant: Option<String>,
    tracer: Box<dyn Tracer>,
    workload: PathBuf,
    /// Fired every iteration (case 1).
    event: Hook,
    /// Never fired (case 2).
    idle: Hook,
    /// `--steady-state`: the warm-up of its case-1 runs.
    steady: Option<SteadyState>,
}

/// `--steady-state` (Gebai measures every tracer in steady state: the buffer filled before
/// timing): each loop thread of a case-1 run of `kind` fires at least `warmup` untimed
/// iterations, and enough that the buffer's capacity (an upper bound, see
/// [`tracers::capacity_events`]) was written before the timed loop: one buffer per CPU, so
/// per thread, except eBPF's one ring, which the threads share.
fn steady_warmup(o: &Options, kind: TracerKind) -> Result<Option<SteadyState>> {
    if !o.steady_state {
        return Ok(None);
    }
    let Some(capacity) = tracers::capacity_events(kind, &o.common.tracer)? else {
        return Ok(None);
    };
    let writers = match kind {
        TracerKind::Ebpf => o.threads.max(1) as u64,
        _ => 1,
    };
    Ok(Some(SteadyState {
        capacity_events: capacity,
        warmup: o.warmup.max(capacity.div_ceil(writers)),
    }))
}

/// Builds and checks every requested tracer before anything on the machine changes.
fn columns(o: &Options) -> Result<(Vec<Column>, Vec<String>)> {
    let (kinds, skip_unavailable) = o.tracers.kinds();
    let mut cols = Vec::new();
    let mut notes = Vec::new();
    for &hook_kind in &o.hooks {
        for &kind in &kinds {
            if hook_kind != HookKind::Usdt && kind == TracerKind::Lttng {
                notes.push(format!(
                    "{kind} skipped for {hook_kind}: LTTng traces its own tracepoint only, not a USDT probe, uprobe or uretprobe (use ftrace, ebpf or bpftrace)"
                ));
                continue;
            }
            // Other hooks than the tracer's own static instrumentation live in the USDT build:
            // the usdt-nop5 probes and the marker functions.
            let instrumentation = if hook_kind != HookKind::Usdt {
                Instrumentation::Usdt
            } else {
                kind.instrumentation()
            };
            let made = (|| -> Result<Vec<Column>> {
                let steady = steady_warmup(o, kind)?;
                let workload = workload::bin(&o.common, instrumentation)?;
                let (event, idle) = workload::hooks(&workload, instrumentation, hook_kind)?;
                Ok(tracers::checked(kind, &o.common.tracer, &[&event, &idle])?
                    .into_iter()
                    .map(|v| Column {
                        kind,
                        hook_kind,
                        variant: hook_kind.variant(v.name),
                        tracer: v.tracer,
                        workload: workload.clone(),
                        event: event.clone(),
                        idle: idle.clone(),
                        steady,
                    })
                    .collect())
            })();
            match made {
                Ok(c) => cols.extend(c),
                Err(e) if skip_unavailable => {
                    let of = if o.hooks.len() > 1 {
                        format!(" for {hook_kind}")
                    } else {
                        String::new()
                    };
                    notes.push(format!("{kind} skipped{of}: {e:#}"))
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok((cols, notes))
}

pub fn run(o: Options) -> Result<i32> {
    let baseline_bin = workload::bin(&o.common, Instrumentation::Usdt)?;
    let (cols, notes) = columns(&o)?;
    let result = UsdtResult {
        header: rtrace_measure::Header::new(rtrace_measure::usdt::EXPERIMENT),
        config: UsdtConfig {
            tracers: Vec::new(),
            cases: o.cases.clone(),
            iterations: o.iterations,
            warmup: o.warmup,
            run: Default::default(),
            hooks: o.hooks.clone(),
            // A loop that sleeps before every hit never spins long enough to need pauses.
            pacing: match o.spacing_us {
                Some(_) => None,
                None => rtrace_measure::pacing::for_this_machine(o.common.priority),
            },
            spacing_us: o.spacing_us,
            allow_loss: o.allow_loss,
            thread_cpus: Vec::new(),
            steady_state: Default::default(),
        },
        runs: Vec::new(),
        warnings: Vec::new(),
    };
    runner::run(&mut Usdt {
        o,
        cols,
        notes,
        baseline_bin,
        result,
    })
}

/// A run of a column (`None`: no tracer), a case, the hook kind of its rows.
type Step = (Option<usize>, Case, HookKind);

/// One entry of the plan: the untimed priming run, or a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// A short baseline run, discarded: the first timed run is not the first process after the
    /// measured CPU sat idle (caches, page cache, the host's vCPU).
    Prime,
    Step(Step),
}

/// Per hook kind, the quiet runs (cases 2 and 3 of every column, their case 0 in the middle)
/// then the traced runs (case 1 of every column). This VM's speed switches between states
/// lasting seconds: quiet runs next to their case 0 mostly share its state, and traced runs
/// next to each other (eBPF beside bpftrace) share theirs. uprobe kinds have their own case 0
/// (the marker call).
/// `quiet(i)`: whether column `i` runs its quiet cases (`--decompose` keeps them for LTTng only,
/// whose case 3 is a step of its staircase).
fn plan(o: &Options, cols: &[HookKind], quiet_for: impl Fn(usize) -> bool) -> Vec<Step> {
    let mut plan = Vec::new();
    // Without a USDT kind the barrier baseline still runs: it shows the plain call's cost.
    if o.cases.contains(&Case::Baseline) && o.hooks.iter().all(|k| k.is_dynamic()) {
        plan.push((None, Case::Baseline, HookKind::Usdt));
    }
    for (h, &hook_kind) in o.hooks.iter().enumerate() {
        let mine: Vec<usize> = (0..cols.len()).filter(|&i| cols[i] == hook_kind).collect();
        let mut quiet: Vec<Step> = Vec::new();
        for &i in mine.iter().filter(|&&i| quiet_for(i)) {
            for &case in o
                .cases
                .iter()
                .filter(|c| matches!(c, Case::Dormant | Case::Instrumented))
            {
                quiet.push((Some(i), case, hook_kind));
            }
        }
        // Dynamic kinds have their own case 0 (the call); the barrier baseline serves every
        // USDT kind and goes with the first of them.
        let first_static = o.hooks.iter().position(|k| !k.is_dynamic()) == Some(h);
        if o.cases.contains(&Case::Baseline) && (hook_kind.is_dynamic() || first_static) {
            let body = if hook_kind.is_dynamic() {
                hook_kind
            } else {
                HookKind::Usdt
            };
            quiet.insert(quiet.len() / 2, (None, Case::Baseline, body));
        }
        plan.extend(quiet);
        for &i in &mine {
            if o.cases.contains(&Case::Traced) {
                plan.push((Some(i), Case::Traced, hook_kind));
            }
        }
    }
    plan
}

/// Where a run goes in the result: per hook kind, case 0 first, then each column's cases in
/// order (the plan's order is chosen for the measurement, not for reading).
fn display_order(hooks: &[HookKind], cols: &[Column], c: &CaseResult) -> (usize, usize, Case) {
    // The barrier baseline leads even when no USDT kind was asked for.
    let hook = hooks
        .iter()
        .position(|&h| h == c.hook_kind)
        .map_or(0, |i| i + 1)
        * usize::from(!(c.hook_kind == HookKind::Usdt && c.tracer == TracerKind::None));
    let col = cols
        .iter()
        .position(|k| k.kind == c.tracer && k.variant == c.variant && k.hook_kind == c.hook_kind)
        .map_or(0, |i| i + 1);
    (hook, col, c.case)
}

/// The microbenchmark as the runner sees it.
struct Usdt {
    o: Options,
    cols: Vec<Column>,
    notes: Vec<String>,
    baseline_bin: PathBuf,
    result: UsdtResult,
}

/// The variant of a run of `col` (`None`: no tracer) on `hook_kind`'s body.
fn variant(col: Option<&Column>, hook_kind: HookKind) -> Option<String> {
    match col {
        Some(c) => c.variant.clone(),
        None => hook_kind.variant(None),
    }
}

impl runner::Experiment for Usdt {
    const NAME: &'static str = "usdt";
    type Entry = Entry;
    type Run = CaseResult;

    fn common(&mut self) -> &mut CommonOptions {
        &mut self.o.common
    }

    fn begin(&mut self) -> Result<()> {
        let kinds: Vec<TracerKind> = self.cols.iter().map(|c| c.kind).collect();
        let c = &mut self.result.config;
        c.run = self.o.common.settings(&kinds)?;
        c.tracers = kinds;
        c.tracers.dedup();
        if self.o.threads > 1 {
            c.thread_cpus = self.o.thread_cpus();
        }
        for col in &self.cols {
            if let Some(steady) = col.steady {
                let label = col.kind.label(col.variant.as_deref());
                c.steady_state.insert(label, steady);
            }
        }
        self.result.header.environment = self.o.common.environment();
        Ok(())
    }

    fn plan(&self) -> Plan<Entry> {
        let steps = plan(
            &self.o,
            &self.cols.iter().map(|c| c.hook_kind).collect::<Vec<_>>(),
            |i| crate::decompose::quiet_cases(self.o.decompose, self.cols[i].kind),
        );
        Plan {
            first: vec![Entry::Prime],
            rounds: steps.into_iter().map(Entry::Step).collect(),
            last: Vec::new(),
        }
    }

    fn label(&self, entry: &Entry) -> String {
        let Entry::Step((col, case, hook_kind)) = *entry else {
            return "priming run".into();
        };
        let kind = col.map_or(TracerKind::None, |c| self.cols[c].kind);
        let variant = variant(col.map(|c| &self.cols[c]), hook_kind);
        format!("{} case {}", kind.label(variant.as_deref()), case.number())
    }

    fn describe(&self, entry: &Entry) -> String {
        match entry {
            Entry::Prime => "untimed, discarded".into(),
            Entry::Step((_, case, _)) => case.describe().into(),
        }
    }

    fn run(&mut self, entry: &Entry, round: &Round) -> Result<CaseResult> {
        let (step, iterations) = match *entry {
            Entry::Prime => (
                (None, Case::Baseline, HookKind::Usdt),
                PRIMING_ITERATIONS.min(self.o.iterations),
            ),
            Entry::Step(step) => (step, round.share(self.o.iterations)),
        };
        let (col, case, hook_kind) = step;
        let r = run_case(
            &self.o,
            col.map(|c| &self.cols[c]),
            (case, hook_kind, iterations),
            &self.baseline_bin,
            round,
            self.result.config.pacing,
        )?;
        if self.result.header.environment.tsc_hz.is_none() {
            self.result.header.environment.tsc_hz = Some(r.tsc_hz);
            self.result.header.environment.tsc_step_ns = r.tsc_step_ns;
        }
        Ok(r)
    }

    fn keep(&mut self, entry: &Entry, run: CaseResult) -> Result<Option<Entry>> {
        if *entry != Entry::Prime {
            rtrace_measure::pool::keep(&mut self.result.runs, run)?;
        }
        Ok(None)
    }

    fn result(&mut self) -> rtrace_report::AnyResult {
        let (hooks, cols) = (&self.o.hooks, &self.cols);
        self.result
            .runs
            .sort_by_key(|c| display_order(hooks, cols, c));
        self.result.warnings = rtrace_measure::usdt::warnings(&self.result);
        self.result.clone().into()
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

/// Each loop thread's statistics of one round (empty with one thread).
fn per_thread(
    encoded: &[String],
    cpus: &[usize],
    seq: u64,
) -> Result<Vec<rtrace_measure::usdt::ThreadRun>> {
    encoded
        .iter()
        .zip(cpus)
        .map(|(h, &cpu)| {
            let hist = decode_histogram(h)?;
            let round = RoundSummary {
                seq: Some(seq),
                ..RoundSummary::of(&hist).context("a loop thread recorded no samples")?
            };
            Ok(rtrace_measure::usdt::ThreadRun {
                cpu,
                summary: round.summary,
                histogram: h.clone(),
                rounds: vec![round],
            })
        })
        .collect()
}

/// One run of `case` on `hook_kind`'s body for `iterations` timed iterations.
fn run_case(
    o: &Options,
    col: Option<&Column>,
    (case, hook_kind, iterations): (Case, HookKind, u64),
    baseline_bin: &std::path::Path,
    round: &Round,
    pacing: Option<Pacing>,
) -> Result<CaseResult> {
    let started = Instant::now();
    let (bin, hook) = match (col, case) {
        (None, _) | (_, Case::Baseline) => (baseline_bin, None),
        (Some(c), Case::Traced) => (c.workload.as_path(), Some(&c.event)),
        (Some(c), Case::Dormant) => (c.workload.as_path(), Some(&c.idle)),
        (Some(c), Case::Instrumented) => (c.workload.as_path(), None),
    };
    // Only a traced run writes the buffer: it alone warms up into the steady state.
    let warmup = match (col.and_then(|c| c.steady), case) {
        (Some(steady), Case::Traced) => steady.warmup,
        _ => o.warmup,
    };
    let config = WorkloadConfig::Micro(MicroConfig {
        body: hook_kind.body(case),
        iterations,
        warmup,
        cpu: o.common.cpus.measured,
        priority: o.common.priority,
        timer_samples: TIMER_SAMPLES,
        pacing,
        more_threads: o.thread_cpus().into_iter().skip(1).collect(),
        spacing_us: o.spacing_us,
    });
    let tracer_kind = col.map_or(TracerKind::None, |c| c.kind);
    let variant = variant(col, hook_kind);
    let out_dir = o.common.out.join(format!(
        "{}{}-case{}{}",
        tracer_kind,
        variant
            .as_deref()
            .map_or(String::new(), |v| format!("-{}", v.replace(", ", "-"))),
        case.number(),
        round.dir_suffix()
    ));
    if hook.is_some() {
        workload::create_dir(&out_dir)?;
    }
    let env = col.map_or_else(Vec::new, |c| c.tracer.workload_env());
    // `--decompose` also counts the process's performance counters (opened once the tracer
    // is attached, read after the process exited).
    let (outcome, (attachment, counters)) = run_workload(bin, &env, &config, |ready| {
        // Opened after the attach: they see the process from its first iteration on, and none
        // of the attach (another process's work).
        let counters = || {
            o.decompose
                .then(|| rtrace_measure::counters::Counters::open(ready.pid))
        };
        let (Some(col), Some(hook)) = (col, hook) else {
            return Ok((None::<Box<dyn Attachment>>, counters()));
        };
        let target = o.common.target(hook.clone(), Some(ready.pid), &out_dir);
        let attached = col.tracer.attach(&target)?;
        Ok((Some(attached), counters()))
    })?;
    let counters = counters.map(|c| c.read(iterations + warmup));
    // Case 2's hook (`rtrace:idle`, `rtrace_marker_idle`) never runs: its ground truth is 0
    // even when the loop body calls the other marker.
    let hits = if case == Case::Dormant {
        0
    } else {
        outcome.done.hits
    };
    let events = attachment.map(|a| a.finish()).transpose()?;
    let events = events.map(|stats| Events::new(hits, stats));
    let hist = decode_histogram(&outcome.done.histogram)?;
    let timer = decode_histogram(&outcome.done.timer_overhead)?;
    let timer_overhead = Summary::of(&timer).context("workload recorded no timer samples")?;
    let round_summary = RoundSummary {
        seq: Some(round.seq),
        uprobes_trampoline: outcome.done.uprobes_trampoline,
        syscall_ns: outcome.done.syscall_ns,
        ..RoundSummary::of(&hist)
            .context("workload recorded no samples")?
            .with_timer(&timer)
    };
    let mut r = CaseResult {
        tracer: tracer_kind,
        case,
        variant,
        workload: bin.display().to_string(),
        hook: hook.map(Hook::label),
        hook_kind,
        sites: hook.map(Hook::probe_sites).transpose()?.unwrap_or_default(),
        summary: round_summary.summary,
        disturbed: round_summary.disturbed,
        histogram: outcome.done.histogram,
        timer_overhead,
        events,
        tsc_hz: outcome.done.tsc_hz,
        tsc_step_ns: outcome.done.tsc_step_ns,
        trace_data: None,
        workload_max_rss_kb: outcome.done.max_rss_kb,
        mlocked: outcome.ready.mlocked,
        wall_s: started.elapsed().as_secs_f64(),
        rests: outcome.done.rests,
        rounds: vec![round_summary],
        counters,
        per_thread: per_thread(&outcome.done.per_thread, &o.thread_cpus(), round.seq)?,
    };
    if hook.is_some() {
        let verified = rtrace_measure::pool::Accounted::accounting(&r).is_ok();
        let lossy = r.lost() > 0;
        r.trace_data = Some(workload::settle(&o.common, &out_dir, verified, lossy)?);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `usdt ARGS` with columns `hooks`, every tracer available, by name.
    fn names(args: &[&str], hooks: &[HookKind]) -> Vec<String> {
        let o = crate::flags::tests::usdt(args).unwrap();
        plan(&o, hooks, |_| true)
            .iter()
            .map(|(c, case, h)| {
                let col = c.map_or("-".to_owned(), |i| i.to_string());
                format!("{col}{}{}", case.number(), &h.name()[..2])
            })
            .collect()
    }

    #[test]
    fn quiet_runs_surround_their_case_0_and_traced_runs_come_together() {
        let usdt = [HookKind::Usdt; 3];
        let want = [
            "02us", "03us", "12us", "-0us", "13us", "22us", "23us", "01us", "11us", "21us",
        ];
        assert_eq!(names(&[], &usdt), want);
        let want = ["-0us", "01us", "11us", "21us"];
        assert_eq!(names(&["--case", "0,1"], &usdt), want);
    }

    #[test]
    fn dynamic_hooks_have_their_call_baseline_and_the_barrier_stays() {
        let cols = [HookKind::Uprobe, HookKind::Uretprobe];
        let dynamic = names(&["--hook", "uprobe,uretprobe", "--case", "0,1"], &cols);
        assert_eq!(dynamic, ["-0us", "-0up", "01up", "-0ur", "11ur"]);
        let both = [HookKind::Usdt, HookKind::Uprobe];
        let mixed = names(&["--hook", "usdt,uprobe", "--case", "0,2"], &both);
        assert_eq!(mixed, ["-0us", "02us", "-0up", "12up"]);
        let nop5 = names(
            &["--hook", "usdt-nop5", "--case", "0,1"],
            &[HookKind::UsdtNop5],
        );
        assert_eq!(nop5, ["-0us", "01us"], "the barrier baseline");
    }
}
