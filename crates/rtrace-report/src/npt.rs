//! The npt experiment's section (`rtrace-bench npt`, Beamonte & Dagenais' Non-Preempt Test):
//! per run (no tracer, then each tracer consuming the loop's events), the gaps between
//! iterations of a tight TSC loop, the interruptions among them, and the event accounting.

use crate::doc::{columns, Block, Cell, Column, Section, Table};
use crate::format::{int, us};
use crate::result::Entry;
use rtrace_measure::npt::{NptResult, NptRun, Osnoise, INTERRUPTION_NS};

/// The section of npt result `r` (entry `e`).
pub fn section(e: &Entry, r: &NptResult) -> Section {
    let mut s = Section::new(
        e,
        "the Non-Preempt Test (npt, gaps of a tight loop)",
        format!(
            "{} ms per run on CPU {}; {}; {}.",
            r.config.duration_ms,
            r.config.run.cpu,
            e.kernel(),
            r.environment.cpu_model
        ),
        summary(r),
        Some(Block::Note(format!("{}.", note(r)))),
    );
    s.push(Block::Table(table(r)));
    s.push(Block::Pre(osnoise_line(r).trim_end().to_owned()));
    s.close(e, &r.failed, &r.config);
    s
}

/// What the table shows.
pub fn note(r: &NptResult) -> String {
    format!(
        "A tight loop on CPU {} reads the TSC and records the gap since its previous read for {} ms per run (Beamonte's npt); it fires its probe {} times a second (npt's capped tracepoint frequency), so each tracer has an event stream to consume with its consumer on the other CPUs. Gaps in ns, of the iterations that did not fire the probe: what the tracer does to the CPU besides the probe itself (an interrupt, the tick, a wake-up). The iterations that fired the probe are apart (their mean gap is the loop plus one probe hit). Every tracer's events are accounted exactly",
        r.config.run.cpu, r.config.duration_ms, r.config.event_rate_hz
    )
}

fn events_cell(run: &NptRun) -> String {
    match &run.events {
        Some(e) => format!("{}/{}/{}", e.recorded, e.lost, e.hits),
        None => format!("-/-/{} (not traced)", run.done.hits),
    }
}

/// Interruptions (quiet gaps of at least 1 µs) per second of loop.
pub fn per_second(run: &NptRun) -> f64 {
    run.interruptions as f64 * 1e9 / run.done.elapsed_ns.max(1) as f64
}

/// The table: a row per run.
pub fn table(r: &NptResult) -> Table {
    let rows = r
        .runs
        .iter()
        .map(|run| {
            let q = |f: fn(&rtrace_measure::Summary) -> f64| {
                Cell::or_missing(run.quiet.as_ref(), |s| Cell::num(f(s), int(f(s))))
            };
            let per_second = per_second(run);
            vec![
                Cell::text(run.label()),
                if run.buffer.is_empty() {
                    Cell::missing()
                } else {
                    Cell::text(run.buffer.clone())
                },
                Cell::count(run.done.iterations),
                q(|s| s.min_ns),
                q(|s| s.p50_ns),
                q(|s| s.p9999_ns),
                q(|s| s.max_ns),
                Cell::count(run.interruptions),
                Cell::num(per_second, format!("{per_second:.0}")),
                Cell::or_missing(run.fired.as_ref(), |s| Cell::num(s.mean_ns, int(s.mean_ns))),
                Cell::text(events_cell(run)),
            ]
        })
        .collect();
    let mut cols = columns(&["tracer", "buffer", "iterations"]);
    cols.extend(["gap min", "gap p50", "gap p99.99", "gap max"].map(|n| Column::new(n).unit("ns")));
    cols.extend(columns(&["gaps ≥ 1 µs", "per second"]));
    cols.push(Column::new("gap with probe (mean)").unit("ns"));
    cols.push(Column::new("events (recorded/lost/hits)"));
    Table::new("gaps", 2, cols).rows(rows)
}

/// The osnoise line: rtla's figure, or why it is absent.
pub fn osnoise_line(r: &NptResult) -> String {
    match &r.osnoise {
        Osnoise::Measured(text) => format!("rtla osnoise top on CPU {}:\n{text}", r.config.run.cpu),
        Osnoise::Absent(why) => format!("rtla osnoise: absent here: {why}"),
    }
}

/// The summary sentences.
pub fn summary(r: &NptResult) -> Vec<String> {
    let Some(base) = r.runs.iter().find(|run| run.events.is_none()) else {
        return Vec::new();
    };
    let rate = |run: &NptRun| {
        format!(
            "{:.0}/s (max {} µs)",
            per_second(run),
            run.quiet.as_ref().map_or("-".into(), |s| us(s.max_ns))
        )
    };
    let traced: Vec<String> = r
        .runs
        .iter()
        .filter(|run| run.events.is_some())
        .map(|run| format!("{} {}", run.label(), rate(run)))
        .collect();
    vec![format!(
        "npt: interruptions of the loop (gaps ≥ {} µs) with no tracer {}; with a tracer consuming {} events/s: {}.",
        INTERRUPTION_NS / 1000,
        rate(base),
        r.config.event_rate_hz,
        if traced.is_empty() {
            "no tracer ran".into()
        } else {
            traced.join(", ")
        }
    )]
}
