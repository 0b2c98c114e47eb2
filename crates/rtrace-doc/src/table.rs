//! A table of a document: columns with names and units, optional column groups, leading text
//! columns, and typed cells (the text shown and the full-precision value behind it).

/// A table with typed cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Unique in its section, usable in a file name (`percentiles`, `table31-usdt`).
    pub id: String,
    /// A bold line above it, when a heading does not name it (a staircase's tracer and path).
    pub title: Option<String>,
    /// After the title: what to check in it.
    pub caption: Option<String>,
    /// Its columns, in order.
    pub columns: Vec<Column>,
    /// Column groups over the columns after the text columns, in order (Table 3.1: min, max,
    /// x̄ and s per tracer); empty for none.
    pub groups: Vec<Group>,
    /// Leading text columns (left-aligned; every part of a split grouped table repeats them).
    pub text_columns: usize,
    /// A cell per column each.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table of `columns`, the first `text_columns` of them text.
    pub fn new(id: impl Into<String>, text_columns: usize, columns: Vec<Column>) -> Table {
        Table {
            id: id.into(),
            title: None,
            caption: None,
            columns,
            groups: Vec::new(),
            text_columns,
            rows: Vec::new(),
        }
    }

    /// With a title and a caption.
    pub fn titled(mut self, title: String, caption: Option<String>) -> Table {
        self.title = Some(title);
        self.caption = caption;
        self
    }

    /// Appends a row of text cells (listings, not measurements).
    pub fn text_row(&mut self, cells: Vec<String>) {
        self.rows.push(cells.into_iter().map(Cell::text).collect());
    }

    /// With `rows`.
    pub fn rows(mut self, rows: Vec<Vec<Cell>>) -> Table {
        self.rows = rows;
        self
    }

    /// The column's name with its group's: `ftrace min`.
    pub fn full_name(&self, i: usize) -> String {
        match self.group_of(i) {
            Some(g) => format!("{} {}", g.name, self.columns[i].name),
            None => self.columns[i].name.clone(),
        }
    }

    /// Each group with the index of its first column.
    fn starts(&self) -> impl Iterator<Item = (usize, &Group)> {
        self.groups.iter().scan(self.text_columns, |start, g| {
            *start += g.columns;
            Some((*start - g.columns, g))
        })
    }

    /// The group of column `i`.
    pub fn group_of(&self, i: usize) -> Option<&Group> {
        let mut spans = self.starts();
        spans
            .find(|&(s, g)| (s..s + g.columns).contains(&i))
            .map(|(_, g)| g)
    }

    /// Whether column `i` holds text: a leading text column or a note after the numbers
    /// (left-aligned, wrapped between words).
    pub fn is_text(&self, i: usize) -> bool {
        i < self.text_columns || self.columns[i].text
    }

    /// Whether column `i` starts a group.
    pub fn starts_group(&self, i: usize) -> bool {
        self.starts().any(|(s, _)| s == i)
    }

    /// The table in parts of at most `n` groups each, every part with the text columns; the
    /// table itself without groups.
    pub fn split(&self, n: usize) -> Vec<Table> {
        if self.groups.len() <= n.max(1) {
            return vec![self.clone()];
        }
        let mut out = Vec::new();
        let mut start = self.text_columns;
        for chunk in self.groups.chunks(n.max(1)) {
            let width: usize = chunk.iter().map(|g| g.columns).sum();
            let keep: Vec<usize> = (0..self.text_columns).chain(start..start + width).collect();
            out.push(Table {
                columns: keep.iter().map(|&i| self.columns[i].clone()).collect(),
                groups: chunk.to_vec(),
                rows: self
                    .rows
                    .iter()
                    .map(|r| keep.iter().map(|&i| r[i].clone()).collect())
                    .collect(),
                ..self.clone()
            });
            start += width;
        }
        out
    }
}

/// A column: its name and the unit of its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Its name (without its group's).
    pub name: String,
    /// The unit of its values (`ns`, `µs`, `%`); CSV headers always say it.
    pub unit: Option<&'static str>,
    /// Whether the shown header says the unit too (otherwise the heading above states it).
    pub unit_shown: bool,
    /// Text after the numbers (a note per row): laid out as the leading text columns are.
    pub text: bool,
}

impl Column {
    /// A column without a unit (text, counts, ratios).
    pub fn new(name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            unit: None,
            unit_shown: false,
            text: false,
        }
    }

    /// Text after the numbers (a note per row).
    pub fn text(mut self) -> Column {
        self.text = true;
        self
    }

    /// With `unit`, stated by the heading above (`p50` under "Percentiles (ns)").
    pub fn unit(mut self, unit: &'static str) -> Column {
        self.unit = Some(unit);
        self
    }

    /// With `unit`, shown in the header too (`increment (ns)`).
    pub fn shown_unit(mut self, unit: &'static str) -> Column {
        self.unit = Some(unit);
        self.unit_shown = true;
        self
    }

    /// What the header shows.
    pub fn header(&self) -> String {
        match self.unit {
            Some(u) if self.unit_shown => format!("{} ({u})", self.name),
            _ => self.name.clone(),
        }
    }
}

/// Columns named `names`, without units.
pub fn columns(names: &[&str]) -> Vec<Column> {
    names.iter().map(|n| Column::new(*n)).collect()
}

/// The words of `s` a wrapping line must keep together, in order: a number with the unit after
/// it (`256 KiB/CPU`, `0.23 s`, `12.27 % lost` keeps `12.27 %`) and an interval of numbers
/// (`[9439, 11239]`, `(1.22–1.49)`, `(−175 to 664)`) are one; a parenthesis of prose is words.
/// The terminal sizes its columns by them, HTML joins them with no-break spaces.
pub fn unbroken(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut prev: Option<char> = None;
    let mut inside = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        inside = match c {
            '[' | '(' => {
                let inner: String = chars
                    .clone()
                    .take_while(|n| !matches!(n, ']' | ')'))
                    .collect();
                !inner.replace(" to ", "").chars().any(char::is_alphabetic)
            }
            ']' | ')' => false,
            _ => inside,
        };
        let unit = || {
            chars
                .clone()
                .next()
                .is_some_and(|n| n.is_alphabetic() || "%×µ".contains(n))
        };
        let joins = inside || prev.is_some_and(|p| p.is_ascii_digit()) && unit();
        match (c, joins) {
            (' ', false) => out.push(String::new()),
            _ => out.last_mut().expect("never empty").push(c),
        }
        prev = Some(c);
    }
    out
}

/// `s` for a file name: lower-case ASCII letters and digits, every other run of characters one
/// `-` (`ebpf (maps) on usdt` → `ebpf-maps-on-usdt`).
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// A group of consecutive columns under one name.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Shown above its columns (`ftrace`, `ebpf (record)`).
    pub name: String,
    /// How many columns it spans.
    pub columns: usize,
}

/// A table cell: what the reader sees, the value behind it, and whether it must stand out.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// As shown, rounded as the experiment rounds it.
    pub shown: String,
    /// At full precision, in the column's unit (CSV writes this).
    pub value: Value,
    /// A value the reader must not miss (`FAILED`, `MISMATCH`, `NO`, a lossy run).
    pub flagged: bool,
}

/// The value behind a cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// The shown text is the value.
    Text,
    /// A measured or derived number.
    Number(f64),
    /// An estimate with its confidence interval, when it has one.
    Interval {
        estimate: f64,
        low: Option<f64>,
        high: Option<f64>,
    },
    /// A count (hits, samples, bytes).
    Count(u64),
    /// Not measured, not applicable.
    Missing,
}

impl Cell {
    fn of(shown: impl Into<String>, value: Value) -> Cell {
        Cell {
            shown: shown.into(),
            value,
            flagged: false,
        }
    }

    /// Text.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::of(s, Value::Text)
    }

    /// A number shown as `shown`.
    pub fn num(value: f64, shown: String) -> Cell {
        Cell::of(shown, Value::Number(value))
    }

    /// A count.
    pub fn count(n: u64) -> Cell {
        Cell::count_shown(n, n.to_string())
    }

    /// A count shown otherwise (`2.5 MB`).
    pub fn count_shown(n: u64, shown: String) -> Cell {
        Cell::of(shown, Value::Count(n))
    }

    /// An estimate and its interval divided by `per_unit` into the column's unit (1000 for ns
    /// to µs), shown as `shown`.
    pub fn estimate(
        (estimate, low, high): (f64, Option<f64>, Option<f64>),
        per_unit: f64,
        shown: String,
    ) -> Cell {
        let estimate = estimate / per_unit;
        let (low, high) = (low.map(|l| l / per_unit), high.map(|h| h / per_unit));
        Cell::of(
            shown,
            Value::Interval {
                estimate,
                low,
                high,
            },
        )
    }

    /// `-`: nothing to show.
    pub fn missing() -> Cell {
        Cell::of("-", Value::Missing)
    }

    /// `f(v)`, or `-` without a value.
    pub fn or_missing<T>(v: Option<T>, f: impl FnOnce(T) -> Cell) -> Cell {
        v.map_or_else(Cell::missing, f)
    }

    /// Flagged: styled apart wherever a format can.
    pub fn flag(self) -> Cell {
        self.flag_if(true)
    }

    /// Flagged when `when`.
    pub fn flag_if(mut self, when: bool) -> Cell {
        self.flagged |= when;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grouped_table_splits_with_its_text_columns() {
        let mut t = Table::new(
            "t",
            1,
            columns(&["case", "min", "max", "min", "max", "min", "max"]),
        );
        let group = |n: &str| Group {
            name: n.into(),
            columns: 2,
        };
        t.groups = vec![group("a"), group("b"), group("c")];
        t.rows = vec![["0", "1", "2", "3", "4", "5", "6"].map(Cell::text).to_vec()];
        assert_eq!(t.full_name(3), "b min");
        assert!(t.starts_group(3) && !t.starts_group(4));
        let parts = t.split(2);
        assert_eq!(parts.len(), 2);
        let shown: Vec<&str> = parts[1].rows[0].iter().map(|c| c.shown.as_str()).collect();
        assert_eq!(shown, ["0", "5", "6"]);
        assert_eq!(parts[1].full_name(1), "c min");
        assert_eq!(t.split(3), vec![t.clone()]);
    }

    #[test]
    fn slugs_are_file_names_and_headers_show_a_unit_only_when_asked() {
        assert_eq!(
            slug("staircase ebpf (maps) usdt-nop5"),
            "staircase-ebpf-maps-usdt-nop5"
        );
        assert_eq!(slug("count()"), "count");
        assert_eq!(Column::new("p50").unit("ns").header(), "p50");
        assert_eq!(
            Column::new("increment").shown_unit("ns").header(),
            "increment (ns)"
        );
    }
}
