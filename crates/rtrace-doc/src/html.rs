//! `index.html`: a document as one self-contained page (no external files): the summary, a
//! section per result with its figures inline, the figures across results. Each table links its
//! CSV file.

use crate::export::{Exporter, Output};
use crate::{count, Figure, Notice};
use crate::{Block, Document, Item, Section, Table};
use anyhow::Result;

const STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       max-width: 1320px; margin: 0 auto; padding: 24px 32px 64px; line-height: 1.45; }
h1 { margin-bottom: 4px; } h2 { margin-top: 48px; border-bottom: 2px solid #ddd; padding-bottom: 4px; }
h3 { margin-top: 28px; }
.sub { color: #666; margin-top: 0; }
nav a { margin-right: 16px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; font-variant-numeric: tabular-nums;
        display: block; overflow-x: auto; max-width: 100%; }
th, td { padding: 4px 7px; border-bottom: 1px solid #e4e4e4; text-align: right; }
th { background: #f4f4f4; } th.group { text-align: center; border-left: 2px solid #ccc; }
td { white-space: nowrap; } td.first, th.first { text-align: left; } td.wrap { white-space: normal; min-width: 6em; } td.note { white-space: normal; min-width: 8em; } td.group, th.gstart { border-left: 2px solid #ccc; }
table.env td { text-align: left; white-space: normal; overflow-wrap: anywhere; } table.env td:first-child { color: #666; white-space: nowrap; }
.warnings { background: #fff8e1; border-left: 5px solid #f5a623; padding: 8px 16px; margin: 12px 0; }
.warnings li { margin: 4px 0; } .warnings code { background: #fff1c4; }
.kind { font-weight: 600; color: #8a5a00; }
.summary { background: #f2f6fb; border-left: 5px solid #1f77b4; padding: 4px 16px; margin: 16px 0; }
.summary h2 { margin-top: 8px; border: none; } .summary li { margin: 6px 0; }
.ok { background: #eef8ee; border-left: 5px solid #4caf50; padding: 8px 16px; }
.flag { color: #b00020; font-weight: 600; }
.csv { margin: -12px 0 16px; font-size: 85%; } .csv a { color: #666; }
figure { margin: 16px 0 32px; } figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; margin-top: 4px; max-width: 960px; }
details pre { background: #f7f7f7; padding: 8px; overflow-x: auto; }
details.method { color: #555; margin: 8px 0; } details.method summary { cursor: pointer; }
details.method .more { color: #1f77b4; font-size: 90%; } details.method li { margin: 2px 0; }
.verdict h2 { margin-top: 16px; } .verdict .sub { margin-bottom: 4px; }
.beside { display: flex; gap: 24px; align-items: flex-start; }
.beside > div { flex: 0 1 auto; max-width: 70%; } .beside > figure { flex: 1 1 0; min-width: 0; margin: 8px 0; }
"#;

/// Cells longer than this wrap, in any column; shorter ones (names, numbers) stay on one line. A note after the
/// numbers (`td.note`) always wraps, in a narrower column.
const WRAP_AFTER: usize = 14;
/// Column groups per table part (Table 3.1: 3 tracers of 4 columns fit 1400 px).
const GROUPS_PER_TABLE: usize = 3;

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Escapes prose and turns its `backticked` spans into `<code>`.
fn code_spans(s: &str) -> String {
    esc(s)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_owned()
            }
        })
        .collect()
}

fn warnings(list: &[Notice]) -> String {
    if list.is_empty() {
        return "<p class=\"ok\">No warnings: the setup matches the thesis'.</p>\n".into();
    }
    let warnings = count(list.len(), "warning");
    let mut out = format!(
        "<div class=\"warnings\"><strong>{warnings}</strong> — each says what to do:<ul>\n"
    );
    for w in list {
        let kind = &w.kind;
        let scope = w
            .scope
            .as_deref()
            .map_or(String::new(), |s| format!("<b>{}</b>: ", esc(s)));
        let details = if w.details.is_empty() {
            String::new()
        } else {
            let items: String = w
                .details
                .iter()
                .map(|d| format!("<li>{}</li>", esc(d)))
                .collect();
            format!(
                "<details><summary>{} runs</summary><ul>{items}</ul></details>",
                w.details.len()
            )
        };
        out.push_str(&format!(
            "<li><span class=\"kind\">{kind}</span> {scope}{}{details}</li>\n",
            code_spans(&w.message)
        ));
    }
    out.push_str("</ul></div>\n");
    out
}

/// `<td>` or `<th>` with its classes: text columns left, a group's first column ruled, flagged
/// cells styled.
fn cell(tag: &str, text: &str, classes: &[&str]) -> String {
    let class = match classes {
        [] => String::new(),
        _ => format!(" class=\"{}\"", classes.join(" ")),
    };
    format!("<{tag}{class}>{}</{tag}>", unit_kept(&esc(text)))
}

/// `text` with the words [`crate::unbroken`] keeps together joined by no-break spaces, and no
/// line break after an interval's dash (`1.00–1.10`): a wrapping cell never breaks a number
/// from its unit nor an interval apart.
fn unit_kept(text: &str) -> String {
    let words: Vec<String> = crate::unbroken(text)
        .iter()
        .map(|w| match w.starts_with(['(', '[']) {
            // WORD JOINER after the dash.
            true => w.replace(' ', "&nbsp;").replace('–', "–\u{2060}"),
            false => w.replace(' ', "&nbsp;"),
        })
        .collect();
    words.join(" ")
}

/// A table with its group header row, a grouped one in parts of [`GROUPS_PER_TABLE`] (each
/// fits the page), then a link to its CSV file (the whole table).
fn table(t: &Table, section: &str) -> String {
    let mut out = String::new();
    if let Some(title) = &t.title {
        let caption = t
            .caption
            .as_deref()
            .map_or(String::new(), |c| format!(": {}", code_spans(c)));
        out.push_str(&format!("<p><b>{}</b>{caption}</p>\n", esc(title)));
    }
    let id = format!("{section}-{}", t.id);
    for (n, part) in t.split(GROUPS_PER_TABLE).iter().enumerate() {
        let id = match n {
            0 => id.clone(),
            n => format!("{id}-{}", n + 1),
        };
        out.push_str(&table_part(part, &id));
    }
    let csv = crate::csv::path(section, &t.id);
    out.push_str(&format!(
        "<p class=\"csv\"><a href=\"{}\">CSV</a></p>\n",
        esc(&csv)
    ));
    out
}

/// One `<table>`: its header rows (the groups' names above their columns), then its rows.
fn table_part(t: &Table, id: &str) -> String {
    let mut out = format!("<table id=\"{}\">\n<tr>", esc(id));
    let grouped = !t.groups.is_empty();
    for (i, c) in t.columns.iter().enumerate() {
        if i < t.text_columns {
            let span = if grouped { " rowspan=\"2\"" } else { "" };
            out.push_str(&format!(
                "<th class=\"first\"{span}>{}</th>",
                esc(&c.header())
            ));
        } else if !grouped {
            let class: &[&str] = if t.is_text(i) { &["first"] } else { &[] };
            out.push_str(&cell("th", &c.header(), class));
        }
    }
    if grouped {
        for g in &t.groups {
            out.push_str(&format!(
                "<th class=\"group\" colspan=\"{}\">{}</th>",
                g.columns,
                esc(&g.name)
            ));
        }
        out.push_str("</tr>\n<tr>");
        for (i, c) in t.columns.iter().enumerate().skip(t.text_columns) {
            let class: &[&str] = if t.starts_group(i) { &["gstart"] } else { &[] };
            out.push_str(&cell("th", &c.header(), class));
        }
    }
    out.push_str("</tr>\n");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let mut classes = Vec::new();
            if t.is_text(i) {
                classes.push("first");
                if t.columns[i].text {
                    classes.push("note");
                }
            }
            if !classes.contains(&"note") && c.shown.chars().count() > WRAP_AFTER {
                classes.push("wrap");
            }
            if t.starts_group(i) {
                classes.push("group");
            }
            if c.flagged {
                classes.push("flag");
            }
            out.push_str(&cell("td", &c.shown, &classes));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn figure(f: &Figure) -> Result<String> {
    let svg = &f.svg;
    Ok(format!(
        "<figure id=\"{}\">\n{svg}\n<figcaption><b>{}.</b> {} <a href=\"{}\">SVG</a></figcaption>\n</figure>\n",
        esc(&f.file),
        esc(&f.title),
        esc(&f.caption),
        esc(&f.path())
    ))
}

/// Method text folded: its first sentence shown, the others a list under it.
fn method(text: &str) -> String {
    let sentences = crate::method(text).unwrap_or_else(|| vec![text.to_owned()]);
    let rest: String = sentences[1..]
        .iter()
        .map(|s| format!("<li>{}</li>", code_spans(s)))
        .collect();
    format!(
        "<details class=\"method\"><summary>{} <span class=\"more\">(how: {} more)</span></summary><ul>{rest}</ul></details>\n",
        code_spans(&sentences[0]),
        sentences.len() - 1
    )
}

fn item(i: &Item) -> String {
    let more = i.more.as_deref().map_or(String::new(), |m| {
        format!("<br><span class=\"sub\">{}</span>", code_spans(m))
    });
    format!("<li>{}{more}</li>\n", code_spans(&i.text))
}

fn block(b: &Block, section: &str, doc: &Document) -> Result<String> {
    Ok(match b {
        Block::Heading(h) => format!("<h3>{}</h3>\n", code_spans(h)),
        Block::Paragraph(p) | Block::Note(p) if crate::method(p).is_some() => method(p),
        Block::Paragraph(p) => format!("<p>{}</p>\n", code_spans(p)),
        Block::Note(p) => format!("<p class=\"sub\">{}</p>\n", code_spans(p)),
        Block::List(items) => format!(
            "<ul>\n{}</ul>\n",
            items.iter().map(item).collect::<String>()
        ),
        Block::Warnings(list) => warnings(list),
        Block::Table(t) => table(t, section),
        Block::Figure(f) => figure(f)?,
        Block::Details { summary, blocks } => format!(
            "<details><summary>{}</summary>\n{}</details>\n",
            esc(summary),
            blocks_html(blocks, section, doc)?
        ),
        Block::Pre(text) => format!("<pre>{}</pre>\n", esc(text)),
        Block::Environment(rows) => {
            let mut out = String::from("<table class=\"env\">\n");
            for (k, v) in rows {
                out.push_str(&format!("<tr><td>{k}</td><td>{}</td></tr>\n", esc(v)));
            }
            out.push_str("</table>\n");
            out
        }
    })
}

fn blocks_html(blocks: &[Block], section: &str, doc: &Document) -> Result<String> {
    blocks.iter().map(|b| block(b, section, doc)).collect()
}

/// `text` with its first letter upper-case.
fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

fn section(s: &Section, doc: &Document) -> Result<String> {
    let file = s
        .source
        .as_deref()
        .map_or(String::new(), |f| format!(" — <code>{}</code>", esc(f)));
    Ok(format!(
        "<section id=\"{0}\">\n<h2>{1} (<code>{0}</code>){file}</h2>\n<p class=\"sub\">{2}</p>\n{3}</section>\n",
        esc(&s.id),
        esc(&capitalized(&s.title)),
        code_spans(&s.subtitle),
        blocks_html(&s.blocks, &s.id, doc)?
    ))
}

/// The HTML page.
pub struct Html;

/// The verdict first: its tables and its figure side by side, then the rest of its blocks.
fn verdict(s: &Section, doc: &Document) -> Result<String> {
    let pick = |f: fn(&Block) -> bool| -> Vec<Block> {
        s.blocks.iter().filter(|b| f(b)).cloned().collect()
    };
    let tables = pick(|b| matches!(b, Block::Table(_)));
    let figures = pick(|b| matches!(b, Block::Figure(_)));
    let rest = pick(|b| !matches!(b, Block::Table(_) | Block::Figure(_)));
    Ok(format!(
        "<section class=\"verdict\" id=\"{}\"><h2>{}</h2>\n<p class=\"sub\">{}</p>\n<div class=\"beside\"><div>{}</div>\n{}</div>\n{}</section>\n",
        esc(&s.id),
        esc(&s.title),
        code_spans(&s.subtitle),
        blocks_html(&tables, &s.id, doc)?,
        blocks_html(&figures, &s.id, doc)?,
        blocks_html(&rest, &s.id, doc)?
    ))
}

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn export(&self, doc: &Document) -> Result<Vec<Output>> {
        let total = doc.warnings;
        let mut body = String::new();
        let mut nav = String::new();
        for s in doc.all_sections() {
            nav.push_str(&format!("<a href=\"#{0}\">{0}</a>", esc(&s.id)));
            body.push_str(&section(s, doc)?);
        }
        if !doc.shared.is_empty() {
            nav.push_str("<a href=\"#across\">across results</a>");
            body.push_str(&format!(
                "<section id=\"across\"><h2>Across results</h2>\n{}</section>\n",
                blocks_html(&doc.shared, "across", doc)?
            ));
        }
        let mut summary = match &doc.verdict {
            Some(v) => verdict(v, doc)?,
            None => String::new(),
        };
        summary.push_str(&format!(
            "<section class=\"summary\"><h2>Summary</h2>\n{}</section>\n",
            blocks_html(&doc.summary, "summary", doc)?
        ));
        let (n, total) = (count(doc.sections.len(), "result"), count(total, "warning"));
        let page = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>rtrace-bench report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>rtrace-bench report</h1>\n<p class=\"sub\">The observer effect of Linux tracers on real-time workloads: {n}, {total}. The same tables in <a href=\"report.md\">Markdown</a>; each table's numbers at full precision in the CSV file linked under it.</p>\n<nav>{nav}</nav>\n{summary}{body}</body>\n</html>\n",
        );
        Ok(vec![Output::new("index.html", page)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_keeps_its_unit_and_an_interval_stays_whole() {
        assert_eq!(unit_kept("0.23 s, 10 runs"), "0.23&nbsp;s, 10&nbsp;runs");
        assert_eq!(unit_kept("1.36 (1.22–1.49)"), "1.36 (1.22–\u{2060}1.49)");
        assert_eq!(
            unit_kept("238 (−1088 to 1565)"),
            "238 (−1088&nbsp;to&nbsp;1565)"
        );
        assert_eq!(unit_kept("9983 [9970, 9995]"), "9983 [9970,&nbsp;9995]");
        assert_eq!(
            unit_kept("(its consumer kept up)"),
            "(its consumer kept up)",
            "prose wraps"
        );
    }

    #[test]
    fn warnings_escape_and_mark_code_and_fold_their_details() {
        assert_eq!(code_spans("run `a<b` now"), "run <code>a&lt;b</code> now");
        let w = Notice {
            kind: "outliers".into(),
            scope: None,
            message: "in 2 of 9 runs the maximum is more than 10× p99.99".into(),
            details: vec!["a: max 9 ns".into(), "b<c: max 8 ns".into()],
        };
        let folded = "<details><summary>2 runs</summary><ul><li>a: max 9 ns</li><li>b&lt;c: max 8 ns</li></ul></details>";
        assert!(warnings(&[w]).contains(folded));
    }
}
