//! The files a document carries as they are: each result's JSON file (schema:
//! `docs/result-schema.md`), `fleet.json` when the results come from several machines.

use crate::export::{Exporter, Output};
use crate::Document;
use anyhow::Result;

/// The result files.
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, doc: &Document) -> Result<Vec<Output>> {
        Ok(doc.attachments.clone())
    }
}
