//! What a report is made of: any result file, told apart by its `experiment` field, with the
//! warnings computed from it; and the one place that hands each result to its experiment's
//! section builder ([`Entry::section`]).

use crate::doc::Section;
use anyhow::{bail, Context, Result};
use rtrace_measure::sweep::SweepResult;
use rtrace_measure::usdt::UsdtResult;
use rtrace_measure::{warnings, Environment, Warning};

/// `experiment` of a usdt result file.
pub const USDT: &str = "usdt";
/// `experiment` of a cyclictest-sweep result file.
pub const SWEEP: &str = "cyclictest-sweep";
/// `experiment` of a rate result file.
pub const RATE: &str = "rate";
/// `experiment` of an npt result file.
pub const NPT: &str = "npt";
/// `experiment` of an events result file.
pub const EVENTS: &str = "events";

/// A result of any experiment.
#[derive(Debug, Clone)]
pub enum AnyResult {
    Usdt(UsdtResult),
    Sweep(SweepResult),
    Rate(rtrace_measure::rate::RateResult),
    Npt(rtrace_measure::npt::NptResult),
    Events(rtrace_measure::events::EventsResult),
}

impl AnyResult {
    /// Parses a result file; errors name the fix.
    pub fn from_json(text: &str) -> Result<AnyResult> {
        let v: serde_json::Value = serde_json::from_str(text)
            .context("not JSON: give a result file (usdt.json, cyclictest-sweep.json)")?;
        let stale =
            "does not match this rtrace-bench's result format: regenerate it with this version";
        match v.get("experiment").and_then(|e| e.as_str()) {
            Some(USDT) => Ok(AnyResult::Usdt(serde_json::from_value(v).context(stale)?)),
            Some(SWEEP) => Ok(AnyResult::Sweep(serde_json::from_value(v).context(stale)?)),
            Some(RATE) => Ok(AnyResult::Rate(serde_json::from_value(v).context(stale)?)),
            Some(NPT) => Ok(AnyResult::Npt(serde_json::from_value(v).context(stale)?)),
            Some(EVENTS) => Ok(AnyResult::Events(serde_json::from_value(v).context(stale)?)),
            Some(other) => {
                bail!("unknown experiment `{other}`: reports cover `{USDT}`, `{SWEEP}`, `{RATE}`, `{NPT}` and `{EVENTS}` results")
            }
            None => bail!("no `experiment` field: not an rtrace-bench result file"),
        }
    }

    /// The result file's bytes, with the warnings computed from the model where the model
    /// stores them (usdt, sweep).
    pub fn to_json(&self) -> Result<Vec<u8>> {
        let mut v = match self {
            AnyResult::Usdt(r) => serde_json::to_vec_pretty(&UsdtResult {
                warnings: self.warnings(),
                ..r.clone()
            })?,
            AnyResult::Sweep(r) => serde_json::to_vec_pretty(&SweepResult {
                warnings: self.warnings(),
                ..r.clone()
            })?,
            AnyResult::Rate(r) => serde_json::to_vec_pretty(r)?,
            AnyResult::Npt(r) => serde_json::to_vec_pretty(r)?,
            AnyResult::Events(r) => serde_json::to_vec_pretty(r)?,
        };
        v.push(b'\n');
        Ok(v)
    }

    /// The `experiment` field: `usdt`, `cyclictest-sweep`.
    pub fn experiment(&self) -> &'static str {
        match self {
            AnyResult::Usdt(_) => USDT,
            AnyResult::Sweep(_) => SWEEP,
            AnyResult::Rate(_) => RATE,
            AnyResult::Npt(_) => NPT,
            AnyResult::Events(_) => EVENTS,
        }
    }

    /// The machine it was measured on.
    pub fn environment(&self) -> &Environment {
        match self {
            AnyResult::Usdt(r) => &r.environment,
            AnyResult::Sweep(r) => &r.environment,
            AnyResult::Rate(r) => &r.environment,
            AnyResult::Npt(r) => &r.environment,
            AnyResult::Events(r) => &r.environment,
        }
    }

    /// When the run began (seconds since the epoch).
    pub fn started_unix(&self) -> u64 {
        match self {
            AnyResult::Usdt(r) => r.started_unix,
            AnyResult::Sweep(r) => r.started_unix,
            AnyResult::Rate(r) => r.started_unix,
            AnyResult::Npt(r) => r.started_unix,
            AnyResult::Events(r) => r.started_unix,
        }
    }

    /// The version of rtrace-bench that measured it.
    pub fn tool_version(&self) -> &str {
        match self {
            AnyResult::Usdt(r) => &r.tool_version,
            AnyResult::Sweep(r) => &r.tool_version,
            AnyResult::Rate(r) => &r.tool_version,
            AnyResult::Npt(r) => &r.tool_version,
            AnyResult::Events(r) => &r.tool_version,
        }
    }

    /// Whether `other` is this result again (the same experiment, begun at the same second
    /// on the same machine): a run directory's file and its report's copy.
    pub fn same_run(&self, other: &AnyResult) -> bool {
        self.experiment() == other.experiment()
            && self.started_unix() == other.started_unix()
            && self.environment().machine_key() == other.environment().machine_key()
            && self.is_decomposition() == other.is_decomposition()
    }

    /// A `usdt --decompose` result.
    pub fn is_decomposition(&self) -> bool {
        matches!(self, AnyResult::Usdt(u) if rtrace_measure::decompose::is_decomposition(u))
    }

    /// The warnings of this result, computed from the model (old files have none stored).
    pub fn warnings(&self) -> Vec<Warning> {
        match self {
            AnyResult::Usdt(r) => warnings::usdt(r),
            AnyResult::Sweep(r) => warnings::sweep(r),
            AnyResult::Rate(r) => warnings::environment(&r.environment, r.config.run.cpu),
            AnyResult::Npt(r) => warnings::environment(&r.environment, r.config.run.cpu),
            AnyResult::Events(r) => warnings::environment(&r.environment, r.config.run.cpu),
        }
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
    /// Its section of the report, built by its experiment's module: the one dispatch on the
    /// kind of result.
    pub fn section(&self, report: &Report) -> Section {
        match &self.result {
            AnyResult::Usdt(r) => crate::usdt::section(self, r, report),
            AnyResult::Sweep(r) => crate::sweep::section(self, r, report),
            AnyResult::Rate(r) => crate::rate::section(self, r),
            AnyResult::Npt(r) => crate::npt::section(self, r),
            AnyResult::Events(r) => crate::events::section(self, r),
        }
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
                u.environment.machine_key() == env.machine_key()
                    && !rtrace_measure::decompose::is_decomposition(u)
            })
            .collect()
    }

    /// The usdt results, in report order.
    pub fn usdt(&self) -> impl Iterator<Item = (&Entry, &UsdtResult)> {
        self.entries.iter().filter_map(|e| match &e.result {
            AnyResult::Usdt(r) => Some((e, r)),
            _ => None,
        })
    }

    /// The sweep results, in report order.
    pub fn sweeps(&self) -> impl Iterator<Item = (&Entry, &SweepResult)> {
        self.entries.iter().filter_map(|e| match &e.result {
            AnyResult::Sweep(r) => Some((e, r)),
            _ => None,
        })
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
        let usdt = AnyResult::Usdt(fixtures::usdt());
        let r = Report::new([
            (None, AnyResult::Sweep(s.clone())),
            (None, usdt),
            (None, AnyResult::Sweep(s)),
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
        let u = AnyResult::Usdt(fixtures::usdt());
        let text = String::from_utf8(u.to_json().unwrap()).unwrap();
        assert!(text.ends_with("}\n"));
        let Ok(AnyResult::Usdt(back)) = AnyResult::from_json(&text) else {
            panic!("not a usdt result");
        };
        assert_eq!(back.warnings, u.warnings());
        assert!(!back.warnings.is_empty(), "the fixture lost events");
        let e = |t: &str| format!("{:#}", AnyResult::from_json(t).unwrap_err());
        assert!(e("nope").contains("not JSON"));
        assert!(e(r#"{"a":1}"#).contains("not an rtrace-bench result"));
        assert!(e(r#"{"experiment":"count"}"#).contains("unknown experiment `count`"));
        assert!(e(r#"{"experiment":"usdt"}"#).contains("regenerate it"));
    }
}
