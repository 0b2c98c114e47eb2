//! `figures/*.svg`: every figure of a document, one file each.

use crate::export::{Exporter, Output};
use crate::Document;
use anyhow::Result;

/// The SVG figures.
pub struct Svg;

impl Exporter for Svg {
    fn name(&self) -> &'static str {
        "svg"
    }

    fn export(&self, doc: &Document) -> Result<Vec<Output>> {
        doc.figures()
            .into_iter()
            .map(|f| Ok(Output::new(f.path(), f.svg.clone())))
            .collect()
    }
}
