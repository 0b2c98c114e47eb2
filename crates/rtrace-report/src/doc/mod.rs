//! The format-neutral document of a report: every experiment builds its section once (its own
//! module: `usdt`, `decompose`, `sweep`, `rate`, `npt`, `events`), and every exporter
//! (terminal, Markdown, HTML, CSV) renders any document, supplying only syntax.
//!
//! Text is plain, with `backticked` spans meaning code (HTML turns them into `<code>`, Markdown
//! keeps them, the terminal drops the backticks).

mod table;

pub use table::{columns, slug, Cell, Column, Group, Table, Value};

use crate::figures::Figure;
use crate::result::{Entry, Report};
use rtrace_measure::Warning;

/// A whole report: the summary every report opens with, a section per result, and the figures
/// drawn across results.
pub struct Document<'r> {
    /// The results the document was built from (figures are drawn from them).
    pub report: &'r Report,
    /// The summary: each section's sentences, headed with its id when the report has several.
    pub summary: Vec<Block>,
    /// After the summary, across machines: per machine each tracer's per-hit cost
    /// (`crate::fleet`), when the results come from more than one.
    pub fleet: Option<Section>,
    /// After the fleet, across results: one hook's cost in each experiment
    /// (`crate::consistency`), when the report holds more than one.
    pub consistency: Option<Section>,
    /// One per result, in report order.
    pub sections: Vec<Section>,
    /// The figures of more than one result (thesis Fig 3.5).
    pub shared: Vec<Block>,
}

impl<'r> Document<'r> {
    /// Builds every result's section (with its share of the figures) and the summary.
    pub fn of(report: &'r Report) -> Document<'r> {
        let plan = crate::figures::plan(report);
        let mut sections: Vec<Section> = report
            .entries
            .iter()
            .map(|e| {
                let mut s = e.section(report);
                let mine: Vec<Block> = plan
                    .iter()
                    .filter(|f| f.entries == [e.id.clone()])
                    .map(|f| Block::Figure(f.clone()))
                    .collect();
                let at = s.figures_at.unwrap_or(s.blocks.len()).min(s.blocks.len());
                if !mine.is_empty() {
                    let blocks = std::iter::once(Block::Heading("Figures".into())).chain(mine);
                    s.blocks.splice(at..at, blocks);
                }
                s
            })
            .collect();
        let consistency = crate::consistency::section(report);
        let mut fleet = crate::fleet::section(report);
        let (fleet_figures, plan): (Vec<Figure>, Vec<Figure>) =
            plan.into_iter().partition(Figure::is_fleet);
        if let Some(f) = fleet.as_mut().filter(|_| !fleet_figures.is_empty()) {
            f.push(Block::Heading("Figures".into()));
            f.blocks
                .extend(fleet_figures.into_iter().map(Block::Figure));
        }
        // Across machines, each result's section names its machine.
        let on: Vec<(String, String)> = crate::fleet::of(report)
            .map(|f| f.machines)
            .unwrap_or_default()
            .into_iter()
            .flat_map(|m| m.results.into_iter().map(move |id| (id, m.name.clone())))
            .collect();
        let machine = |id: &str| on.iter().find(|(i, _)| i == id).map(|(_, m)| m.clone());
        for s in &mut sections {
            if let Some(m) = machine(&s.id) {
                s.title = format!("{}, on {m}", s.title);
            }
        }
        let mut summary = Vec::new();
        let all = fleet.iter().chain(&sections).chain(&consistency);
        for s in all.filter(|s| !s.summary.is_empty()) {
            if sections.len() > 1 {
                let heading = match machine(&s.id) {
                    Some(m) => format!("`{}` on {m}", s.id),
                    None => format!("`{}`", s.id),
                };
                summary.push(Block::Heading(heading));
            }
            summary.push(Block::List(items(s.summary.iter().cloned())));
        }
        if !report.left_out.is_empty() {
            summary.push(Block::Heading("Left out".into()));
            summary.push(Block::List(items(report.left_out.iter().cloned())));
        }
        let shared = plan.into_iter().filter(|f| f.entries.len() > 1);
        Document {
            report,
            summary,
            fleet,
            consistency,
            sections,
            shared: shared.map(Block::Figure).collect(),
        }
    }

    /// Warnings of every section.
    pub fn warnings(&self) -> usize {
        self.report.entries.iter().map(|e| e.warnings.len()).sum()
    }

    /// Every section in document order: the fleet, the consistency section, one per result.
    pub fn all_sections(&self) -> impl Iterator<Item = &Section> {
        self.fleet
            .iter()
            .chain(&self.consistency)
            .chain(&self.sections)
    }

    /// Every table, with the id of its section, in document order.
    pub fn tables(&self) -> Vec<(&Section, &Table)> {
        let mut out = Vec::new();
        for s in self.all_sections() {
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
        let fleet = self.fleet.iter().map(|s| &s.blocks[..]);
        let blocks = fleet.chain(self.sections.iter().map(|s| &s.blocks[..]));
        for blocks in blocks.chain([&self.shared[..]]) {
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
    /// A section whose sentences of the report's summary are `summary`, closed by the
    /// conditions its warnings name; it opens with `head` (what it shows) and the warnings.
    pub fn new(
        e: &Entry,
        title: &str,
        subtitle: String,
        mut summary: Vec<String>,
        head: Option<Block>,
    ) -> Section {
        summary.extend(crate::summary::conditions(&e.warnings));
        let warnings = Block::Warnings(e.warnings.clone());
        Section {
            id: e.id.clone(),
            title: title.to_owned(),
            source: e.file.clone(),
            subtitle,
            summary,
            blocks: head.into_iter().chain([warnings]).collect(),
            figures_at: None,
        }
    }

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

    /// The closing blocks every section has: the runs that failed, its figures, the
    /// environment, the configuration.
    pub fn close(&mut self, e: &Entry, failed: &[String], config: &impl serde::Serialize) {
        if !failed.is_empty() {
            self.push(Block::List(items(
                failed.iter().map(|f| format!("failed: {f}")),
            )));
        }
        self.figures_at = Some(self.blocks.len());
        self.push(Block::Heading("Environment".into()));
        let environment = crate::format::environment_rows(e.result.environment());
        self.push(Block::Environment(environment));
        let config = serde_json::to_string_pretty(config);
        self.push(Block::Details {
            summary: "Configuration".into(),
            blocks: vec![Block::Pre(
                config.unwrap_or_else(|err| format!("cannot show it: {err}")),
            )],
        });
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
    Warnings(Vec<Warning>),
    /// A table.
    Table(Table),
    /// A figure of the report's plan (`crate::figures::plan`), drawn by the formats that show it.
    Figure(Figure),
    /// Folded away (HTML `<details>`); one line in the terminal.
    Details { summary: String, blocks: Vec<Block> },
    /// Preformatted text.
    Pre(String),
    /// The machine: (setting, value).
    Environment(Vec<(&'static str, String)>),
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
    use super::*;
    use crate::fixtures::sweep;
    use crate::result::AnyResult::{self, Sweep};

    #[test]
    fn each_section_has_its_figures_before_the_environment_and_shared_ones_stand_apart() {
        let rate = AnyResult::from_json(include_str!("../../testdata/rate.json")).unwrap();
        let (a, b) = (Sweep(sweep("PREEMPT", 2)), Sweep(sweep("PREEMPT_RT", 1)));
        let report = Report::new([(None, a), (None, b), (None, rate)]);
        let doc = Document::of(&report);
        for s in &doc.sections {
            let at = |f: fn(&Block) -> bool| s.blocks.iter().position(f).unwrap();
            let figure = at(|b| matches!(b, Block::Figure(_)));
            assert!(matches!(&s.blocks[figure - 1], Block::Heading(h) if h == "Figures"));
            assert!(
                figure < at(|b| matches!(b, Block::Environment(_))),
                "{}",
                s.id
            );
        }
        let overlay = matches!(&doc.shared[..], [Block::Figure(f)] if f.entries.len() == 2);
        assert!(overlay, "the PREEMPT vs PREEMPT_RT overlay");
        let planned = crate::figures::plan(&report).len();
        assert_eq!(doc.figures().len(), planned, "every planned figure, once");
        // The rate result comes from another machine than the fixtures: a fleet, whose
        // sentences answer first.
        assert!(matches!(&doc.summary[0], Block::Heading(h) if h == "`fleet`"));
        let on = |h: &str| h.starts_with("`cyclictest-sweep` on ");
        assert!(
            matches!(&doc.summary[2], Block::Heading(h) if on(h)),
            "its machine named"
        );
        let tables = doc.tables();
        let folded = tables
            .iter()
            .any(|(s, t)| (&*s.id, &*t.id) == ("rate", "points"));
        assert!(folded, "folded tables count");
    }
}
