//! The answer first: which tracer costs how much on this machine. One table at the top of every
//! report, a row per tracer recording every event (the cheapest first), a column per thing the
//! results measured — the per-hit cost on each hook kind, the wake-up shift, the sustained event
//! rate — with the best cell of each column marked; beside it in HTML, the per-hit costs as bars
//! on a log axis. Every number is one a section of the report prints: the per-hit costs are the
//! consistency section's (`crate::consistency::sources`), the rates `rate`'s.

use crate::cost::{Cost, Experiment, Hook};
use crate::doc::{interval, items, Block, Cell, Column, Figure, Section, Table};
use crate::figures::bars;
use crate::result::Report;
use anyhow::Result;
use rtrace_measure::app::AppResult;
use rtrace_measure::interval::Estimate;
use rtrace_measure::rate::RateResult;
use rtrace_measure::usdt::HookKind;
use rtrace_tracer::TracerKind;

/// The section's id: anchors and file names.
const ID: &str = "verdict";
/// What marks the best cell of a column.
const BEST: &str = "★ ";

/// The mode in which `tracer` records every event, the one its row shows: ftrace's and perf's
/// stream, eBPF's and bpftrace's record, LTTng's tracepoint.
fn recording_mode(tracer: TracerKind) -> Option<&'static str> {
    match tracer {
        TracerKind::Ftrace | TracerKind::Perf => Some("stream"),
        TracerKind::Ebpf | TracerKind::Bpftrace => Some("record"),
        TracerKind::Lttng => Some("tracepoint"),
        _ => None,
    }
}

/// Whether `mode` is the one `tracer`'s row shows.
fn recording(tracer: TracerKind, mode: Option<&str>) -> bool {
    recording_mode(tracer).is_some_and(|m| mode == Some(m))
}

/// What the three user-space hook columns show.
const HOT_LOOP: &str = "the extra ns of a traced hit in a hot loop (plain `usdt`, case 1 minus case 0, 95% interval over rounds)";

/// A column of the table: which costs it takes, how it shows them.
struct Kind {
    name: &'static str,
    unit: &'static str,
    /// ns per shown unit.
    per: f64,
    takes: fn(&Cost) -> bool,
    /// What its numbers are, where they come from (columns saying the same are listed together).
    note: &'static str,
}

const KINDS: [Kind; 5] = [
    Kind {
        name: "usdt",
        unit: "ns",
        per: 1.0,
        takes: |c| hot_usdt(c, HookKind::Usdt),
        note: HOT_LOOP,
    },
    Kind {
        name: "uprobe",
        unit: "ns",
        per: 1.0,
        takes: |c| hot_usdt(c, HookKind::Uprobe),
        note: HOT_LOOP,
    },
    Kind {
        name: "uretprobe",
        unit: "ns",
        per: 1.0,
        takes: |c| hot_usdt(c, HookKind::Uretprobe),
        note: HOT_LOOP,
    },
    Kind {
        name: "kernel tp",
        unit: "ns",
        per: 1.0,
        // Writing every event in the mode events ran in (its BPF programs there are empty).
        takes: |c| {
            c.experiment == Experiment::Events
                && c.hook == Hook::Kernel
                && c.source.starts_with("events 04 loop")
                && crate::cost::writes(c.tracer, c.mode.as_deref())
        },
        note: "the extra ns of a `sys_enter_read` event written to the tracer's buffer (events 04, the read loop, in the mode events ran in, named when it is not the row's; events' BPF programs are empty, so they have none here)",
    },
    Kind {
        name: "wake-up shift",
        unit: "µs",
        per: 1000.0,
        takes: |c| {
            c.experiment == Experiment::Sweep
                && c.hook == Hook::User(HookKind::Usdt)
                && c.source.starts_with("sweep")
                && recording(c.tracer, c.mode.as_deref())
        },
        note: "the median wake-up latency with the USDT probe minus the same runs' untraced wake-ups with `--probe-at alternate`, else minus the `none` runs' (`cyclictest-sweep`, builtin loop)",
    },
];

/// Plain `usdt`'s hot loop on `hook`, in the tracer's recording mode.
fn hot_usdt(c: &Cost, hook: HookKind) -> bool {
    c.experiment == Experiment::Usdt
        && c.source.starts_with("usdt")
        && !c.source.starts_with("usdt spaced")
        && c.hook == Hook::User(hook)
        && recording(c.tracer, c.mode.as_deref())
}

/// One tracer's row: its cost per column kind (the first the report gives), its sustained rate.
struct Row {
    tracer: TracerKind,
    costs: Vec<Option<Cost>>,
    rate: Option<(f64, String)>,
    /// `app`'s slowdown of a real program (the slowdown, its interval resolved, shown).
    app: Option<(f64, bool, String)>,
}

/// The verdict section of `report`, `None` when its results measured no per-hit cost or rate.
pub fn section(report: &Report) -> Result<Option<Section>> {
    // The first result's machine, as the consistency section: "here" is one machine.
    let Some(first) = report.entries.first() else {
        return Ok(None);
    };
    let machine = first.result.environment().machine_key();
    let here = |e: &&crate::result::Entry| e.result.environment().machine_key() == machine;
    let costs: Vec<Cost> = report
        .entries
        .iter()
        .filter(here)
        .flat_map(|e| e.result.model().costs())
        .collect();
    let rates: Vec<&RateResult> = report
        .of::<RateResult>()
        .filter(|(e, _)| here(e))
        .map(|(_, r)| r)
        .collect();
    let apps: Vec<&AppResult> = report
        .of::<AppResult>()
        .filter(|(e, _)| here(e))
        .map(|(_, r)| r)
        .collect();
    let mut rows: Vec<Row> = Vec::new();
    for tracer in TracerKind::ALL {
        let costs: Vec<Option<Cost>> = KINDS
            .iter()
            .map(|k| {
                costs
                    .iter()
                    .find(|c| c.tracer == tracer && (k.takes)(c))
                    .cloned()
            })
            .collect();
        let rate = rates.iter().find_map(|r| sustained(r, tracer));
        let app = apps.iter().find_map(|r| slowdown(r, tracer));
        if costs.iter().any(Option::is_some) || rate.is_some() || app.is_some() {
            rows.push(Row {
                tracer,
                costs,
                rate,
                app,
            });
        }
    }
    if rows.is_empty() {
        return Ok(None);
    }
    // The cheapest first: by the first column every row has, then by the columns after it.
    let key = |r: &Row| -> Vec<f64> {
        r.costs
            .iter()
            .map(|c| c.as_ref().map_or(f64::INFINITY, |c| c.ns.estimate))
            .collect()
    };
    rows.sort_by(|a, b| {
        key(a)
            .iter()
            .zip(key(b))
            .map(|(x, y)| x.total_cmp(&y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let shown: Vec<usize> = (0..KINDS.len())
        .filter(|&k| rows.iter().any(|r| r.costs[k].is_some()))
        .collect();
    let has_rate = rows.iter().any(|r| r.rate.is_some());
    let app_column = apps.first().and_then(|r| {
        let script = widest(r)?;
        rows.iter()
            .any(|row| row.app.is_some())
            .then(|| format!("{} slowdown, {script}", r.config.workload))
    });
    let mut table = Table::new("tracers", 1, vec![Column::new("tracer")]);
    for &k in &shown {
        let kind = &KINDS[k];
        table
            .columns
            .push(Column::new(kind.name).shown_unit(kind.unit));
    }
    if has_rate {
        table
            .columns
            .push(Column::new("sustained rate").shown_unit("events/s"));
    }
    if let Some(name) = &app_column {
        table
            .columns
            .push(Column::new(name.as_str()).shown_unit("%"));
    }
    let best = |k: usize| -> Option<f64> {
        rows.iter()
            .filter_map(|r| r.costs[k].as_ref())
            .filter(|c| c.ns.low.is_none_or(|l| l > 0.0))
            .map(|c| c.ns.estimate)
            .filter(|v| *v > 0.0)
            .min_by(f64::total_cmp)
    };
    let best_rate = rows
        .iter()
        .filter_map(|r| r.rate.as_ref().map(|(hz, _)| *hz))
        .max_by(f64::total_cmp);
    for r in &rows {
        let mut cells = vec![Cell::text(label(r.tracer))];
        for &k in &shown {
            let kind = &KINDS[k];
            cells.push(Cell::or_missing(r.costs[k].as_ref(), |c| {
                let mark = match best(k) == Some(c.ns.estimate) {
                    true => BEST,
                    false => "",
                };
                let mode = match c.mode.as_deref() {
                    Some(m) if !recording(c.tracer, Some(m)) => format!(", {m}"),
                    _ => String::new(),
                };
                Cell::estimate(
                    interval(&c.ns),
                    kind.per,
                    format!("{mark}{}{mode}", shown_estimate(&c.ns, kind.per)),
                )
            }));
        }
        if has_rate {
            cells.push(Cell::or_missing(r.rate.as_ref(), |(hz, shown)| {
                let mark = match best_rate == Some(*hz) {
                    true => BEST,
                    false => "",
                };
                Cell::num(*hz, format!("{mark}{shown}"))
            }));
        }
        // No ★ here: a slowdown too small to resolve may well be the best.
        if app_column.is_some() {
            cells.push(Cell::or_missing(r.app.as_ref(), |(x, resolved, shown)| {
                Cell::num((x - 1.0) * 100.0, shown.clone()).flag_if(*resolved)
            }));
        }
        table.rows.push(cells);
    }
    let mut s = Section {
        id: ID.into(),
        title: "Which tracer costs how much here".into(),
        source: None,
        subtitle: "Each tracer recording every event (ftrace and perf stream, eBPF and bpftrace record, LTTng tracepoint), the cheapest first; ★ marks the best of a column.".into(),
        summary: Vec::new(),
        blocks: vec![
            Block::Table(table),
            Block::List(items(columns_said(&shown, has_rate, app_column.is_some()))),
        ],
        figures_at: None,
    };
    if let Some(f) = figure(&rows, &shown)? {
        s.blocks.push(Block::Figure(f));
    }
    Ok(Some(s))
}

/// `ftrace (stream)`: the tracer in the mode its row shows.
fn label(t: TracerKind) -> String {
    match recording_mode(t) {
        Some(mode) => format!("{} ({mode})", t.name()),
        None => t.name().into(),
    }
}

/// `62 (37–87)`, `1.36 (1.22–1.49)`, `238 (−1088 to 1565)`: the estimate in the column's unit,
/// with its interval (as the consistency section writes one that holds 0).
fn shown_estimate(e: &Estimate, per: f64) -> String {
    let digits = if per > 1.0 { 2 } else { 0 };
    let f = |v: f64| format!("{:.*}", digits, v / per).replace('-', "−");
    match (e.low, e.high) {
        (Some(l), Some(h)) if l < 0.0 => format!("{} ({} to {})", f(e.estimate), f(l), f(h)),
        (Some(l), Some(h)) => format!("{} ({}–{})", f(e.estimate), f(l), f(h)),
        _ => f(e.estimate),
    }
}

/// `tracer`'s highest sustained event rate in `r` at its smallest buffer: (events/s, shown).
fn sustained(r: &RateResult, tracer: TracerKind) -> Option<(f64, String)> {
    let s = r
        .searches
        .iter()
        .filter(|s| s.tracer == tracer && recording(tracer, s.variant.as_deref().or(Some(mode(r)))))
        .min_by_key(|s| s.buffer_size_kb)?;
    let b = s.bound()?;
    let hz = b.sustained_hz();
    let at_least = match b {
        rtrace_measure::rate::Bound::Workload { .. } => "≥ ",
        _ => "",
    };
    Some((
        hz,
        format!(
            "{at_least}{} at {} KiB",
            crate::rate::rate(hz),
            s.buffer_size_kb
        ),
    ))
}

/// The widest script `r` ran: the one with the most tracepoints.
fn widest(r: &AppResult) -> Option<&str> {
    r.config
        .scripts
        .iter()
        .filter(|s| r.cells().iter().any(|(_, c)| *c == s.name))
        .max_by_key(|s| s.tracepoints)
        .map(|s| s.name.as_str())
}

/// `tracer`'s slowdown of `r`'s program under its widest script, in the row's mode: (ratio,
/// its interval excludes no slowdown, shown).
fn slowdown(r: &AppResult, tracer: TracerKind) -> Option<(f64, bool, String)> {
    let script = widest(r)?;
    let stream = r.config.run.record == Some(rtrace_tracer::RecordMode::Stream);
    // bpftrace runs a script as its one-liner, which counts (its only mode here).
    let (name, mode) = match tracer {
        TracerKind::Ftrace | TracerKind::Perf if stream => (tracer.name().to_owned(), ""),
        TracerKind::Ebpf => (tracer.label(recording_mode(tracer)), ""),
        TracerKind::Bpftrace => (tracer.label(Some("aggregate")), ", aggregate"),
        _ => return None,
    };
    let m = r.measured(&name, script)?;
    let e = m.slowdown;
    let p = |x: f64| format!("{:+.1}", (x - 1.0) * 100.0).replace('-', "−");
    let shown = match (e.low, e.high) {
        (Some(l), Some(h)) => format!("{} ({} to {}){mode}", p(e.estimate), p(l), p(h)),
        _ => format!("{}{mode}", p(e.estimate)),
    };
    Some((e.estimate, e.low.is_some_and(|l| l > 1.0), shown))
}

/// The record mode `rate` ran its tracers in (`stream`).
fn mode(r: &RateResult) -> &str {
    r.config.run.tracer_options["record"]
        .as_str()
        .unwrap_or("stream")
}

/// What each column shown is, where its numbers come from: a line per note, naming its columns.
fn columns_said(shown: &[usize], rate: bool, app: bool) -> Vec<String> {
    let notes = crate::format::unique(shown.iter().map(|&k| KINDS[k].note));
    let mut what: Vec<String> = notes
        .into_iter()
        .map(|note| {
            let names: Vec<&str> = shown
                .iter()
                .map(|&k| &KINDS[k])
                .filter(|k| k.note == note)
                .map(|k| k.name)
                .collect();
            format!("{}: {note}.", names.join(", "))
        })
        .collect();
    if rate {
        what.push("sustained rate: the highest event rate sustained at the smallest buffer (`rate`; ≥: the loop's own limit).".into());
    }
    if app {
        what.push("slowdown: a real program's wall time traced over untraced, same rounds, with the widest tracing script it ran (`app`; its section sets the slowdown beside its prediction); one whose interval excludes 0 stands out, and no ★: an unresolved slowdown may be the smallest.".into());
    }
    what.push("★ goes to the best value of a column whose interval excludes 0. Every mode, hook and run is in the sections below.".into());
    what
}

/// The per-hit costs as bars on a log axis, a group per hook kind: `None` without any.
fn figure(rows: &[Row], shown: &[usize]) -> Result<Option<Figure>> {
    let kinds: Vec<usize> = shown
        .iter()
        .copied()
        .filter(|&k| KINDS[k].per == 1.0)
        .collect();
    if kinds.is_empty() {
        return Ok(None);
    }
    let categories: Vec<String> = kinds.iter().map(|&k| KINDS[k].name.to_owned()).collect();
    let series: Vec<bars::Bars> = rows
        .iter()
        .filter(|r| kinds.iter().any(|&k| r.costs[k].is_some()))
        .map(|r| bars::Bars {
            label: label(r.tracer),
            colour: crate::figures::style::colour(r.tracer),
            values: kinds
                .iter()
                .map(|&k| r.costs[k].as_ref().map(|c| c.ns))
                .collect(),
        })
        .collect();
    let title = "Per-hit cost by tracer and hook";
    let svg = bars::figure_in(
        ((560, 420), 200),
        title,
        &categories,
        bars::Axes {
            x: "hook",
            y: "ns per hit (log)",
        },
        &series,
        None,
    )?;
    Ok(Some(Figure {
        file: format!("{ID}-per-hit.svg"),
        title: title.into(),
        caption:
            "The table's per-hit costs, each tracer recording every event; whiskers: 95% intervals."
                .into(),
        svg,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Value;
    use crate::fixtures;

    #[test]
    fn the_cheapest_first_each_cell_a_cost_the_report_prints_and_one_best_per_column() {
        let report = fixtures::report();
        let s = section(&report)
            .unwrap()
            .expect("the fixtures measured per-hit costs");
        let Block::Table(t) = &s.blocks[0] else {
            panic!("the table first")
        };
        let usdt = t.columns.iter().position(|c| c.name == "usdt").unwrap();
        let est = |r: &Vec<Cell>| match r[usdt].value {
            Value::Interval { estimate, .. } => estimate,
            _ => f64::INFINITY,
        };
        let order: Vec<f64> = t.rows.iter().map(est).collect();
        assert!(order.is_sorted(), "cheapest first: {order:?}");
        // Every usdt cell is plain usdt's hot-loop cost of that tracer in its recording mode.
        let costs: Vec<Cost> = report
            .entries
            .iter()
            .flat_map(|e| e.result.model().costs())
            .collect();
        for r in &t.rows {
            let Value::Interval { estimate, .. } = r[usdt].value else {
                continue;
            };
            let found = costs.iter().any(|c| {
                hot_usdt(c, HookKind::Usdt)
                    && label(c.tracer) == r[0].shown
                    && c.ns.estimate == estimate
            });
            assert!(found, "{} {estimate}", r[0].shown);
        }
        for i in 1..t.columns.len() {
            let best: Vec<&Cell> = t
                .rows
                .iter()
                .map(|r| &r[i])
                .filter(|c| c.shown.starts_with(BEST))
                .collect();
            assert!(best.len() <= 1, "{}: {best:?}", t.columns[i].name);
            for c in best {
                if let Value::Interval { low: Some(l), .. } = c.value {
                    assert!(l > 0.0, "no best for an unresolved value: {c:?}");
                }
            }
        }
        assert!(
            matches!(s.blocks.last(), Some(Block::Figure(_))),
            "its figure last"
        );
    }

    #[test]
    fn an_interval_holding_zero_reads_as_the_consistency_section_writes_it() {
        let e = |estimate, low, high| Estimate {
            estimate,
            low: Some(low),
            high: Some(high),
            rounds: 3,
            confidence: 0.95,
        };
        assert_eq!(shown_estimate(&e(62.0, 37.0, 87.0), 1.0), "62 (37–87)");
        assert_eq!(
            shown_estimate(&e(238.0, -1088.0, 1565.0), 1.0),
            "238 (−1088 to 1565)"
        );
        assert_eq!(
            shown_estimate(&e(1360.0, 1220.0, 1490.0), 1000.0),
            "1.36 (1.22–1.49)"
        );
    }
}
