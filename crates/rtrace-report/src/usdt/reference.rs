//! The literature's comparisons as lines: our eBPF backend against bpftrace, LTTng against
//! ftrace, both as ratios of extra ns per hit with intervals over rounds. Each line says what
//! differs between its two sides, with the measured cost of that difference where the run has
//! it (the wake-up per event, the uprobe trap), which get lines of their own.

use crate::doc::Item;
use crate::ratios::Ratio;
use rtrace_measure::interval::Estimate;
use rtrace_measure::probe_cost::{
    differences, references, CostDifference, CostRatio, Difference, Pair, Reference,
};
use rtrace_measure::usdt::{HookKind, UsdtResult};

/// Every comparison `r` allows, each with what differs between its sides, then the measured
/// differences (their line says it all).
pub fn items(r: &UsdtResult) -> Vec<Item> {
    let diffs = differences(r);
    let mut out: Vec<Item> = references(r)
        .iter()
        .map(|c| Item {
            text: format!("{} [{}]", sentence(&c.ratio), c.hook),
            more: Some(format!("differs: {}", differs(c, &diffs))),
        })
        .collect();
    for d in &diffs {
        let what = match d.what {
            Difference::Wakeup => format!("wake-up cost per event ({})", d.hook),
            Difference::Trap => format!("int3 trap cost per hit ({}, usdt − usdt-nop5)", d.mode),
        };
        out.push(Item::from(format!(
            "{what}: {} − {} = {}",
            d.minuend,
            d.subtrahend,
            ns(d.ns)
        )));
    }
    out
}

/// `16270 ns (15980–16554)`, or without interval; `-` when not measured.
fn ns(e: Option<Estimate>) -> String {
    e.map_or("-".into(), |e| crate::summary::ns_with_interval(&e))
}

/// What tells the two sides of `c` apart, with the measured cost of it when `diffs` has it.
fn differs(c: &Reference, diffs: &[CostDifference]) -> String {
    let cost = |what: Difference, hook: HookKind, mode: &str| {
        diffs
            .iter()
            .find(|d| d.what == what && d.hook == hook && d.mode == mode)
            .map(|d| format!("{} per hit", ns(d.ns)))
    };
    let wakeup = cost(Difference::Wakeup, c.hook, "record-wakeup").map_or_else(
        || "not measured here: add --bpf-mode record-wakeup".to_owned(),
        |ns| format!("measured on our eBPF: {ns}"),
    );
    let what = match c.pair {
        Pair::WakeupDiffers => format!(
            "the wake-up policy: our ring buffer never wakes its reader (it polls every 50 ms), bpftrace's printf perf buffer wakes it on every event ({wakeup}); and the BPF program (ring-buffer record vs printf's perf-event output)"
        ),
        Pair::SameWakeup => "only the BPF program and the reader (ring-buffer record and our event writer vs perf-event output and bpftrace's printf): both wake the reader on every event".to_owned(),
        Pair::Aggregate => "only the BPF program (per-CPU counter and log2 histogram vs bpftrace's count()): no per-event output on either side".to_owned(),
        Pair::LttngFtrace => "the whole path: LTTng writes the event from user space into a ring buffer it shares with its consumer daemon (no trap, no kernel entry); ftrace's uprobe traps (int3) into the kernel, which writes its ring buffer".to_owned(),
    };
    match (c.pair, c.hook) {
        (Pair::LttngFtrace, _) => what,
        (_, HookKind::UsdtNop5) => {
            let trap = cost(Difference::Trap, HookKind::Usdt, c.mode.unwrap_or_default())
                .map_or_else(
                    || "not measured here: add --hook usdt".to_owned(),
                    |ns| format!("costs our eBPF {ns} on usdt"),
                );
            format!(
                "the trap: libbpf attaches to the nop5, which Linux >= 6.18 turns into a call, while bpftrace attaches at the note's address and still takes the int3 trap (the trap {trap}); and {what}"
            )
        }
        _ => format!("{what}; the same int3 uprobe trap on both sides"),
    }
}

/// `lttng ÷ ftrace (extra ns per hit): 160 ns ÷ 820 ns = 0.20× (0.18–0.22) by
/// mean, 0.19× (0.18–0.20) by median`.
pub fn sentence(c: &CostRatio) -> String {
    let part = |e: Option<rtrace_measure::interval::Estimate>| {
        e.map_or("-".to_owned(), |e| Ratio::from(e).to_string())
    };
    format!(
        "{} ÷ {} (extra ns per hit): {:.0} ns ÷ {:.0} ns = {} by mean, {} by median",
        c.numerator,
        c.denominator,
        c.numerator_ns,
        c.denominator_ns,
        part(c.mean),
        part(c.median)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, assert_has};
    use rtrace_measure::usdt::Case;
    use rtrace_tracer::TracerKind::{Bpftrace, Ebpf};

    /// The items as the terminal shows them: each `- line`, its `differs:` line indented.
    fn lines(r: &UsdtResult) -> String {
        let more = |m: Option<String>| m.map_or(String::new(), |d| format!("    {d}\n"));
        let line = |i: Item| format!("- {}\n{}", i.text, more(i.more));
        items(r).into_iter().map(line).collect()
    }

    /// The fixture with case-1 runs of our eBPF in `record` and `record-wakeup` and bpftrace in
    /// `record`, at the given extra costs (ns over case 0).
    fn bpf_result(record: f64, wakeup: f64, bpftrace: f64) -> UsdtResult {
        let mut r = fixtures::usdt();
        r.runs.truncate(1);
        let modes = [(Ebpf, "record", record), (Ebpf, "record-wakeup", wakeup)];
        for (tracer, mode, extra) in modes.into_iter().chain([(Bpftrace, "record", bpftrace)]) {
            let mut c = r.runs[0].clone();
            (c.tracer, c.case, c.variant, c.events) =
                (tracer, Case::Traced, Some(mode.into()), None);
            c.summary.mean_ns += extra;
            c.disturbed.iter_mut().for_each(|d| d.mean_ns += extra);
            for round in &mut c.rounds {
                round.summary.mean_ns += extra;
                round.disturbed.iter_mut().for_each(|d| d.mean_ns += extra);
            }
            r.runs.push(c);
        }
        r
    }

    #[test]
    fn every_line_says_what_differs_with_the_measured_wakeup_cost() {
        let mut r = bpf_result(815.0, 17_015.0, 16_015.0);
        let text = lines(&r);
        let l: Vec<&str> = text.lines().collect();
        assert_eq!(l.len(), 5, "{text}");
        let record = "- ebpf (record) ÷ bpftrace (record) (extra ns per hit): 815 ns ÷ 16015 ns";
        assert!(
            l[0].starts_with(record) && l[0].ends_with("[usdt]"),
            "{text}"
        );
        assert!(
            l[1].starts_with("    differs: the wake-up policy"),
            "{text}"
        );
        assert_has(l[1], &["measured on our eBPF: 16200 ns"]);
        let wakeup = "(extra ns per hit): 17015 ns ÷ 16015 ns";
        assert!(l[2].starts_with(&format!(
            "- ebpf (record-wakeup) ÷ bpftrace (record) {wakeup}"
        )));
        let both = "both wake the reader on every event";
        assert_has(
            l[3],
            &[
                "differs: only the BPF program and the reader",
                both,
                "same int3 uprobe trap",
            ],
        );
        let cost =
            "- wake-up cost per event (usdt): ebpf (record-wakeup) − ebpf (record) = 16200 ns";
        assert!(l[4].starts_with(cost), "{text}");
        // Without the wake-up variant, the line says how to measure it.
        r.runs
            .retain(|c| c.variant.as_deref() != Some("record-wakeup"));
        assert_has(
            &lines(&r),
            &["not measured here: add --bpf-mode record-wakeup"],
        );
    }

    #[test]
    fn lttng_against_ftrace_as_extra_costs_with_intervals() {
        let mut r = fixtures::usdt();
        assert_eq!(lines(&r), "", "ftrace case 1 lost events");
        r.config.allow_loss = true;
        let text = lines(&r);
        assert!(
            text.starts_with("- lttng ÷ ftrace (extra ns per hit): "),
            "{text}"
        );
        assert_has(&text, &["× (", "by median"]);
    }
}
