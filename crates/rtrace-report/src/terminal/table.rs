//! A table as aligned plain text: text columns left-aligned, the others right-aligned, two
//! spaces between columns and four where a column group starts, group names centred above their
//! columns. A table wider than [`WIDTH`] is split into parts of fewer groups, then its widest
//! columns wrap their text (numbers never wrap, only their headers).

use super::Paint;
use crate::doc::Table;

/// Columns a table may take.
pub const WIDTH: usize = 160;

/// Columns `s` takes on a terminal: combining marks (the macron of `x̄`) take none.
pub fn cols(s: &str) -> usize {
    s.chars()
        .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
        .count()
}

/// `t` in as few parts as fit [`WIDTH`] (a grouped table split between its groups), each part
/// wrapped to fit.
pub fn render(t: &Table, paint: Paint) -> String {
    let parts = (1..=t.groups.len().max(1))
        .rev()
        .map(|n| t.split(n))
        .find(|parts| parts.iter().all(|p| width(p, &natural(p)) <= WIDTH))
        .unwrap_or_else(|| t.split(1));
    let parts: Vec<String> = parts.iter().map(|p| aligned(p, paint)).collect();
    parts.join("\n")
}

/// `t` without colour.
pub fn plain(t: &Table) -> String {
    render(t, Paint::new(false))
}

/// The gap before column `i`: wider where a group starts.
fn gap(t: &Table, i: usize) -> usize {
    match i {
        0 => 0,
        _ if t.starts_group(i) => 4,
        _ => 2,
    }
}

fn width(t: &Table, w: &[usize]) -> usize {
    w.iter().enumerate().map(|(i, w)| w + gap(t, i)).sum()
}

/// Each column's width unwrapped: its header, its cells, and room for its group's name.
fn natural(t: &Table) -> Vec<usize> {
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

/// The widths that fit [`WIDTH`]: the widest column narrowed first, its header and text cells
/// wrapping (at spaces and after `:`); numbers never wrap, and no column gets narrower than its
/// longest unbreakable piece.
fn fitted(t: &Table) -> Vec<usize> {
    let mut w = natural(t);
    let longest = |s: &str| pieces(s).map(|(p, _)| cols(p)).max().unwrap_or(0);
    let least: Vec<usize> = (0..w.len())
        .map(|i| {
            let cells = t.rows.iter().map(|r| &r[i].shown);
            let cells = if i < t.text_columns {
                cells.map(|c| longest(c)).max()
            } else {
                cells.map(|c| cols(c)).max()
            };
            let header = longest(&t.columns[i].header());
            cells.unwrap_or(0).max(header).min(w[i])
        })
        .collect();
    while width(t, &w) > WIDTH {
        let Some(i) = (0..w.len())
            .filter(|&i| w[i] > least[i])
            .max_by_key(|&i| w[i])
        else {
            break;
        };
        w[i] -= 1;
    }
    w
}

/// The pieces a line may break between: words, and parts of a word after each `:`; each with
/// whether a space comes before it.
fn pieces(s: &str) -> impl Iterator<Item = (&str, bool)> {
    s.split(' ').enumerate().flat_map(|(n, word)| {
        word.split_inclusive(':')
            .enumerate()
            .map(move |(k, p)| (p, n > 0 && k == 0))
    })
}

/// `s` in lines of at most `width` columns, broken between [`pieces`] (a longer piece on its
/// own line).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (piece, space) in pieces(s) {
        let sep = usize::from(space && !line.is_empty());
        if !line.is_empty() && cols(&line) + sep + cols(piece) > width {
            lines.push(std::mem::take(&mut line));
        } else if sep == 1 {
            line.push(' ');
        }
        line.push_str(piece);
    }
    lines.push(line);
    lines
}

/// One table, fitted.
fn aligned(t: &Table, paint: Paint) -> String {
    let w = fitted(t);
    let pad = |i: usize, s: &str| {
        let n = w[i].saturating_sub(cols(s));
        if i < t.text_columns {
            format!("{s}{}", " ".repeat(n))
        } else {
            format!("{}{s}", " ".repeat(n))
        }
    };
    // One row of cells, each wrapped to its width; headers sit on the last line.
    let row = |cells: Vec<(String, bool)>, bottom: bool| {
        let wrapped: Vec<Vec<String>> = cells
            .iter()
            .enumerate()
            .map(|(i, (s, _))| wrap(s, w[i]))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        let mut out = String::new();
        for k in 0..height {
            let mut s = String::new();
            for (i, lines) in wrapped.iter().enumerate() {
                let at = if bottom { k + lines.len() } else { k + height };
                let text = at
                    .checked_sub(height)
                    .and_then(|j| lines.get(j))
                    .map_or("", String::as_str);
                s.push_str(&" ".repeat(gap(t, i)));
                let cell = pad(i, text);
                if cells[i].1 && !text.is_empty() {
                    s.push_str(&paint.flag(&cell));
                } else {
                    s.push_str(&cell);
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        }
        out
    };
    let mut out = String::new();
    if !t.groups.is_empty() {
        let lead: usize = (0..t.text_columns).map(|i| gap(t, i) + w[i]).sum();
        let mut s = " ".repeat(lead);
        let mut start = t.text_columns;
        for g in &t.groups {
            let span: usize =
                w[start..start + g.columns].iter().sum::<usize>() + 2 * (g.columns - 1);
            let left = span.saturating_sub(cols(&g.name)) / 2;
            s.push_str(&" ".repeat(gap(t, start) + left));
            s.push_str(&g.name);
            s.push_str(&" ".repeat(span.saturating_sub(cols(&g.name) + left)));
            start += g.columns;
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
    let header = t.columns.iter().map(|c| (c.header(), false)).collect();
    out.push_str(&row(header, true));
    let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    out.push_str(&row(rule.into_iter().map(|r| (r, false)).collect(), false));
    for r in &t.rows {
        out.push_str(&row(
            r.iter().map(|c| (c.shown.clone(), c.flagged)).collect(),
            false,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{columns, Cell, Group};

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
        let text = render(&t, Paint::new(false));
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
            render(&wide, Paint::new(false)).matches("case").count(),
            2,
            "split"
        );
    }

    #[test]
    fn a_wide_text_column_wraps_and_numbers_do_not() {
        let long = "word ".repeat(60);
        let mut t = Table::new("t", 1, columns(&["what", "a long header over a number"]));
        t.rows = vec![
            vec![Cell::text(long.trim()), Cell::num(1.0, "12345".into())],
            vec![Cell::text("short"), Cell::num(2.0, "2".into())],
        ];
        let text = render(&t, Paint::new(false));
        assert!(text.lines().all(|l| cols(l) <= WIDTH), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.iter().filter(|l| l.ends_with("12345")).count(),
            1,
            "{text}"
        );
        let rule = lines.iter().position(|l| l.starts_with("---")).unwrap();
        assert!(
            lines[rule - 1].ends_with(" number"),
            "the header wraps: {text}"
        );
        assert!(
            lines[rule + 1].starts_with("word word") && lines[rule + 2].starts_with("word"),
            "{text}"
        );
        assert!(lines.last().unwrap().starts_with("short"), "{text}");
        assert_eq!(text.matches("word").count(), 60, "no word lost: {text}");
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_after_colons() {
        assert_eq!(wrap("ab cd ef", 5), ["ab cd", "ef"]);
        assert_eq!(wrap("abcdefgh ij", 4), ["abcdefgh", "ij"]);
        assert_eq!(wrap("", 3), [""]);
        assert_eq!(
            wrap("tracepoint:syscalls:sys_enter_read", 20),
            ["tracepoint:syscalls:", "sys_enter_read"]
        );
        assert_eq!(wrap("a b:c d", 3), ["a", "b:c", "d"]);
    }
}
