//! Reports: the only place that turns results into a document (`rtrace-doc` renders it in
//! every format). Each experiment builds its section once (one module per experiment: `usdt`,
//! `decompose`, `sweep`, `rate`, `npt`, `events`); `assemble.rs` puts a report's sections, its
//! figures (drawn by `figures/`), the fleet and consistency sections and the summary into one
//! document; `result.rs` loads any result file; `consistency/` sets one hook's cost in every
//! experiment side by side.

pub mod answer;
pub mod app;
pub mod assemble;
pub mod bootstrap;
pub mod compare;
pub mod consistency;
pub mod cost;
pub mod decompose;
pub mod doc;
pub mod events;
#[cfg(test)]
mod exported;
pub mod figures;
pub mod fixtures;
pub mod fleet;
pub mod format;
pub mod npt;
pub mod probes;
pub mod rate;
pub mod ratios;
pub mod result;
pub mod site;
pub mod summary;
pub mod sweep;
pub mod usdt;

pub use assemble::{document, render, text};
pub use doc::Document;
pub use result::{AnyResult, Report};

/// Every experiment a report reads, the one registry: its `experiment` field and its model.
const EXPERIMENTS: &[(&str, result::Load)] = &[
    (
        rtrace_measure::usdt::EXPERIMENT,
        result::load::<rtrace_measure::usdt::UsdtResult>,
    ),
    (
        rtrace_measure::sweep::EXPERIMENT,
        result::load::<rtrace_measure::sweep::SweepResult>,
    ),
    (
        rtrace_measure::rate::EXPERIMENT,
        result::load::<rtrace_measure::rate::RateResult>,
    ),
    (
        rtrace_measure::npt::EXPERIMENT,
        result::load::<rtrace_measure::npt::NptResult>,
    ),
    (
        rtrace_measure::events::EXPERIMENT,
        result::load::<rtrace_measure::events::EventsResult>,
    ),
    (
        rtrace_measure::app::EXPERIMENT,
        result::load::<rtrace_measure::app::AppResult>,
    ),
];
