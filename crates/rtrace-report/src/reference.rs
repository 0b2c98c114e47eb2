//! The literature's comparisons as lines: our eBPF backend against bpftrace in the same mode
//! (extra ns per hit), LTTng against ftrace (case-1 means); each line says what differs between
//! its two sides, with the measured cost of that difference where the run has it (the wake-up
//! per event, the uprobe trap).

use rtrace_measure::probe_cost::{
    differences, reference_ratios, CostDifference, CostRatio, Difference, Pair,
};
use rtrace_measure::usdt::{HookKind, UsdtResult};

/// One comparison or measured difference: its line, and what differs between its sides.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub line: String,
    /// `None` for a measured difference (its line says it all).
    pub differs: Option<String>,
}

/// Every comparison `r` allows, then the measured differences.
pub fn items(r: &UsdtResult) -> Vec<Item> {
    let ratios = reference_ratios(r);
    let diffs = differences(r);
    let mut out = Vec::new();
    for c in &ratios {
        out.push(Item {
            line: format!(
                "{} ÷ {} ({}, {}): {:.0} ns ÷ {:.0} ns = {:.3}{}",
                c.numerator,
                c.denominator,
                c.hook,
                c.measure,
                c.numerator_ns,
                c.denominator_ns,
                c.ratio,
                spread(&c.per_round)
            ),
            differs: Some(differs(c, &diffs)),
        });
    }
    for d in &diffs {
        let what = match d.what {
            Difference::Wakeup => format!("wake-up cost per event ({})", d.hook),
            Difference::Trap => "int3 trap cost per hit (usdt − usdt-nop5)".to_owned(),
        };
        out.push(Item {
            line: format!(
                "{what}: {} − {} = {:.0} ns{}",
                d.minuend,
                d.subtrahend,
                d.ns,
                spread_ns(&d.per_round)
            ),
            differs: None,
        });
    }
    out
}

/// One line per comparison `r` allows, each followed by an indented `differs:` line; then the
/// measured differences. Empty when there is nothing to compare.
pub fn lines(r: &UsdtResult, bullet: &str) -> String {
    let indent = " ".repeat(bullet.chars().count() + 2);
    let mut out = String::new();
    for item in items(r) {
        out.push_str(&format!("{bullet}{}\n", item.line));
        if let Some(d) = item.differs {
            out.push_str(&format!("{indent}differs: {d}\n"));
        }
    }
    out
}

/// What tells the two sides of `c` apart, with the measured cost of it when `diffs` has it.
fn differs(c: &CostRatio, diffs: &[CostDifference]) -> String {
    let cost = |what: Difference, hook: HookKind, mode: &str| {
        diffs
            .iter()
            .find(|d| d.what == what && d.hook == hook && d.mode == mode)
            .map(|d| format!("{:.0} ns per hit", d.ns))
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

/// ` (per round: 0.91-1.02, median 0.95, 5 rounds)`; empty with one round.
fn spread(per_round: &[f64]) -> String {
    if per_round.len() < 2 {
        return String::new();
    }
    let mut v = per_round.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    format!(
        " (per round: {:.3}–{:.3}, median {median:.3}, {n} rounds)",
        v[0],
        v[n - 1]
    )
}

/// ` (per round: 15800–16900 ns, 3 rounds)`; empty with one round.
fn spread_ns(per_round: &[f64]) -> String {
    if per_round.len() < 2 {
        return String::new();
    }
    let lo = per_round.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = per_round.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        " (per round: {lo:.0}–{hi:.0} ns, {} rounds)",
        per_round.len()
    )
}

#[cfg(test)]
mod tests {
    use super::{lines, spread};
    use rtrace_measure::usdt::{Case, UsdtResult};
    use rtrace_tracer::TracerKind;

    /// The fixture with case-1 runs of our eBPF in `record` and `record-wakeup` and bpftrace in
    /// `record`, at the given means (ns; case 0 is ~15 ns).
    fn bpf_result(record: f64, wakeup: f64, bpftrace: f64) -> UsdtResult {
        let mut r = crate::fixtures::usdt();
        let template = r
            .runs
            .iter()
            .find(|c| c.case == Case::Traced)
            .unwrap()
            .clone();
        r.runs.retain(|c| c.case == Case::Baseline);
        for (tracer, mode, mean) in [
            (TracerKind::Ebpf, "record", record),
            (TracerKind::Ebpf, "record-wakeup", wakeup),
            (TracerKind::Bpftrace, "record", bpftrace),
        ] {
            let mut c = template.clone();
            c.tracer = tracer;
            c.variant = Some(mode.into());
            c.summary.mean_ns = mean;
            r.runs.push(c);
        }
        r
    }

    #[test]
    fn every_line_says_what_differs_with_the_measured_wakeup_cost() {
        let base = crate::fixtures::usdt().runs[0].summary.mean_ns;
        let text = lines(
            &bpf_result(815.0 + base, 17_015.0 + base, 16_015.0 + base),
            "- ",
        );
        let l: Vec<&str> = text.lines().collect();
        assert!(
            l[0].starts_with(
                "- ebpf (record) ÷ bpftrace (record) (usdt, extra ns per hit): 815 ns ÷ 16015 ns"
            ),
            "{text}"
        );
        assert!(
            l[1].contains("differs: the wake-up policy")
                && l[1].contains("measured on our eBPF: 16200 ns per hit"),
            "{text}"
        );
        assert!(l[2].starts_with("- ebpf (record-wakeup) ÷ bpftrace (record) (usdt, extra ns per hit): 17015 ns ÷ 16015 ns = 1.062"), "{text}");
        assert!(
            l[3].contains("differs: only the BPF program and the reader")
                && l[3].contains("both wake the reader on every event")
                && l[3].contains("same int3 uprobe trap"),
            "{text}"
        );
        assert_eq!(
            l[4],
            "- wake-up cost per event (usdt): ebpf (record-wakeup) − ebpf (record) = 16200 ns"
        );
        assert_eq!(l.len(), 5, "{text}");
    }

    #[test]
    fn without_the_wakeup_variant_the_line_says_how_to_measure_it() {
        let mut r = bpf_result(900.0, 17_000.0, 16_000.0);
        r.runs
            .retain(|c| c.variant.as_deref() != Some("record-wakeup"));
        let text = lines(&r, "  ");
        assert!(
            text.contains("not measured here: add --bpf-mode record-wakeup"),
            "{text}"
        );
    }

    #[test]
    fn spread_names_range_and_median() {
        assert_eq!(spread(&[0.9]), "");
        assert_eq!(
            spread(&[1.0, 0.8, 0.9]),
            " (per round: 0.800–1.000, median 0.900, 3 rounds)"
        );
        assert!(spread(&[1.0, 0.8]).contains("median 0.900"));
    }
}
