//! `<id>.json`: every result of a report as a result file, with its warnings (schema:
//! `docs/result-schema.md`).

use crate::doc::Document;
use crate::export::{Exporter, Output};
use anyhow::Result;

/// The result files.
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, doc: &Document) -> Result<Vec<Output>> {
        doc.report
            .entries
            .iter()
            .map(|e| Ok(Output::new(format!("{}.json", e.id), e.result.to_json()?)))
            .collect()
    }
}
