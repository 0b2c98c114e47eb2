//! Exporters: the only place that formats results. One [`Exporter`] interface (`export.rs`),
//! one module per format; `result.rs` loads any result file, `figures/` draws the thesis' figures.

pub mod bootstrap;
pub mod csv;
pub mod events;
pub mod export;
pub mod figures;
pub mod fixtures;
pub mod format;
pub mod hooks;
pub mod html;
pub mod json;
pub mod markdown;
pub mod npt;
pub mod probes;
pub mod rate;
pub mod ratios;
pub mod reference;
pub mod result;
pub mod staircase;
pub mod statistics;
pub mod summary;
pub mod svg;
pub mod sweep_rows;
pub mod sweep_shift;
pub mod sweep_terminal;
pub mod table;
pub mod terminal;
pub mod threads;
pub mod usdt_rows;

pub use export::{exporters, render, Exporter, Output};
pub use result::{AnyResult, Report};
