//! Number formats and the Table 3.1 layout shared by the text, Markdown and HTML exporters.

use rtrace_measure::usdt::{Case, CaseResult, HookKind, UsdtResult};
use rtrace_measure::Environment;
use rtrace_tracer::TracerKind;

/// Whole nanoseconds (Table 3.1's min and max).
pub fn int(ns: f64) -> String {
    format!("{ns:.0}")
}

/// Two decimals (Table 3.1's mean and standard deviation).
pub fn dec2(v: f64) -> String {
    format!("{v:.2}")
}

/// Nanoseconds as microseconds with two decimals.
pub fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1000.0)
}

/// Compact nanoseconds: whole above 100, else two decimals.
pub fn ns(v: f64) -> String {
    if v >= 100.0 {
        int(v)
    } else {
        dec2(v)
    }
}

/// `ftrace`, or `ebpf (aggregate)` when the run has a variant.
pub fn tracer_label(tracer: TracerKind, variant: Option<&str>) -> String {
    match variant {
        Some(v) => format!("{tracer} ({v})"),
        None => tracer.to_string(),
    }
}

/// Marks a case-1 run that lost events in every table (see `probe_cost::lossy_notes`).
pub const LOSSY: &str = " [lossy]";

/// The tracer column of a run in tables: `ftrace`, `ebpf (record) [lossy]`.
pub fn run_tracer(c: &CaseResult) -> String {
    let mark = if c.is_lossy() { LOSSY } else { "" };
    format!("{}{mark}", tracer_label(c.tracer, c.variant.as_deref()))
}

/// `ftrace case 1`: how warnings and figures name a usdt run.
pub fn run_label(c: &CaseResult) -> String {
    format!(
        "{} case {}",
        tracer_label(c.tracer, c.variant.as_deref()),
        c.case.number()
    )
}

/// Thesis Table 3.1 for one hook kind: one column group per tracer and mode, one row per
/// case. Case 0 (no instrumentation) is one run, shown in every column group, so that no cell
/// is empty.
pub struct Table31<'a> {
    pub hook: HookKind,
    /// Column groups in run order.
    pub columns: Vec<(TracerKind, Option<&'a str>)>,
    pub cases: Vec<Case>,
    baseline: Option<&'a CaseResult>,
    runs: Vec<&'a CaseResult>,
}

impl<'a> Table31<'a> {
    /// One table per hook kind measured, in `HookKind::ALL` order.
    pub fn per_hook(r: &'a UsdtResult) -> Vec<Table31<'a>> {
        HookKind::ALL
            .into_iter()
            .filter(|h| {
                r.runs
                    .iter()
                    .any(|c| c.hook_kind == *h && c.tracer != TracerKind::None)
                    || (*h == HookKind::Usdt && r.runs.iter().all(|c| c.tracer == TracerKind::None))
            })
            .map(|h| Table31::of(r, h))
            .collect()
    }

    /// The table of hook kind `hook`: its runs, and the baseline with its loop body (the
    /// barrier for the static kinds, the marker call for uprobe/uretprobe).
    pub fn of(r: &'a UsdtResult, hook: HookKind) -> Table31<'a> {
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
        let mut columns: Vec<(TracerKind, Option<&str>)> = Vec::new();
        for c in &runs {
            let key = (c.tracer, c.variant.as_deref());
            if !columns.contains(&key) {
                columns.push(key);
            }
        }
        if columns.is_empty() {
            columns.extend(baseline.map(|b| (b.tracer, b.variant.as_deref())));
        }
        let mut cases: Vec<Case> = runs
            .iter()
            .map(|c| c.case)
            .chain(baseline.map(|b| b.case))
            .collect();
        cases.sort();
        cases.dedup();
        Table31 {
            hook,
            columns,
            cases,
            baseline,
            runs,
        }
    }

    /// The column group's name: tracer and mode (the hook kind is the table's).
    pub fn column_label(&self, (tracer, variant): (TracerKind, Option<&str>)) -> String {
        tracer_label(tracer, self.hook.mode_of(variant))
    }

    /// The table's title.
    pub fn title(&self) -> String {
        format!("Table 3.1, {} hook: routine duration (ns)", self.hook)
    }

    /// The run in column `col` and row `case` (case 0: the baseline, the same in every column).
    pub fn cell(&self, col: (TracerKind, Option<&str>), case: Case) -> Option<&'a CaseResult> {
        if case == Case::Baseline {
            return self.baseline;
        }
        self.runs
            .iter()
            .copied()
            .find(|c| c.case == case && (c.tracer, c.variant.as_deref()) == col)
    }

    /// The row's name.
    pub fn case_label(case: Case) -> String {
        match case {
            Case::Baseline => "Case 0 (baseline)".into(),
            c => format!("Case {}", c.number()),
        }
    }

    /// The four numbers of a cell (min, max, mean, s), or `-` for a run that did not complete;
    /// the mean of a run that lost events carries [`LOSSY`].
    pub fn numbers(&self, col: (TracerKind, Option<&str>), case: Case) -> [String; 4] {
        match self.cell(col, case) {
            Some(c) => {
                let s = &c.summary;
                let mark = if c.is_lossy() { LOSSY } else { "" };
                [
                    int(s.min_ns),
                    int(s.max_ns),
                    format!("{}{mark}", dec2(s.mean_ns)),
                    dec2(s.stddev_ns),
                ]
            }
            None => std::array::from_fn(|_| "-".to_owned()),
        }
    }
}

/// What case 0 means in every Table 3.1, under the tables.
pub const TABLE31_NOTE: &str = "Case 0 runs the loop without instrumentation: one run per loop body, shown in every column group.";

/// A size in bytes for people: `512 B`, `3.4 KB`, `12.0 MB`, `1.30 GB` (powers of 1000).
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    match n {
        _ if n < 1e3 => format!("{n} B"),
        _ if n < 1e6 => format!("{:.1} KB", n / 1e3),
        _ if n < 1e9 => format!("{:.1} MB", n / 1e6),
        _ => format!("{:.2} GB", n / 1e9),
    }
}

/// A run's trace data in a table cell: `2.5 MB`, `2.5 MB (kept)` while on disk, `-` untraced.
pub fn trace_cell(d: Option<rtrace_measure::trace_data::TraceData>) -> String {
    d.map_or("-".into(), |d| {
        let kept = if d.kept > 0 { " (kept)" } else { "" };
        format!("{}{kept}", bytes(d.bytes))
    })
}

/// A run's tracer and mode, without its hook kind (tables and figures of one hook kind):
/// `ebpf (record)`, `ftrace`.
pub fn mode_label(c: &CaseResult) -> String {
    tracer_label(c.tracer, c.mode())
}

/// One line on the trace data of `runs` (label, data): how much was written, the largest run,
/// and how much is still on disk under `policy`. `None` when no run wrote any.
pub fn trace_data_line(
    runs: &[(String, rtrace_measure::trace_data::TraceData)],
    policy: Option<rtrace_measure::trace_data::KeepTraces>,
) -> Option<String> {
    let total = runs.iter().fold(
        rtrace_measure::trace_data::TraceData::default(),
        |a, (_, d)| a + *d,
    );
    if total.rounds == 0 {
        return None;
    }
    let (label, largest) = runs.iter().max_by_key(|(_, d)| d.bytes)?;
    let kept_bytes: u64 = runs
        .iter()
        .filter(|(_, d)| d.kept == d.rounds)
        .map(|(_, d)| d.bytes)
        .sum();
    let policy = policy.map_or("older version: all kept".to_owned(), |p| {
        format!("--keep-traces {}", p.name())
    });
    Some(format!(
        "trace data: {} written by {} traced runs (largest: {label}, {}); kept {} of {} runs ({policy}){}",
        bytes(total.bytes),
        total.rounds,
        bytes(largest.bytes),
        total.kept,
        total.rounds,
        if total.kept > 0 && kept_bytes > 0 {
            format!(", {} on disk", bytes(kept_bytes))
        } else {
            String::new()
        }
    ))
}

/// The sentences every sweep report states under its title: where the user-space probe fired,
/// and the trace data.
pub fn sweep_notes(r: &rtrace_measure::sweep::SweepResult) -> Vec<String> {
    let traced: Vec<(String, rtrace_measure::trace_data::TraceData)> = r
        .runs
        .iter()
        .filter_map(|run| Some((format!("{} {}", run.config, run.source), run.trace_data?)))
        .collect();
    std::iter::once(probe_placement(&r.config))
        .chain(trace_data_line(&traced, r.config.run.keep_traces))
        .collect()
}

/// Where the sweep's built-in loop fired its user-space tracepoint, as a sentence.
fn probe_placement(c: &rtrace_measure::sweep::SweepConfig) -> String {
    match c.probe_at {
        Some(p) => format!("user-space probe placement `{}`: {}", p.name(), p.describe()),
        None => "user-space probe placement: after the latency was taken (a file of an older version: the probe's cost never entered a latency)".into(),
    }
}

/// The environment as (name, value) rows; `not exposed` where the machine does not say.
pub fn environment_rows(e: &Environment) -> Vec<(&'static str, String)> {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "not exposed".into());
    let yes = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let or_none = |s: &str| {
        if s.is_empty() {
            "none".to_owned()
        } else {
            s.to_owned()
        }
    };
    vec![
        ("kernel", e.kernel_release.clone()),
        ("preemption", e.preemption.clone()),
        ("kernel version", e.kernel_version.clone()),
        ("CPU", e.cpu_model.clone()),
        ("online CPUs", e.online_cpus.to_string()),
        ("isolated CPUs", or_none(&e.isolated_cpus)),
        ("nohz_full", or_none(&e.nohz_full)),
        ("SMT active", opt(e.smt_active.map(yes))),
        ("governor", opt(e.governor.clone())),
        ("turbo", opt(e.turbo.map(yes))),
        ("clocksource", e.clocksource.clone()),
        ("invariant TSC", yes(e.tsc_invariant)),
        (
            "TSC",
            opt(e.tsc_hz.map(|hz| format!("{:.3} GHz", hz / 1e9))),
        ),
        (
            "TSC resolution",
            opt(e.tsc_step_ns.map(|s| format!("{s:.1} ns steps"))),
        ),
        ("virtualized", yes(e.virtualized)),
        ("emulated (TCG)", yes(e.emulated)),
        ("command line", e.cmdline.clone()),
    ]
}

/// A run's mean without disturbed samples over case 0's with the same loop body (`× case 0`, the one
/// ratio definition; the plain means stay in the tables),
/// two decimals; `-` for case 0 itself or without it.
pub fn case0_ratio(r: &UsdtResult, c: &CaseResult) -> String {
    match r.baseline(c.hook_kind) {
        Some(b) if !std::ptr::eq(b, c) => dec2(c.steady_mean_ns() / b.steady_mean_ns()),
        Some(_) => "1.00".into(),
        None => "-".into(),
    }
}

/// Mean without disturbed samples, and how many there were (`-` in files of older versions).
pub fn steady(c: &CaseResult) -> [String; 2] {
    match c.disturbed {
        Some(d) => [ns(d.mean_ns), d.count.to_string()],
        None => ["-".into(), "-".into()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_the_thesis() {
        assert_eq!(int(58_365.4), "58365");
        assert_eq!(dec2(607.256), "607.26");
        assert_eq!(ns(15.554), "15.55");
        assert_eq!(ns(607.6), "608");
        assert_eq!(us(29_456.0), "29.46");
        assert_eq!(
            tracer_label(TracerKind::Ebpf, Some("aggregate")),
            "ebpf (aggregate)"
        );
    }

    #[test]
    fn one_table_per_hook_with_no_empty_cell() {
        let r = crate::fixtures::usdt();
        let tables = Table31::per_hook(&r);
        assert_eq!(tables.len(), 1);
        let t = &tables[0];
        assert!(t.columns.iter().all(|(k, _)| *k != TracerKind::None));
        assert_eq!(t.cases, Case::ALL.to_vec());
        for &col in &t.columns {
            for &case in &t.cases {
                assert!(
                    t.numbers(col, case).iter().all(|n| n != "-"),
                    "{col:?} case {}",
                    case.number()
                );
            }
            assert_eq!(
                t.numbers(col, Case::Baseline),
                t.numbers(t.columns[0], Case::Baseline)
            );
        }
        assert!(t.numbers(t.columns[0], Case::Traced)[2].ends_with(LOSSY));
        assert!(!t.numbers(t.columns[1], Case::Traced)[2].ends_with(LOSSY));
        assert_eq!(run_tracer(&r.runs[1]), "ftrace [lossy]");
        assert_eq!(case0_ratio(&r, &r.runs[0]), "1.00");
        let want = dec2(r.runs[2].steady_mean_ns() / r.runs[0].steady_mean_ns());
        assert_eq!(case0_ratio(&r, &r.runs[2]), want);
    }
}
