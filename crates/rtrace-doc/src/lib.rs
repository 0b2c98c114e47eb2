//! The format-neutral document of a report, and every format that renders one. A report is
//! assembled elsewhere (`rtrace-report`: each experiment builds its section once, figures are
//! drawn before export); the exporters here (one module per format behind one [`Exporter`]
//! interface: `terminal`, `markdown`, `html`, `csv`, `json`, `svg`) render any document,
//! supplying only syntax. This crate knows nothing of results or experiments.
//!
//! Text is plain, with `backticked` spans meaning code (HTML turns them into `<code>`, Markdown
//! keeps them, the terminal drops the backticks).

pub mod csv;
pub mod export;
pub mod html;
pub mod json;
pub mod markdown;
pub mod svg;
mod table;
pub mod terminal;

pub use export::{exporters, render, Exporter, Output};

pub use table::{columns, slug, unbroken, Cell, Column, Group, Table, Value};

/// A whole report: the summary every report opens with, a section per result, and the figures
/// drawn across results.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// The answer first, before the summary: a table of the tracers and what each costs here
    /// (and in HTML a figure beside it), when the results measured any.
    pub verdict: Option<Section>,
    /// The summary: each section's sentences, headed with its id when the report has several.
    pub summary: Vec<Block>,
    /// After the summary, across machines (a fleet), when there is one.
    pub fleet: Option<Section>,
    /// After the fleet, across results: one hook's cost in each experiment, when there is one.
    pub consistency: Option<Section>,
    /// One per result, in report order.
    pub sections: Vec<Section>,
    /// The figures of more than one result.
    pub shared: Vec<Block>,
    /// Files written beside the report as they are (each result's JSON file, `fleet.json`).
    pub attachments: Vec<Output>,
    /// How many warnings its results carry.
    pub warnings: usize,
}

impl Document {
    /// Every section in document order: the fleet, the consistency section, one per result.
    pub fn all_sections(&self) -> impl Iterator<Item = &Section> {
        self.fleet
            .iter()
            .chain(&self.consistency)
            .chain(&self.sections)
    }

    /// Every table, with the id of its section, in document order (the verdict's first).
    pub fn tables(&self) -> Vec<(&Section, &Table)> {
        let mut out = Vec::new();
        for s in self.verdict.iter().chain(self.all_sections()) {
            walk(&s.blocks, &mut |b| {
                if let Block::Table(t) = b {
                    out.push((s, t));
                }
            });
        }
        out
    }

    /// Every figure, in document order.
    pub fn figures(&self) -> Vec<&Figure> {
        let mut out = Vec::new();
        let sections = (self.verdict.iter().chain(self.all_sections())).map(|s| &s.blocks[..]);
        for blocks in sections.chain([&self.shared[..]]) {
            walk(blocks, &mut |b| {
                if let Block::Figure(f) = b {
                    out.push(f);
                }
            });
        }
        out
    }
}

/// Calls `f` on every block, folded ones included.
fn walk<'a>(blocks: &'a [Block], f: &mut impl FnMut(&'a Block)) {
    for b in blocks {
        f(b);
        if let Block::Details { blocks, .. } = b {
            walk(blocks, f);
        }
    }
}

/// One result's part of the report.
#[derive(Debug, Clone)]
pub struct Section {
    /// The entry's id (`usdt`, `cyclictest-sweep-2`): anchors and file names.
    pub id: String,
    /// What the result measured, lower-case (`per-probe duration`).
    pub title: String,
    /// The result file it was read from.
    pub source: Option<String>,
    /// How it was measured, in one sentence or two (iterations, CPU, kernel).
    pub subtitle: String,
    /// Its sentences of the report's summary.
    pub summary: Vec<String>,
    /// Its content, in order.
    pub blocks: Vec<Block>,
    /// Where its figures go among the blocks (before the environment); the end when `None`.
    pub figures_at: Option<usize>,
}

impl Section {
    /// Appends a block.
    pub fn push(&mut self, b: Block) {
        self.blocks.push(b);
    }

    /// A heading and a table.
    pub fn table(&mut self, heading: impl Into<String>, table: Table) {
        self.push(Block::Heading(heading.into()));
        self.push(Block::Table(table));
    }

    /// A heading and a list, unless `items` is empty.
    pub fn list(&mut self, heading: &str, items: Vec<Item>) {
        if !items.is_empty() {
            self.push(Block::Heading(heading.to_owned()));
            self.push(Block::List(items));
        }
    }
}

/// A part of a section.
#[derive(Debug, Clone)]
pub enum Block {
    /// A heading within the section.
    Heading(String),
    /// Prose.
    Paragraph(String),
    /// A paragraph set apart: what a table shows, how to read it.
    Note(String),
    /// A bullet list.
    List(Vec<Item>),
    /// The warnings of the result (their details folded); a line saying so when empty.
    Warnings(Vec<Notice>),
    /// A table.
    Table(Table),
    /// A figure, drawn.
    Figure(Figure),
    /// Folded away (HTML `<details>`); one line in the terminal.
    Details { summary: String, blocks: Vec<Block> },
    /// Preformatted text.
    Pre(String),
    /// The machine: (setting, value).
    Environment(Vec<(&'static str, String)>),
}

/// Prose longer than this (characters) is method text: its first sentence stands for it, the
/// rest is a list of sentences (folded in HTML, left to report.md in the terminal).
pub const METHOD_CHARS: usize = 400;

/// `text` as method text: its sentences, when it is longer than [`METHOD_CHARS`] and has more
/// than one; `None` for a paragraph that stays one.
pub fn method(text: &str) -> Option<Vec<String>> {
    if text.chars().count() <= METHOD_CHARS {
        return None;
    }
    let mut out = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices(". ") {
        // A sentence ends where the next begins with a capital, a number or code (not `e.g. a`).
        let next = text[i + 2..].chars().next();
        if next.is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || "`\"(".contains(c))
            && !["e.g", "i.e", "vs"].iter().any(|a| text[..i].ends_with(a))
        {
            out.push(text[start..=i].trim().to_owned());
            start = i + 2;
        }
    }
    out.push(text[start..].trim().to_owned());
    (out.len() > 1).then_some(out)
}

/// A warning as a report shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// What kind of warning, as shown (`outliers`).
    pub kind: String,
    /// The run it concerns (`ftrace case 1`); `None`: the whole result.
    pub scope: Option<String>,
    /// What was seen, then what to do about it: one line.
    pub message: String,
    /// The runs and values behind the message (folded).
    pub details: Vec<String>,
}

impl std::fmt::Display for Notice {
    /// `scope: message`, or the message alone.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.scope {
            Some(s) => write!(f, "{s}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A figure, drawn before any format shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name under `figures/`.
    pub file: String,
    pub title: String,
    /// One or two sentences under the figure: what it shows and how to read it.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
}

impl Figure {
    /// Path in the report directory.
    pub fn path(&self) -> String {
        format!("figures/{}", self.file)
    }
}

/// `1 result`, `3 warnings`.
pub fn count(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        _ => format!("{n} {what}s"),
    }
}

/// A list item, and an optional second line (what differs between a comparison's sides).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The item.
    pub text: String,
    /// A line under it.
    pub more: Option<String>,
}

impl From<String> for Item {
    fn from(text: String) -> Item {
        Item { text, more: None }
    }
}

/// Items of `lines`.
pub fn items(lines: impl IntoIterator<Item = String>) -> Vec<Item> {
    lines.into_iter().map(Item::from).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_prose_is_method_text_in_sentences_and_short_prose_stays() {
        assert_eq!(super::method("One sentence. Two."), None, "short");
        let long = format!(
            "What is timed: {} e.g. a read. How intervals are made: over rounds. `--flag` means this.",
            "x ".repeat(200)
        );
        let s = super::method(&long).unwrap();
        assert_eq!(s.len(), 3, "{s:?}");
        assert!(
            s[0].ends_with("e.g. a read."),
            "not split at e.g.: {}",
            s[0]
        );
        assert_eq!(s[2], "`--flag` means this.");
    }
}
