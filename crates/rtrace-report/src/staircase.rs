//! The per-hit cost decomposition (`usdt --decompose`) as tables: per hook site, tracer and
//! path, each step's increment with its interval and its height, the steps' sum against the top
//! configuration measured alone by a plain `usdt` result of the same machine, and the program
//! cost above our eBPF floor for our aggregate program and bpftrace's `count()`.

use rtrace_measure::interval::Estimate;
use rtrace_measure::staircase::{above_floor, measured_alone, staircases, Staircase};
use rtrace_measure::usdt::{HookKind, UsdtResult};
use rtrace_tracer::TracerKind;

/// Column names, in order.
pub const HEADER: [&str; 6] = [
    "hook",
    "step",
    "adds",
    "increment (ns)",
    "height (ns)",
    "counters per hit over case 0",
];

/// Leading text columns (left-aligned).
pub const TEXT_COLUMNS: usize = 3;

/// What the tables show, for their caption.
pub const NOTE: &str = "Each path climbs from a floor to one full configuration, every step adding one mechanism; each step is a configuration measured in the same rounds; its height is its extra ns per hit over case 0, its increment the height minus the step below, round by round (95% t interval over the rounds). The increments add up to the top step's cost by construction, so each table's check compares their sum with the top configuration measured alone, in a separate plain `usdt` invocation, when the report has one. The floor of eBPF and ftrace is this kernel's floor for the hook (trap or call, uprobe dispatch, the least a tracer can do and still count every hit); bpftrace's paths start on our eBPF floor (the same trap and dispatch, on the plain USDT site only). Counters per hit, as Gebai measured them: the workload process's count per iteration minus case 0's (task-clock is CPU time in ns, a check on the TSC's height; hardware counters where perf offers them)";

/// What a usdt result measured, for its heading: a decomposition's runs are the steps of its
/// staircases (`usdt --decompose`), a plain result's the tracers side by side.
pub fn usdt_heading(r: &UsdtResult) -> &'static str {
    if rtrace_measure::staircase::is_decomposition(r) {
        "per-hit cost decomposition (usdt --decompose)"
    } else {
        "per-probe duration"
    }
}

/// Counters no step could count, with the reason, in one line; `None` when every one counted.
pub fn uncounted_line(r: &UsdtResult) -> Option<String> {
    let mut all = std::collections::BTreeMap::new();
    for s in staircases(r) {
        all.extend(s.uncounted);
    }
    (!all.is_empty()).then(|| {
        let list: Vec<String> = all.iter().map(|(k, why)| format!("{k} ({why})")).collect();
        format!(
            "not counted on this machine: {} (perf_event_open refused them; a VM without a virtual PMU has none)",
            list.join(", ")
        )
    })
}

/// `x` rounded to ns, without a `-0`.
fn ns(x: f64) -> String {
    let r = x.round();
    format!("{}", if r == 0.0 { 0.0 } else { r })
}

/// `575 (560 to 590)`, or `575` without an interval.
pub fn cell(e: &Estimate) -> String {
    match (e.low, e.high) {
        (Some(l), Some(h)) => format!("{} ({} to {})", ns(e.estimate), ns(l), ns(h)),
        _ => ns(e.estimate),
    }
}

/// One table (a tracer's staircase on one hook site): its title and rows.
pub struct Table {
    pub title: String,
    pub rows: Vec<Vec<String>>,
    /// `steps sum to N ns, the top step costs M ns`.
    pub check: String,
}

/// The counters of a step per hit, `task-clock 610 ns, cycles 1500`; `-` without any.
fn counters_cell(st: &rtrace_measure::staircase::Step) -> String {
    if st.counters.is_empty() {
        return "-".into();
    }
    st.counters
        .iter()
        .map(|(k, v)| {
            let unit = if k == "task-clock" { " ns" } else { "" };
            format!("{k} {}{unit}", ns(*v))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn table(s: &Staircase, alone: &[&crate::result::Entry]) -> Table {
    let rows = s
        .steps
        .iter()
        .map(|st| {
            vec![
                s.hook.to_string(),
                st.run.clone(),
                st.adds.to_owned(),
                cell(&st.increment),
                cell(&st.height),
                counters_cell(st),
            ]
        })
        .collect();
    Table {
        title: format!("{} ({}) on {}", s.tracer, s.path, s.hook),
        rows,
        check: check(s, alone),
    }
}

/// The steps' sum against the top configuration measured alone in a separate invocation (the
/// first of `alone` that measured it).
fn check(s: &Staircase, alone: &[&crate::result::Entry]) -> String {
    let sum = s.sum();
    let top = s.steps.last().map_or("", |st| st.run.as_str());
    let measured = alone.iter().find_map(|e| match &e.result {
        crate::result::AnyResult::Usdt(u) => Some((*e, measured_alone(s, u)?)),
        _ => None,
    });
    match measured {
        Some((e, m)) => format!(
            "steps sum to {sum:.0} ns; {top} measured alone in a separate invocation ({}): {} ns, the sum {:+.1}% from it",
            e.file.as_deref().unwrap_or(&e.id),
            cell(&m),
            if m.estimate != 0.0 {
                100.0 * (sum - m.estimate) / m.estimate
            } else {
                0.0
            }
        ),
        None if alone.is_empty() => format!(
            "steps sum to {sum:.0} ns, {top}'s cost in this run (the increments telescope); to check them against the configuration measured alone, report this result with a plain `usdt` run of it from the same machine"
        ),
        None => format!(
            "steps sum to {sum:.0} ns, {top}'s cost in this run (the increments telescope); the plain `usdt` results of this report did not measure this configuration without losses, so it is not checked"
        ),
    }
}

/// Every staircase of `r` as a table, each checked against `alone` (plain `usdt` results of
/// the same machine, [`alone_beside`]) where one measured the staircase's top configuration.
pub fn tables(r: &UsdtResult, alone: &[&crate::result::Entry]) -> Vec<Table> {
    staircases(r).iter().map(|s| table(s, alone)).collect()
}

/// The usdt results a report checks `r`'s staircases against: the plain ones (not
/// decompositions) of the same machine, in report order.
pub fn alone_beside<'a>(
    report: &'a crate::result::Report,
    r: &'a UsdtResult,
) -> Vec<&'a crate::result::Entry> {
    report
        .plain_usdt_of(&r.environment)
        .into_iter()
        .map(|(e, _)| e)
        .collect()
}

/// The program cost above the floor, ours against bpftrace's, on the `usdt` site (on
/// `usdt-nop5` libbpf attaches to the nop5 and calls, bpftrace attaches at the note's address
/// and traps: their difference there is the hook, not the program).
pub fn program_cost_lines(r: &UsdtResult) -> Vec<String> {
    let hook = HookKind::Usdt;
    let ours = above_floor(r, hook, TracerKind::Ebpf, "aggregate");
    let theirs = above_floor(r, hook, TracerKind::Bpftrace, "aggregate");
    let (Some(o), Some(t)) = (ours, theirs) else {
        return Vec::new();
    };
    let ratio = if t.estimate > 0.0 {
        format!("{:.2}×", o.estimate / t.estimate)
    } else {
        "n/a (bpftrace's program costs nothing measurable)".to_owned()
    };
    vec![format!(
        "program cost above the eBPF floor on {hook}: our aggregate {} ns, bpftrace count() {} ns: ours ÷ bpftrace's = {ratio}",
        cell(&o),
        cell(&t)
    )]
}

/// The terminal text; empty without a staircase.
pub fn text(r: &UsdtResult, alone: &[&crate::result::Entry]) -> String {
    let tables = tables(r, alone);
    if tables.is_empty() {
        return String::new();
    }
    let mut out = format!("\nwhere the nanoseconds go ({NOTE}):\n");
    for t in tables {
        let mut table = crate::table::Table::new(&HEADER, TEXT_COLUMNS);
        for row in t.rows {
            table.row(row);
        }
        out.push_str(&format!("{}: {}\n{}", t.title, t.check, table.render()));
    }
    for l in program_cost_lines(r).into_iter().chain(uncounted_line(r)) {
        out.push_str(&format!("{l}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_measure::usdt::Case;

    /// The fixture's ftrace case-1 run again as eBPF floor, count and aggregate steps, 100 ns apart,
    /// and bpftrace's as aggregate, 150 ns above the floor.
    fn decomposed() -> UsdtResult {
        let mut r = crate::fixtures::usdt();
        let ebpf = r
            .runs
            .iter()
            .find(|c| c.tracer == TracerKind::Ftrace && c.case == Case::Traced)
            .unwrap()
            .clone();
        for (mode, tracer, shift) in [
            ("floor", TracerKind::Ebpf, 0.0),
            ("count", TracerKind::Ebpf, 100.0),
            ("aggregate", TracerKind::Ebpf, 200.0),
            ("aggregate", TracerKind::Bpftrace, 150.0),
        ] {
            let mut c = ebpf.clone();
            c.tracer = tracer;
            c.variant = Some(mode.into());
            c.summary.mean_ns += shift;
            c.disturbed = None;
            if let Some(e) = &mut c.events {
                e.recorded += e.lost;
                e.lost = 0;
            }
            for round in &mut c.rounds {
                round.summary.mean_ns += shift;
                round.disturbed = None;
            }
            r.runs.push(c);
        }
        r
    }

    #[test]
    fn steps_telescope_to_the_top_and_programs_compare_above_the_floor() {
        let r = decomposed();
        let t = tables(&r, &[]);
        let ebpf = t
            .iter()
            .find(|t| t.title == "ebpf (maps) on usdt")
            .expect("eBPF staircase");
        assert_eq!(ebpf.rows.len(), 3);
        assert!(ebpf.rows[1][3].starts_with("100"), "{:?}", ebpf.rows[1]);
        assert!(ebpf.rows[2][3].starts_with("100"), "{:?}", ebpf.rows[2]);
        assert!(
            ebpf.check.contains("increments telescope"),
            "{}",
            ebpf.check
        );
        let bpftrace = t
            .iter()
            .find(|t| t.title == "bpftrace (count()) on usdt")
            .expect("bpftrace's path starts on the eBPF floor");
        assert!(
            bpftrace.rows[0][1].starts_with("ebpf (floor)"),
            "{:?}",
            bpftrace.rows
        );
        assert!(
            bpftrace.rows[1][3].starts_with("150"),
            "{:?}",
            bpftrace.rows[1]
        );
        assert!(
            t.iter().all(|t| !t.title.starts_with("ebpf (ring buffer)")),
            "a path with an unmeasured step has no staircase"
        );
        let lines = program_cost_lines(&r);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("= 1.33×"), "{}", lines[0]);
        assert!(text(&r, &[]).contains("where the nanoseconds go"));
    }

    #[test]
    fn a_decomposition_is_headed_as_one() {
        assert_eq!(
            usdt_heading(&decomposed()),
            "per-hit cost decomposition (usdt --decompose)"
        );
        assert_eq!(usdt_heading(&crate::fixtures::usdt()), "per-probe duration");
        use crate::export::Exporter;
        let report = crate::result::Report::one(crate::result::AnyResult::Usdt(decomposed()));
        let page = crate::html::Html.export(&report).unwrap().remove(0).bytes;
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("<h2>Per-hit cost decomposition (usdt --decompose) (<code>"));
        let md = crate::markdown::Markdown
            .export(&report)
            .unwrap()
            .remove(0)
            .bytes;
        let md = String::from_utf8(md).unwrap();
        assert!(
            md.contains("`: per-hit cost decomposition (usdt --decompose)"),
            "{md}"
        );
    }

    #[test]
    fn a_decomposition_has_its_staircases_and_no_thesis_figures() {
        let report = crate::result::Report::one(crate::result::AnyResult::Usdt(decomposed()));
        let titles: Vec<String> = crate::figures::plan(&report)
            .into_iter()
            .map(|f| f.title)
            .collect();
        assert!(
            titles.iter().all(|t| !t.contains("thesis Fig")),
            "ftrace off and eBPF's floor are not the thesis' tracers: {titles:?}"
        );
        assert!(
            titles
                .iter()
                .any(|t| t.starts_with("Where the nanoseconds go")),
            "{titles:?}"
        );
        assert!(
            titles.iter().any(|t| t.contains("every tracer and mode")),
            "{titles:?}"
        );
    }

    #[test]
    fn the_sum_is_checked_against_the_top_configuration_measured_alone() {
        let r = decomposed();
        // A plain run of eBPF aggregate, 10% dearer than the staircase's top step.
        let mut plain = decomposed();
        plain.runs.retain(|c| {
            c.tracer == TracerKind::None
                || (c.tracer == TracerKind::Ebpf && c.variant.as_deref() == Some("aggregate"))
        });
        let top = decomposed()
            .runs
            .into_iter()
            .find(|c| c.tracer == TracerKind::Ebpf && c.variant.as_deref() == Some("aggregate"))
            .unwrap();
        let extra = rtrace_measure::probe_cost::Extra::of(&r, &top)
            .unwrap()
            .difference(rtrace_measure::probe_cost::Stat::SteadyMean)
            .unwrap()
            .estimate;
        for c in plain
            .runs
            .iter_mut()
            .filter(|c| c.tracer == TracerKind::Ebpf)
        {
            c.summary.mean_ns += 0.1 * extra;
            for round in &mut c.rounds {
                round.summary.mean_ns += 0.1 * extra;
            }
        }
        let report = crate::result::Report::new([
            (
                Some("decompose.json".into()),
                crate::AnyResult::Usdt(r.clone()),
            ),
            (Some("plain.json".into()), crate::AnyResult::Usdt(plain)),
        ]);
        let alone = alone_beside(&report, &r);
        assert_eq!(
            alone.len(),
            1,
            "the plain result is beside it, not the decomposition"
        );
        assert_eq!(alone[0].file.as_deref(), Some("plain.json"));
        let t = tables(&r, &alone);
        let ebpf = t.iter().find(|t| t.title == "ebpf (maps) on usdt").unwrap();
        assert!(
            ebpf.check
                .contains("measured alone in a separate invocation (plain.json)"),
            "{}",
            ebpf.check
        );
        assert!(
            ebpf.check.ends_with("the sum -9.1% from it"),
            "{}",
            ebpf.check
        );
        let bpftrace = t
            .iter()
            .find(|t| t.title == "bpftrace (count()) on usdt")
            .unwrap();
        assert!(
            bpftrace
                .check
                .contains("did not measure this configuration"),
            "the plain run has no bpftrace: {}",
            bpftrace.check
        );
    }
}
