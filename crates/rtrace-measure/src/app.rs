//! Result model of `rtrace-bench app`: a real program (a kernel build, pgbench, the user's
//! command) timed untraced and under tracing scripts of growing breadth, as Piotrowski's
//! Benchmark 2 (seed 004 §V, Tables VI/VII), with the slowdown predicted before the traced
//! runs and checked after them (his Future Work).
//!
//! The prediction is made of two measurements taken first: the script's hits in the program (a
//! counting run under ftrace, per tracepoint) and each tracer's cost per event under the
//! same script on a calibration loop (`perf bench sched pipe`: system calls and context
//! switches), both as the machine's busy CPU time. Predicted extra CPU time = hits × cost per
//! event; it is set beside the measured one, a round's traced run minus the same round's
//! untraced run, with Student's t over the rounds. The split of either between the program's
//! own CPU (the probe's cost in its context) and the rest of the machine (the tracer's
//! consumer) is what names the mechanism when they are more than 25 % apart.

use crate::interval::{mean_of, ratio_of, Estimate};
use crate::{Header, RunSettings};
use rtrace_tracer::EventStats;
use serde::{Deserialize, Serialize};

pub const EXPERIMENT: &str = "app";

/// How far a prediction may be from the measured extra CPU time and still hold.
pub const TOLERANCE: f64 = 0.25;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppResult {
    #[serde(flatten)]
    pub header: Header,
    pub config: AppConfig,
    /// Each script's hits in one run of the program, counted first.
    pub counts: Vec<ScriptCount>,
    /// The calibration loop's runs, untraced and under every tracer × script.
    pub calibration: Vec<AppRun>,
    /// Made once the counts and calibration are in, before the first traced run.
    pub predictions: Vec<Prediction>,
    /// The program's runs, warm-up runs included (`warmup`).
    pub runs: Vec<AppRun>,
    /// Tracer × script cells that did not run here, with why.
    pub not_run: Vec<NotRun>,
    /// Runs that failed, with why.
    pub failures: Vec<Failure>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppConfig {
    #[serde(flatten)]
    pub run: RunSettings,
    /// `kbuild`, `pgbench`, `command`.
    pub workload: String,
    /// What it runs, in words.
    pub describe: String,
    /// The timed command.
    pub command: Vec<String>,
    /// The calibration loop's command.
    pub calibration_command: Vec<String>,
    pub scripts: Vec<ScriptConfig>,
    /// Untimed runs of the program before the first round.
    pub warmup: u32,
    /// Runs of the calibration loop per tracer × script (and untraced).
    pub calibration_runs: u32,
}

/// A tracing script: its name, patterns and how many tracepoints they matched here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptConfig {
    pub name: String,
    pub patterns: Vec<String>,
    pub tracepoints: usize,
}

/// A script's hits in one untimed run of the program, as ftrace counted them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScriptCount {
    pub script: String,
    pub hits: u64,
    /// The probes hit most, by hits (at most 20).
    pub top: Vec<(String, u64)>,
    pub wall_ns: u64,
}

/// One timed run of the program or of the calibration loop.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppRun {
    /// `none`, or a tracer's label (`ebpf (record)`).
    pub tracer: String,
    /// The script traced; `None` untraced.
    pub script: Option<String>,
    /// 0-based round; warm-up and calibration runs count their repetitions.
    pub round: u32,
    #[serde(default)]
    pub warmup: bool,
    pub wall_ns: u64,
    /// CPU time of the command's process tree (wait4) and of the workload's processes outside
    /// it (PostgreSQL's server).
    pub cpu_ns: u64,
    /// Busy time of every CPU while the command ran (/proc/stat): the program, the tracer's
    /// consumers and daemons, and everything else.
    pub machine_cpu_ns: u64,
    /// How long the tracer took to attach.
    pub attach_ns: Option<u64>,
    /// From the command's end until the tracer had delivered everything and stopped.
    pub exit_ns: Option<u64>,
    /// Busy time of every CPU during the exit.
    pub exit_machine_cpu_ns: Option<u64>,
    /// What the tracer recorded and lost (every process: the scripts trace system-wide).
    pub events: Option<EventStats>,
    /// Recorded per probe, where the tracer tells them apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_probe: Vec<(String, u64)>,
    /// What the program reported (pgbench: tps, latency percentiles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<(String, f64)>,
    /// A probe whose hits the program's own output gives exactly, and that number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ground_truth: Option<(String, u64)>,
}

impl AppRun {
    pub fn events_total(&self) -> Option<u64> {
        self.events.map(|e| e.recorded + e.lost)
    }

    /// Busy time of the machine outside the program: the tracer's consumers, and the rest.
    pub fn outside_ns(&self) -> f64 {
        self.machine_cpu_ns as f64 - self.cpu_ns as f64
    }

    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.iter().find(|(n, _)| n == name).map(|m| m.1)
    }
}

impl crate::pool::Accounted for AppRun {
    /// A traced run that recorded nothing failed, and one with a ground truth must have every
    /// hit of that probe recorded or lost.
    fn accounting(&self) -> Result<(), String> {
        let Some(events) = self.events else {
            return Ok(());
        };
        if events.recorded + events.lost == 0 {
            return Err(format!(
                "{} recorded no event of {} while the program ran",
                self.tracer,
                self.script.as_deref().unwrap_or("its script")
            ));
        }
        if let Some((probe, truth)) = &self.ground_truth {
            // The script is that probe: every event is one of its hits.
            let seen = self
                .by_probe
                .iter()
                .find(|(p, _)| p == probe)
                .map_or(events.recorded, |p| p.1);
            if seen + events.lost != *truth {
                return Err(format!(
                    "{} recorded {seen} and lost {} of {probe}'s {truth} hits",
                    self.tracer, events.lost
                ));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NotRun {
    pub tracer: String,
    pub script: String,
    pub why: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Failure {
    pub tracer: String,
    pub script: Option<String>,
    pub error: String,
}

/// A cell's prediction, from the counts and the calibration alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub tracer: String,
    pub script: String,
    pub hits: u64,
    /// Machine busy time per event on the calibration loop (ns), and its share in the loop's
    /// own CPU time (the probe's cost in its context).
    pub per_event_ns: Estimate,
    pub per_event_in_context_ns: f64,
    /// hits × per_event_ns.
    pub extra_cpu_ns: f64,
    /// Of it, in the program's own CPU time.
    pub extra_in_context_ns: f64,
    /// extra CPU over the untraced program's parallelism (machine busy time / wall time).
    pub extra_wall_ns: f64,
}

/// What one traced cell measured against the untraced runs of the same rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Traced / untraced wall time, per round.
    pub slowdown: Estimate,
    /// As `slowdown`, with the tracer's exit added to the traced wall time.
    pub slowdown_with_exit: Option<Estimate>,
    /// Traced − untraced machine busy time, per round (ns).
    pub extra_cpu_ns: Estimate,
    /// Of it, in the program's own CPU time (ns).
    pub extra_in_context_ns: Estimate,
    pub traced_wall_ns: Estimate,
    pub exit_ns: Option<Estimate>,
    pub attach_ns: Option<Estimate>,
    pub events: Option<Estimate>,
    pub lost: u64,
}

impl AppResult {
    /// The timed runs of the program of `tracer` under `script` (`None`, `"none"`: untraced).
    pub fn timed<'a>(
        &'a self,
        tracer: &'a str,
        script: Option<&'a str>,
    ) -> impl Iterator<Item = &'a AppRun> + 'a {
        self.runs
            .iter()
            .filter(move |r| !r.warmup && r.tracer == tracer && r.script.as_deref() == script)
    }

    /// The untraced runs' wall time (ns).
    pub fn baseline_wall(&self) -> Option<Estimate> {
        let w: Vec<f64> = self.timed("none", None).map(|r| r.wall_ns as f64).collect();
        mean_of(&w, 0.0)
    }

    /// Every traced cell (tracer, script) that ran, in the order of the first round.
    pub fn cells(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for r in self.runs.iter().filter(|r| !r.warmup) {
            if let Some(s) = &r.script {
                let c = (r.tracer.clone(), s.clone());
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// A cell against the untraced runs of the same rounds.
    pub fn measured(&self, tracer: &str, script: &str) -> Option<Measured> {
        let base: Vec<&AppRun> = self.timed("none", None).collect();
        let mut pairs = Vec::new();
        for t in self.timed(tracer, Some(script)) {
            if let Some(b) = base.iter().find(|b| b.round == t.round) {
                pairs.push((*b, t));
            }
        }
        if pairs.is_empty() {
            return None;
        }
        let each = |f: &dyn Fn(&AppRun, &AppRun) -> f64| -> Vec<f64> {
            pairs.iter().map(|(b, t)| f(b, t)).collect()
        };
        let wall = each(&|b, t| t.wall_ns as f64 / b.wall_ns.max(1) as f64);
        let with_exit: Option<Vec<f64>> = pairs
            .iter()
            .map(|(b, t)| Some((t.wall_ns + t.exit_ns?) as f64 / b.wall_ns.max(1) as f64))
            .collect();
        let of = |xs: Vec<f64>| mean_of(&xs, 0.0);
        let traced: Vec<&AppRun> = pairs.iter().map(|p| p.1).collect();
        let opt = |f: &dyn Fn(&AppRun) -> Option<u64>| -> Option<Estimate> {
            let xs: Option<Vec<f64>> = traced.iter().map(|r| f(r).map(|x| x as f64)).collect();
            xs.and_then(|xs| mean_of(&xs, 0.0))
        };
        Some(Measured {
            slowdown: ratio_of(&wall, 0.0)?,
            slowdown_with_exit: with_exit.and_then(|x| ratio_of(&x, 0.0)),
            extra_cpu_ns: of(each(&|b, t| {
                t.machine_cpu_ns as f64 - b.machine_cpu_ns as f64
            }))?,
            extra_in_context_ns: of(each(&|b, t| t.cpu_ns as f64 - b.cpu_ns as f64))?,
            traced_wall_ns: of(traced.iter().map(|r| r.wall_ns as f64).collect())?,
            exit_ns: opt(&|r| r.exit_ns),
            attach_ns: opt(&|r| r.attach_ns),
            events: opt(&|r| r.events_total()),
            lost: traced.iter().filter_map(|r| r.events).map(|e| e.lost).sum(),
        })
    }

    pub fn prediction(&self, tracer: &str, script: &str) -> Option<&Prediction> {
        self.predictions
            .iter()
            .find(|p| p.tracer == tracer && p.script == script)
    }
}

/// Machine busy time per event of `tracer` under `script` on the calibration loop: each traced
/// run minus the untraced runs' mean, over its events; with the share in the loop's own CPU.
pub fn per_event(calibration: &[AppRun], tracer: &str, script: &str) -> Option<(Estimate, f64)> {
    let base: Vec<&AppRun> = calibration.iter().filter(|r| r.script.is_none()).collect();
    if base.is_empty() {
        return None;
    }
    let n = base.len() as f64;
    let base_machine = base.iter().map(|r| r.machine_cpu_ns as f64).sum::<f64>() / n;
    let base_cpu = base.iter().map(|r| r.cpu_ns as f64).sum::<f64>() / n;
    let traced: Vec<&AppRun> = calibration
        .iter()
        .filter(|r| r.tracer == tracer && r.script.as_deref() == Some(script))
        .collect();
    let mut per = Vec::new();
    let mut in_context = Vec::new();
    for r in traced {
        let events = r.events_total()? as f64;
        if events == 0.0 {
            return None;
        }
        per.push((r.machine_cpu_ns as f64 - base_machine) / events);
        in_context.push((r.cpu_ns as f64 - base_cpu) / events);
    }
    let est = mean_of(&per, 0.0)?;
    let ctx = in_context.iter().sum::<f64>() / in_context.len() as f64;
    Some((est, ctx))
}

/// The prediction of `tracer` under `script` for a program whose script hits `hits` times and
/// whose untraced runs keep `parallelism` CPUs busy on average.
pub fn predict(
    calibration: &[AppRun],
    tracer: &str,
    script: &str,
    hits: u64,
    parallelism: f64,
) -> Option<Prediction> {
    let (per, ctx) = per_event(calibration, tracer, script)?;
    let extra = hits as f64 * per.estimate;
    Some(Prediction {
        tracer: tracer.to_owned(),
        script: script.to_owned(),
        hits,
        per_event_ns: per,
        per_event_in_context_ns: ctx,
        extra_cpu_ns: extra,
        extra_in_context_ns: hits as f64 * ctx,
        extra_wall_ns: extra / parallelism.max(1e-9),
    })
}

/// How a prediction compares with what was measured: their ratio, and whether it is within
/// [`TOLERANCE`].
pub fn agreement(predicted_ns: f64, measured: &Estimate) -> (f64, bool) {
    let ratio = predicted_ns / measured.estimate;
    (
        ratio,
        measured.estimate > 0.0 && (ratio - 1.0).abs() <= TOLERANCE,
    )
}

crate::result_model!(AppResult);

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        tracer: &str,
        script: Option<&str>,
        round: u32,
        wall: u64,
        cpu: u64,
        machine: u64,
        events: Option<u64>,
    ) -> AppRun {
        AppRun {
            tracer: tracer.into(),
            script: script.map(Into::into),
            round,
            warmup: false,
            wall_ns: wall,
            cpu_ns: cpu,
            machine_cpu_ns: machine,
            attach_ns: events.map(|_| 1_000),
            exit_ns: events.map(|_| 2_000),
            exit_machine_cpu_ns: None,
            events: events.map(|e| EventStats::new(e, 0)),
            by_probe: Vec::new(),
            metrics: Vec::new(),
            ground_truth: None,
        }
    }

    #[test]
    fn per_event_cost_is_the_traced_runs_excess_over_their_events() {
        let cal = vec![
            run("none", None, 0, 100, 90, 100, None),
            run("none", None, 1, 100, 110, 100, None),
            run("ftrace", Some("s"), 0, 150, 130, 150, Some(10)),
            run("ftrace", Some("s"), 1, 170, 140, 170, Some(10)),
        ];
        let (per, ctx) = per_event(&cal, "ftrace", "s").unwrap();
        assert_eq!(per.estimate, 6.0);
        assert_eq!(ctx, 3.5);
        let p = predict(&cal, "ftrace", "s", 1000, 2.0).unwrap();
        assert_eq!(p.extra_cpu_ns, 6000.0);
        assert_eq!(p.extra_in_context_ns, 3500.0);
        assert_eq!(p.extra_wall_ns, 3000.0);
        assert!(per_event(&cal, "perf", "s").is_none());
    }

    #[test]
    fn a_cell_is_measured_against_the_same_rounds_untraced_run() {
        let r = AppResult {
            header: Header::new(EXPERIMENT),
            config: AppConfig {
                run: RunSettings::default(),
                workload: "command".into(),
                describe: String::new(),
                command: vec!["true".into()],
                calibration_command: Vec::new(),
                scripts: Vec::new(),
                warmup: 0,
                calibration_runs: 0,
            },
            counts: Vec::new(),
            calibration: Vec::new(),
            predictions: Vec::new(),
            runs: vec![
                run("none", None, 0, 100, 100, 200, None),
                run("ebpf", Some("s"), 0, 110, 105, 220, Some(5)),
                run("ebpf", Some("s"), 1, 130, 120, 240, Some(5)),
                run("none", None, 1, 120, 110, 220, None),
            ],
            not_run: Vec::new(),
            failures: Vec::new(),
        };
        assert_eq!(r.cells(), vec![("ebpf".to_string(), "s".to_string())]);
        let m = r.measured("ebpf", "s").unwrap();
        assert_eq!(m.extra_cpu_ns.estimate, 20.0);
        assert_eq!(m.extra_in_context_ns.estimate, 7.5);
        assert!(m.slowdown.estimate > 1.0);
        assert!(m.slowdown_with_exit.unwrap().estimate > m.slowdown.estimate);
        assert_eq!(agreement(25.0, &m.extra_cpu_ns), (1.25, true));
        assert!(!agreement(26.0, &m.extra_cpu_ns).1);
    }

    #[test]
    fn a_traced_run_that_recorded_nothing_fails_its_accounting() {
        use crate::pool::Accounted;
        assert!(run("perf", Some("s"), 0, 1, 1, 1, Some(0))
            .accounting()
            .is_err());
        assert!(run("perf", Some("s"), 0, 1, 1, 1, Some(3))
            .accounting()
            .is_ok());
        assert!(run("none", None, 0, 1, 1, 1, None).accounting().is_ok());
        let mut r = run("ebpf", Some("s"), 0, 1, 1, 1, Some(10));
        r.by_probe = vec![("postgresql:transaction__start".into(), 9)];
        r.ground_truth = Some(("postgresql:transaction__start".into(), 10));
        assert!(r.accounting().is_err());
        r.by_probe[0].1 = 10;
        assert!(r.accounting().is_ok());
    }
}
