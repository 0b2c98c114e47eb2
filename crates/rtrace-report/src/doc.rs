//! The document model (`rtrace-doc`) as this crate uses it: a result's section opened with its
//! warnings and closed with its machine and configuration.

pub use rtrace_doc::*;

use crate::result::Entry;
use rtrace_measure::warnings::WarningKind;
use rtrace_measure::Warning;

/// A section of entry `e` whose sentences of the report's summary are `summary`, closed by the
/// conditions its warnings name; it opens with `head` (what it shows) and the warnings.
pub fn section(
    e: &Entry,
    title: &str,
    subtitle: String,
    mut summary: Vec<String>,
    head: Option<Block>,
) -> Section {
    summary.extend(conditions(&e.warnings));
    let warnings = Block::Warnings(e.warnings.iter().map(notice).collect());
    Section {
        id: e.id.clone(),
        title: title.to_owned(),
        source: e.file.clone(),
        subtitle,
        summary,
        blocks: head.into_iter().chain([warnings]).collect(),
        figures_at: None,
    }
}

/// An estimate as a cell takes it: the estimate, its interval's ends.
pub fn interval(e: &rtrace_measure::interval::Estimate) -> (f64, Option<f64>, Option<f64>) {
    (e.estimate, e.low, e.high)
}

/// A warning as the document shows it.
pub fn notice(w: &rtrace_measure::Warning) -> Notice {
    Notice {
        kind: crate::format::warning_kind(w),
        scope: w.scope.clone(),
        message: w.message.clone(),
        details: w.details.clone(),
    }
}

/// The closing blocks every section of an entry has: the runs that failed, its figures, the
/// environment, the configuration.
pub fn close(s: &mut Section, e: &Entry, failed: &[String], config: &impl serde::Serialize) {
    if !failed.is_empty() {
        s.push(Block::List(items(
            failed.iter().map(|f| format!("failed: {f}")),
        )));
    }
    s.figures_at = Some(s.blocks.len());
    s.push(Block::Heading("Environment".into()));
    let environment = crate::format::environment_rows(e.result.environment());
    s.push(Block::Environment(environment));
    let config = serde_json::to_string_pretty(config);
    s.push(Block::Details {
        summary: "Configuration".into(),
        blocks: vec![Block::Pre(
            config.unwrap_or_else(|err| format!("cannot show it: {err}")),
        )],
    });
}

/// What qualifies the numbers, from the result's warnings, in one sentence.
pub fn conditions(warnings: &[Warning]) -> Option<String> {
    let mut said: Vec<&str> = Vec::new();
    for w in warnings {
        let what = match w.kind {
            WarningKind::Virtualized => "measured in a virtual machine",
            WarningKind::Emulated => "measured under emulation (timing is noise)",
            WarningKind::NotIsolated => "on a CPU that is not isolated",
            WarningKind::Smt => "with SMT on",
            WarningKind::Governor => "with a cpufreq governor other than performance",
            WarningKind::Turbo => "with turbo boost on",
            WarningKind::UnstableTsc => "with an unstable TSC",
            WarningKind::FewIterations => "with fewer iterations than the thesis",
            WarningKind::EventsLost => "with runs that lost events",
            WarningKind::AccountingFailed => "with a run whose event accounting FAILED",
            _ => continue,
        };
        if !said.contains(&what) {
            said.push(what);
        }
    }
    (!said.is_empty()).then(|| format!("Conditions: {} (see the warnings).", said.join(", ")))
}
