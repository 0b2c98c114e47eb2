//! The events suite's tables (`rtrace-bench events`, Gregg's per-event cost benchmark as in
//! Piotrowski's Tables IV and V): per experiment, each tracer's per-event cost with its
//! interval over rounds, our eBPF over bpftrace's one-liner, Piotrowski's bpftrace 0.17 number;
//! the slowdown table; every experiment that did not run, with why; the accounting checks.

use crate::table::Table;
use rtrace_measure::events::{
    piotrowski, Cell, EventsResult, Outcome, Workload, PIOTROWSKI_SOURCE,
};
use rtrace_tracer::features::Feature;
use rtrace_tracer::TracerKind;

/// The tracers of a result, in table order.
pub fn tracers(r: &EventsResult) -> Vec<TracerKind> {
    [
        TracerKind::Bpftrace,
        TracerKind::Ebpf,
        TracerKind::Ftrace,
        TracerKind::Lttng,
    ]
    .into_iter()
    .filter(|t| r.cells.iter().any(|c| c.tracer == *t))
    .collect()
}

/// The experiments of a result, in Gregg's order.
pub fn features(r: &EventsResult) -> Vec<Feature> {
    let mut f: Vec<Feature> = r.cells.iter().map(|c| c.feature).collect();
    f.sort();
    f.dedup();
    f
}

/// What a cell shows in the cost table: `mean [low, high]`, or why there is no number.
pub fn cost_cell(r: &EventsResult, c: Option<&Cell>) -> String {
    let Some(c) = c else {
        return String::new();
    };
    match &c.outcome {
        Outcome::Measured(_) => match r.cost(c) {
            Some(cost) => {
                let e = cost.per_event_ns;
                match (e.low, e.high) {
                    (Some(l), Some(h)) => format!("{:.0} [{:.0}, {:.0}]", e.estimate, l, h),
                    _ => format!("{:.0}", e.estimate),
                }
            }
            None => "no run".into(),
        },
        Outcome::Unavailable(_) => "unavailable here".into(),
        Outcome::Inexpressible(_) => "cannot express".into(),
        Outcome::Failed(_) => "failed".into(),
    }
}

/// Header of the cost table (Piotrowski's Table IV, our tracers beside the reference).
pub fn cost_header(r: &EventsResult) -> Vec<String> {
    let mut h = vec!["experiment".to_owned(), "hook here".to_owned()];
    h.extend(tracers(r).iter().map(|t| format!("{t} ns/event")));
    if has_pair(r) {
        h.push("ebpf ÷ bpftrace".into());
    }
    h.push("Piotrowski bpftrace 0.17 ns".into());
    h
}

fn has_pair(r: &EventsResult) -> bool {
    let t = tracers(r);
    t.contains(&TracerKind::Ebpf) && t.contains(&TracerKind::Bpftrace)
}

/// Rows of the cost table of workload `w`.
pub fn cost_rows(r: &EventsResult, w: Workload) -> Vec<Vec<String>> {
    features(r)
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
            let mut row = vec![f.to_string(), hook];
            row.extend(tracers(r).iter().map(|&t| cost_cell(r, r.cell(w, f, t))));
            if has_pair(r) {
                row.push(
                    r.ratio(w, f, TracerKind::Ebpf, TracerKind::Bpftrace)
                        .map_or("-".into(), |e| match (e.low, e.high) {
                            (Some(l), Some(h)) => {
                                format!("{:.2} [{:.2}, {:.2}]", e.estimate, l, h)
                            }
                            _ => format!("{:.2}", e.estimate),
                        }),
                );
            }
            row.push(piotrowski(f).map_or("-".into(), |(ns, _)| ns.to_string()));
            row
        })
        .collect()
}

/// Header and rows of the slowdown table (Piotrowski's Table V).
pub fn slowdown_header(r: &EventsResult) -> Vec<String> {
    let mut h = vec!["experiment".to_owned()];
    h.extend(tracers(r).iter().map(|t| format!("{t} slowdown")));
    h.push("Piotrowski bpftrace 0.17".into());
    h
}

pub fn slowdown_rows(r: &EventsResult, w: Workload) -> Vec<Vec<String>> {
    features(r)
        .into_iter()
        .map(|f| {
            let mut row = vec![f.to_string()];
            row.extend(tracers(r).iter().map(|&t| {
                r.cell(w, f, t)
                    .and_then(|c| r.cost(c))
                    .map_or("-".into(), |c| format!("{:+.1}%", c.slowdown_pct))
            }));
            row.push(piotrowski(f).map_or("-".into(), |(_, pct)| format!("{pct:+.1}%")));
            row
        })
        .collect()
}

/// Header and rows of every measured cell: program, Gregg's fastest-run statistic, evidence.
pub const DETAIL_HEADER: [&str; 7] = [
    "workload",
    "experiment",
    "tracer",
    "program",
    "rounds",
    "fastest-run ns/event (Gregg)",
    "output checked (last round)",
];

pub fn detail_rows(r: &EventsResult) -> Vec<Vec<String>> {
    r.cells
        .iter()
        .filter_map(|c| {
            let Outcome::Measured(runs) = &c.outcome else {
                return None;
            };
            let cost = r.cost(c);
            Some(vec![
                c.workload.name().to_owned(),
                c.feature.to_string(),
                c.tracer.to_string(),
                c.program.clone(),
                runs.len().to_string(),
                cost.map_or("-".into(), |c| format!("{:.0}", c.fastest_ns)),
                runs.last()
                    .map_or("-".into(), |l| l.evidence.source.clone()),
            ])
        })
        .collect()
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
        .collect()
}

/// `[2, 3, 9, 10, 11, 15]` → `02-03, 09-11, 15`.
fn ranges(n: &[u8]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < n.len() {
        let mut j = i;
        while j + 1 < n.len() && n[j + 1] == n[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            format!("{:02}", n[i])
        } else {
            format!("{:02}-{:02}", n[i], n[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

pub const CHECK_HEADER: [&str; 5] = [
    "workload",
    "tracer",
    "hook",
    "events of the workload",
    "verdict",
];

pub fn check_rows(r: &EventsResult) -> Vec<Vec<String>> {
    r.hook_checks
        .iter()
        .map(|c| {
            vec![
                c.workload.name().to_owned(),
                c.tracer.to_string(),
                c.hook.clone(),
                if c.startup > 0 {
                    format!(
                        "{} recorded + {} lost of {} reads + {} at start-up (measured)",
                        c.recorded, c.lost, c.reads, c.startup
                    )
                } else {
                    format!(
                        "{} recorded + {} lost of {} reads",
                        c.recorded, c.lost, c.reads
                    )
                },
                if c.exact() { "exact" } else { "MISMATCH" }.into(),
            ]
        })
        .collect()
}

/// What the tables show and how the numbers are made.
pub fn note(r: &EventsResult) -> String {
    let hooks = if r.config.kprobes {
        "The BPF tracers hook where Gregg's one-liners do; ftrace and LTTng hook the read syscall's tracepoints.".to_owned()
    } else {
        "This kernel has no kprobes: experiments 8-18, which Gregg hooks on kprobe:vfs_read, hook the read syscall's tracepoint syscalls:sys_enter_read (vfs_read's arg2 is its count; 16 times sys_enter_read to sys_exit_read), so their costs include a tracepoint's dispatch instead of a kprobe's; 2 and 3 do not run here.".to_owned()
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

/// The summary sentences.
pub fn summary(r: &EventsResult) -> Vec<String> {
    let mut out = Vec::new();
    let measured = r
        .cells
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Measured(_)))
        .count();
    out.push(format!(
        "events: {measured} experiment × tracer cells measured, {} not run here (listed with why); {} of {} accounting checks exact.",
        r.cells.len() - measured,
        r.hook_checks.iter().filter(|c| c.exact()).count(),
        r.hook_checks.len()
    ));
    for w in r.workloads() {
        let pick = |f: Feature, t: TracerKind| r.cell(w, f, t).and_then(|c| r.cost(c));
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

/// The terminal text.
pub fn text(r: &EventsResult) -> String {
    let mut out = format!(
        "events: Gregg's per-event cost benchmark, {} reads per run, {} round(s) on CPU {} — kernel {}, {}\nsummary:\n",
        r.config.reads, r.config.run.rounds, r.config.run.cpu, r.environment.kernel_release, r.environment.cpu_model
    );
    for l in summary(r) {
        out.push_str(&format!("  {l}\n"));
    }
    out.push_str(&format!("\n{}.\n", note(r)));
    for w in r.workloads() {
        let header = cost_header(r);
        let h: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&h, 2);
        for row in cost_rows(r, w) {
            t.row(row);
        }
        out.push_str(&format!(
            "\n{}: per-event cost, ns (Piotrowski's Table IV):\n{}",
            w.name(),
            t.render()
        ));
        let header = slowdown_header(r);
        let h: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&h, 1);
        for row in slowdown_rows(r, w) {
            t.row(row);
        }
        out.push_str(&format!(
            "\n{}: slowdown (Piotrowski's Table V):\n{}",
            w.name(),
            t.render()
        ));
    }
    let mut t = Table::new(&CHECK_HEADER, 3);
    for row in check_rows(r) {
        t.row(row);
    }
    out.push_str(&format!(
        "\naccounting (each tracer kept to the workload's process):\n{}",
        t.render()
    ));
    for l in not_run(r) {
        out.push_str(&format!("not run: {l}\n"));
    }
    for l in &r.retried {
        out.push_str(&format!("retried once: {l}\n"));
    }
    for f in &r.failed {
        out.push_str(&format!("failed: {f}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_ranges_read_like_the_paper() {
        assert_eq!(ranges(&[2, 3, 9, 10, 11, 15]), "02-03, 09-11, 15");
        assert_eq!(ranges(&[18]), "18");
        assert_eq!(ranges(&[]), "");
    }
}
