//! Reports: the only place that formats results. Each experiment builds its report section
//! once, as a format-neutral document (`doc.rs`; one module per experiment: `usdt`, `decompose`,
//! `sweep`, `rate`, `npt`, `events`), and every exporter renders any document (one module per
//! format behind one [`Exporter`] interface: `terminal`, `markdown`, `html`, `csv`, `json`,
//! `svg`). `result.rs` loads any result file, `figures/` draws the thesis' figures,
//! `consistency/` sets one hook's cost in every experiment side by side.

pub mod bootstrap;
pub mod compare;
pub mod consistency;
pub mod csv;
pub mod decompose;
pub mod doc;
pub mod events;
pub mod export;
pub mod figures;
pub mod fixtures;
pub mod fleet;
pub mod format;
pub mod html;
pub mod json;
pub mod markdown;
pub mod npt;
pub mod probes;
pub mod rate;
pub mod ratios;
pub mod result;
pub mod summary;
pub mod svg;
pub mod sweep;
pub mod terminal;
pub mod usdt;

pub use doc::Document;
pub use export::{exporters, render, Exporter, Output};
pub use result::{AnyResult, Report};
