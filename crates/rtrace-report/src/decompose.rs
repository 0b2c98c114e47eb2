//! The per-hit cost decomposition (`usdt --decompose`) as tables: per hook site, tracer and
//! path, each step's increment with its interval and its height, the steps' sum against the top
//! configuration measured alone by a plain `usdt` result of the same machine, and the program
//! cost above our eBPF floor for our aggregate program and bpftrace's `count()`.

use crate::doc::{columns, items, Block, Cell, Column, Section, Table};
use rtrace_measure::decompose::{above_floor, measured_alone, staircases, Staircase};
use rtrace_measure::interval::Estimate;
use rtrace_measure::usdt::{HookKind, UsdtResult};
use rtrace_tracer::TracerKind;

/// What the tables show, for their caption.
pub const NOTE: &str = "Each path climbs from a floor to one full configuration, every step adding one mechanism; each step is a configuration measured in the same rounds; its height is its extra ns per hit over case 0, its increment the height minus the step below, round by round (95% t interval over the rounds). The increments add up to the top step's cost by construction, so each table's check compares their sum with the top configuration measured alone, in a separate plain `usdt` invocation, when the report has one. The floor of eBPF and ftrace is this kernel's floor for the hook (trap or call, uprobe dispatch, the least a tracer can do and still count every hit); bpftrace's paths start on our eBPF floor (the same trap and dispatch, on the plain USDT site only). Counters per hit, as Gebai measured them: the workload process's count per iteration minus case 0's (task-clock is CPU time in ns, a check on the TSC's height; hardware counters where perf offers them)";

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

/// The counters of a step per hit, `task-clock 610 ns, cycles 1500`; `-` without any.
fn counters_cell(st: &rtrace_measure::decompose::Step) -> String {
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

/// One staircase's table (a tracer's path on one hook site), titled, its check as caption.
fn table(s: &Staircase, alone: &[&crate::result::Entry]) -> Table {
    let rows = s
        .steps
        .iter()
        .map(|st| {
            vec![
                Cell::text(s.hook.to_string()),
                Cell::text(st.run.clone()),
                Cell::text(st.adds),
                Cell::estimate(
                    crate::doc::interval(&st.increment),
                    1.0,
                    cell(&st.increment),
                ),
                Cell::estimate(crate::doc::interval(&st.height), 1.0, cell(&st.height)),
                Cell::text(counters_cell(st)),
            ]
        })
        .collect();
    let mut cols = columns(&["hook", "step", "adds"]);
    cols.extend(["increment", "height"].map(|n| Column::new(n).shown_unit("ns")));
    cols.push(Column::new("counters per hit over case 0"));
    let id = crate::doc::slug(&format!("staircase {} {} {}", s.tracer, s.path, s.hook));
    Table::new(id, 3, cols)
        .titled(
            format!("{} ({}) on {}", s.tracer, s.path, s.hook),
            Some(check(s, alone)),
        )
        .rows(rows)
}

/// The steps' sum against the top configuration measured alone in a separate invocation (the
/// first of `alone` that measured it).
fn check(s: &Staircase, alone: &[&crate::result::Entry]) -> String {
    let sum = s.sum();
    let top = s.steps.last().map_or("", |st| st.run.as_str());
    let measured = alone
        .iter()
        .find_map(|e| Some((*e, measured_alone(s, e.result.get()?)?)));
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

/// Where the nanoseconds go: a heading, what the tables show, every staircase's table and the
/// program cost above the floor; nothing when `r` has no staircase.
pub fn push(section: &mut Section, r: &UsdtResult, alone: &[&crate::result::Entry]) {
    let tables = tables(r, alone);
    if tables.is_empty() {
        return;
    }
    section.push(Block::Heading("Where the nanoseconds go".into()));
    section.push(Block::Note(format!("{NOTE}.")));
    section.blocks.extend(tables.into_iter().map(Block::Table));
    let lines: Vec<String> = program_cost_lines(r)
        .into_iter()
        .chain(uncounted_line(r))
        .collect();
    if !lines.is_empty() {
        section.push(Block::List(items(lines)));
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
        .plain_usdt_of(&r.header.environment)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{AnyResult, Report};
    use rtrace_measure::probe_cost::{Extra, Stat};
    use rtrace_measure::usdt::{Case, CaseResult};
    use TracerKind::{Bpftrace, Ebpf, Ftrace};

    /// The fixture's ftrace case-1 run again as eBPF floor, count and aggregate steps, 100 ns apart,
    /// and bpftrace's as aggregate, 150 ns above the floor.
    fn decomposed() -> UsdtResult {
        let mut r = crate::fixtures::usdt();
        let ftrace = r
            .runs
            .iter()
            .find(|c| c.tracer == Ftrace && c.case == Case::Traced);
        let ftrace = ftrace.unwrap().clone();
        for (mode, tracer, shift) in [
            ("floor", Ebpf, 0.0),
            ("count", Ebpf, 100.0),
            ("aggregate", Ebpf, 200.0),
            ("aggregate", Bpftrace, 150.0),
        ] {
            let mut c = ftrace.clone();
            (c.tracer, c.variant, c.disturbed) = (tracer, Some(mode.into()), None);
            c.summary.mean_ns += shift;
            if let Some(e) = &mut c.events {
                (e.recorded, e.lost) = (e.recorded + e.lost, 0);
            }
            for round in &mut c.rounds {
                round.summary.mean_ns += shift;
                round.disturbed = None;
            }
            r.runs.push(c);
        }
        r
    }

    /// The table titled `title`, and its caption.
    fn titled<'a>(t: &'a [Table], title: &str) -> (&'a Table, &'a str) {
        let t = t.iter().find(|t| t.title.as_deref() == Some(title));
        let t = t.unwrap_or_else(|| panic!("no {title}"));
        (t, t.caption.as_deref().unwrap())
    }

    #[test]
    fn steps_telescope_to_the_top_and_programs_compare_above_the_floor() {
        let r = decomposed();
        let t = tables(&r, &[]);
        let (ebpf, caption) = titled(&t, "ebpf (maps) on usdt");
        assert_eq!(ebpf.rows.len(), 3);
        assert!(ebpf.rows[1][3].shown.starts_with("100"), "{:?}", ebpf.rows);
        assert!(ebpf.rows[2][3].shown.starts_with("100"), "{:?}", ebpf.rows);
        assert!(caption.contains("increments telescope"), "{caption}");
        // bpftrace's path starts on the eBPF floor.
        let (bpftrace, _) = titled(&t, "bpftrace (count()) on usdt");
        let b = &bpftrace.rows;
        assert!(b[0][1].shown.starts_with("ebpf (floor)") && b[1][3].shown.starts_with("150"));
        let ring = |t: &Table| {
            t.title
                .as_deref()
                .unwrap_or_default()
                .starts_with("ebpf (ring")
        };
        assert!(
            !t.iter().any(ring),
            "a path with an unmeasured step has no staircase"
        );
        let lines = program_cost_lines(&r);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("= 1.33×"), "{}", lines[0]);
    }

    #[test]
    fn a_decomposition_is_headed_as_one_with_its_staircases_and_no_thesis_figures() {
        let report = Report::one(AnyResult::from(decomposed()));
        let doc = crate::document(&report).unwrap();
        let title = "per-hit cost decomposition (usdt --decompose)";
        assert_eq!(doc.sections[0].title, title);
        let mut tables = doc.tables().into_iter();
        assert!(tables.any(|(_, t)| t.title.as_deref() == Some("ebpf (maps) on usdt")));
        let plain = Report::one(AnyResult::from(crate::fixtures::usdt()));
        let plain = crate::document(&plain).unwrap();
        assert_eq!(plain.sections[0].title, "per-probe duration");
        let plan = crate::figures::plan(&report);
        let titles: Vec<&str> = plan.iter().map(|f| f.title.as_str()).collect();
        // ftrace off and eBPF's floor are not the thesis' tracers.
        assert!(
            titles.iter().all(|t| !t.contains("thesis Fig")),
            "{titles:?}"
        );
        assert!(titles
            .iter()
            .any(|t| t.starts_with("Where the nanoseconds go")));
        assert!(
            titles.iter().any(|t| t.contains("every tracer and mode")),
            "{titles:?}"
        );
    }

    #[test]
    fn the_sum_is_checked_against_the_top_configuration_measured_alone() {
        let r = decomposed();
        let aggregate =
            |c: &CaseResult| c.tracer == Ebpf && c.variant.as_deref() == Some("aggregate");
        let top = r.runs.iter().find(|c| aggregate(c)).unwrap();
        let extra = Extra::of(&r, top)
            .unwrap()
            .difference(Stat::SteadyMean)
            .unwrap();
        // A plain run of eBPF aggregate, 10% dearer than the staircase's top step.
        let mut plain = decomposed();
        plain
            .runs
            .retain(|c| c.tracer == TracerKind::None || aggregate(c));
        for c in plain.runs.iter_mut().filter(|c| c.tracer == Ebpf) {
            c.summary.mean_ns += 0.1 * extra.estimate;
            for round in &mut c.rounds {
                round.summary.mean_ns += 0.1 * extra.estimate;
            }
        }
        let report = Report::new([
            (Some("decompose.json".into()), AnyResult::from(r.clone())),
            (Some("plain.json".into()), AnyResult::from(plain)),
        ]);
        let alone = alone_beside(&report, &r);
        assert_eq!(
            alone.len(),
            1,
            "the plain result is beside it, not the decomposition"
        );
        assert_eq!(alone[0].file.as_deref(), Some("plain.json"));
        let t = tables(&r, &alone);
        let (_, caption) = titled(&t, "ebpf (maps) on usdt");
        let plain = "measured alone in a separate invocation (plain.json)";
        assert!(
            caption.contains(plain) && caption.ends_with("the sum -9.1% from it"),
            "{caption}"
        );
        let (_, caption) = titled(&t, "bpftrace (count()) on usdt");
        let none = "did not measure this configuration";
        assert!(
            caption.contains(none),
            "the plain run has no bpftrace: {caption}"
        );
    }
}
