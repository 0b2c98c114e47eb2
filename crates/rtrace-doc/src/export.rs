//! The one exporter interface: a format turns a [`Document`] into files. Exporters return
//! bytes; only the CLI writes them.

use crate::Document;
use anyhow::Result;

/// One file of a report directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Relative to the report directory (`report.md`, `figures/usdt-case1-box.svg`).
    pub path: String,
    pub bytes: Vec<u8>,
}

impl Output {
    /// A file of `path` with `bytes`.
    pub fn new(path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Output {
        Output {
            path: path.into(),
            bytes: bytes.into(),
        }
    }
}

/// A report format: it renders any document. Formats with nothing to show for it return no
/// files.
pub trait Exporter {
    /// Short name of the format (`markdown`, `svg`).
    fn name(&self) -> &'static str;
    /// Renders `doc`.
    fn export(&self, doc: &Document) -> Result<Vec<Output>>;
}

/// Every format of a report directory: the results, text, Markdown, CSV, figures, HTML.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(crate::json::Json),
        Box::new(crate::terminal::Text),
        Box::new(crate::markdown::Markdown),
        Box::new(crate::csv::Csv),
        Box::new(crate::svg::Svg),
        Box::new(crate::html::Html),
    ]
}

/// Renders `doc` in every format.
pub fn render(doc: &Document) -> Result<Vec<Output>> {
    let mut out = Vec::new();
    for e in exporters() {
        out.extend(
            e.export(doc)
                .map_err(|err| err.context(format!("{} export failed", e.name())))?,
        );
    }
    Ok(out)
}
