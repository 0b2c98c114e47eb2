//! Exporters: the only place that formats results. One module per format.

pub mod json;
pub mod probes;
pub mod table;
pub mod terminal;
