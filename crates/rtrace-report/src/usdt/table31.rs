//! Thesis Table 3.1 for each hook kind: one column group (min, max, x̄, s in ns) per tracer and
//! mode, one row per case. Case 0 (no instrumentation) is one run, shown in every column group,
//! so that no cell is empty.

use crate::doc::{Cell, Column, Group, Table};
use crate::format::{dec2, int, unique, LOSSY};
use rtrace_measure::usdt::{Case, CaseResult, HookKind, UsdtResult};
use rtrace_tracer::TracerKind;

/// What case 0 means in every Table 3.1, under the tables.
pub const NOTE: &str = "Case 0 runs the loop without instrumentation: one run per loop body, shown in every column group.";

/// A column group: tracer and mode.
type Key<'a> = (TracerKind, Option<&'a str>);

/// Table 3.1 of every hook kind measured, in `HookKind::ALL` order, each with its title.
pub fn tables(r: &UsdtResult) -> Vec<(String, Table)> {
    HookKind::ALL
        .into_iter()
        .filter(|h| {
            r.runs
                .iter()
                .any(|c| c.hook_kind == *h && c.tracer != TracerKind::None)
                || (*h == HookKind::Usdt && r.runs.iter().all(|c| c.tracer == TracerKind::None))
        })
        .map(|h| {
            (
                format!("Table 3.1, {h} hook: routine duration (ns)"),
                of(r, h),
            )
        })
        .collect()
}

/// The table of hook kind `hook`: its runs, and the baseline with its loop body (the barrier
/// for the static kinds, the marker call for uprobe/uretprobe).
pub fn of(r: &UsdtResult, hook: HookKind) -> Table {
    let base_kind = if hook.is_dynamic() {
        hook
    } else {
        HookKind::Usdt
    };
    let baseline = r
        .runs
        .iter()
        .find(|c| c.case == Case::Baseline && c.hook_kind == base_kind);
    let runs: Vec<&CaseResult> = r
        .runs
        .iter()
        .filter(|c| c.hook_kind == hook && c.tracer != TracerKind::None)
        .collect();
    let mut groups: Vec<Key> = unique(runs.iter().map(|c| (c.tracer, c.variant.as_deref())));
    if groups.is_empty() {
        groups.extend(baseline.map(|b| (b.tracer, b.variant.as_deref())));
    }
    let mut cases: Vec<Case> = runs
        .iter()
        .map(|c| c.case)
        .chain(baseline.map(|b| b.case))
        .collect();
    cases.sort();
    cases.dedup();
    let mut columns = vec![Column::new("Case")];
    for _ in &groups {
        columns.extend(["min", "max", "x̄", "s"].map(|n| Column::new(n).unit("ns")));
    }
    let cell = |key: Key, case: Case| {
        if case == Case::Baseline {
            return baseline;
        }
        runs.iter()
            .copied()
            .find(|c| c.case == case && (c.tracer, c.variant.as_deref()) == key)
    };
    let rows = cases
        .iter()
        .map(|&case| {
            let mut row = vec![Cell::text(case_label(case))];
            for &key in &groups {
                row.extend(numbers(cell(key, case)));
            }
            row
        })
        .collect();
    Table {
        groups: groups
            .iter()
            .map(|&(tracer, variant)| Group {
                name: tracer.label(hook.mode_of(variant)),
                columns: 4,
            })
            .collect(),
        ..Table::new(format!("table31-{hook}"), 1, columns).rows(rows)
    }
}

/// The row's name.
pub fn case_label(case: Case) -> String {
    match case {
        Case::Baseline => "Case 0 (baseline)".into(),
        c => format!("Case {}", c.number()),
    }
}

/// The four numbers of a cell (min, max, mean, s), or `-` for a run that did not complete;
/// the mean of a run that lost events carries [`crate::format::LOSSY`] and is flagged.
fn numbers(run: Option<&CaseResult>) -> [Cell; 4] {
    match run {
        Some(c) => {
            let s = &c.summary;
            let lossy = if c.is_lossy() { LOSSY } else { "" };
            let mean = Cell::num(s.mean_ns, format!("{}{lossy}", dec2(s.mean_ns)));
            let mean = mean.flag_if(c.is_lossy());
            [
                Cell::num(s.min_ns, int(s.min_ns)),
                Cell::num(s.max_ns, int(s.max_ns)),
                mean,
                Cell::num(s.stddev_ns, dec2(s.stddev_ns)),
            ]
        }
        None => std::array::from_fn(|_| Cell::missing()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Value;

    #[test]
    fn one_table_per_hook_with_no_empty_cell() {
        let r = crate::fixtures::usdt();
        let tables = tables(&r);
        assert_eq!(tables.len(), 1);
        let (title, t) = &tables[0];
        assert_eq!(title, "Table 3.1, usdt hook: routine duration (ns)");
        let names: Vec<&str> = t.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["ftrace", "lttng"]);
        let cases: Vec<&str> = t.rows.iter().map(|r| r[0].shown.as_str()).collect();
        assert_eq!(cases, ["Case 0 (baseline)", "Case 1", "Case 2", "Case 3"]);
        for row in &t.rows {
            assert!(row.iter().all(|c| c.value != Value::Missing), "{row:?}");
            assert_eq!(row.len(), t.columns.len());
        }
        assert_eq!(t.rows[0][1..5], t.rows[0][5..9], "case 0 in every group");
        let ftrace1 = &t.rows[1][1..5];
        let s = &r.runs[1].summary;
        assert_eq!(ftrace1[0].shown, int(s.min_ns));
        assert_eq!(ftrace1[2].value, Value::Number(s.mean_ns));
        assert!(ftrace1[2].flagged && ftrace1[2].shown.ends_with(crate::format::LOSSY));
        assert!(!t.rows[1][7].flagged, "lttng case 1 lost nothing");
    }
}
