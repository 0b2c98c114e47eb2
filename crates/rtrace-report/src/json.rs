//! `<id>.json`: every result of a report as a result file, with its warnings (schema:
//! `docs/result-schema.md`); `fleet.json`: the fleet's machines and costs, when the results
//! come from several machines (`crate::fleet::Fleet`).

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
        let mut out = doc
            .report
            .entries
            .iter()
            .map(|e| Ok(Output::new(format!("{}.json", e.id), e.result.to_json()?)))
            .collect::<Result<Vec<_>>>()?;
        if let Some(fleet) = crate::fleet::of(doc.report) {
            let mut bytes = serde_json::to_vec_pretty(&fleet)?;
            bytes.push(b'\n');
            out.push(Output::new("fleet.json", bytes));
        }
        Ok(out)
    }
}
