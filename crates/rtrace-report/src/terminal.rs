//! The terminal rendering of a document: what every experiment prints at its end, what
//! `rtrace-bench report` prints, and `report.txt` (the same without colour). Plain aligned
//! tables (a grouped table split so that each part fits [`WIDTH`] columns); folded details and
//! figures one line each; colour only when asked (the CLI asks when stdout is a terminal).

use crate::doc::{Block, Document, Item, Section, Table};
use crate::export::{Exporter, Output};
use crate::result::Report;
use anstyle::{AnsiColor, Style};
use anyhow::Result;
use rtrace_measure::Warning;

/// Columns a table may take before a grouped one is split.
pub const WIDTH: usize = 160;

/// Styles of the terminal report; all plain without colour.
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    colour: bool,
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
        self.with(
            Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
            text,
        )
    }

    /// A flagged cell (`FAILED`, a lossy run).
    pub fn flag(&self, text: &str) -> String {
        self.with(
            Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
            text,
        )
    }
}

/// The terminal report of every result of `report`.
pub fn text(report: &Report, paint: Paint) -> String {
    render(&Document::of(report), paint)
}

/// The terminal rendering of `doc`.
pub fn render(doc: &Document, paint: Paint) -> String {
    let n = doc.sections.len();
    let w = doc.warnings();
    let mut out = paint.bold(&format!(
        "rtrace-bench report: {n} result{}, {w} warning{}",
        plural(n),
        plural(w)
    ));
    out.push('\n');
    if !doc.summary.is_empty() {
        out.push_str(&format!("\n{}\n", paint.bold("Summary")));
        for (title, lines) in &doc.summary {
            if let Some(t) = title {
                out.push_str(&format!("{t}:\n"));
            }
            for l in lines {
                out.push_str(&format!("- {}\n", plain(l)));
            }
        }
    }
    for s in &doc.sections {
        out.push_str(&section(s, paint));
    }
    if !doc.shared.is_empty() {
        let blocks: Vec<Block> = doc.shared.iter().cloned().map(Block::Figure).collect();
        out.push_str(&format!("\n{}\n", paint.bold("Across results")));
        out.push_str(&blocks_text(&blocks, paint));
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Columns `s` takes on a terminal: combining marks (the macron of `x̄`) take none.
fn cols(s: &str) -> usize {
    s.chars()
        .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
        .count()
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
        Block::Paragraph(p) | Block::Note(p) => format!("{}\n", plain(p)),
        Block::List(items) => items.iter().map(item).collect(),
        Block::Warnings(list) => warnings(list, paint),
        Block::Table(t) => table(t, paint),
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
fn warnings(list: &[Warning], paint: Paint) -> String {
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

/// A table, its title and caption first; a grouped table in as few parts as fit [`WIDTH`].
fn table(t: &Table, paint: Paint) -> String {
    let mut out = String::new();
    if let Some(title) = &t.title {
        match &t.caption {
            Some(c) => out.push_str(&format!("{title}: {}\n", plain(c))),
            None => out.push_str(&format!("{title}\n")),
        }
    }
    let parts = (1..=t.groups.len().max(1))
        .rev()
        .map(|n| t.split(n))
        .find(|parts| parts.iter().all(|p| width(p) <= WIDTH))
        .unwrap_or_else(|| t.split(1));
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&aligned(p, paint));
    }
    out
}

/// The gap before column `i`: wider where a group starts.
fn gap(t: &Table, i: usize) -> usize {
    match i {
        0 => 0,
        _ if t.starts_group(i) => 4,
        _ => 2,
    }
}

/// Each column's width: its header, its cells, and room for its group's name.
fn widths(t: &Table) -> Vec<usize> {
    let mut w: Vec<usize> = (0..t.columns.len())
        .map(|i| {
            t.rows
                .iter()
                .map(|r| cols(&r[i].shown))
                .chain([cols(&t.columns[i].header())])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut start = t.text_columns;
    for g in &t.groups {
        let end = start + g.columns;
        let span: usize = w[start..end].iter().sum::<usize>() + 2 * (g.columns - 1);
        let name = cols(&g.name);
        if name > span {
            w[end - 1] += name - span;
        }
        start = end;
    }
    w
}

fn width(t: &Table) -> usize {
    widths(t)
        .iter()
        .enumerate()
        .map(|(i, w)| w + gap(t, i))
        .sum()
}

/// Text columns left-aligned, the others right-aligned; group names above their columns.
fn aligned(t: &Table, paint: Paint) -> String {
    let w = widths(t);
    let pad = |i: usize, s: &str| {
        let n = w[i].saturating_sub(cols(s));
        if i < t.text_columns {
            format!("{s}{}", " ".repeat(n))
        } else {
            format!("{}{s}", " ".repeat(n))
        }
    };
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            s.push_str(&" ".repeat(gap(t, i)));
            s.push_str(c);
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = String::new();
    if !t.groups.is_empty() {
        let lead: usize = (0..t.text_columns).map(|i| gap(t, i) + w[i]).sum();
        let mut s = " ".repeat(lead);
        let mut start = t.text_columns;
        for g in &t.groups {
            let span: usize =
                w[start..start + g.columns].iter().sum::<usize>() + 2 * (g.columns - 1);
            s.push_str(&" ".repeat(gap(t, start)));
            let left = span.saturating_sub(cols(&g.name)) / 2;
            s.push_str(&format!("{}{}", " ".repeat(left), g.name));
            s.push_str(&" ".repeat(span.saturating_sub(cols(&g.name) + left)));
            start += g.columns;
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
    out.push_str(&line(
        (0..w.len())
            .map(|i| pad(i, &t.columns[i].header()))
            .collect(),
    ));
    out.push_str(&line(w.iter().map(|n| "-".repeat(*n)).collect()));
    for r in &t.rows {
        out.push_str(&line(
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    let s = pad(i, &c.shown);
                    if c.flagged {
                        paint.flag(&s)
                    } else {
                        s
                    }
                })
                .collect(),
        ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{columns, Cell, Group};
    use crate::result::AnyResult;

    #[test]
    fn colour_only_when_asked() {
        let report = Report::one(AnyResult::Usdt(crate::fixtures::usdt()));
        let plain = text(&report, Paint::new(false));
        assert!(!plain.contains('\x1b'));
        assert!(
            plain.contains("Warning: ftrace case 1: 5000 of 20000 events"),
            "{plain}"
        );
        assert!(text(&report, Paint::new(true)).contains("\x1b["));
    }

    #[test]
    fn text_file_has_every_result() {
        let report = Report::new([
            (None, AnyResult::Usdt(crate::fixtures::usdt())),
            (
                None,
                AnyResult::Sweep(crate::fixtures::sweep("PREEMPT_RT", 1)),
            ),
        ]);
        let out = Text.export(&Document::of(&report)).unwrap();
        let text = String::from_utf8(out[0].bytes.clone()).unwrap();
        assert!(
            text.contains("usdt: per-probe duration")
                && text.contains("cyclictest-sweep: wake-up latency")
        );
        assert!(
            text.contains("Warning: measured in a virtual machine"),
            "{text}"
        );
        assert!(
            text.contains("Figure: "),
            "figures are one line each: {text}"
        );
        assert!(
            text.contains("Configuration: folded here"),
            "details are one line: {text}"
        );
    }

    #[test]
    fn grouped_tables_name_their_groups_and_split_to_fit() {
        let mut t = Table::new("t", 1, columns(&["case", "min", "max", "min", "max"]));
        t.groups = vec![
            Group {
                name: "a long group name".into(),
                columns: 2,
            },
            Group {
                name: "b".into(),
                columns: 2,
            },
        ];
        t.rows = vec![["Case 1", "1", "22", "333", "4"].map(Cell::text).to_vec()];
        let text = table(&t, Paint::new(false));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "          a long group name       b", "{text}");
        assert_eq!(
            lines[1], "case      min           max    min  max",
            "{text}"
        );
        assert_eq!(
            lines[3], "Case 1      1            22    333    4",
            "{text}"
        );
        let mut wide = t.clone();
        wide.groups[0].name = "x".repeat(WIDTH);
        assert_eq!(
            table(&wide, Paint::new(false)).matches("case").count(),
            2,
            "split"
        );
    }
}
