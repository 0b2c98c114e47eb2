//! The experiment runner every experiment shares (hyperfine's scheduler shape). An experiment
//! is its plan (a list of run descriptions), its single-run function, its result model (in
//! `rtrace-measure`, whose run type implements [`Pool`]) and its report section (in
//! `rtrace-report`); the runner owns everything around them:
//!
//! - the start: Ctrl-C handling, the harness pinned off the measured CPU, stale state of killed
//!   runs removed ([`crate::tracers::remove_stale`], the one call site), the output directory;
//! - an untimed priming run ([`Experiment::prime`]), then rounds in alternating order (A B C,
//!   then C B A): a machine whose speed drifts weighs on every run alike;
//! - pooling each run's rounds ([`rtrace_measure::pool::keep`]) and checking every round's event
//!   accounting;
//! - progress, and the result file written after every round, so a later failure loses nothing;
//! - the end: report directory, terminal text, paths, and a non-zero exit when a run failed.

use crate::progress::Progress;
use crate::signals;
use anyhow::{bail, Context, Result};
use rtrace_measure::pool::{self, Pool};
use rtrace_measure::spawn::interrupted;
use rtrace_measure::WorkloadError;
use rtrace_report::{AnyResult, Report};
use std::path::PathBuf;

/// What an experiment gives the runner.
pub trait Experiment {
    /// Name of the result file (`<NAME>.json` in the output directory).
    const NAME: &'static str;
    /// One entry of the plan.
    type Step;
    /// What one round of a step measured; rounds of the same step pool into one run.
    type Run: Pool;

    /// The step's name in progress lines and failures (`ftrace case 1`).
    fn label(&self, step: &Self::Step) -> String;

    /// What the step does, after its label in the progress line; empty for nothing.
    fn describe(&self, _step: &Self::Step) -> String {
        String::new()
    }

    /// An untimed run before the first round, so that the first timed run is not the first
    /// process after the measured CPU sat idle (caches, page cache, the host's vCPU). Nothing
    /// by default.
    fn prime(&mut self) -> Result<()> {
        Ok(())
    }

    /// Performs one round of `step`.
    fn run(&mut self, step: &Self::Step, round: &Round) -> Result<Self::Run>;

    /// The pooled runs of the result model.
    fn runs(&mut self) -> &mut Vec<Self::Run>;

    /// A round failed (not interrupted): `Err` ends the experiment (the default); `Ok` keeps
    /// the failure in the result model and goes on with the plan.
    fn failed(&mut self, _step: &Self::Step, error: anyhow::Error) -> Result<()> {
        Err(error)
    }

    /// The result file's bytes (also updates what derives from the runs, e.g. warnings).
    fn json(&mut self) -> Result<Vec<u8>>;

    /// The result for the report directory.
    fn result(&self) -> AnyResult;

    /// What the terminal shows at the end.
    fn terminal(&self) -> String;

    /// Notes printed at the start (stderr) and again after the results (stdout).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Where an experiment runs and writes.
pub struct Setup {
    /// Output directory (result file, trace data, report).
    pub out: PathBuf,
    /// Extra copy of the result file (`--json`).
    pub json: Option<PathBuf>,
    /// CPUs of the harness and every consumer; never the measured CPU.
    pub harness: Vec<usize>,
    /// Rounds (`--rounds`), at least 1.
    pub rounds: u32,
}

/// One pass over the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// 0-based.
    pub index: u32,
    pub of: u32,
    /// Position of this run in the whole invocation (0: the first timed run).
    pub seq: u64,
}

impl Round {
    /// Even rounds run the plan forwards, odd rounds backwards: a linear drift of the machine
    /// then weighs on every run alike.
    pub fn order<'p, T>(&self, plan: &'p [T]) -> Vec<&'p T> {
        if self.index.is_multiple_of(2) {
            plan.iter().collect()
        } else {
            plan.iter().rev().collect()
        }
    }

    /// ` (round 2/3)`; empty with one round.
    pub fn label(&self) -> String {
        if self.of > 1 {
            format!(" (round {}/{})", self.index + 1, self.of)
        } else {
            String::new()
        }
    }

    /// Suffix of the round's trace-data directory (`-round2`); empty with one round.
    pub fn dir_suffix(&self) -> String {
        if self.of > 1 {
            format!("-round{}", self.index + 1)
        } else {
            String::new()
        }
    }

    /// This round's share of `total` (iterations, loops) split over every round; earlier
    /// rounds take the remainder.
    pub fn share(&self, total: u64) -> u64 {
        let rounds = u64::from(self.of);
        total / rounds + u64::from(u64::from(self.index) < total % rounds)
    }
}

/// Runs `plan` in `setup.rounds` rounds and hands the result to the report and the terminal.
/// Returns the exit code; an error when a run failed or its accounting did not hold.
pub fn run<E: Experiment>(exp: &mut E, plan: &[E::Step], setup: &Setup) -> Result<i32> {
    let notes = exp.notes();
    for n in &notes {
        eprintln!("note: {n}");
    }
    // The signal thread is started after pinning, so it inherits the harness CPUs.
    signals::pin_harness(&setup.harness)?;
    signals::install();
    crate::tracers::remove_stale()?;
    std::fs::create_dir_all(&setup.out)
        .with_context(|| format!("cannot create output directory {}", setup.out.display()))?;
    let failures = measure(exp, plan, setup)?;
    let report = crate::report::write_dir(&setup.out, &Report::one(exp.result()))?;

    print!("{}", exp.terminal());
    for n in &notes {
        println!("note: {n}");
    }
    if let Some(j) = &setup.json {
        eprintln!("results: {}", j.display());
    }
    eprintln!("results and trace data: {}", setup.out.display());
    eprintln!("report: {}", report.display());
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(0)
}

/// Every round of `plan`, each run's rounds pooled and exported as they end; returns the
/// failed runs and accounting checks.
fn measure<E: Experiment>(exp: &mut E, plan: &[E::Step], setup: &Setup) -> Result<Vec<String>> {
    write_json(exp, setup)?;
    exp.prime().context("the untimed priming run failed")?;
    let mut failures = Vec::new();
    let progress = Progress::new(plan.len() as u64 * u64::from(setup.rounds));
    for index in 0..setup.rounds {
        let mut round = Round {
            index,
            of: setup.rounds,
            seq: u64::from(index) * plan.len() as u64,
        };
        for step in round.order(plan) {
            let label = format!("{}{}", exp.label(step), round.label());
            let what = exp.describe(step);
            progress.start(if what.is_empty() {
                label.clone()
            } else {
                format!("{label}: {what}")
            });
            let measured = exp.run(step, &round);
            progress.done();
            if interrupted() {
                // Ctrl-C reaches the whole process group: a run may even end "successfully"
                // (cyclictest stops early on SIGINT). Keep nothing measured after it.
                return Err(measured
                    .err()
                    .unwrap_or_else(|| WorkloadError::Interrupted.into()));
            }
            match measured {
                Ok(r) => {
                    if let Err(e) = r.accounting() {
                        failures.push(format!("{label}: {e}"));
                    }
                    pool::keep(exp.runs(), r)?;
                }
                Err(e) => {
                    let message = format!("{label}: {e:#}");
                    exp.failed(step, e)?;
                    eprintln!("error: {message}");
                    failures.push(message);
                }
            }
            write_json(exp, setup)?;
            round.seq += 1;
        }
    }
    progress.finish();
    Ok(failures)
}

/// Writes the result file into the output directory and to `--json`.
fn write_json<E: Experiment>(exp: &mut E, setup: &Setup) -> Result<()> {
    let bytes = exp.json()?;
    let default = setup.out.join(format!("{}.json", E::NAME));
    for path in std::iter::once(&default).chain(setup.json.as_ref()) {
        crate::output::write_atomic(path, &bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round `round` of step `step`; its `value` sums over rounds.
    #[derive(Debug, Clone, PartialEq)]
    struct Measured {
        step: &'static str,
        rounds: Vec<u32>,
        honest: bool,
    }

    impl Pool for Measured {
        fn is_same_run(&self, other: &Measured) -> bool {
            self.step == other.step
        }
        fn absorb(&mut self, round: Measured) -> Result<()> {
            self.rounds.extend(round.rounds);
            self.honest &= round.honest;
            Ok(())
        }
        fn accounting(&self) -> Result<(), String> {
            if self.honest {
                Ok(())
            } else {
                Err("missed events".into())
            }
        }
    }

    /// Steps `a`, `b`, `c`: `b` fails its accounting in round 2, `c` fails to run in round 1.
    #[derive(Default)]
    struct Mock {
        order: Vec<String>,
        runs: Vec<Measured>,
        failed: Vec<String>,
        exports: usize,
        primed: usize,
    }

    impl Experiment for Mock {
        const NAME: &'static str = "mock";
        type Step = &'static str;
        type Run = Measured;
        fn label(&self, step: &&'static str) -> String {
            format!("step {step}")
        }
        fn prime(&mut self) -> Result<()> {
            assert!(
                self.order.is_empty(),
                "priming comes before the first round"
            );
            self.primed += 1;
            Ok(())
        }
        fn run(&mut self, &step: &&'static str, round: &Round) -> Result<Measured> {
            assert_eq!(round.seq, self.order.len() as u64, "runs count up");
            self.order.push(format!("{step}{}", round.index + 1));
            if step == "c" && round.index == 0 {
                bail!("workload crashed");
            }
            Ok(Measured {
                step,
                rounds: vec![round.index + 1],
                honest: !(step == "b" && round.index == 1),
            })
        }
        fn runs(&mut self) -> &mut Vec<Measured> {
            &mut self.runs
        }
        fn failed(&mut self, &step: &&'static str, error: anyhow::Error) -> Result<()> {
            self.failed.push(format!("{step}: {error}"));
            Ok(())
        }
        fn json(&mut self) -> Result<Vec<u8>> {
            self.exports += 1;
            Ok(format!("{} runs\n", self.runs.len()).into_bytes())
        }
        fn result(&self) -> AnyResult {
            unreachable!("measure() does not report")
        }
        fn terminal(&self) -> String {
            String::new()
        }
    }

    #[test]
    fn rounds_alternate_pool_check_and_export_after_every_run() {
        let dir = tempfile::tempdir().unwrap();
        let setup = Setup {
            out: dir.path().to_owned(),
            json: Some(dir.path().join("copy.json")),
            harness: vec![0],
            rounds: 3,
        };
        let mut mock = Mock::default();
        let failures = measure(&mut mock, &["a", "b", "c"], &setup).unwrap();
        assert_eq!(
            mock.order,
            ["a1", "b1", "c1", "c2", "b2", "a2", "a3", "b3", "c3"]
        );
        let pooled: Vec<(&str, Vec<u32>)> = mock
            .runs
            .iter()
            .map(|r| (r.step, r.rounds.clone()))
            .collect();
        assert_eq!(
            pooled,
            [
                ("a", vec![1, 2, 3]),
                ("b", vec![1, 2, 3]),
                ("c", vec![2, 3])
            ]
        );
        assert_eq!(
            failures,
            [
                "step c (round 1/3): workload crashed",
                "step b (round 2/3): missed events"
            ]
        );
        assert_eq!(mock.failed, ["c: workload crashed"]);
        assert_eq!(
            mock.exports,
            1 + 9,
            "once at the start, then after every round"
        );
        for f in ["mock.json", "copy.json"] {
            let text = std::fs::read_to_string(dir.path().join(f)).unwrap();
            assert_eq!(text, "3 runs\n");
        }
    }

    #[test]
    fn a_failed_run_ends_the_experiment_by_default() {
        struct Strict(Mock);
        impl Experiment for Strict {
            const NAME: &'static str = "strict";
            type Step = &'static str;
            type Run = Measured;
            fn label(&self, step: &&'static str) -> String {
                self.0.label(step)
            }
            fn run(&mut self, step: &&'static str, round: &Round) -> Result<Measured> {
                self.0.run(step, round)
            }
            fn runs(&mut self) -> &mut Vec<Measured> {
                self.0.runs()
            }
            fn json(&mut self) -> Result<Vec<u8>> {
                self.0.json()
            }
            fn result(&self) -> AnyResult {
                unreachable!()
            }
            fn terminal(&self) -> String {
                String::new()
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let setup = Setup {
            out: dir.path().to_owned(),
            json: None,
            harness: vec![0],
            rounds: 1,
        };
        let mut strict = Strict(Mock::default());
        let e = measure(&mut strict, &["a", "c", "b"], &setup).unwrap_err();
        assert_eq!(e.to_string(), "workload crashed");
        assert_eq!(strict.0.order, ["a1", "c1"]);
        assert_eq!(strict.0.runs.len(), 1, "what ran before is kept");
    }

    #[test]
    fn rounds_share_every_iteration() {
        for (total, rounds) in [(10, 3), (1_000_000, 5), (7, 7), (5, 1)] {
            let shares: Vec<u64> = (0..rounds)
                .map(|index| {
                    Round {
                        index,
                        of: rounds,
                        seq: 0,
                    }
                    .share(total)
                })
                .collect();
            assert_eq!(shares.iter().sum::<u64>(), total, "{shares:?}");
            assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn odd_rounds_run_backwards() {
        let round = |index| Round {
            index,
            of: 3,
            seq: 0,
        };
        let plan = [1, 2, 3];
        assert_eq!(round(0).order(&plan), [&1, &2, &3]);
        assert_eq!(round(1).order(&plan), [&3, &2, &1]);
        assert_eq!(round(2).order(&plan), [&1, &2, &3]);
        assert_eq!(round(1).label(), " (round 2/3)");
        assert_eq!(round(1).dir_suffix(), "-round2");
        let one = Round {
            index: 0,
            of: 1,
            seq: 0,
        };
        assert_eq!(
            (one.label(), one.dir_suffix()),
            (String::new(), String::new())
        );
    }
}
