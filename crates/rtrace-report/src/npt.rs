//! The npt experiment's section (`rtrace-bench npt`, Beamonte & Dagenais' Non-Preempt Test):
//! per run (no tracer, then each tracer consuming the loop's events), the gaps between
//! iterations of a tight TSC loop, what the tracer did at the largest gap (its buffer
//! switches), the interruptions among the quiet gaps when the probe is capped, and the event
//! accounting.

use crate::doc::{columns, Block, Cell, Column, Section, Table};
use crate::format::{int, us};
use crate::result::{Entry, Report};
use rtrace_measure::npt::{LargestGap, NptResult, NptRun, Osnoise, INTERRUPTION_NS};

/// The Non-Preempt Test.
impl crate::result::Reported for NptResult {
    fn section(&self, e: &Entry, _: &Report) -> Section {
        let r = self;
        let mut s = crate::doc::section(
            e,
            "the Non-Preempt Test (npt, gaps of a tight loop)",
            format!(
                "{} ms per run on CPU {}, the probe {}; {}; {}.",
                r.config.duration_ms,
                r.config.run.cpu,
                firing(r),
                e.kernel(),
                r.header.environment.cpu_model
            ),
            summary(r),
            Some(Block::Note(format!("{}.", note(r)))),
        );
        s.push(Block::Table(table(r)));
        s.blocks
            .extend(kernel_lines(r).into_iter().map(Block::Note));
        s.push(Block::Pre(osnoise_line(r).trim_end().to_owned()));
        crate::doc::close(&mut s, e, &r.failed, &r.config);
        s
    }

    fn cost_experiment(&self) -> Option<crate::cost::Experiment> {
        Some(crate::cost::Experiment::Npt)
    }

    fn costs(&self) -> Vec<crate::cost::Cost> {
        crate::consistency::sources::npt(self)
    }
}

/// `in every iteration`, `10000 times a second`.
fn firing(r: &NptResult) -> String {
    match r.config.event_rate_hz {
        None => "in every iteration".into(),
        Some(hz) => format!("{hz} times a second"),
    }
}

/// What the table shows.
pub fn note(r: &NptResult) -> String {
    let cpu = r.config.run.cpu;
    let ms = r.config.duration_ms;
    let head = match r.config.event_rate_hz {
        None => format!("A tight loop on CPU {cpu} reads the TSC and records the gap since its previous read for {ms} ms per run, firing its probe in every iteration at the loop's full speed, as Beamonte ran npt (\"doing almost nothing but generating events in a tight infinite loop\"); each tracer consumes that stream with its consumer on the other CPUs. Gaps in ns of the iterations that fired the probe: the probe's own cost plus whatever took the CPU then"),
        Some(hz) => format!("A tight loop on CPU {cpu} reads the TSC and records the gap since its previous read for {ms} ms per run; it fires its probe {hz} times a second (npt's capped tracepoint frequency, `--event-rate`), so each tracer has an event stream to consume with its consumer on the other CPUs. Gaps in ns of the iterations that fired the probe (the loop plus one probe hit, plus interference), and of the quiet iterations: what the tracer does to the CPU besides the probe itself (an interrupt, the tick, a wake-up)"),
    };
    format!("{head}. At the largest gap: where it fell against the tracer's buffer switches, LTTng's sub-buffer switches from its packets: the hit number of each one's first event says which gap switched, its `timestamp_begin` (`CLOCK_MONOTONIC`) how long before the gap's end the last switch came (the gap's end converted from the TSC through clock pairs sampled around the loop; where the events are not one integer each, the switch is placed by that time alone: within the gap means within it ± {} µs), ftrace's kernel ring-buffer page switches from the page that holds the gap's event (found by the probe's argument; a page read while the writer was still on it continues in the next page read, no switch; the time in the trace clock from the kernel page's first event); eBPF's ring buffer has no sub-buffers, and its consumer polls without being woken; in parentheses, how many of the run's largest gaps held a switch. The switches' iterations: the loop keeps every firing gap of at least 8 times the median of its first {} firings (at least 1 µs) from then on; each switch's iteration is looked up among them by the hit whose event began a packet or page (LTTng by the slow gap the switch's time falls in where its events are not one integer each), one not found took less; beside it, the share of all firing iterations that were that slow. Every tracer's events are accounted exactly", rtrace_measure::npt::SWITCH_SLACK_NS / 1000, rtrace_protocol::NPT_SLOW_AFTER)
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

/// Where gap `g` of `run` fell against its tracer's switches.
fn placed(run: &NptRun, g: &LargestGap) -> String {
    let Some(sw) = &run.switches else {
        return match run.tracer {
            rtrace_tracer::TracerKind::None => "no tracer".into(),
            rtrace_tracer::TracerKind::Ebpf => "no sub-buffers (eBPF ring buffer)".into(),
            _ => "switches not read for this tracer".into(),
        };
    };
    let ftrace = sw.what.starts_with("ftrace");
    match (g.switched, g.since_switch_ns) {
        (Some(true), _) if ftrace => {
            "its event began a ring-buffer page: a page switch in this probe hit".into()
        }
        (Some(true), Some(since)) => format!(
            "{} µs after an LTTng sub-buffer switch (within the gap)",
            us(since as f64)
        ),
        (Some(false), Some(since)) if ftrace => format!(
            "its event {} µs after its page's first event: no page switch in it",
            us(since as f64)
        ),
        (Some(false), Some(since)) => format!(
            "no {} within it; the last {} µs before its end",
            sw.what,
            us(since as f64)
        ),
        (Some(false), None) => format!("no {} before it", sw.what),
        _ if ftrace => "its event was not recorded".into(),
        _ => format!("no {} in the trace", sw.what),
    }
}

/// The largest gap of `run` and what happened then, with how many of the largest held a
/// switch: `48.00 µs, 0.30 µs after an LTTng sub-buffer switch (within the gap); switch in 12
/// of the 16 largest`.
pub fn at_largest(run: &NptRun) -> String {
    let Some(g) = run.largest.first() else {
        return "-".into();
    };
    let mut out = format!("{} µs: {}", us(g.gap.ns as f64), placed(run, g));
    if run.switches.is_some() {
        let with = run
            .largest
            .iter()
            .filter(|g| g.switched == Some(true))
            .count();
        let smallest = run.largest.last().map_or(0, |g| g.gap.ns);
        out.push_str(&format!(
            " (a switch in {with} of the {} largest gaps, ≥ {} µs)",
            run.largest.len(),
            us(smallest as f64)
        ));
    }
    out
}

/// What the switches' iterations cost: `143 switches: 120 slow (84%, against 0.02% of all
/// firings), median 4.30 µs, max 12.10 µs (slow: ≥ 1.10 µs)`; `-` without.
pub fn at_switches(run: &NptRun) -> String {
    let Some(a) = &run.at_switches else {
        return "-".into();
    };
    if a.switches == 0 {
        // A finding, not a success: nothing was measured.
        return format!(
            "no switch after the slow threshold was set ({} firings): the buffer never filled; use a smaller --buffer-size-kb or a longer --duration-ms",
            rtrace_protocol::NPT_SLOW_AFTER
        );
    }
    let (at, all) = a.shares();
    let pct = |f: f64| match 100.0 * f {
        p if p == 0.0 || p >= 10.0 => format!("{p:.0}%"),
        p if p >= 0.1 => format!("{p:.1}%"),
        p => format!("{p:.3}%"),
    };
    let mut out = format!(
        "{} switches: {} slow ({}, against {} of all firings)",
        a.switches,
        a.slow_gaps_ns.len(),
        pct(at),
        pct(all)
    );
    if let Some((median, max)) = a.median_max() {
        out.push_str(&format!(
            ", median {} µs, max {} µs",
            us(median as f64),
            us(max as f64)
        ));
    }
    out.push_str(&format!(" (slow: ≥ {} µs", us(a.slow_ns as f64)));
    if a.slow_dropped > 0 {
        out.push_str(&format!(
            "; {} slow gaps not kept: a lower bound",
            a.slow_dropped
        ));
    }
    out.push(')');
    out
}

/// The table: a row per run.
pub fn table(r: &NptResult) -> Table {
    let capped = r.config.event_rate_hz.is_some();
    let rows = r
        .runs
        .iter()
        .map(|run| {
            let stat = |s: Option<&rtrace_measure::Summary>,
                        f: fn(&rtrace_measure::Summary) -> f64| {
                Cell::or_missing(s, |s| Cell::num(f(s), int(f(s))))
            };
            let fired = run.fired.as_ref();
            let mut row = vec![
                Cell::text(run.label()),
                Cell::or_missing(Some(&run.buffer).filter(|b| !b.is_empty()), Cell::text),
                Cell::count(run.done.iterations),
                stat(fired, |s| s.min_ns),
                stat(fired, |s| s.p50_ns),
                stat(fired, |s| s.mean_ns),
                stat(fired, |s| s.p9999_ns),
                stat(fired, |s| s.max_ns),
            ];
            if capped {
                let per_second = per_second(run);
                row.extend([
                    stat(run.quiet.as_ref(), |s| s.max_ns),
                    Cell::count(run.interruptions),
                    Cell::num(per_second, format!("{per_second:.0}")),
                ]);
            }
            row.extend([
                run.switches
                    .as_ref()
                    .map_or_else(Cell::missing, |s| Cell::count(s.count)),
                Cell::text(at_switches(run)),
                Cell::text(at_largest(run)),
                Cell::text(events_cell(run)),
            ]);
            row
        })
        .collect();
    let mut cols = columns(&["tracer", "buffer", "iterations"]);
    cols.extend(
        [
            "fired min",
            "fired p50",
            "fired mean",
            "fired p99.99",
            "fired max",
        ]
        .map(|n| Column::new(n).unit("ns")),
    );
    if capped {
        cols.push(Column::new("quiet max").unit("ns"));
        cols.extend(columns(&["quiet gaps ≥ 1 µs", "per second"]));
    }
    cols.push(Column::new("buffer switches"));
    cols.push(Column::new("the switches' iterations"));
    cols.push(Column::new("largest gap: what happened then"));
    cols.push(Column::new("events (recorded/lost/hits)"));
    Table::new("gaps", 2, cols).rows(rows)
}

/// Per run with LTTng's kernel channel (`--lttng-kernel`): what it recorded, apart from the
/// UST event's accounting, and what it shows on the measured CPU at the largest gaps.
pub fn kernel_lines(r: &NptResult) -> Vec<String> {
    r.runs
        .iter()
        .filter_map(|run| Some((run, run.kernel.as_ref()?)))
        .map(|(run, k)| {
            let by_name = k
                .events
                .iter()
                .map(|(n, c)| format!("{n} {}", int(*c as f64)))
                .collect::<Vec<_>>()
                .join(", ");
            let gaps = k
                .at_largest
                .iter()
                .map(|g| format!("{} µs: {}", us(g.ns as f64), g.what))
                .collect::<Vec<_>>()
                .join("; ");
            format!(
                "{}: LTTng's kernel channel ({}) recorded {} events ({by_name}), {} discarded{}, counted apart from the UST event's accounting. On CPU {} at the {} largest gaps: {}.",
                run.label(),
                r.config.lttng_kernel.join(","),
                int(k.recorded() as f64),
                int(k.discarded as f64),
                if k.lost_packets > 0 {
                    format!(", {} packets lost", k.lost_packets)
                } else {
                    String::new()
                },
                r.config.run.cpu,
                k.at_largest.len(),
                if gaps.is_empty() { "none".into() } else { gaps }
            )
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
    let max = |run: &NptRun| run.fired.as_ref().map_or("-".into(), |s| us(s.max_ns));
    let traced: Vec<&NptRun> = r.runs.iter().filter(|run| run.events.is_some()).collect();
    // Each traced run's `what`, or `none` when no tracer ran.
    let each = |none: &str, what: &dyn Fn(&NptRun) -> String| match traced.is_empty() {
        true => none.to_owned(),
        false => traced
            .iter()
            .map(|run| format!("{} {}", run.label(), what(run)))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut out = vec![format!(
        "npt, the probe {}: the largest gap of the firing iterations with no tracer {} µs; {}.",
        firing(r),
        max(base),
        each("no tracer ran", &|run| format!("{} µs", max(run)))
    )];
    for run in traced.iter().filter(|run| !run.largest.is_empty()) {
        out.push(format!("{}: largest gap {}.", run.label(), at_largest(run)));
    }
    for run in traced.iter().filter(|run| run.at_switches.is_some()) {
        out.push(format!(
            "{}: the iterations that switched buffers: {}.",
            run.label(),
            at_switches(run)
        ));
    }
    if r.config.event_rate_hz.is_some() {
        let rate = |run: &NptRun| {
            format!(
                "{:.0}/s (max {} µs)",
                per_second(run),
                run.quiet.as_ref().map_or("-".into(), |s| us(s.max_ns))
            )
        };
        out.push(format!(
            "Interruptions of the quiet iterations (gaps ≥ {} µs) with no tracer {}; with a tracer: {}.",
            INTERRUPTION_NS / 1000,
            rate(base),
            each("none ran", &rate)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_measure::npt::{KernelAtGap, KernelTrace};

    #[test]
    fn kernel_lines_keep_the_kernel_channel_apart() {
        let text = include_str!("../testdata/npt.json");
        let mut r: NptResult = serde_json::from_str(text).unwrap();
        assert!(kernel_lines(&r).is_empty(), "no kernel channel, no line");
        r.config.lttng_kernel = vec!["sched_switch".into(), "irq_handler_entry".into()];
        let run = r
            .runs
            .iter_mut()
            .find(|run| run.tracer == rtrace_tracer::TracerKind::Lttng)
            .unwrap();
        run.kernel = Some(KernelTrace {
            events: [
                ("irq_handler_entry".to_owned(), 4),
                ("sched_switch".to_owned(), 7),
            ]
            .into(),
            discarded: 2,
            lost_packets: 0,
            at_largest: vec![KernelAtGap {
                ns: 81_230,
                end_mono_ns: 1,
                events: 2,
                what: "sched_switch to kworker/1:2 (tid 55)".into(),
            }],
        });
        let lines = kernel_lines(&r);
        assert_eq!(lines.len(), 1);
        let l = &lines[0];
        assert!(l.contains("(sched_switch,irq_handler_entry) recorded 11 events (irq_handler_entry 4, sched_switch 7), 2 discarded, counted apart"), "{l}");
        assert!(
            l.contains("81.23 µs: sched_switch to kworker/1:2 (tid 55)."),
            "{l}"
        );
    }

    #[test]
    fn no_switch_to_look_up_is_said_as_a_finding() {
        let text = include_str!("../testdata/npt.json");
        let mut r: NptResult = serde_json::from_str(text).unwrap();
        let mut run = r.runs.remove(1);
        run.at_switches = Some(rtrace_measure::npt::AtSwitches {
            switches: 0,
            slow_ns: 1_000,
            slow_gaps_ns: Vec::new(),
            firings: 1_000_000,
            slow_firings: 10,
            slow_dropped: 0,
        });
        assert!(
            at_switches(&run).starts_with("no switch after"),
            "{}",
            at_switches(&run)
        );
    }
}
