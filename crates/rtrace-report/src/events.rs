//! The events suite's section (`rtrace-bench events`, Gregg's per-event cost benchmark as in
//! Piotrowski's Tables IV and V): per experiment, each tracer's per-event cost with its
//! interval over rounds, our eBPF over bpftrace's one-liner, Piotrowski's bpftrace 0.17 number;
//! the slowdown table; every experiment that did not run, with why; the accounting checks.

use crate::doc::{columns, items, Block, Cell, Column, Section, Table};
use crate::result::{Entry, Report};
use rtrace_measure::events::{
    self as model, piotrowski, EventsResult, Outcome, Workload, PIOTROWSKI_SOURCE,
};
use rtrace_tracer::features::Feature;
use rtrace_tracer::TracerKind;

/// Gregg's per-event cost suite.
impl crate::result::Reported for EventsResult {
    fn section(&self, e: &Entry, _: &Report) -> Section {
        let r = self;
        let mut s = crate::doc::section(
            e,
            "per-event cost of tracer features (Gregg's benchmark)",
            format!(
                "{} reads per run, {} round(s) on CPU {}; {}; {}.",
                r.config.reads,
                r.config.run.rounds,
                r.config.run.cpu,
                e.kernel(),
                r.header.environment.cpu_model
            ),
            summary(r),
            Some(Block::Note(format!("{}.", note(r)))),
        );
        for w in r.workloads() {
            let name = w.name();
            let cost_title = format!("{name}: per-event cost, ns (Piotrowski's Table IV)");
            let slowdown_title = format!("{name}: slowdown (Piotrowski's Table V)");
            s.table(cost_title, costs(r, w));
            s.table(slowdown_title, slowdowns(r, w));
        }
        let accounting = "Accounting: each tracer kept to the workload's process";
        s.table(accounting, checks(r));
        let unequal = r.config.run.unequal.iter();
        s.list(
            "Not equal between tracers",
            items(unequal.map(|(t, why)| format!("{t}: {why}"))),
        );
        s.list("Not run here", items(not_run(r)));
        s.list("Runs retried once", items(r.retried.iter().cloned()));
        s.push(Block::Details {
            summary: "Programs, Gregg's fastest-run statistic, output checked".into(),
            blocks: vec![Block::Table(programs(r))],
        });
        crate::doc::close(&mut s, e, &r.failed, &r.config);
        s
    }

    fn cost_experiment(&self) -> Option<crate::cost::Experiment> {
        Some(crate::cost::Experiment::Events)
    }

    fn costs(&self) -> Vec<crate::cost::Cost> {
        crate::consistency::sources::events(self)
    }
}

/// The tracers of a result, in table order.
pub fn tracers(r: &EventsResult) -> Vec<TracerKind> {
    [
        TracerKind::Bpftrace,
        TracerKind::Ebpf,
        TracerKind::Ftrace,
        TracerKind::Lttng,
        TracerKind::Perf,
        TracerKind::Strace,
    ]
    .into_iter()
    .filter(|t| r.cells.iter().any(|c| c.tracer == *t))
    .collect()
}

/// The experiments of a result, in Gregg's order.
pub fn features(r: &EventsResult) -> Vec<Feature> {
    let f: std::collections::BTreeSet<Feature> = r.cells.iter().map(|c| c.feature).collect();
    f.into_iter().collect()
}

fn has_pair(r: &EventsResult) -> bool {
    let t = tracers(r);
    t.contains(&TracerKind::Ebpf) && t.contains(&TracerKind::Bpftrace)
}

/// `mean [low, high]` with `decimals`, or the mean alone without an interval.
fn interval(e: &rtrace_measure::interval::Estimate, decimals: usize) -> Cell {
    let shown = match (e.low, e.high) {
        (Some(l), Some(h)) => format!("{:.decimals$} [{l:.decimals$}, {h:.decimals$}]", e.estimate),
        _ => format!("{:.decimals$}", e.estimate),
    };
    Cell::estimate(crate::doc::interval(e), 1.0, shown)
}

/// A cell of the cost table: `mean [low, high]` in ns, or why there is no number.
fn cost_cell(r: &EventsResult, c: Option<&model::Cell>) -> Cell {
    let Some(c) = c else {
        return Cell::missing();
    };
    match &c.outcome {
        Outcome::Measured(_) => match r.cost(c) {
            Some(cost) => interval(&cost.per_event_ns, 0),
            None => Cell::text("no run"),
        },
        Outcome::Unavailable(_) => Cell::text("unavailable here"),
        Outcome::Inexpressible(_) => Cell::text("cannot express"),
        Outcome::Failed(_) => Cell::text("failed").flag(),
    }
}

/// Piotrowski's Table IV, our tracers beside the reference: per experiment, each tracer's cost
/// per event of workload `w`.
pub fn costs(r: &EventsResult, w: Workload) -> Table {
    let mut cols = columns(&["experiment", "hook here"]);
    cols.extend(
        tracers(r)
            .iter()
            .map(|t| Column::new(format!("{t} ns/event"))),
    );
    if has_pair(r) {
        cols.push(Column::new("ebpf ÷ bpftrace"));
    }
    cols.push(Column::new("Piotrowski bpftrace 0.17 ns"));
    let rows = features(r)
        .into_iter()
        .map(|f| {
            let hook = r
                .cells
                .iter()
                .filter(|c| c.feature == f)
                .max_by_key(|c| {
                    (
                        matches!(c.outcome, Outcome::Measured(_)),
                        matches!(c.tracer, TracerKind::Ebpf | TracerKind::Bpftrace),
                    )
                })
                .map(|c| c.hook.clone())
                .unwrap_or_default();
            let mut row = vec![Cell::text(f.to_string()), Cell::text(hook)];
            row.extend(tracers(r).iter().map(|&t| cost_cell(r, r.cell(w, f, t))));
            if has_pair(r) {
                let ratio = r.ratio(w, f, TracerKind::Ebpf, TracerKind::Bpftrace);
                row.push(Cell::or_missing(ratio, |e| interval(&e, 2)));
            }
            row.push(Cell::or_missing(piotrowski(f), |(ns, _)| {
                Cell::num(ns as f64, ns.to_string())
            }));
            row
        })
        .collect();
    Table::new(crate::doc::slug(&format!("costs {}", w.name())), 2, cols).rows(rows)
}

/// Piotrowski's Table V: per experiment, each tracer's slowdown of workload `w`.
pub fn slowdowns(r: &EventsResult, w: Workload) -> Table {
    let pct = |x: f64| Cell::num(x, format!("{x:+.1}%"));
    let rows = features(r)
        .into_iter()
        .map(|f| {
            let mut row = vec![Cell::text(f.to_string())];
            row.extend(tracers(r).iter().map(|&t| {
                let cost = r.cell(w, f, t).and_then(|c| r.cost(c));
                Cell::or_missing(cost, |c| pct(c.slowdown_pct))
            }));
            row.push(Cell::or_missing(piotrowski(f), |(_, p)| pct(p)));
            row
        })
        .collect();
    let mut cols = columns(&["experiment"]);
    cols.extend(
        tracers(r)
            .iter()
            .map(|t| Column::new(format!("{t} slowdown")).unit("%")),
    );
    cols.push(Column::new("Piotrowski bpftrace 0.17").unit("%"));
    let id = crate::doc::slug(&format!("slowdowns {}", w.name()));
    Table::new(id, 1, cols).rows(rows)
}

/// Every measured cell: program, rounds, Gregg's fastest-run statistic, evidence.
pub fn programs(r: &EventsResult) -> Table {
    let rows = r
        .cells
        .iter()
        .filter_map(|c| {
            let Outcome::Measured(runs) = &c.outcome else {
                return None;
            };
            let fastest = r.cost(c).map(|c| c.fastest_ns);
            Some(vec![
                Cell::text(c.workload.name()),
                Cell::text(c.feature.to_string()),
                Cell::text(c.tracer.to_string()),
                Cell::text(c.program.clone()),
                Cell::count(runs.len() as u64),
                Cell::or_missing(fastest, |ns| Cell::num(ns, format!("{ns:.0}"))),
                Cell::or_missing(runs.last(), |l| Cell::text(l.evidence.source.clone())),
            ])
        })
        .collect();
    let mut cols = columns(&["workload", "experiment", "tracer", "program", "rounds"]);
    cols.push(Column::new("fastest-run ns/event (Gregg)").unit("ns"));
    cols.push(Column::new("output checked (last round)"));
    Table::new("programs", 4, cols).rows(rows)
}

/// The accounting checks: each tracer kept to the workload's process, per hook.
pub fn checks(r: &EventsResult) -> Table {
    let rows = r
        .hook_checks
        .iter()
        .map(|c| {
            let startup = match c.startup {
                0 => String::new(),
                n => format!(" + {n} at start-up (measured)"),
            };
            let events = format!(
                "{} recorded + {} lost of {} reads{startup}",
                c.recorded, c.lost, c.reads
            );
            vec![
                Cell::text(c.workload.name()),
                Cell::text(c.tracer.to_string()),
                Cell::text(c.hook.clone()),
                Cell::text(events),
                Cell::text(if c.exact() { "exact" } else { "MISMATCH" }).flag_if(!c.exact()),
            ]
        })
        .collect();
    let cols = columns(&[
        "workload",
        "tracer",
        "hook",
        "events of the workload",
        "verdict",
    ]);
    Table::new("accounting", 3, cols).rows(rows)
}

/// Every cell that did not run, with why: one line per tracer and reason, naming the
/// experiments (`ftrace, 09-13, 15, 16: unavailable here: ...`).
pub fn not_run(r: &EventsResult) -> Vec<String> {
    let mut groups: Vec<(TracerKind, &'static str, &str, Vec<u8>)> = Vec::new();
    for c in &r.cells {
        let (what, why) = match &c.outcome {
            Outcome::Measured(_) => continue,
            Outcome::Unavailable(w) => ("unavailable here", w.as_str()),
            Outcome::Inexpressible(w) => ("cannot express it", w.as_str()),
            Outcome::Failed(w) => ("failed", w.as_str()),
        };
        match groups
            .iter_mut()
            .find(|g| g.0 == c.tracer && g.1 == what && g.2 == why)
        {
            Some(g) if g.3.contains(&c.feature.number()) => {} // another workload
            Some(g) => g.3.push(c.feature.number()),
            None => groups.push((c.tracer, what, why, vec![c.feature.number()])),
        }
    }
    let others = r.unavailable.iter().map(|u| {
        format!(
            "{}, every experiment: unavailable here: {}",
            u.tracer, u.why
        )
    });
    groups
        .into_iter()
        .map(|(tracer, what, why, mut n)| {
            n.sort_unstable();
            let all = n.len() == features(r).len() && n.len() > 1;
            let which = if all {
                "every experiment".to_owned()
            } else {
                format!("experiment {}", ranges(&n))
            };
            format!("{tracer}, {which}: {what}: {why}")
        })
        .chain(others)
        .collect()
}

/// `[2, 3, 9, 10, 11, 15]` → `02-03, 09-11, 15`.
fn ranges(n: &[u8]) -> String {
    let runs: Vec<String> = n
        .chunk_by(|a, b| *b == a + 1)
        .map(|run| match run {
            [one] => format!("{one:02}"),
            _ => format!("{:02}-{:02}", run[0], run[run.len() - 1]),
        })
        .collect();
    runs.join(", ")
}

/// What the tables show and how the numbers are made.
pub fn note(r: &EventsResult) -> String {
    let hooks = match r.config.kprobes {
        true => "The BPF tracers hook where Gregg's one-liners do; ftrace and LTTng hook the read syscall's tracepoints.",
        false => "This kernel has no kprobes: experiments 8-18, which Gregg hooks on kprobe:vfs_read, hook the read syscall's tracepoint syscalls:sys_enter_read (vfs_read's arg2 is its count; 16 times sys_enter_read to sys_exit_read), so their costs include a tracepoint's dispatch instead of a kprobe's; 2 and 3 do not run here.",
    };
    let workloads: Vec<String> = r
        .workloads()
        .into_iter()
        .map(|w| {
            let what = match w {
                Workload::Loop => format!(
                    "the read loop: {} 1-byte read(2) calls from /dev/zero through libc's read per run, pinned to CPU {}, timed on the TSC",
                    r.config.reads, r.config.run.cpu
                ),
                Workload::Dd => format!(
                    "dd if=/dev/zero of=/dev/null bs=1 count={} as Gregg ran it, pinned to CPU {}, timed from its start to its exit (each block a read and a write)",
                    r.config.reads, r.config.run.cpu
                ),
            };
            match r.baseline_per_read_ns(w) {
                Some(ns) => format!("{what}; untraced: {ns:.0} ns per read"),
                None => what,
            }
        })
        .collect();
    format!(
        "Workloads: {}. Piotrowski's untraced dd took {:.0} ns per block: kernel entries and traps cost more on this machine, which is why absolute costs and slowdowns differ from the reference. A uprobe costs a trap, and a second one whenever the kernel cannot emulate the probed instruction and single-steps it out of line. Per-event cost = (traced run time - mean of the untraced runs at the start and end of the same round) / reads, mean over {} round(s) with its 95% t interval; Gregg's statistic (fastest traced run - fastest untraced run) / reads is in the details. Each experiment traces every process, as the one-liners do. {hooks} Reference column: {PIOTROWSKI_SOURCE}; its costs are against its control runtime, ours against no tracer at all",
        workloads.join("; "),
        rtrace_measure::events::piotrowski_control_ns_per_block(),
        r.config.run.rounds
    )
}

/// Gebai & Dagenais' Table III (seed 003): average latency of one kernel tracepoint, ns, timed
/// inside the kernel around the call on one core.
const GEBAI_TABLE_III: [(TracerKind, f64); 3] = [
    (TracerKind::Lttng, 92.0),
    (TracerKind::Ftrace, 116.0),
    (TracerKind::Perf, 121.0),
];

/// perf's cost of a syscall tracepoint event beside ftrace's and beside Gebai & Dagenais' Table
/// III, with what differs in how perf ran here.
fn beside_gebai_table_iii(r: &EventsResult, w: Workload) -> Option<String> {
    let cost = |t| {
        r.cell(w, Feature::TracepointEntry, t)
            .and_then(|c| r.cost(c))
            .map(|c| c.per_event_ns.estimate)
    };
    let gebai = |t| GEBAI_TABLE_III.iter().find(|(k, _)| *k == t).map(|g| g.1);
    let perf = cost(TracerKind::Perf)?;
    let (gebai_perf, gebai_ftrace) = (gebai(TracerKind::Perf)?, gebai(TracerKind::Ftrace)?);
    let here = match cost(TracerKind::Ftrace) {
        Some(f) if f > 0.0 => format!(", {:.1}× ftrace's {f:.0} ns", perf / f),
        _ => String::new(),
    };
    let why = r.config.run.unequal.get(TracerKind::Perf.name());
    Some(format!(
        "{}, perf: a sys_enter_read event {perf:.0} ns{here} (Gebai & Dagenais' Table III: perf {gebai_perf:.0} ns and ftrace {gebai_ftrace:.0} ns per kernel tracepoint, {:.2}×, each timed inside the kernel around the tracepoint alone; here the whole read's extra time){}.",
        w.name(),
        gebai_perf / gebai_ftrace,
        why.map_or(String::new(), |why| format!("; here {why}"))
    ))
}

/// The summary sentences.
pub fn summary(r: &EventsResult) -> Vec<String> {
    let measured = r
        .cells
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Measured(_)))
        .count();
    let mut out = vec![format!(
        "events: {measured} experiment × tracer cells measured, {} not run here (listed with why); {} of {} accounting checks exact.",
        r.cells.len() - measured,
        r.hook_checks.iter().filter(|c| c.exact()).count(),
        r.hook_checks.len()
    )];
    for w in r.workloads() {
        // Gebai & Dagenais' Table V (strace on an empty ioctl(): ~19× slower) beside ours, with
        // what differs in how strace ran here.
        let pick = |f: Feature, t: TracerKind| r.cell(w, f, t).and_then(|c| r.cost(c));
        if let Some(c) = pick(Feature::TracepointEntry, TracerKind::Strace) {
            let times = 1.0 + c.slowdown_pct / 100.0;
            let why = r.config.run.unequal.get(TracerKind::Strace.name());
            out.push(format!(
                "{}, strace: every read {times:.0}× as long (Gebai & Dagenais' Table V: an empty ioctl() ~19× under strace){}.",
                w.name(),
                why.map_or(String::new(), |why| format!("; here {why}"))
            ));
        }
        out.extend(beside_gebai_table_iii(r, w));
        for f in [
            Feature::TracepointEntry,
            Feature::Uprobe,
            Feature::Histogram,
        ] {
            let parts: Vec<String> = tracers(r)
                .iter()
                .filter_map(|&t| {
                    pick(f, t).map(|c| format!("{t} {:.0} ns", c.per_event_ns.estimate))
                })
                .collect();
            if !parts.is_empty() {
                out.push(format!(
                    "{}, {f}: {} per event (Piotrowski's bpftrace 0.17: {} ns).",
                    w.name(),
                    parts.join(", "),
                    piotrowski(f).map_or("-".into(), |p| p.0.to_string())
                ));
            }
        }
        if has_pair(r) {
            let ratios: Vec<(Feature, f64)> = features(r)
                .into_iter()
                .filter_map(|f| {
                    r.ratio(w, f, TracerKind::Ebpf, TracerKind::Bpftrace)
                        .map(|e| (f, e.estimate))
                })
                .collect();
            if let Some(worst) = ratios.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
                out.push(format!(
                    "{}: our eBPF program over bpftrace's one-liner at or below 1.0 in {} of {} experiments; highest {:.2} ({}).",
                    w.name(),
                    ratios.iter().filter(|(_, x)| *x <= 1.0).count(),
                    ratios.len(),
                    worst.1,
                    worst.0
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_is_set_beside_gebai_with_why_it_differs() {
        let text = include_str!("../testdata/events-strace.json");
        let any = crate::AnyResult::from_json(text).unwrap();
        let r: &EventsResult = any.get().expect("an events result");
        let line = summary(r)
            .into_iter()
            .find(|l| l.starts_with("read loop, strace: every read"))
            .expect("strace's line");
        let cell = r.cell(Workload::Loop, Feature::TracepointEntry, TracerKind::Strace);
        let times = 1.0 + r.cost(cell.unwrap()).unwrap().slowdown_pct / 100.0;
        assert!(line.contains(&format!("{times:.0}× as long")), "{line}");
        assert!(
            line.contains("~19×") && line.contains("wakes strace on another CPU"),
            "{line}"
        );
    }

    #[test]
    fn experiment_ranges_read_like_the_paper() {
        assert_eq!(ranges(&[2, 3, 9, 10, 11, 15]), "02-03, 09-11, 15");
        assert_eq!(ranges(&[18]), "18");
        assert_eq!(ranges(&[]), "");
    }
}
