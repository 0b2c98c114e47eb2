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
    for c in &ratios {
        out.push_str(&format!(
            "{bullet}{} ÷ {} ({}): {:.0} ns ÷ {:.0} ns = {:.3}{}\n",
            c.numerator,
            c.denominator,
            c.measure,
            c.numerator_ns,
            c.denominator_ns,
            c.ratio,
            spread(&c.per_round)
        ));
    }
    if ratios.iter().any(|c| c.numerator.starts_with("ebpf")) {
        out.push_str(&format!(
            "{bullet}why: on the `usdt` probe (a 1-byte nop) every tracer pays the same int3 uprobe trap, so eBPF and bpftrace differ only by their BPF programs; on `usdt-nop5` libbpf attaches to the nop5, which Linux >= 6.18 turns into a call without the trap, while bpftrace attaches at the note's address and still traps\n"
        ));
    }
    out
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

#[cfg(test)]
mod tests {
    use super::spread;

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
