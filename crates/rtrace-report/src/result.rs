//! What a report is made of: any result file, told apart by its `experiment` field, with the
//! warnings computed from it. Each experiment is one registered unit: its result model
//! (`rtrace_measure::ResultModel`) and what a report makes of it ([`Reported`], implemented in
//! the experiment's module), listed once in [`EXPERIMENTS`].

use crate::cost::{Cost, Experiment};
use anyhow::{bail, Context, Result};
use rtrace_doc::Section;
use rtrace_measure::sweep::SweepResult;
use rtrace_measure::usdt::UsdtResult;
use rtrace_measure::{Environment, Header, ResultModel, Warning};
use std::any::Any;
use std::sync::Arc;

/// Any `'static` value as `dyn Any`: how a [`Reported`] model is read back as its own type.
pub trait AsAny {
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An experiment's result as a report shows it.
pub trait Reported: ResultModel + AsAny {
    /// Its section, built by its experiment's module.
    fn section(&self, e: &Entry, report: &Report) -> Section;
    /// The experiment its per-hit costs count as in the consistency section and the fleet;
    /// `None`: it measures none.
    fn cost_experiment(&self) -> Option<Experiment> {
        None
    }
    /// Its per-hit costs (`crate::consistency::sources`).
    fn costs(&self) -> Vec<Cost> {
        Vec::new()
    }
}

/// How a file of one experiment loads (`crate::EXPERIMENTS`).
pub(crate) type Load = fn(serde_json::Value) -> serde_json::Result<AnyResult>;

pub(crate) fn load<R: Reported + serde::de::DeserializeOwned>(
    v: serde_json::Value,
) -> serde_json::Result<AnyResult> {
    Ok(AnyResult::from(serde_json::from_value::<R>(v)?))
}

/// A result of any experiment.
#[derive(Debug, Clone)]
pub struct AnyResult(Arc<dyn Reported>);

impl<R: Reported> From<R> for AnyResult {
    fn from(r: R) -> AnyResult {
        AnyResult(Arc::new(r))
    }
}

impl AnyResult {
    /// Parses a result file; errors name the fix.
    pub fn from_json(text: &str) -> Result<AnyResult> {
        let v: serde_json::Value = serde_json::from_str(text)
            .context("not JSON: give a result file (usdt.json, cyclictest-sweep.json)")?;
        let stale =
            "does not match this rtrace-bench's result format: regenerate it with this version";
        let Some(name) = v.get("experiment").and_then(|e| e.as_str()) else {
            bail!("no `experiment` field: not an rtrace-bench result file");
        };
        match crate::EXPERIMENTS.iter().find(|(n, _)| *n == name) {
            Some((_, load)) => load(v).context(stale),
            None => {
                let known: Vec<String> = crate::EXPERIMENTS
                    .iter()
                    .map(|(n, _)| format!("`{n}`"))
                    .collect();
                bail!(
                    "unknown experiment `{name}`: reports cover {} and {} results",
                    known[..known.len() - 1].join(", "),
                    known[known.len() - 1]
                )
            }
        }
    }

    /// The result as its experiment's model, if it is one.
    pub fn get<R: Reported>(&self) -> Option<&R> {
        // On the model, not on the `Arc` (which is `Any` too).
        self.model().as_any().downcast_ref()
    }

    /// What a report makes of it.
    pub fn model(&self) -> &dyn Reported {
        &*self.0
    }

    /// The result file's bytes, with the warnings computed from the model where the model
    /// stores them (usdt, sweep).
    pub fn to_json(&self) -> Result<Vec<u8>> {
        let mut v = self.0.file()?;
        v.push(b'\n');
        Ok(v)
    }

    /// Its header: experiment, tool version, start, machine.
    pub fn header(&self) -> &Header {
        self.0.header()
    }

    /// The `experiment` field: `usdt`, `cyclictest-sweep`.
    pub fn experiment(&self) -> &str {
        self.0.experiment()
    }

    /// The machine it was measured on.
    pub fn environment(&self) -> &Environment {
        self.0.environment()
    }

    /// Whether `other` is this result again (the same experiment, begun at the same second
    /// on the same machine): a run directory's file and its report's copy.
    pub fn same_run(&self, other: &AnyResult) -> bool {
        self.experiment() == other.experiment()
            && self.header().started_unix == other.header().started_unix
            && self.environment().machine_key() == other.environment().machine_key()
            && self.is_decomposition() == other.is_decomposition()
    }

    /// A `usdt --decompose` result.
    pub fn is_decomposition(&self) -> bool {
        self.get::<UsdtResult>()
            .is_some_and(rtrace_measure::decompose::is_decomposition)
    }

    /// The warnings of this result, computed from the model (old files have none stored).
    pub fn warnings(&self) -> Vec<Warning> {
        self.0.warnings()
    }
}

/// One result of a report.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Unique in the report, usable in file names: `usdt`, `cyclictest-sweep`, `cyclictest-sweep-2`.
    pub id: String,
    /// The file it was read from, if any.
    pub file: Option<String>,
    pub result: AnyResult,
    /// Computed from the result ([`AnyResult::warnings`]).
    pub warnings: Vec<Warning>,
}

impl Entry {
    /// Its section of the report, built by its experiment's module.
    pub fn section(&self, report: &Report) -> Section {
        self.result.model().section(self, report)
    }

    /// Names the kernel it ran on: `PREEMPT_RT, 6.1.0-rt-amd64`.
    pub fn kernel(&self) -> String {
        let e = self.result.environment();
        format!("{}, {}", e.preemption, e.kernel_release)
    }
}

/// Everything one report shows.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// In the order given.
    pub entries: Vec<Entry>,
    /// What the job that made these results left out, each with the command that measures it:
    /// for time (`cargo xtask thesis`), a fleet's machines whose runs failed
    /// (`deploy/fleet.yml`), result files that could not be read; the summary ends with them.
    pub left_out: Vec<String>,
}

impl Report {
    /// Gives every result a unique id and computes its warnings.
    pub fn new(results: impl IntoIterator<Item = (Option<String>, AnyResult)>) -> Report {
        let mut entries: Vec<Entry> = Vec::new();
        for (file, result) in results {
            let stem = result.experiment();
            let n = entries
                .iter()
                .filter(|e| e.result.experiment() == stem)
                .count();
            let id = if n == 0 {
                stem.to_owned()
            } else {
                format!("{stem}-{}", n + 1)
            };
            entries.push(Entry {
                id,
                file,
                warnings: result.warnings(),
                result,
            });
        }
        Report {
            entries,
            left_out: Vec::new(),
        }
    }

    /// With what the job left out for time (see [`Report::left_out`]).
    pub fn leaving_out(mut self, left_out: Vec<String>) -> Report {
        self.left_out = left_out;
        self
    }

    /// A report of one result.
    pub fn one(result: AnyResult) -> Report {
        Report::new([(None, result)])
    }

    /// The plain `usdt` results (not decompositions: `rtrace_measure::decompose`) measured on
    /// the machine `env` describes (same name, kernel and CPU model), in report order.
    pub fn plain_usdt_of(&self, env: &rtrace_measure::Environment) -> Vec<(&Entry, &UsdtResult)> {
        self.usdt()
            .filter(|(_, u)| {
                u.header.environment.machine_key() == env.machine_key()
                    && !rtrace_measure::decompose::is_decomposition(u)
            })
            .collect()
    }

    /// The results of model `R`, in report order.
    pub fn of<R: Reported>(&self) -> impl Iterator<Item = (&Entry, &R)> {
        self.entries
            .iter()
            .filter_map(|e| Some((e, e.result.get::<R>()?)))
    }

    /// The usdt results, in report order.
    pub fn usdt(&self) -> impl Iterator<Item = (&Entry, &UsdtResult)> {
        self.of()
    }

    /// The sweep results, in report order.
    pub fn sweeps(&self) -> impl Iterator<Item = (&Entry, &SweepResult)> {
        self.of()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, assert_has};

    #[test]
    fn ids_are_unique_and_sweep_warnings_are_grouped() {
        use rtrace_measure::warnings::WarningKind;
        let mut s = fixtures::sweep("PREEMPT_RT", 1);
        (s.runs[0].overruns, s.runs[2].overruns) = (Some(3), Some(5));
        let usdt = AnyResult::from(fixtures::usdt());
        let r = Report::new([
            (None, AnyResult::from(s.clone())),
            (None, usdt),
            (None, AnyResult::from(s)),
        ]);
        let ids: Vec<&str> = r.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["cyclictest-sweep", "usdt", "cyclictest-sweep-2"]);
        let warnings = &r.entries[0].warnings;
        let overruns: Vec<_> = warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Overruns)
            .collect();
        assert_eq!(overruns.len(), 1, "one warning names every run");
        assert_has(
            &overruns[0].message,
            &["none/builtin 3, usdt-lttng/builtin 5"],
        );
    }

    #[test]
    fn result_files_carry_their_warnings_and_reload_and_bad_files_name_the_fix() {
        let u = AnyResult::from(fixtures::usdt());
        let text = String::from_utf8(u.to_json().unwrap()).unwrap();
        assert!(text.ends_with("}\n"));
        let back = AnyResult::from_json(&text).unwrap();
        let back = back.get::<UsdtResult>().expect("a usdt result");
        assert_eq!(back.warnings, u.warnings());
        assert!(!back.warnings.is_empty(), "the fixture lost events");
        let e = |t: &str| format!("{:#}", AnyResult::from_json(t).unwrap_err());
        assert!(e("nope").contains("not JSON"));
        assert!(e(r#"{"a":1}"#).contains("not an rtrace-bench result"));
        assert!(e(r#"{"experiment":"count"}"#).contains("unknown experiment `count`"));
        assert!(e(r#"{"experiment":"usdt"}"#).contains("regenerate it"));
    }
}
