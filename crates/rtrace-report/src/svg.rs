//! `figures/*.svg`: every figure the results allow (thesis Figs 3.1–3.5), one file each.

use crate::export::{Exporter, Output};
use crate::figures;
use crate::result::Report;
use anyhow::{Context, Result};

/// The SVG figures.
pub struct Svg;

impl Exporter for Svg {
    fn name(&self) -> &'static str {
        "svg"
    }

    fn export(&self, report: &Report) -> Result<Vec<Output>> {
        figures::plan(report)
            .iter()
            .map(|f| {
                let svg = f
                    .render(report)
                    .with_context(|| format!("cannot draw {}", f.file))?;
                Ok(Output::new(f.path(), svg))
            })
            .collect()
    }
}
