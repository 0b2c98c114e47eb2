//! `report.md`: a document in Markdown. A grouped table (Table 3.1) is split into parts of two
//! groups, the thesis' layout (two tracers per table), each column named with its group;
//! folded details are `<details>` blocks.

use crate::export::{Exporter, Output};
use crate::html::esc;
use crate::Notice;
use crate::{Block, Document, Item, Section, Table};
use anyhow::Result;

/// Column groups per table part, as in the thesis (two tracers per Table 3.1).
const GROUPS_PER_TABLE: usize = 2;

/// The Markdown report.
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, doc: &Document) -> Result<Vec<Output>> {
        Ok(vec![Output::new("report.md", render(doc))])
    }
}

/// The Markdown rendering of `doc`.
pub fn render(doc: &Document) -> String {
    let verdict = doc.verdict.as_ref().map_or(String::new(), |v| {
        format!(
            "## {}\n\n{}\n\n{}",
            v.title,
            v.subtitle,
            blocks_md(&v.blocks)
        )
    });
    let mut out = format!(
        "# rtrace-bench report\n\n{verdict}## Summary\n\n{}",
        blocks_md(&doc.summary)
    );
    for s in doc.all_sections() {
        out.push_str(&section(s));
    }
    if !doc.shared.is_empty() {
        out.push_str(&format!("## Across results\n\n{}", blocks_md(&doc.shared)));
    }
    out
}

fn section(s: &Section) -> String {
    let source = s
        .source
        .as_ref()
        .map_or(String::new(), |f| format!(" (`{f}`)"));
    format!(
        "## `{}`: {}{source}\n\n{}\n\n{}",
        s.id,
        s.title,
        s.subtitle,
        blocks_md(&s.blocks)
    )
}

fn blocks_md(blocks: &[Block]) -> String {
    blocks.iter().map(|b| block(b) + "\n").collect()
}

fn block(b: &Block) -> String {
    match b {
        Block::Heading(h) => format!("### {h}\n"),
        Block::Paragraph(p) | Block::Note(p) => match crate::method(p) {
            Some(sentences) => sentences.iter().map(|s| format!("- {s}\n")).collect(),
            None => format!("{p}\n"),
        },
        Block::List(items) => items.iter().map(item).collect(),
        Block::Warnings(list) => warnings(list),
        Block::Table(t) => table(t),
        Block::Figure(f) => format!("![{}]({})\n\n{}\n", f.title, f.path(), f.caption),
        Block::Details { summary, blocks } => format!(
            "<details><summary>{}</summary>\n\n{}</details>\n",
            esc(summary),
            blocks_md(blocks)
        ),
        Block::Pre(text) => format!("```\n{text}\n```\n"),
        Block::Environment(rows) => {
            let mut out = String::from("| setting | value |\n| --- | --- |\n");
            for (k, v) in rows {
                out.push_str(&format!("| {k} | {} |\n", cell(v)));
            }
            out
        }
    }
}

fn item(i: &Item) -> String {
    match &i.more {
        // A backslash at the end of a line is a hard line break.
        Some(more) => format!("- {}\\\n  {more}\n", i.text),
        None => format!("- {}\n", i.text),
    }
}

/// `- **kind** scope: message` per warning under a count, its details folded; a line saying
/// there are none.
fn warnings(list: &[Notice]) -> String {
    if list.is_empty() {
        return "No warnings.\n".into();
    }
    let warnings = crate::count(list.len(), "warning");
    let mut out = format!("**{warnings}** — each says what to do:\n\n");
    for w in list {
        let kind = &w.kind;
        out.push_str(&format!("- **{kind}** {w}\n"));
        if !w.details.is_empty() {
            let items: Vec<String> = w.details.iter().map(|d| esc(d)).collect();
            out.push_str(&format!(
                "  <details><summary>{} runs</summary>{}</details>\n",
                w.details.len(),
                items.join("<br>")
            ));
        }
    }
    out
}

/// Escapes what would break a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A table, its title and caption first; a grouped one in parts of [`GROUPS_PER_TABLE`].
fn table(t: &Table) -> String {
    let mut out = String::new();
    if let Some(title) = &t.title {
        match &t.caption {
            Some(c) => out.push_str(&format!("**{title}**: {c}\n\n")),
            None => out.push_str(&format!("**{title}**\n\n")),
        }
    }
    let parts: Vec<String> = t.split(GROUPS_PER_TABLE).iter().map(part).collect();
    out.push_str(&parts.join("\n"));
    out
}

/// One table: text columns left-aligned, numbers right-aligned.
fn part(t: &Table) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(
        (0..t.columns.len())
            .map(|i| {
                let c = &t.columns[i];
                match t.group_of(i) {
                    Some(g) => cell(&format!("{} {}", g.name, c.header())),
                    None => cell(&c.header()),
                }
            })
            .collect(),
    );
    out.push_str(&line(
        (0..t.columns.len())
            .map(|i| if t.is_text(i) { "---" } else { "---:" }.to_owned())
            .collect(),
    ));
    for r in &t.rows {
        out.push_str(&line(r.iter().map(|c| cell(&c.shown)).collect()));
    }
    out
}
