//! The terminal report: Table 3.1's numbers (min, max, mean, stddev per tracer and case) with
//! percentiles, the ratio to case 0, event accounting, then the warnings. Colour only when asked
//! (the CLI asks when stdout is a terminal); `report.txt` is the same text without colour.

use crate::export::{Exporter, Output};
use crate::format::{case0_ratio, ns, run_tracer, steady};
use crate::result::{AnyResult, Report};
use crate::table::Table;
use anstyle::{AnsiColor, Style};
use anyhow::Result;
use rtrace_measure::usdt::UsdtResult;
use rtrace_measure::Warning;

/// Styles of the terminal report; all plain without colour.
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    colour: bool,
}

impl Paint {
    pub fn new(colour: bool) -> Paint {
        Paint { colour }
    }

    fn with(&self, style: Style, text: &str) -> String {
        if self.colour {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.with(Style::new().bold(), text)
    }

    pub fn warning(&self, text: &str) -> String {
        self.with(
            Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
            text,
        )
    }
}

/// The usdt table of `r` (with `r.warnings`).
pub fn usdt(r: &UsdtResult, alone: &[&crate::result::Entry], paint: Paint) -> String {
    let e = &r.environment;
    let mut out = paint.bold(&format!(
        "usdt {}: {} iterations per case on CPU {} — kernel {} ({}), {}",
        if rtrace_measure::staircase::is_decomposition(r) {
            "cost decomposition"
        } else {
            "microbenchmark"
        },
        r.config.iterations,
        r.config.run.cpu,
        e.kernel_release,
        e.preemption,
        e.cpu_model
    ));
    out.push_str("\n\nsummary:\n");
    for l in crate::summary::usdt(r, &r.warnings) {
        out.push_str(&format!("  {l}\n"));
    }
    out.push('\n');
    let mut t = Table::new(
        &[
            "tracer",
            "case",
            "min",
            "max",
            "mean",
            "mean w/o dist.",
            "disturbed",
            "stddev",
            "p50",
            "p99",
            "p99.9",
            "x case0",
            "hits",
            "recorded",
            "lost",
        ],
        2,
    );
    for c in &r.runs {
        let s = &c.summary;
        let ev = |f: fn(&rtrace_measure::Events) -> u64| {
            c.events.as_ref().map_or("-".into(), |e| f(e).to_string())
        };
        let [steady_mean, disturbed] = steady(c);
        t.row(vec![
            run_tracer(c),
            c.case.number().to_string(),
            ns(s.min_ns),
            ns(s.max_ns),
            ns(s.mean_ns),
            steady_mean,
            disturbed,
            ns(s.stddev_ns),
            ns(s.p50_ns),
            ns(s.p99_ns),
            ns(s.p999_ns),
            case0_ratio(r, c),
            ev(|e| e.hits),
            ev(|e| e.recorded),
            ev(|e| e.lost),
        ]);
    }
    out.push_str("per-call duration in ns\n");
    out.push_str(&t.render());
    if let Some(n) = crate::threads::note(r) {
        out.push_str(&format!("\n{n}.\nper loop thread:\n"));
        let mut t = Table::new(&crate::threads::HEADER, crate::threads::TEXT_COLUMNS);
        for row in crate::threads::rows(r) {
            t.row(row);
        }
        out.push_str(&t.render());
    }
    if let Some(first) = r.runs.first() {
        out.push_str(&format!(
            "\ntimer overhead (empty interval): mean {} ns, min {} ns; TSC {:.3} GHz\n",
            ns(first.timer_overhead.mean_ns),
            ns(first.timer_overhead.min_ns),
            first.tsc_hz / 1e9
        ));
    }
    out.push_str("\nhow these numbers are made:\n");
    out.push_str(&crate::statistics::method_lines(r, "  "));
    let dormant = crate::statistics::dormant_lines(r, "  ");
    if !dormant.is_empty() {
        out.push_str("\ndormant cases against case 0 (95% CI over rounds):\n");
        out.push_str(&dormant);
    }
    let rows = crate::ratios::case1_vs_cheapest(r);
    if !rows.is_empty() {
        out.push_str("\nextra ns per hit relative to the cheapest tracer (95% CI over rounds):\n");
        for row in rows {
            out.push_str(&format!("  {}\n", row.sentence()));
        }
    }
    let reference = crate::reference::lines(r, "  ");
    if !reference.is_empty() {
        out.push_str("\nreference comparisons (same run):\n");
        out.push_str(&reference);
    }
    out.push_str(&crate::hooks::text(r));
    out.push_str(&crate::staircase::text(r, alone));
    out.push_str(&warnings(&r.warnings, paint));
    out
}

/// `Warning: ...` lines, hyperfine style; empty without warnings.
pub fn warnings(list: &[Warning], paint: Paint) -> String {
    let mut out = String::new();
    if !list.is_empty() {
        out.push('\n');
    }
    for w in list {
        out.push_str(&format!("{} {w}\n", paint.warning("Warning:")));
    }
    out
}

/// `report.txt`: the terminal report of every result.
pub struct Text {
    pub colour: bool,
}

impl Exporter for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, report: &Report) -> Result<Vec<Output>> {
        let paint = Paint::new(self.colour);
        let mut out = String::new();
        for e in &report.entries {
            if !out.is_empty() {
                out.push('\n');
            }
            match &e.result {
                AnyResult::Usdt(r) => {
                    let alone = crate::staircase::alone_beside(report, r);
                    let mut r = r.clone();
                    r.warnings = e.warnings.clone();
                    out.push_str(&usdt(&r, &alone, paint));
                }
                AnyResult::Sweep(r) => {
                    out.push_str(&crate::sweep_terminal::sweep(
                        r,
                        crate::sweep_shift::usdt_beside(report, r),
                    ));
                    out.push_str(&warnings(&e.warnings, paint));
                }
                AnyResult::Rate(r) => {
                    out.push_str(&crate::rate::text(r));
                    out.push_str(&warnings(&e.warnings, paint));
                }
                AnyResult::Npt(r) => {
                    out.push_str(&crate::npt::text(r));
                    out.push_str(&warnings(&e.warnings, paint));
                }
                AnyResult::Events(r) => {
                    out.push_str(&crate::events::text(r));
                    out.push_str(&warnings(&e.warnings, paint));
                }
            }
        }
        Ok(vec![Output::new("report.txt", out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::run_label;

    #[test]
    fn colour_only_when_asked() {
        let mut r = crate::fixtures::usdt();
        r.warnings = rtrace_measure::warnings::usdt(&r);
        let plain = usdt(&r, &[], Paint::new(false));
        assert!(!plain.contains('\x1b'));
        assert!(
            plain.contains("Warning: ftrace case 1: 5000 of 20000 events"),
            "{plain}"
        );
        assert!(usdt(&r, &[], Paint::new(true)).contains("\x1b["));
        assert_eq!(run_label(&r.runs[1]), "ftrace case 1");
    }

    #[test]
    fn text_file_has_every_result() {
        let report = Report::new([
            (None, AnyResult::Usdt(crate::fixtures::usdt())),
            (
                None,
                AnyResult::Sweep(crate::fixtures::sweep("PREEMPT_RT", 1)),
            ),
        ]);
        let out = Text { colour: false }.export(&report).unwrap();
        let text = String::from_utf8(out[0].bytes.clone()).unwrap();
        assert!(text.contains("usdt microbenchmark") && text.contains("cyclictest sweep"));
        assert!(
            text.contains("Warning: measured in a virtual machine"),
            "{text}"
        );
    }
}
