//! Terminal reports of the cyclictest sweep and of `compare`: latencies in µs.

use crate::table::Table;
use rtrace_measure::compare::Comparison;
use rtrace_measure::sweep::SweepResult;

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1000.0)
}

fn signed_us(ns: f64) -> String {
    format!("{:+.2}", ns / 1000.0)
}

/// The sweep table: one row per (configuration, source), then what could not run here. Its
/// warnings (failed runs included) come from `rtrace_measure::warnings::sweep`.
pub fn sweep(r: &SweepResult, usdt: Option<&rtrace_measure::usdt::UsdtResult>) -> String {
    let c = &r.config;
    let e = &r.environment;
    let mut out = format!(
        "cyclictest sweep: {} loops every {} us on CPU {} (main CPU {}), SCHED_FIFO {} — kernel {} ({}), {}\n",
        c.loops,
        c.interval_us,
        c.run.cpu,
        c.main_cpu,
        c.run.priority.unwrap_or(0),
        e.kernel_release,
        e.preemption,
        e.cpu_model
    );
    out.push_str("summary:\n");
    for l in crate::summary::sweep(r, &r.warnings, usdt) {
        out.push_str(&format!("  {l}\n"));
    }
    out.push_str(&format!(
        "{}\nwake-up latency in us; overflow: samples above {} us\n\n",
        crate::format::sweep_notes(r).join("\n"),
        c.histogram_limit_us
    ));
    let mut t = Table::new(&crate::sweep_rows::HEADER, crate::sweep_rows::TEXT_COLUMNS);
    for row in crate::sweep_rows::rows(r) {
        t.row(row.cells);
    }
    out.push_str(&t.render());
    out.push_str(&shift_table(r, usdt));
    let skipped = |title: &str, list: &[rtrace_measure::sweep::Skipped]| -> String {
        if list.is_empty() {
            return String::new();
        }
        let mut s = format!("\n{title}:\n");
        for k in list {
            match k.source {
                Some(src) => s.push_str(&format!("  {} {}: {}\n", k.config, src, k.reason)),
                None => s.push_str(&format!("  {}: {}\n", k.config, k.reason)),
            }
        }
        s
    };
    out.push_str(&skipped("unavailable here", &r.unavailable));
    // Failed runs and everything else worth a warning: `rtrace_measure::warnings::sweep`.
    out
}

/// The latency shifts against `none` (see [`crate::sweep_shift`]), beside `usdt`'s per-hit
/// costs when given; empty without a `none` run.
pub fn shift_table(r: &SweepResult, usdt: Option<&rtrace_measure::usdt::UsdtResult>) -> String {
    let rows = crate::sweep_shift::rows(r, usdt);
    if rows.is_empty() {
        return String::new();
    }
    let mut t = Table::new(
        &crate::sweep_shift::HEADER,
        crate::sweep_shift::TEXT_COLUMNS,
    );
    for row in rows {
        t.row(row);
    }
    format!("\n{}:\n{}", crate::sweep_shift::NOTE, t.render())
}

/// The comparison table: per (configuration, source) and statistic, A, B and B − A in µs.
pub fn compare(c: &Comparison) -> String {
    let mut out = String::from("compare: wake-up latency in us, B − A\n");
    for (name, s) in [("A", &c.a), ("B", &c.b)] {
        out.push_str(&format!(
            "  {name}: {} — kernel {} ({}), {} loops every {} us\n",
            s.file, s.kernel_release, s.preemption, s.loops, s.interval_us
        ));
    }
    out.push('\n');
    let mut t = Table::new(&["config", "source", "stat", "A", "B", "B-A", "B/A"], 3);
    for p in &c.pairs {
        for (i, d) in p.stats.iter().enumerate() {
            let first = i == 0;
            t.row(vec![
                if first {
                    p.config.to_string()
                } else {
                    String::new()
                },
                if first {
                    p.source.to_string()
                } else {
                    String::new()
                },
                d.stat.name().to_string(),
                us(d.a_ns),
                us(d.b_ns),
                signed_us(d.diff_ns),
                d.ratio.map_or("-".into(), |r| format!("{r:.2}")),
            ]);
        }
        if p.a_overflows > 0 || p.b_overflows > 0 {
            t.row(vec![
                String::new(),
                String::new(),
                "overflow".into(),
                p.a_overflows.to_string(),
                p.b_overflows.to_string(),
                format!("{:+}", p.b_overflows as i64 - p.a_overflows as i64),
                "-".into(),
            ]);
        }
    }
    if c.pairs.is_empty() {
        out.push_str("no (configuration, source) was measured in both files\n");
    } else {
        out.push_str(&t.render());
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
