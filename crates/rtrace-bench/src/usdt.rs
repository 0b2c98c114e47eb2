//! `rtrace-bench usdt`: the thesis' per-probe microbenchmark (§3.3) for each tracer, on the
//! static USDT probe and, with `--hook`, on dynamic uprobe/uretprobe hooks of a marker function
//! (each hook kind its own set of rows).

use crate::options::{TracerChoice, TracerOptions, UsdtOptions};
use crate::runner::{self, Round, Setup};
use crate::{output, tracers};
use anyhow::{bail, Context, Result};
use rtrace_measure::trace_data::TraceData;
use rtrace_measure::usdt::{Case, CaseResult, HookKind, RoundSummary, UsdtConfig, UsdtResult};
use rtrace_measure::{run_workload, Environment, Events, Summary};
use rtrace_protocol::{decode_histogram, MicroConfig, Pacing, WorkloadConfig};
use rtrace_tracer::{Attachment, Hook, Instrumentation, Target, Tracer, TracerKind};
use std::path::{Path, PathBuf};
use std::time::Instant;

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
}

/// The workload binary carrying `instrumentation`.
pub fn workload_bin(dir: &Path, instrumentation: Instrumentation) -> PathBuf {
    dir.join(match instrumentation {
        Instrumentation::Usdt => "workload",
        Instrumentation::LttngUst => "workload-lttng",
    })
}

fn require_bin(bin: &Path) -> Result<()> {
    if !bin.is_file() {
        bail!(
            "workload binary {} not found: build it with `cargo build --release` or pass --workload-dir DIR",
            bin.display()
        );
    }
    Ok(())
}

/// The `rtrace:event` / `rtrace:idle` hooks of a workload binary (`rtrace:event_nop5` /
/// `rtrace:idle_nop5` for the usdt-nop5 kind), or for uprobe kinds the entry or return of its
/// marker functions `rtrace_marker_hit` / `rtrace_marker_idle`.
pub(crate) fn hooks(
    bin: &Path,
    instrumentation: Instrumentation,
    kind: HookKind,
) -> Result<(Hook, Hook)> {
    if kind.is_dynamic() {
        let ret = kind == HookKind::Uretprobe;
        return Ok((
            Hook::uprobe(bin, rtrace_protocol::MARKER_HIT, ret)?,
            Hook::uprobe(bin, rtrace_protocol::MARKER_IDLE, ret)?,
        ));
    }
    let suffix = if kind == HookKind::UsdtNop5 {
        "_nop5"
    } else {
        ""
    };
    let hook = |name: &str| -> Result<Hook> {
        let name = format!("{name}{suffix}");
        Ok(match instrumentation {
            Instrumentation::Usdt => Hook::Usdt {
                binary: bin.to_owned(),
                sites: rtrace_sdt::find(bin, "rtrace", &name)?,
            },
            Instrumentation::LttngUst => Hook::LttngUst {
                provider: "rtrace".into(),
                event: name,
            },
        })
    };
    Ok((hook("event")?, hook("idle")?))
}

/// Builds and checks every requested tracer before anything on the machine changes.
fn columns(o: &UsdtOptions) -> Result<(Vec<Column>, Vec<String>)> {
    let (kinds, skip_unavailable) = match &o.tracers {
        TracerChoice::These(k) => (k.clone(), false),
        TracerChoice::AllAvailable => (TracerKind::ALL.to_vec(), true),
    };
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
                let mut made = Vec::new();
                for v in tracers::variants(kind, &o.tracer)? {
                    let workload = workload_bin(&o.workload_dir, instrumentation);
                    require_bin(&workload)?;
                    let (event, idle) = hooks(&workload, instrumentation, hook_kind)?;
                    v.tracer.check(&event)?;
                    v.tracer.check(&idle)?;
                    made.push(Column {
                        kind,
                        hook_kind,
                        variant: hook_kind.variant(v.name),
                        tracer: v.tracer,
                        workload,
                        event,
                        idle,
                    });
                }
                Ok(made)
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

pub fn run(mut o: UsdtOptions) -> Result<i32> {
    let baseline_bin = workload_bin(&o.workload_dir, Instrumentation::Usdt);
    require_bin(&baseline_bin)?;
    let (cols, notes) = columns(&o)?;
    // Every check passed; take the CPUs and the output directory (the first changes).
    if let Some(j) = &o.json {
        output::check_file("--json", j)?;
    }
    let (cpus, _cpu) = o.cpus.claim()?;
    o.cpus = cpus;
    let run_dir = output::claim_dir("--out", &o.out, o.out_given)?;
    o.out = run_dir.path.clone();
    let result = UsdtResult {
        experiment: "usdt".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        environment: Environment::collect(o.cpus.measured),
        config: UsdtConfig {
            tracers: {
                let mut t: Vec<TracerKind> = cols.iter().map(|c| c.kind).collect();
                t.dedup();
                t
            },
            cases: o.cases.clone(),
            iterations: o.iterations,
            warmup: o.warmup,
            cpu: o.cpus.measured,
            harness_cpus: o.cpus.harness.clone(),
            priority: o.priority,
            buffer_size_kb: o.tracer.buffer_size_kb,
            tracer_options: tracer_options_json(&o.tracer),
            buffers: {
                let mut kinds: Vec<TracerKind> = cols.iter().map(|c| c.kind).collect();
                kinds.dedup();
                crate::tracers::buffers(&kinds, &o.tracer)?
            },
            unequal: {
                let mut kinds: Vec<TracerKind> = cols.iter().map(|c| c.kind).collect();
                kinds.dedup();
                crate::tracers::unequal(&kinds, o.cpus.measured)
            },
            hooks: o.hooks.clone(),
            rounds: o.rounds,
            pacing: rtrace_measure::pacing::for_this_machine(o.priority),
            allow_loss: o.allow_loss,
            keep_traces: Some(o.keep_traces),
            thread_cpus: if o.threads > 1 {
                o.thread_cpus()
            } else {
                Vec::new()
            },
        },
        runs: Vec::new(),
        warnings: Vec::new(),
    };
    let plan = plan(
        &o,
        &cols.iter().map(|c| c.hook_kind).collect::<Vec<_>>(),
        |i| !o.decompose || cols[i].kind == TracerKind::Lttng,
    );
    let setup = Setup {
        out: o.out.clone(),
        json: o.json.clone(),
        harness: o.cpus.harness.clone(),
        rounds: o.rounds,
    };
    let mut usdt = Usdt {
        o,
        cols,
        notes,
        baseline_bin,
        result,
    };
    runner::run(&mut usdt, &plan, &setup)
}

/// One entry of the plan: a column (`None`: no tracer), a case, the hook kind of its rows.
type Step = (Option<usize>, Case, HookKind);

/// Per hook kind, the quiet runs (cases 2 and 3 of every column, their case 0 in the middle)
/// then the traced runs (case 1 of every column). This VM's speed switches between states
/// lasting seconds: quiet runs next to their case 0 mostly share its state, and traced runs
/// next to each other (eBPF beside bpftrace) share theirs. uprobe kinds have their own case 0
/// (the marker call).
/// `quiet(i)`: whether column `i` runs its quiet cases (`--decompose` keeps them for LTTng only,
/// whose case 3 is a step of its staircase).
fn plan(o: &UsdtOptions, cols: &[HookKind], quiet_for: impl Fn(usize) -> bool) -> Vec<Step> {
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
    o: UsdtOptions,
    cols: Vec<Column>,
    notes: Vec<String>,
    baseline_bin: PathBuf,
    result: UsdtResult,
}

impl Usdt {
    fn variant(&self, &(col, _, hook_kind): &Step) -> Option<String> {
        match col {
            Some(c) => self.cols[c].variant.clone(),
            None => hook_kind.variant(None),
        }
    }
}

impl runner::Experiment for Usdt {
    const NAME: &'static str = "usdt";
    type Step = Step;
    type Run = CaseResult;

    fn label(&self, step: &Step) -> String {
        let (col, case, _) = *step;
        format!(
            "{}{} case {}",
            col.map_or(TracerKind::None, |c| self.cols[c].kind),
            self.variant(step)
                .as_deref()
                .map_or(String::new(), |v| format!(" ({v})")),
            case.number(),
        )
    }

    fn describe(&self, &(_, case, _): &Step) -> String {
        case.describe().into()
    }

    /// A short baseline run, discarded.
    fn prime(&mut self) -> Result<()> {
        let o = UsdtOptions {
            iterations: PRIMING_ITERATIONS.min(self.o.iterations),
            ..self.o.clone()
        };
        let once = Round {
            index: 0,
            of: 1,
            seq: 0,
        };
        run_case(
            &o,
            None,
            Case::Baseline,
            HookKind::Usdt,
            &self.baseline_bin,
            &once,
            self.result.config.pacing,
        )?;
        Ok(())
    }

    fn run(&mut self, step: &Step, round: &Round) -> Result<CaseResult> {
        let (col, case, hook_kind) = *step;
        let r = run_case(
            &self.o,
            col.map(|c| &self.cols[c]),
            case,
            hook_kind,
            &self.baseline_bin,
            round,
            self.result.config.pacing,
        )?;
        if self.result.environment.tsc_hz.is_none() {
            self.result.environment.tsc_hz = Some(r.tsc_hz);
            self.result.environment.tsc_step_ns = r.tsc_step_ns;
        }
        Ok(r)
    }

    fn runs(&mut self) -> &mut Vec<CaseResult> {
        &mut self.result.runs
    }

    fn json(&mut self) -> Result<Vec<u8>> {
        let (hooks, cols) = (&self.o.hooks, &self.cols);
        self.result
            .runs
            .sort_by_key(|c| display_order(hooks, cols, c));
        self.result.warnings = rtrace_measure::warnings::usdt(&self.result);
        self.result().to_json()
    }

    fn result(&self) -> rtrace_report::AnyResult {
        rtrace_report::AnyResult::Usdt(self.result.clone())
    }

    fn terminal(&self) -> String {
        rtrace_report::terminal::text(
            &rtrace_report::Report::one(self.result()),
            crate::report::paint(),
        )
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

pub(crate) fn tracer_options_json(t: &TracerOptions) -> serde_json::Value {
    serde_json::json!({
        "record": t.record,
        "lttng_subbuf_size": t.lttng_subbuf_size,
        "lttng_num_subbuf": t.lttng_num_subbuf,
        "lttng_event": t.lttng_events.iter().map(|&k| crate::tracers::lttng_event_name(k)).collect::<Vec<_>>(),
        "bpf_modes": t.bpf_modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "ftrace_modes": t.ftrace_modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
    })
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

fn run_case(
    o: &UsdtOptions,
    col: Option<&Column>,
    case: Case,
    hook_kind: HookKind,
    baseline_bin: &Path,
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
    let config = WorkloadConfig::Micro(MicroConfig {
        body: hook_kind.body(case),
        iterations: round.share(o.iterations),
        warmup: o.warmup,
        cpu: o.cpus.measured,
        priority: o.priority,
        timer_samples: TIMER_SAMPLES,
        pacing,
        more_threads: o.thread_cpus().into_iter().skip(1).collect(),
    });
    let tracer_kind = col.map_or(TracerKind::None, |c| c.kind);
    let variant = match col {
        Some(c) => c.variant.clone(),
        None => hook_kind.variant(None),
    };
    let out_dir = o.out.join(format!(
        "{}{}-case{}{}",
        tracer_kind,
        variant
            .as_deref()
            .map_or(String::new(), |v| format!("-{}", v.replace(", ", "-"))),
        case.number(),
        round.dir_suffix()
    ));
    if hook.is_some() {
        std::fs::create_dir_all(&out_dir)
            .with_context(|| format!("cannot create {}", out_dir.display()))?;
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
        let target = Target {
            hook: hook.clone(),
            pid: Some(ready.pid),
            follow_children: false,
            skip_tid: None,
            out_dir: out_dir.clone(),
            consumer_cpus: o.cpus.harness.clone(),
            buffer_size_kb: o.tracer.buffer_size_kb,
            record: o.tracer.record,
        };
        let attached = col.tracer.attach(&target)?;
        Ok((Some(attached), counters()))
    })?;
    let counters = counters.map(|c| c.read(round.share(o.iterations) + o.warmup));
    // Case 2's hook (`rtrace:idle`, `rtrace_marker_idle`) never runs: its ground truth is 0
    // even when the loop body calls the other marker.
    let hits = if case == Case::Dormant {
        0
    } else {
        outcome.done.hits
    };
    let events = match attachment {
        Some(a) => Some(Events::new(hits, a.finish()?)),
        None => None,
    };
    let hist = decode_histogram(&outcome.done.histogram)?;
    let timer = decode_histogram(&outcome.done.timer_overhead)?;
    let timer_overhead = Summary::of(&timer).context("workload recorded no timer samples")?;
    let round_summary = RoundSummary {
        seq: Some(round.seq),
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
        let verified = rtrace_measure::pool::Pool::accounting(&r).is_ok();
        r.trace_data = Some(
            TraceData::settle(&out_dir, o.keep_traces, verified, r.lost() > 0).with_context(
                || format!("cannot settle the trace data in {}", out_dir.display()),
            )?,
        );
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn options(args: &[&str]) -> UsdtOptions {
        let mut all = vec!["rtrace-bench", "usdt"];
        all.extend(args);
        match Cli::parse_from(all).command {
            crate::cli::Command::Usdt(a) => UsdtOptions::try_from(a).unwrap(),
            _ => unreachable!(),
        }
    }

    fn names(plan: &[Step]) -> Vec<String> {
        plan.iter()
            .map(|(c, case, h)| {
                let col = c.map_or("-".to_owned(), |i| i.to_string());
                format!("{col}{}{}", case.number(), &h.name()[..2])
            })
            .collect()
    }

    #[test]
    fn quiet_runs_surround_their_case_0_and_traced_runs_come_together() {
        let usdt = [HookKind::Usdt; 3];
        assert_eq!(
            names(&plan(&options(&[]), &usdt, |_| true)),
            ["02us", "03us", "12us", "-0us", "13us", "22us", "23us", "01us", "11us", "21us"]
        );
        assert_eq!(
            names(&plan(&options(&["--case", "0,1"]), &usdt, |_| true)),
            ["-0us", "01us", "11us", "21us"]
        );
    }

    #[test]
    fn dynamic_hooks_have_their_call_baseline_and_the_barrier_stays() {
        let cols = [HookKind::Uprobe, HookKind::Uretprobe];
        let dynamic = plan(
            &options(&["--hook", "uprobe,uretprobe", "--case", "0,1"]),
            &cols,
            |_| true,
        );
        assert_eq!(names(&dynamic), ["-0us", "-0up", "01up", "-0ur", "11ur"]);
        let both = [HookKind::Usdt, HookKind::Uprobe];
        let mixed = plan(
            &options(&["--hook", "usdt,uprobe", "--case", "0,2"]),
            &both,
            |_| true,
        );
        assert_eq!(names(&mixed), ["-0us", "02us", "-0up", "12up"]);
        let nop5 = plan(
            &options(&["--hook", "usdt-nop5", "--case", "0,1"]),
            &[HookKind::UsdtNop5],
            |_| true,
        );
        assert_eq!(names(&nop5), ["-0us", "01us"], "the barrier baseline");
    }
}
