//! `report.md`: Table 3.1 in the thesis' layout per hook kind (two tracers per table, min / max /
//! x̄ / s per case), the percentiles and event accounting, the sweep's latencies, figures, warnings and the
//! environment.

use crate::export::{Exporter, Output};
use crate::figures;
use crate::format::{Table31, TABLE31_NOTE};
use crate::result::{Entry, Report};
use anyhow::Result;
use rtrace_measure::sweep::SweepResult;
use rtrace_measure::usdt::UsdtResult;
use rtrace_measure::{Environment, Warning};

/// Tracers per Table 3.1 block, as in the thesis.
const TRACERS_PER_TABLE: usize = 2;

/// Escapes what would break a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A table with the first column left-aligned and the numbers right-aligned.
fn table(header: &[String], rows: &[Vec<String>]) -> String {
    aligned(header, rows, 1)
}

/// A table whose first `left` columns are left-aligned, the rest right-aligned.
fn aligned(header: &[String], rows: &[Vec<String>], left: usize) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let mut out = line(header);
    let rule: Vec<String> = header
        .iter()
        .enumerate()
        .map(|(i, _)| {
            if i < left {
                "---".into()
            } else {
                "---:".into()
            }
        })
        .collect();
    out.push_str(&line(&rule));
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// Table 3.1 of every hook kind: per-call duration in ns, tracers in blocks of two as in the
/// thesis.
pub fn table31(r: &UsdtResult) -> String {
    let mut out = String::new();
    for t in Table31::per_hook(r) {
        out.push_str(&format!("### {}\n\n", t.title()));
        for block in t.columns.chunks(TRACERS_PER_TABLE) {
            let mut header = vec!["Case".to_owned()];
            for &col in block {
                let name = t.column_label(col);
                header.extend(["min", "max", "x̄", "s"].map(|s| format!("{name} {s}")));
            }
            let rows: Vec<Vec<String>> = t
                .cases
                .iter()
                .map(|&case| {
                    let mut row = vec![Table31::case_label(case)];
                    for &col in block {
                        row.extend(t.numbers(col, case));
                    }
                    row
                })
                .collect();
            out.push_str(&table(&header, &rows));
            out.push('\n');
        }
    }
    out.push_str(TABLE31_NOTE);
    out.push_str("\n\n");
    out
}

fn usdt_details(r: &UsdtResult) -> String {
    let header: Vec<String> = crate::usdt_rows::HEADER.map(String::from).to_vec();
    table(&header, &crate::usdt_rows::rows(r))
}

fn sweep_table(r: &SweepResult) -> String {
    let header: Vec<String> = crate::sweep_rows::HEADER.map(String::from).to_vec();
    let rows: Vec<Vec<String>> = crate::sweep_rows::rows(r)
        .into_iter()
        .map(|row| row.cells)
        .collect();
    let mut out = aligned(&header, &rows, crate::sweep_rows::TEXT_COLUMNS);
    for (title, list) in [
        ("Not available here", &r.unavailable),
        ("Failed", &r.failed),
    ] {
        if !list.is_empty() {
            out.push_str(&format!("\n{title}:\n\n"));
            for k in list {
                let src = k.source.map_or(String::new(), |s| format!(" ({s})"));
                out.push_str(&format!("- `{}`{src}: {}\n", k.config, k.reason));
            }
        }
    }
    out
}

/// The result's ratios as sentences with their bootstrap interval; nothing without pairs.
fn ratio_list(result: &crate::AnyResult) -> String {
    let Ok(ratios) = crate::ratios::of_entry(result) else {
        return String::new();
    };
    if ratios.rows.is_empty() {
        return String::new();
    }
    let mut out = format!("\n### {}\n\n{}:\n\n", ratios.title, ratios.method);
    for r in ratios.rows {
        out.push_str(&format!("- {}\n", r.sentence()));
    }
    out
}

/// `- **kind** scope: message` per warning, or a line saying there are none.
pub fn warnings(list: &[Warning]) -> String {
    if list.is_empty() {
        return "No warnings.\n".into();
    }
    let mut out = String::new();
    for w in list {
        let kind = serde_json::to_value(w.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        out.push_str(&format!("- **{kind}** {w}\n"));
    }
    out
}

/// The environment as a two-column table.
pub fn environment(e: &Environment) -> String {
    let rows: Vec<Vec<String>> = crate::format::environment_rows(e)
        .into_iter()
        .map(|(k, v)| vec![k.to_owned(), cell(&v)])
        .collect();
    aligned(&["setting".into(), "value".into()], &rows, 2)
}

fn entry(e: &Entry, figures: &[figures::Figure], report: &Report) -> String {
    let mut out = String::new();
    let source = e
        .file
        .as_ref()
        .map_or(String::new(), |f| format!(" (`{f}`)"));
    match &e.result {
        crate::result::AnyResult::Usdt(r) => {
            out.push_str(&format!(
                "## `{}`: {}{source}\n\n{} iterations per case (after {} warm-up) on CPU {}; kernel {}.\n\n",
                e.id, crate::staircase::usdt_heading(r), r.config.iterations, r.config.warmup, r.config.run.cpu, e.kernel()
            ));
            if let Some(n) = crate::threads::note(r) {
                out.push_str(&format!("{n}.\n\n"));
            }
            out.push_str(&table31(r));
            let rows = crate::threads::rows(r);
            if !rows.is_empty() {
                let header: Vec<String> = crate::threads::HEADER.map(String::from).to_vec();
                out.push_str("\n### Per loop thread\n\n");
                out.push_str(&aligned(&header, &rows, crate::threads::TEXT_COLUMNS));
            }
            out.push_str("### Percentiles (ns) and event accounting\n\n");
            out.push_str(&usdt_details(r));
            out.push_str("\n### How these numbers are made\n\n");
            out.push_str(&crate::statistics::method_lines(r, "- "));
            let dormant = crate::statistics::dormant_lines(r, "- ");
            if !dormant.is_empty() {
                out.push_str("\n### Dormant cases against case 0 (95% CI over rounds)\n\n");
                out.push_str(&dormant);
            }
            let reference = crate::reference::lines(r, "- ");
            if !reference.is_empty() {
                out.push_str("\n### Reference comparisons (same run)\n\n");
                out.push_str(&reference);
            }
            let stairs = crate::staircase::tables(r, &crate::staircase::alone_beside(report, r));
            if !stairs.is_empty() {
                out.push_str(&format!(
                    "\n### Where the nanoseconds go\n\n{}.\n",
                    crate::staircase::NOTE
                ));
                let header: Vec<String> = crate::staircase::HEADER.map(String::from).to_vec();
                for t in stairs {
                    out.push_str(&format!("\n**{}** ({}):\n\n", t.title, t.check));
                    out.push_str(&aligned(&header, &t.rows, crate::staircase::TEXT_COLUMNS));
                }
                for l in crate::staircase::program_cost_lines(r)
                    .into_iter()
                    .chain(crate::staircase::uncounted_line(r))
                {
                    out.push_str(&format!("\n- {l}\n"));
                }
            }
        }
        crate::result::AnyResult::Sweep(r) => {
            out.push_str(&format!(
                "## `{}`: wake-up latency in µs{source}\n\n{} loops every {} µs on CPU {} (SCHED_FIFO {}); kernel {}. {}.\n\n",
                e.id, r.config.loops, r.config.interval_us, r.config.run.cpu, r.config.run.priority.unwrap_or(0), e.kernel(),
                crate::format::sweep_notes(r).join(". ")
            ));
            out.push_str(&sweep_table(r));
            let usdt = crate::sweep_shift::usdt_beside(report, r);
            let rows = crate::sweep_shift::rows(r, usdt);
            if !rows.is_empty() {
                let header: Vec<String> = crate::sweep_shift::HEADER.map(String::from).to_vec();
                out.push_str(&format!(
                    "\n### Latency shift against `none`\n\n{}.\n\n",
                    crate::sweep_shift::NOTE
                ));
                out.push_str(&aligned(&header, &rows, crate::sweep_shift::TEXT_COLUMNS));
            }
        }
        crate::result::AnyResult::Rate(r) => {
            out.push_str(&format!(
                "## `{}`: highest lossless event rate{source}

{} ms per run on {}; kernel {}.

{}.

",
                e.id,
                r.config.duration_ms,
                crate::rate::on(r),
                e.kernel(),
                crate::rate::NOTE
            ));
            let header: Vec<String> = crate::rate::HEADER.map(String::from).to_vec();
            out.push_str(&aligned(
                &header,
                &crate::rate::rows(r),
                crate::rate::TEXT_COLUMNS,
            ));
            out.push_str("\n### Every run\n\n");
            let header: Vec<String> = crate::rate::POINT_HEADER.map(String::from).to_vec();
            out.push_str(&aligned(&header, &crate::rate::point_rows(r), 3));
            for f in &r.failed {
                out.push_str(&format!("\n- failed: {f}\n"));
            }
        }
        crate::result::AnyResult::Npt(r) => {
            out.push_str(&format!(
                "## `{}`: npt, gaps of a tight loop{source}\n\nKernel {}.\n\n{}.\n\n",
                e.id,
                e.kernel(),
                crate::npt::note(r)
            ));
            let header: Vec<String> = crate::npt::HEADER.map(String::from).to_vec();
            out.push_str(&aligned(
                &header,
                &crate::npt::rows(r),
                crate::npt::TEXT_COLUMNS,
            ));
            out.push_str(&format!(
                "\n```\n{}\n```\n",
                crate::npt::osnoise_line(r).trim_end()
            ));
            for f in &r.failed {
                out.push_str(&format!("\n- failed: {f}\n"));
            }
        }
        crate::result::AnyResult::Events(r) => {
            out.push_str(&format!(
                "## `{}`: events, per-event cost of tracer features{source}\n\nKernel {}.\n\n{}.\n",
                e.id,
                e.kernel(),
                crate::events::note(r)
            ));
            for w in r.workloads() {
                out.push_str(&format!(
                    "\n### {}: per-event cost, ns (Piotrowski's Table IV)\n\n",
                    w.name()
                ));
                out.push_str(&aligned(
                    &crate::events::cost_header(r),
                    &crate::events::cost_rows(r, w),
                    2,
                ));
                out.push_str(&format!(
                    "\n### {}: slowdown (Piotrowski's Table V)\n\n",
                    w.name()
                ));
                out.push_str(&aligned(
                    &crate::events::slowdown_header(r),
                    &crate::events::slowdown_rows(r, w),
                    1,
                ));
            }
            out.push_str("\n### Accounting\n\n");
            let header: Vec<String> = crate::events::CHECK_HEADER.map(String::from).to_vec();
            out.push_str(&aligned(&header, &crate::events::check_rows(r), 3));
            for l in crate::events::not_run(r) {
                out.push_str(&format!("\n- not run: {l}"));
            }
            for l in &r.retried {
                out.push_str(&format!("\n- retried once: {l}"));
            }
            out.push_str("\n\n### Programs\n\n");
            let header: Vec<String> = crate::events::DETAIL_HEADER.map(String::from).to_vec();
            out.push_str(&aligned(&header, &crate::events::detail_rows(r), 4));
            for f in &r.failed {
                out.push_str(&format!("\n- failed: {f}\n"));
            }
        }
    }
    out.push_str(&ratio_list(&e.result));
    let mine: Vec<&figures::Figure> = figures
        .iter()
        .filter(|f| f.entries == [e.id.clone()])
        .collect();
    if !mine.is_empty() {
        out.push_str("\n### Figures\n\n");
        for f in mine {
            out.push_str(&format!("![{}]({})\n\n", f.title, f.path()));
        }
    }
    out.push_str("\n### Warnings\n\n");
    out.push_str(&warnings(&e.warnings));
    out.push_str("\n### Environment\n\n");
    out.push_str(&environment(e.result.environment()));
    out
}

/// The Markdown report.
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, report: &Report) -> Result<Vec<Output>> {
        let figures = figures::plan(report);
        let mut out = String::from("# rtrace-bench report\n\n## Summary\n\n");
        for (title, lines) in crate::summary::of_report(report) {
            if let Some(t) = title {
                out.push_str(&format!("### `{t}`\n\n"));
            }
            for l in lines {
                out.push_str(&format!("- {l}\n"));
            }
            out.push('\n');
        }
        for e in &report.entries {
            out.push_str(&entry(e, &figures, report));
            out.push('\n');
        }
        let shared: Vec<&figures::Figure> =
            figures.iter().filter(|f| f.entries.len() > 1).collect();
        if !shared.is_empty() {
            out.push_str("## Across results\n\n");
            for f in shared {
                out.push_str(&format!("![{}]({})\n\n", f.title, f.path()));
            }
        }
        Ok(vec![Output::new("report.md", out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::AnyResult;

    #[test]
    fn table31_has_thesis_layout_and_the_result_numbers() {
        let r = crate::fixtures::usdt();
        let md = table31(&r);
        let mut lines = md.lines();
        assert_eq!(
            lines.next().unwrap(),
            "### Table 3.1, usdt hook: routine duration (ns)"
        );
        assert_eq!(
            lines.nth(1).unwrap(),
            "| Case | ftrace min | ftrace max | ftrace x̄ | ftrace s | lttng min | lttng max | lttng x̄ | lttng s |"
        );
        let c1 = r
            .runs
            .iter()
            .find(|c| c.tracer.name() == "ftrace" && c.case.number() == 1)
            .unwrap();
        let row = md.lines().find(|l| l.starts_with("| Case 1 |")).unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[2], crate::format::int(c1.summary.min_ns));
        let lossy = format!(
            "{}{}",
            crate::format::dec2(c1.summary.mean_ns),
            crate::format::LOSSY
        );
        assert_eq!(cells[4], lossy, "ftrace case 1 lost events: marked");
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| Case ")).collect();
        assert_eq!(table.len(), 5, "a header and four cases: {md}");
        for l in md
            .lines()
            .filter(|l| l.starts_with("| Case ") && !l.starts_with("| Case |"))
        {
            assert!(!l.split('|').any(|c| c.trim() == "-"), "an empty cell: {l}");
        }
        assert!(md.contains(TABLE31_NOTE));
    }

    #[test]
    fn report_has_every_section() {
        let report = Report::new([
            (
                Some("a/usdt.json".into()),
                AnyResult::Usdt(crate::fixtures::usdt()),
            ),
            (None, AnyResult::Sweep(crate::fixtures::sweep("PREEMPT", 1))),
            (
                None,
                AnyResult::Sweep(crate::fixtures::sweep("PREEMPT_RT", 1)),
            ),
        ]);
        let md = String::from_utf8(Markdown.export(&report).unwrap()[0].bytes.clone()).unwrap();
        for needle in [
            "## `usdt`: per-probe duration (`a/usdt.json`)",
            "## `cyclictest-sweep-2`: wake-up latency",
            "| usdt-ftrace | builtin |",
            "- **events-lost** ftrace case 1:",
            "![",
            "## Across results",
            "| preemption | PREEMPT_RT |",
        ] {
            assert!(md.contains(needle), "missing {needle:?} in\n{md}");
        }
    }
}
