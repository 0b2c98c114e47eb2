//! The literature's comparisons as lines: our eBPF backend against bpftrace in the same mode,
//! LTTng against ftrace, both as ratios of extra ns per hit with intervals over rounds.

use crate::ratios::Ratio;
use rtrace_measure::probe_cost::{reference_ratios, CostRatio};
use rtrace_measure::usdt::UsdtResult;

/// One line per comparison `r` allows, under a heading; empty when none.
pub fn lines(r: &UsdtResult, bullet: &str) -> String {
    let ratios = reference_ratios(r);
    if ratios.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for c in &ratios {
        out.push_str(&format!("{bullet}{}\n", sentence(c)));
    }
    if ratios.iter().any(|c| c.numerator.starts_with("ebpf")) {
        out.push_str(&format!(
            "{bullet}why: on the `usdt` probe (a 1-byte nop) every tracer pays the same int3 uprobe trap, so eBPF and bpftrace differ only by their BPF programs; on `usdt-nop5` libbpf attaches to the nop5, which Linux >= 6.18 turns into a call without the trap, while bpftrace attaches at the note's address and still traps\n"
        ));
    }
    out
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
    use crate::fixtures;

    #[test]
    fn lttng_against_ftrace_as_extra_costs_with_intervals() {
        let mut r = fixtures::usdt();
        assert_eq!(lines(&r, "- "), "", "ftrace case 1 lost events");
        r.config.allow_loss = true;
        let text = lines(&r, "- ");
        assert!(
            text.starts_with("- lttng ÷ ftrace (extra ns per hit): ")
                && text.contains("× (")
                && text.contains("by median"),
            "{text}"
        );
    }
}
