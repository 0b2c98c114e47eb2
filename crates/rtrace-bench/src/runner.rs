//! The experiment runner every experiment is a plan on (hyperfine's scheduler shape). An
//! experiment is its plan (entries to run once first, in every round, and once last), its
//! single-run function, its result model (in `rtrace-measure`) and its report section (in
//! `rtrace-report`); the runner owns everything around them:
//!
//! - the start ([`start`]): the `--json` path checked, the measured CPU and the output directory
//!   claimed against other live runs, the harness pinned off the measured CPU, signals routed to
//!   the normal error path, stale state of killed runs removed
//!   ([`crate::tracers::remove_stale`]: this is its one call site);
//! - the plan's entries: `first` once, then `--rounds` rounds in alternating order (A B C, then
//!   C B A: a machine whose speed drifts weighs on every run alike), then `last` once; a run may
//!   decide the entry that follows it ([`Experiment::keep`] returns it: rate's search);
//! - each run's accounting checked, a failed run retried where the experiment allows, progress;
//! - the result file written atomically after every run, so a later failure loses nothing;
//! - the end: report directory, terminal text, paths, and a non-zero exit when a run failed.

use crate::options::CommonOptions;
use crate::output::{self, RunDir};
use crate::progress::Progress;
use crate::{cpus::Cpus, signals};
use anyhow::{bail, Context, Result};
use rtrace_measure::pool::Accounted;
use rtrace_measure::spawn::interrupted;
use rtrace_measure::WorkloadError;
use rtrace_report::{AnyResult, Report};
use rtrace_tracer::owner::NamedLock;
use std::path::{Path, PathBuf};

/// What an experiment gives the runner.
pub trait Experiment {
    /// Name of the result file (`<NAME>.json` in the output directory).
    const NAME: &'static str;
    /// One entry of the plan.
    type Entry: Clone;
    /// What one run of an entry measured.
    type Run: Accounted;

    /// The experiment's shared options; the runner sets the CPUs and the output directory it
    /// claimed before [`Experiment::begin`].
    fn common(&mut self) -> &mut CommonOptions;

    /// Called once the run has started (CPUs and output directory final): the result's header.
    fn begin(&mut self) -> Result<()>;

    /// What to run.
    fn plan(&self) -> Plan<Self::Entry>;

    /// The entry's name in progress lines and failures (`ftrace case 1`).
    fn label(&self, entry: &Self::Entry) -> String;

    /// What the entry does, after its label in the progress line; empty for nothing.
    fn describe(&self, _entry: &Self::Entry) -> String {
        String::new()
    }

    /// Performs one run of `entry`.
    fn run(&mut self, entry: &Self::Entry, round: &Round) -> Result<Self::Run>;

    /// Puts a run into the result model (pooling rounds, ...); returns the entry that this run
    /// decided comes next, run right after it (the rest of the plan waits).
    fn keep(&mut self, entry: &Self::Entry, run: Self::Run) -> Result<Option<Self::Entry>>;

    /// A run failed (not interrupted): `Err` ends the experiment (the default); `Ok` keeps the
    /// failure in the result model and goes on with the plan.
    fn failed(&mut self, _entry: &Self::Entry, error: anyhow::Error) -> Result<()> {
        Err(error)
    }

    /// How often a failed run of `entry` is run again before it counts as failed.
    fn retries(&self, _entry: &Self::Entry) -> u32 {
        0
    }

    /// A run failed and is run again: the failure stays on record.
    fn retried(&mut self, _entry: &Self::Entry, _error: &anyhow::Error) {}

    /// The result as it stands (written after every run, reported at the end).
    fn result(&mut self) -> AnyResult;

    /// Notes printed at the start (stderr) and again after the results (stdout).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The entries of an experiment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan<E> {
    /// Run once before the rounds (a priming run, accounting runs).
    pub first: Vec<E>,
    /// Run in every round, in alternating order.
    pub rounds: Vec<E>,
    /// Run once after the rounds.
    pub last: Vec<E>,
}

impl<E> Plan<E> {
    /// Only entries run in every round.
    pub fn rounds(rounds: Vec<E>) -> Plan<E> {
        Plan {
            first: Vec::new(),
            rounds,
            last: Vec::new(),
        }
    }
}

/// Where a run stands in the invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// 0-based.
    pub index: u32,
    pub of: u32,
    /// Position of this run in the whole invocation (0: the first run).
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

/// What a started run holds until it ends: its measured CPU and its output directory.
pub struct Session {
    /// The CPUs claimed (a measuring run).
    pub cpus: Option<Cpus>,
    /// The output directory (claimed, or a temporary one).
    pub out: PathBuf,
    _cpu: Option<NamedLock>,
    _dir: Option<RunDir>,
    _tmp: Option<tempfile::TempDir>,
}

/// The one start of every run, once its options are checked and every tracer passed its
/// check: `json` checked, the measured CPU of `cpus` claimed (it moves to a free one unless
/// `--cpu` named it), the output directory `out` (`given` by `--out`, else a fresh default; a
/// temporary directory without one) claimed, the harness pinned off the measured CPU, signals
/// routed to the normal error path, stale state of dead runs removed. Nothing before it changes
/// the machine.
pub fn start(
    cpus: Option<&Cpus>,
    out: Option<(&Path, bool)>,
    json: Option<&Path>,
) -> Result<Session> {
    if let Some(j) = json {
        output::check_file("--json", j)?;
    }
    let (cpus, cpu) = match cpus {
        Some(c) => {
            let (c, lock) = c.claim()?;
            (Some(c), Some(lock))
        }
        None => (None, None),
    };
    let (dir, tmp) = match out {
        Some((path, given)) => (Some(output::claim_dir("--out", path, given)?), None),
        None => (None, Some(tempfile::tempdir()?)),
    };
    if let Some(c) = &cpus {
        signals::pin_harness(&c.harness)?;
    }
    // The signal thread is started after pinning, so it inherits the harness CPUs.
    signals::install();
    crate::tracers::remove_stale()?;
    let out = match (&dir, &tmp) {
        (Some(d), _) => d.path.clone(),
        (None, Some(t)) => t.path().to_owned(),
        (None, None) => unreachable!("a directory either way"),
    };
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create output directory {}", out.display()))?;
    Ok(Session {
        cpus,
        out,
        _cpu: cpu,
        _dir: dir,
        _tmp: tmp,
    })
}

/// Starts `exp`, runs its plan, writes its report and prints it. Returns the exit code; an
/// error when a run failed or its accounting did not hold.
pub fn run<E: Experiment>(exp: &mut E) -> Result<i32> {
    let notes = exp.notes();
    for n in &notes {
        eprintln!("note: {n}");
    }
    let common = exp.common().clone();
    let session = start(
        Some(&common.cpus),
        Some((&common.out, common.out_given)),
        common.json.as_deref(),
    )?;
    let c = exp.common();
    c.cpus = session
        .cpus
        .clone()
        .context("a measuring run claims CPUs")?;
    c.out = session.out.clone();
    exp.begin()?;
    let files = ResultFiles {
        default: session.out.join(format!("{}.json", E::NAME)),
        json: common.json.clone(),
    };
    let failures = measure(exp, &files)?;
    let report = Report::one(exp.result());
    let doc = rtrace_report::document(&report)?;
    let index = crate::report::write_dir(&session.out, &doc)?;
    print!("{}", crate::report::terminal(&doc));
    for n in &notes {
        println!("note: {n}");
    }
    if let Some(j) = &files.json {
        eprintln!("results: {}", j.display());
    }
    eprintln!("results and trace data: {}", session.out.display());
    eprintln!("report: {}", index.display());
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(0)
}

/// Where the result file goes: the output directory, and `--json`.
struct ResultFiles {
    default: PathBuf,
    json: Option<PathBuf>,
}

impl ResultFiles {
    fn write<E: Experiment>(&self, exp: &mut E) -> Result<()> {
        let bytes = exp.result().to_json()?;
        for path in std::iter::once(&self.default).chain(self.json.as_ref()) {
            output::write_atomic(path, &bytes)?;
        }
        Ok(())
    }
}

/// Every entry of the plan, each run's follow-ups right after it; the result written after
/// every run. Returns the failed runs and accounting checks.
fn measure<E: Experiment>(exp: &mut E, files: &ResultFiles) -> Result<Vec<String>> {
    files.write(exp)?;
    let plan = exp.plan();
    let rounds = exp.common().rounds.max(1);
    let progress = Progress::new(
        (plan.first.len() + plan.last.len()) as u64 + plan.rounds.len() as u64 * u64::from(rounds),
    );
    let mut m = Measuring {
        exp,
        files,
        progress: &progress,
        failures: Vec::new(),
        seq: 0,
    };
    let once = |seq| Round {
        index: 0,
        of: 1,
        seq,
    };
    for entry in &plan.first {
        m.entry(entry.clone(), once)?;
    }
    for index in 0..rounds {
        let at = |seq| Round {
            index,
            of: rounds,
            seq,
        };
        for entry in at(0).order(&plan.rounds) {
            m.entry(entry.clone(), at)?;
        }
    }
    for entry in &plan.last {
        m.entry(entry.clone(), once)?;
    }
    Ok(m.failures)
}

/// The state of [`measure`].
struct Measuring<'a, E: Experiment> {
    exp: &'a mut E,
    files: &'a ResultFiles,
    progress: &'a Progress,
    failures: Vec<String>,
    /// Runs so far.
    seq: u64,
}

impl<E: Experiment> Measuring<'_, E> {
    /// Runs `entry` and every entry its runs decide come next.
    fn entry(&mut self, entry: E::Entry, at: impl Fn(u64) -> Round) -> Result<()> {
        let mut next = Some(entry);
        let mut first = true;
        while let Some(entry) = next.take() {
            if !first {
                self.progress.extend(1);
            }
            first = false;
            next = self.one(&entry, &at(self.seq))?;
            self.seq += 1;
        }
        Ok(())
    }

    /// One run of `entry` (retried as the experiment allows), kept or recorded as failed.
    fn one(&mut self, entry: &E::Entry, round: &Round) -> Result<Option<E::Entry>> {
        let label = format!("{}{}", self.exp.label(entry), round.label());
        let what = self.exp.describe(entry);
        self.progress.start(if what.is_empty() {
            label.clone()
        } else {
            format!("{label}: {what}")
        });
        let mut attempt = 0;
        let measured = loop {
            let measured = self.exp.run(entry, round);
            if interrupted() {
                // Ctrl-C reaches the whole process group: a run may even end "successfully"
                // (cyclictest stops early on SIGINT). Keep nothing measured after it.
                return Err(measured
                    .err()
                    .unwrap_or_else(|| WorkloadError::Interrupted.into()));
            }
            match measured {
                Err(e) if attempt < self.exp.retries(entry) => {
                    self.exp.retried(entry, &e);
                    attempt += 1;
                }
                m => break m,
            }
        };
        self.progress.done();
        let next = match measured {
            Ok(run) => {
                if let Err(e) = run.accounting() {
                    self.failures.push(format!("{label}: {e}"));
                }
                self.exp.keep(entry, run)?
            }
            Err(e) => {
                let message = format!("{label}: {e:#}");
                self.exp.failed(entry, e)?;
                eprintln!("error: {message}");
                self.failures.push(message);
                None
            }
        };
        self.files.write(self.exp)?;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of step `step`.
    struct Measured {
        step: &'static str,
        honest: bool,
    }

    impl Accounted for Measured {
        fn accounting(&self) -> Result<(), String> {
            self.honest.then_some(()).ok_or("missed events".into())
        }
    }

    /// Steps `a`, `b`, `c`: `b` fails its accounting in round 2, `c` fails to run in round 1;
    /// `s` runs first and decides two more steps `s1`, `s2`; `z` runs last; `r` fails once
    /// and is retried. `strict`: a failed run ends the experiment (the trait's default).
    #[derive(Default)]
    struct Mock {
        common: CommonOptions,
        plan: Plan<&'static str>,
        strict: bool,
        order: Vec<String>,
        kept: usize,
        failed: Vec<String>,
        retried: Vec<String>,
        exports: usize,
    }

    fn mock(rounds: u32, plan: Plan<&'static str>, strict: bool) -> Mock {
        Mock {
            common: CommonOptions {
                rounds,
                ..CommonOptions::default()
            },
            plan,
            strict,
            ..Mock::default()
        }
    }

    impl Experiment for Mock {
        const NAME: &'static str = "mock";
        type Entry = &'static str;
        type Run = Measured;
        fn common(&mut self) -> &mut CommonOptions {
            &mut self.common
        }
        fn begin(&mut self) -> Result<()> {
            Ok(())
        }
        fn plan(&self) -> Plan<&'static str> {
            self.plan.clone()
        }
        fn label(&self, step: &&'static str) -> String {
            format!("step {step}")
        }
        fn run(&mut self, &step: &&'static str, round: &Round) -> Result<Measured> {
            // Runs count up; a retry is the same run again.
            let retries = self.retried.len() as u64;
            assert_eq!(
                round.seq + retries,
                self.order.len() as u64,
                "runs count up"
            );
            self.order.push(format!("{step}{}", round.index + 1));
            if step == "c" && round.index == 0 {
                bail!("workload crashed");
            }
            if step == "r" && self.retried.is_empty() {
                bail!("flaky");
            }
            Ok(Measured {
                step,
                honest: !(step == "b" && round.index == 1),
            })
        }
        fn keep(&mut self, _: &&'static str, run: Measured) -> Result<Option<&'static str>> {
            self.kept += 1;
            Ok(match run.step {
                "s" => Some("s1"),
                "s1" => Some("s2"),
                _ => None,
            })
        }
        fn failed(&mut self, &step: &&'static str, error: anyhow::Error) -> Result<()> {
            if self.strict {
                return Err(error);
            }
            self.failed.push(format!("{step}: {error}"));
            Ok(())
        }
        fn retries(&self, &step: &&'static str) -> u32 {
            u32::from(step == "r")
        }
        fn retried(&mut self, &step: &&'static str, error: &anyhow::Error) {
            self.retried.push(format!("{step}: {error}"));
        }
        fn result(&mut self) -> AnyResult {
            self.exports += 1;
            AnyResult::from(rtrace_report::fixtures::usdt())
        }
    }

    fn round(index: u32, of: u32) -> Round {
        Round { index, of, seq: 0 }
    }

    fn files(dir: &Path) -> ResultFiles {
        ResultFiles {
            default: dir.join("mock.json"),
            json: Some(dir.join("copy.json")),
        }
    }

    #[test]
    fn rounds_alternate_check_and_export_after_every_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut mock = mock(3, Plan::rounds(vec!["a", "b", "c"]), false);
        let failures = measure(&mut mock, &files(dir.path())).unwrap();
        let order = ["a1", "b1", "c1", "c2", "b2", "a2", "a3", "b3", "c3"];
        assert_eq!(mock.order, order);
        assert_eq!(mock.kept, 8, "every run that ran is kept");
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
            "once at the start, then after every run"
        );
        for f in ["mock.json", "copy.json"] {
            let text = std::fs::read_to_string(dir.path().join(f)).unwrap();
            assert!(text.contains("\"experiment\": \"usdt\""), "{text}");
        }
    }

    #[test]
    fn first_and_last_run_once_and_a_run_decides_what_follows() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan {
            first: vec!["s"],
            rounds: vec!["a", "r"],
            last: vec!["z"],
        };
        let mut mock = mock(2, plan, false);
        let failures = measure(&mut mock, &files(dir.path())).unwrap();
        assert_eq!(
            mock.order,
            ["s1", "s11", "s21", "a1", "r1", "r1", "r2", "a2", "z1"],
            "s's follow-ups right after it; r retried once; odd rounds backwards"
        );
        assert_eq!(mock.retried, ["r: flaky"]);
        assert!(failures.is_empty(), "{failures:?}");
    }

    #[test]
    fn a_failed_run_ends_the_experiment_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let mut strict = mock(1, Plan::rounds(vec!["a", "c", "b"]), true);
        let e = measure(&mut strict, &files(dir.path())).unwrap_err();
        assert_eq!(e.to_string(), "workload crashed");
        assert_eq!(strict.order, ["a1", "c1"]);
        assert_eq!(strict.kept, 1, "what ran before is kept");
    }

    #[test]
    fn rounds_share_every_iteration() {
        for (total, rounds) in [(10, 3), (1_000_000, 5), (7, 7), (5, 1)] {
            let shares: Vec<u64> = (0..rounds).map(|i| round(i, rounds).share(total)).collect();
            assert_eq!(shares.iter().sum::<u64>(), total, "{shares:?}");
            assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn odd_rounds_run_backwards() {
        let plan = [1, 2, 3];
        assert_eq!(round(0, 3).order(&plan), [&1, &2, &3]);
        assert_eq!(round(1, 3).order(&plan), [&3, &2, &1]);
        assert_eq!(round(2, 3).order(&plan), [&1, &2, &3]);
        assert_eq!(round(1, 3).label(), " (round 2/3)");
        assert_eq!(round(1, 3).dir_suffix(), "-round2");
        let one = round(0, 1);
        assert_eq!(
            (one.label(), one.dir_suffix()),
            (String::new(), String::new())
        );
    }
}
