//! A table as plain text, laid out by comfy-table: a header, a rule under it, columns separated
//! by spaces, text columns left-aligned and the others right-aligned, a group's name as the first
//! line of its first column's header. A table wider than [`WIDTH`] is split into parts of fewer
//! groups, then its text columns and headers wrap (numbers never do).

use super::Paint;
use crate::{unbroken, Table};
use comfy_table::{
    Attribute, CellAlignment, Color, ColumnConstraint, ContentArrangement, ContentLineStyle,
    LineStyle, TableStyle, Width,
};

/// Columns a table may take.
pub const WIDTH: u16 = 160;

/// Columns `s` takes on a terminal: combining marks (the macron of `x̄`) take none.
pub fn cols(s: &str) -> usize {
    s.chars()
        .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
        .count()
}

/// No border; two spaces between columns (a cell may hold spaces: `+0.89 (−0.33 to 2.11)`) and a
/// rule under the header.
const GAP: usize = 2;
const STYLE: TableStyle = TableStyle::new()
    .header_lines(ContentLineStyle::none().junction(' '))
    .header_separator(LineStyle::none().fill('-').junction(' '))
    .content_lines(ContentLineStyle::none().junction(' '));

/// `t` in as few parts as fit [`WIDTH`] (a grouped table split between its groups), each part
/// wrapped to fit.
pub fn render(t: &Table, paint: Paint) -> String {
    let natural = |p: &Table| {
        let w = layout(p, paint).column_max_content_widths();
        w.iter().map(|&w| usize::from(w) + GAP).sum::<usize>() - GAP
    };
    let parts = (1..=t.groups.len().max(1))
        .rev()
        .map(|n| t.split(n))
        .find(|parts| parts.iter().all(|p| natural(p) <= WIDTH.into()))
        .unwrap_or_else(|| t.split(1));
    let parts: Vec<String> = parts
        .iter()
        .map(|p| layout(p, paint).trim_fmt() + "\n")
        .collect();
    parts.join("\n")
}

/// `t` without colour.
pub fn plain(t: &Table) -> String {
    render(t, Paint::new(false))
}

/// `t` as a comfy-table of at most [`WIDTH`] columns.
fn layout(t: &Table, paint: Paint) -> comfy_table::Table {
    let align = |i: usize| match t.is_text(i) {
        true => CellAlignment::Left,
        false => CellAlignment::Right,
    };
    let mut out = comfy_table::Table::new();
    out.load_style(STYLE)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(WIDTH);
    if paint.colour {
        out.enforce_styling();
    }
    out.set_header((0..t.columns.len()).map(|i| {
        let group = match t.group_of(i) {
            Some(g) if t.starts_group(i) => format!("{}\n", g.name),
            _ if !t.groups.is_empty() => "\n".into(),
            _ => String::new(),
        };
        comfy_table::Cell::new(group + &t.columns[i].header()).set_alignment(align(i))
    }));
    for r in &t.rows {
        out.add_row(r.iter().enumerate().map(|(i, c)| {
            let cell = comfy_table::Cell::new(&c.shown).set_alignment(align(i));
            match c.flagged {
                true => cell.fg(Color::Red).add_attribute(Attribute::Bold),
                false => cell,
            }
        }));
    }
    // Text wraps between words, numbers not at all, nor a number from its unit.
    let longest = |s: &str| unbroken(s).into_iter().map(|w| cols(&w)).max().unwrap_or(0);
    for (i, column) in out.column_iter_mut().enumerate() {
        let cells = t.rows.iter().map(|r| &r[i].shown);
        let least = match t.is_text(i) {
            true => cells.map(|c| longest(c)).max(),
            false => cells.map(|c| cols(c)).max(),
        };
        // The bound counts the padding: a space left of every column but the first.
        let pad = u16::from(i > 0);
        let least = least.unwrap_or(0).max(longest(&t.columns[i].header())) + usize::from(pad);
        let least = Width::Fixed(least.try_into().unwrap_or(u16::MAX));
        column
            .set_padding((pad, 0))
            .set_constraint(ColumnConstraint::LowerBoundary(least));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{columns, Cell, Group};

    #[test]
    fn grouped_tables_name_their_groups_above_their_first_column_and_split_to_fit() {
        let mut t = Table::new("t", 1, columns(&["case", "min", "max", "min", "max"]));
        let group = |name: &str| Group {
            name: name.into(),
            columns: 2,
        };
        t.groups = vec![group("a long group name"), group("b")];
        t.rows = vec![["Case 1", "1", "22", "333", "4"].map(Cell::text).to_vec()];
        t.rows[0][4] = Cell::text("4").flag();
        assert_eq!(
            plain(&t),
            "        a long group name         b\n\
             case                  min  max  min  max\n\
             ------ ------------------ ---- ---- ----\n\
             Case 1                  1   22  333    4\n"
        );
        assert!(render(&t, Paint::new(true)).contains("\x1b["), "flagged");
        t.groups[0].name = "x".repeat(WIDTH.into());
        assert_eq!(plain(&t).matches("case").count(), 2, "split");
    }

    #[test]
    fn a_wide_text_column_wraps_between_words_and_numbers_do_not() {
        let long = "word ".repeat(60);
        let mut t = Table::new("t", 1, columns(&["what", "a long header over a number"]));
        t.rows = vec![
            vec![Cell::text(long.trim()), Cell::num(1.0, "12345".into())],
            vec![Cell::text("short"), Cell::num(2.0, "2".into())],
        ];
        let text = plain(&t);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().all(|l| cols(l) <= WIDTH.into()), "{text}");
        assert!(lines[2].starts_with("word word") && lines[2].ends_with(" 12345"));
        assert!(
            lines[3].starts_with("word") && lines[3].ends_with("word"),
            "{text}"
        );
        assert!(lines.last().unwrap().starts_with("short"), "{text}");
        assert_eq!(text.matches("word").count(), 60, "no word lost: {text}");
    }

    #[test]
    fn a_note_after_the_numbers_wraps_between_words_left_aligned() {
        use crate::Column;
        let mut names = columns(&["what", "n"]);
        names.push(Column::new("note").text());
        let mut t = Table::new("t", 1, names);
        let long = "word ".repeat(60);
        t.rows = vec![
            vec![
                Cell::text("a"),
                Cell::num(1.0, "12345".into()),
                Cell::text(long.trim()),
            ],
            vec![
                Cell::text("b"),
                Cell::num(2.0, "2".into()),
                Cell::text("short"),
            ],
        ];
        assert!(t.is_text(2) && !t.is_text(1));
        let text = plain(&t);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().all(|l| cols(l) <= WIDTH.into()), "{text}");
        assert_eq!(text.matches("word").count(), 60, "no word lost: {text}");
        let last = lines.last().unwrap();
        assert_eq!(last.find("short"), lines[2].find("word"), "{text}");
    }

    #[test]
    fn a_number_keeps_its_unit_and_an_interval_its_ends() {
        assert_eq!(unbroken("256 KiB/CPU"), ["256 KiB/CPU"]);
        assert_eq!(unbroken("238 (−1088 to 1565)"), ["238", "(−1088 to 1565)"]);
        assert_eq!(
            unbroken("ebpf (record) 0.23 s, 10 buffer-fulls"),
            ["ebpf", "(record)", "0.23 s,", "10 buffer-fulls"]
        );
        assert_eq!(unbroken("9983 [9970, 9995]"), ["9983", "[9970, 9995]"]);
        let mut t = Table::new("t", 2, columns(&["tracer", "buffer", "n"]));
        t.rows = vec![vec![
            Cell::text("ftrace"),
            Cell::text("256 KiB/CPU"),
            Cell::num(1.0, "1".into()),
        ]];
        t.rows.push(vec![
            Cell::text("x ".repeat(100)),
            Cell::text("y"),
            Cell::num(2.0, "2".into()),
        ]);
        assert!(plain(&t).contains("256 KiB/CPU"), "{}", plain(&t));
    }
}
