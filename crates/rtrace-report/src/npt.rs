//! The npt experiment's table (`rtrace-bench npt`, Beamonte & Dagenais' Non-Preempt Test): per
//! run (no tracer, then each tracer consuming the loop's events), the gaps between iterations of
//! a tight TSC loop, the interruptions among them, and the event accounting.

use crate::format::{int, us};
use crate::table::Table;
use rtrace_measure::npt::{NptResult, NptRun, Osnoise, INTERRUPTION_NS};

/// Column names of the table.
pub const HEADER: [&str; 11] = [
    "tracer",
    "buffer",
    "iterations",
    "gap min",
    "gap p50",
    "gap p99.99",
    "gap max",
    "gaps ≥ 1 µs",
    "per second",
    "gap with probe (mean)",
    "events (recorded/lost/hits)",
];

/// Leading text columns.
pub const TEXT_COLUMNS: usize = 2;

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

/// The table rows.
pub fn rows(r: &NptResult) -> Vec<Vec<String>> {
    r.runs
        .iter()
        .map(|run| {
            let q = |f: fn(&rtrace_measure::Summary) -> f64| {
                run.quiet.as_ref().map_or("-".into(), |s| int(f(s)))
            };
            vec![
                run.label(),
                if run.buffer.is_empty() {
                    "-".into()
                } else {
                    run.buffer.clone()
                },
                int(run.done.iterations as f64),
                q(|s| s.min_ns),
                q(|s| s.p50_ns),
                q(|s| s.p9999_ns),
                q(|s| s.max_ns),
                run.interruptions.to_string(),
                format!("{:.0}", per_second(run)),
                run.fired.as_ref().map_or("-".into(), |s| int(s.mean_ns)),
                events_cell(run),
            ]
        })
        .collect()
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

/// The terminal text.
pub fn text(r: &NptResult) -> String {
    let mut out = format!(
        "npt: gaps of a tight TSC loop, {} ms per run on CPU {} — kernel {}, {}\nsummary:\n",
        r.config.duration_ms,
        r.config.run.cpu,
        r.environment.kernel_release,
        r.environment.cpu_model
    );
    for l in summary(r) {
        out.push_str(&format!("  {l}\n"));
    }
    out.push_str(&format!("\n{}.\n", note(r)));
    let mut t = Table::new(&HEADER, TEXT_COLUMNS);
    for row in rows(r) {
        t.row(row);
    }
    out.push_str(&t.render());
    out.push_str(&format!("{}\n", osnoise_line(r)));
    for f in &r.failed {
        out.push_str(&format!("failed: {f}\n"));
    }
    out
}
