//! A plain aligned text table (right-aligned numbers, left-aligned first columns).

pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Leading columns aligned left.
    left: usize,
}

impl Table {
    pub fn new(header: &[&str], left: usize) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            left,
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let n = self.header.len();
        let width: Vec<usize> = (0..n)
            .map(|i| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &Vec<String>| -> String {
            let mut s = String::new();
            for (i, w) in width.iter().enumerate() {
                let c = cells.get(i).map_or("", |c| c.as_str());
                if i > 0 {
                    s.push_str("  ");
                }
                if i < self.left {
                    s.push_str(&format!("{c:<w$}"));
                } else {
                    s.push_str(&format!("{c:>w$}"));
                }
            }
            s.trim_end().to_owned() + "\n"
        };
        let mut out = line(&self.header);
        out.push_str(&line(&width.iter().map(|w| "-".repeat(*w)).collect()));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&["name", "n"], 1);
        t.row(vec!["a".into(), "100".into()]);
        t.row(vec!["long".into(), "2".into()]);
        assert_eq!(t.render(), "name    n\n----  ---\na     100\nlong    2\n");
    }
}
