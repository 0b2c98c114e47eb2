//! The literature's comparisons as lines: our eBPF backend against bpftrace in the same mode
//! (extra ns per hit), LTTng against ftrace (case-1 means).

use rtrace_measure::probe_cost::reference_ratios;
use rtrace_measure::usdt::UsdtResult;

/// One line per comparison `r` allows, under a heading; empty when none.
pub fn lines(r: &UsdtResult, bullet: &str) -> String {
    let ratios = reference_ratios(r);
    if ratios.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for c in ratios {
        out.push_str(&format!(
            "{bullet}{} ÷ {} ({}): {:.0} ns ÷ {:.0} ns = {:.3}\n",
            c.numerator, c.denominator, c.measure, c.numerator_ns, c.denominator_ns, c.ratio
        ));
    }
    out
}
