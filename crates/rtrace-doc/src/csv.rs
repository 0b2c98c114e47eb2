//! `csv/<entry-id>-<table-id>.csv`: every table of a document with its values at full
//! precision, one file each. Headers name each column with its group and unit (`ftrace min
//! (ns)`); a column of estimates with intervals is three (`increment (ns)`, `increment low
//! (ns)`, `increment high (ns)`); a missing value is an empty field.

use crate::export::{Exporter, Output};
use crate::{Document, Table, Value};
use anyhow::Result;

/// The CSV files.
pub struct Csv;

/// Where table `table` of section `section` goes in the report directory.
pub fn path(section: &str, table: &str) -> String {
    format!("csv/{section}-{table}.csv")
}

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, doc: &Document) -> Result<Vec<Output>> {
        doc.tables()
            .into_iter()
            .map(|(s, t)| Ok(Output::new(path(&s.id, &t.id), file(t)?)))
            .collect()
    }
}

/// Whether column `i` holds an estimate with an interval.
fn has_interval(t: &Table, i: usize) -> bool {
    t.rows
        .iter()
        .any(|r| matches!(r[i].value, Value::Interval { .. }))
}

fn header(t: &Table, i: usize) -> Vec<String> {
    let name = t.full_name(i);
    let unit = t.columns[i]
        .unit
        .map_or(String::new(), |u| format!(" ({u})"));
    let mut names = vec![format!("{name}{unit}")];
    if has_interval(t, i) {
        names.extend([format!("{name} low{unit}"), format!("{name} high{unit}")]);
    }
    names
}

fn fields(t: &Table, i: usize, shown: &str, v: Value) -> Vec<String> {
    let opt = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    let one = match v {
        Value::Text => shown.to_owned(),
        Value::Number(x) => x.to_string(),
        Value::Count(n) => n.to_string(),
        Value::Missing => String::new(),
        Value::Interval {
            estimate,
            low,
            high,
        } => return vec![estimate.to_string(), opt(low), opt(high)],
    };
    if has_interval(t, i) {
        vec![one, String::new(), String::new()]
    } else {
        vec![one]
    }
}

fn file(t: &Table) -> Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record((0..t.columns.len()).flat_map(|i| header(t, i)))?;
    for r in &t.rows {
        w.write_record(
            r.iter()
                .enumerate()
                .flat_map(|(i, c)| fields(t, i, &c.shown, c.value)),
        )?;
    }
    Ok(w.into_inner()?)
}
