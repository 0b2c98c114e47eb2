//! What `rtrace-bench compare` prints for two sweeps: per (configuration, source) and statistic,
//! A, B and B − A in µs.

use crate::doc::{columns, Table};
use crate::format::us;
use rtrace_measure::compare::Comparison;

fn signed_us(ns: f64) -> String {
    format!("{:+.2}", ns / 1000.0)
}

/// The comparison table: per (configuration, source) and statistic, A, B and B − A in µs.
pub fn sweeps(c: &Comparison) -> String {
    let mut out = String::from("compare: wake-up latency in us, B − A\n");
    for (name, s) in [("A", &c.a), ("B", &c.b)] {
        out.push_str(&format!(
            "  {name}: {} — kernel {} ({}), {} loops every {} us\n",
            s.file, s.kernel_release, s.preemption, s.loops, s.interval_us
        ));
    }
    out.push('\n');
    let mut t = Table::new(
        "compare",
        3,
        columns(&["config", "source", "stat", "A", "B", "B-A", "B/A"]),
    );
    for p in &c.pairs {
        for (i, d) in p.stats.iter().enumerate() {
            // The configuration and source on their first row only.
            let (config, source) = match i {
                0 => (p.config.to_string(), p.source.to_string()),
                _ => (String::new(), String::new()),
            };
            t.text_row(vec![
                config,
                source,
                d.stat.name().to_string(),
                us(d.a_ns),
                us(d.b_ns),
                signed_us(d.diff_ns),
                d.ratio.map_or("-".into(), |r| format!("{r:.2}")),
            ]);
        }
        if p.a_overflows > 0 || p.b_overflows > 0 {
            let (a, b) = (p.a_overflows.to_string(), p.b_overflows.to_string());
            let diff = format!("{:+}", p.b_overflows as i64 - p.a_overflows as i64);
            let row = ["", "", "overflow", &a, &b, &diff, "-"];
            t.text_row(row.map(String::from).to_vec());
        }
    }
    if c.pairs.is_empty() {
        out.push_str("no (configuration, source) was measured in both files\n");
    } else {
        out.push_str(&crate::doc::terminal::table::plain(&t));
    }
    if !c.only_a.is_empty() {
        out.push_str(&format!("\nonly in A: {}\n", c.only_a.join(", ")));
    }
    if !c.only_b.is_empty() {
        out.push_str(&format!("only in B: {}\n", c.only_b.join(", ")));
    }
    if !c.warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for w in &c.warnings {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_with_two_decimals() {
        assert_eq!(us(29_123.0), "29.12");
        assert_eq!(signed_us(-900.0), "-0.90");
        assert_eq!(signed_us(1500.0), "+1.50");
    }
}
