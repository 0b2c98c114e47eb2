//! How a usdt result's numbers were made, said where they are shown: the ratio definition, the
//! interval method (or why there is no interval), the disturbed-sample rule, the runs left out
//! of ratios; and how far each dormant case is from its case 0.

use crate::ratios::usdt_method;
use rtrace_measure::disturbed;
use rtrace_measure::interval::Estimate;
use rtrace_measure::probe_cost::{dormant, lossy_notes};
use rtrace_measure::usdt::UsdtResult;

/// One line per fact about the method, each starting with `bullet`.
pub fn method_lines(r: &UsdtResult, bullet: &str) -> String {
    let mut out = format!("{bullet}ratios: {}\n", usdt_method(r));
    let (disturbed, samples) = r.runs.iter().fold((0, 0), |(d, n), c| {
        (d + c.disturbed.map_or(0, |x| x.count), n + c.summary.count)
    });
    out.push_str(&format!(
        "{bullet}disturbed samples: {}; {disturbed} of {samples} samples here; \"mean w/o dist.\" leaves them out, \"mean\" keeps every sample (the thesis' statistic)\n",
        disturbed::RULE
    ));
    for n in lossy_notes(r) {
        out.push_str(&format!("{bullet}{n}\n"));
    }
    out
}

/// `+0.12 ns (-0.30 – +0.55)`, or without interval.
fn difference(e: Option<Estimate>) -> String {
    let Some(e) = e else {
        return "-".into();
    };
    match (e.low, e.high) {
        (Some(l), Some(h)) => format!("{:+.2} ns ({l:+.2} – {h:+.2})", e.estimate),
        _ => format!("{:+.2} ns", e.estimate),
    }
}

/// One line per dormant run (case 2 or 3): its distance from case 0 by median and by mean
/// without disturbed samples, with intervals over rounds, and the plain means' ratio.
pub fn dormant_lines(r: &UsdtResult, bullet: &str) -> String {
    dormant(r)
        .iter()
        .map(|d| {
            format!(
                "{bullet}{} − case 0: median {}, mean w/o dist. {}; mean {:.3}× case 0\n",
                d.run,
                difference(d.median),
                difference(d.mean),
                d.mean_ratio
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn the_method_is_named_with_its_rule_and_the_lossy_run() {
        let text = method_lines(&fixtures::usdt(), "- ");
        assert!(text.contains("- ratios: extra ns per hit"), "{text}");
        assert!(text.contains("Student-t interval over rounds"), "{text}");
        assert!(text.contains("10 × its run's median"), "{text}");
        assert!(
            text.contains("ftrace case 1 lost 5000 of 20000 events"),
            "{text}"
        );
    }

    #[test]
    fn dormant_runs_are_within_an_interval_of_case_0() {
        let text = dormant_lines(&fixtures::usdt(), "  ");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[0].starts_with("  ftrace case 2 − case 0: median +")
                && lines[0].contains(" ns (")
                && lines[0].contains("× case 0"),
            "{text}"
        );
    }
}
