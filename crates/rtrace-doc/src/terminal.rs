//! The terminal rendering of a document: what every experiment prints at its end, what
//! `rtrace-bench report` prints, and `report.txt` (the same without colour). Plain aligned
//! tables that fit [`table::WIDTH`] columns; folded details and figures one line each; colour
//! only when asked (the CLI asks when stdout is a terminal).

pub mod table;

use crate::export::{Exporter, Output};
use crate::{count, Notice};
use crate::{Block, Document, Item, Section};
use anstyle::{AnsiColor, Style};
use anyhow::Result;
use table::cols;

/// Styles of the terminal report; all plain without colour.
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    pub(crate) colour: bool,
}

impl Paint {
    /// Colour when `colour`, plain text otherwise.
    pub fn new(colour: bool) -> Paint {
        Paint { colour }
    }

    fn with(&self, style: Style, text: &str) -> String {
        if self.colour {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }

    /// Headings.
    pub fn bold(&self, text: &str) -> String {
        self.with(Style::new().bold(), text)
    }

    /// `Warning:`.
    pub fn warning(&self, text: &str) -> String {
        let yellow = Some(AnsiColor::Yellow.into());
        self.with(Style::new().bold().fg_color(yellow), text)
    }
}

/// The terminal rendering of `doc`.
pub fn render(doc: &Document, paint: Paint) -> String {
    let n = count(doc.sections.len(), "result");
    let mut out = paint.bold(&format!(
        "rtrace-bench report: {n}, {}",
        count(doc.warnings, "warning")
    ));
    out.push('\n');
    if let Some(v) = &doc.verdict {
        out.push_str(&format!(
            "\n{}\n{}\n",
            paint.bold(&v.title),
            plain(&v.subtitle)
        ));
        out.push_str(&blocks_text(&v.blocks, paint));
    }
    if !doc.summary.is_empty() {
        out.push_str(&format!("\n{}\n", paint.bold("Summary")));
        out.push_str(&blocks_text(&doc.summary, paint));
    }
    for s in doc.all_sections() {
        out.push_str(&section(s, paint));
    }
    if !doc.shared.is_empty() {
        out.push_str(&format!("\n{}\n", paint.bold("Across results")));
        out.push_str(&blocks_text(&doc.shared, paint));
    }
    out
}

/// Prose without its code-span backticks.
fn plain(s: &str) -> String {
    s.replace('`', "")
}

fn section(s: &Section, paint: Paint) -> String {
    let source = s
        .source
        .as_deref()
        .map_or(String::new(), |f| format!(" — {f}"));
    let head = format!("{}: {}{source}", s.id, s.title);
    format!(
        "\n{}\n{}\n{}\n\n{}",
        paint.bold(&head),
        "=".repeat(cols(&head)),
        plain(&s.subtitle),
        blocks_text(&s.blocks, paint)
    )
}

/// Blocks one after another, a blank line between them (none after a heading, none between
/// figures: a line each).
fn blocks_text(blocks: &[Block], paint: Paint) -> String {
    let mut out = String::new();
    let mut last: Option<&Block> = None;
    for b in blocks {
        match (last, b) {
            (None | Some(Block::Heading(_)), _) | (Some(Block::Figure(_)), Block::Figure(_)) => {}
            _ => out.push('\n'),
        }
        last = Some(b);
        out.push_str(&block(b, paint));
    }
    out
}

fn block(b: &Block, paint: Paint) -> String {
    match b {
        Block::Heading(h) => format!("{}\n", paint.bold(&plain(h))),
        Block::Paragraph(p) | Block::Note(p) => match crate::method(p) {
            Some(sentences) => format!(
                "{} ({} more sentences on the method in report.md)\n",
                plain(&sentences[0]),
                sentences.len() - 1
            ),
            None => format!("{}\n", plain(p)),
        },
        Block::List(items) => items.iter().map(item).collect(),
        Block::Warnings(list) => warnings(list, paint),
        Block::Table(t) => {
            let mut out = match (&t.title, &t.caption) {
                (Some(title), Some(c)) => format!("{title}: {}\n", plain(c)),
                (Some(title), None) => format!("{title}\n"),
                _ => String::new(),
            };
            out.push_str(&table::render(t, paint));
            out
        }
        Block::Figure(f) => format!("Figure: {} — {}\n", f.title, f.path()),
        Block::Details { summary, .. } => {
            format!("{summary}: folded here, shown in report.md and index.html\n")
        }
        Block::Pre(text) => format!("{text}\n"),
        Block::Environment(rows) => {
            let kv: Vec<String> = rows.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            format!("{}\n", kv.join("; "))
        }
    }
}

fn item(i: &Item) -> String {
    let mut out = format!("- {}\n", plain(&i.text));
    if let Some(more) = &i.more {
        out.push_str(&format!("    {}\n", plain(more)));
    }
    out
}

/// `Warning: ...` lines, hyperfine style, each with its details on one line; a line saying
/// there are none otherwise.
fn warnings(list: &[Notice], paint: Paint) -> String {
    if list.is_empty() {
        return "No warnings.\n".into();
    }
    let mut out = String::new();
    for w in list {
        out.push_str(&format!(
            "{} {}\n",
            paint.warning("Warning:"),
            plain(&w.to_string())
        ));
        if !w.details.is_empty() {
            const SHOWN: usize = 3;
            let mut d = w.details[..w.details.len().min(SHOWN)].join("; ");
            if w.details.len() > SHOWN {
                d.push_str(&format!(
                    "; and {} more (index.html)",
                    w.details.len() - SHOWN
                ));
            }
            out.push_str(&format!("  {d}\n"));
        }
    }
    out
}

/// `report.txt`: the terminal report of every result, without colour.
pub struct Text;

impl Exporter for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, doc: &Document) -> Result<Vec<Output>> {
        Ok(vec![Output::new(
            "report.txt",
            render(doc, Paint::new(false)),
        )])
    }
}
