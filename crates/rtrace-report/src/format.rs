//! Number formats and labels every section uses: nanoseconds, microseconds, bytes, a run's
//! tracer and mode, the environment's rows, the sweep's notes; and [`unique`], the order in
//! which tables list what they group by.

use rtrace_measure::usdt::{CaseResult, UsdtResult};
use rtrace_measure::Environment;

/// Whole nanoseconds (Table 3.1's min and max).
pub fn int(ns: f64) -> String {
    format!("{ns:.0}")
}

/// Whole nanoseconds with a typographic minus: `480`, `−80`.
pub fn int_signed(ns: f64) -> String {
    int(ns).replace('-', "−")
}

/// Whole nanoseconds with their sign: `+430`, `−35`, `0`.
pub fn int_plus(ns: f64) -> String {
    match int(ns).as_str() {
        "0" | "-0" => "0".into(),
        s if s.starts_with('-') => int_signed(ns),
        s => format!("+{s}"),
    }
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

/// A duration in seconds, in the unit that suits it: `12.3 ms`, `840 µs`, `1.20 s`.
pub fn duration_s(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// Marks a case-1 run that lost events in every table (see `probe_cost::lossy_notes`).
pub const LOSSY: &str = " [lossy]";

/// The tracer column of a run in tables: `ftrace`, `ebpf (record) [lossy]`.
pub fn run_tracer(c: &CaseResult) -> String {
    let mark = if c.is_lossy() { LOSSY } else { "" };
    format!("{}{mark}", rtrace_measure::probe_cost::column(c))
}

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
pub fn trace_cell(d: Option<rtrace_measure::trace_data::TraceData>) -> rtrace_doc::Cell {
    rtrace_doc::Cell::or_missing(d, |d| {
        let kept = if d.kept > 0 { " (kept)" } else { "" };
        rtrace_doc::Cell::count_shown(d.bytes, format!("{}{kept}", bytes(d.bytes)))
    })
}

/// A run's tracer and mode, without its hook kind (tables and figures of one hook kind):
/// `ebpf (record)`, `ftrace`.
pub fn mode_label(c: &CaseResult) -> String {
    c.tracer.label(c.mode())
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

/// A warning's kind as the result file names it (`events-lost`).
pub fn warning_kind(w: &rtrace_measure::Warning) -> String {
    serde_json::to_value(w.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The environment as (name, value) rows; `not exposed` where the machine does not say.
pub fn environment_rows(e: &Environment) -> Vec<(&'static str, String)> {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "not exposed".into());
    let yes = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let or_none = |s: &str| match s {
        "" => "none".to_owned(),
        s => s.to_owned(),
    };
    // Files of older versions record neither.
    let mut machine = Vec::new();
    if e.label.is_some() || !e.hostname.is_empty() {
        let name = match &e.label {
            Some(l) => format!("{l} (`--machine`; hostname {})", e.hostname),
            None => e.hostname.clone(),
        };
        machine.push(("machine", name));
    }
    if !e.tracer_versions.is_empty() {
        let v: Vec<String> = e
            .tracer_versions
            .iter()
            .map(|(t, v)| format!("{t}: {v}"))
            .collect();
        machine.push(("tracer versions", v.join("; ")));
    }
    machine.extend([
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
    ]);
    machine
}

/// A run's mean without disturbed samples over case 0's with the same loop body (`× case 0`,
/// the one ratio definition; the plain means stay in the tables); 1 for case 0 itself, `None`
/// without it.
pub fn case0_ratio_value(r: &UsdtResult, c: &CaseResult) -> Option<f64> {
    match r.baseline(c.hook_kind) {
        Some(b) if !std::ptr::eq(b, c) => Some(c.steady_mean_ns() / b.steady_mean_ns()),
        Some(_) => Some(1.0),
        None => None,
    }
}

/// `sentence` of `list` joined by `sep`; `None` when `list` is empty.
pub fn listed(
    list: Vec<String>,
    sep: &str,
    sentence: impl FnOnce(String) -> String,
) -> Option<String> {
    (!list.is_empty()).then(|| sentence(list.join(sep)))
}

/// `items` without repeats, in the order they first come.
pub fn unique<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
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
            rtrace_tracer::TracerKind::Ebpf.label(Some("aggregate")),
            "ebpf (aggregate)"
        );
    }

    #[test]
    fn case0_ratio_is_the_steady_means_ratio() {
        let r = crate::fixtures::usdt();
        assert_eq!(case0_ratio_value(&r, &r.runs[0]), Some(1.0));
        let want = r.runs[2].steady_mean_ns() / r.runs[0].steady_mean_ns();
        assert_eq!(case0_ratio_value(&r, &r.runs[2]), Some(want));
        assert_eq!(run_tracer(&r.runs[1]), "ftrace [lossy]");
        assert_eq!(
            rtrace_measure::probe_cost::label(&r.runs[1]),
            "ftrace case 1"
        );
    }
}
