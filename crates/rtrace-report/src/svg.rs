//! `figures/*.svg`: every figure of a document (thesis Figs 3.1–3.5), one file each.

use crate::doc::Document;
use crate::export::{Exporter, Output};
use anyhow::{Context, Result};

/// The SVG figures.
pub struct Svg;

impl Exporter for Svg {
    fn name(&self) -> &'static str {
        "svg"
    }

    fn export(&self, doc: &Document) -> Result<Vec<Output>> {
        doc.figures()
            .into_iter()
            .map(|f| {
                let svg = f
                    .render(doc.report)
                    .with_context(|| format!("cannot draw {}", f.file))?;
                Ok(Output::new(f.path(), svg))
            })
            .collect()
    }
}
