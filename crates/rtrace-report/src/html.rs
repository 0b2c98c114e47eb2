//! `index.html`: one self-contained page (no external files) with, per result, the warnings
//! first, Table 3.1 or the sweep table, the figures inline, and the environment.

use crate::export::{Exporter, Output};
use crate::figures::{self, Figure};
use crate::format::{environment_rows, Table31, TABLE31_NOTE};
use crate::result::{AnyResult, Entry, Report};
use anyhow::{Context, Result};
use rtrace_measure::sweep::SweepResult;
use rtrace_measure::usdt::UsdtResult;
use rtrace_measure::Warning;

const STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       max-width: 1320px; margin: 0 auto; padding: 24px 32px 64px; line-height: 1.45; }
h1 { margin-bottom: 4px; } h2 { margin-top: 48px; border-bottom: 2px solid #ddd; padding-bottom: 4px; }
h3 { margin-top: 28px; }
.sub { color: #666; margin-top: 0; }
nav a { margin-right: 16px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-variant-numeric: tabular-nums;
        display: block; overflow-x: auto; max-width: 100%; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e4e4e4; text-align: right; }
th { background: #f4f4f4; } th.group { text-align: center; border-left: 2px solid #ccc; }
td { white-space: nowrap; } td.first, th.first { text-align: left; white-space: normal; } td.group, th.gstart { border-left: 2px solid #ccc; }
table.env td { text-align: left; } table.env td:first-child { color: #666; white-space: nowrap; }
.warnings { background: #fff8e1; border-left: 5px solid #f5a623; padding: 8px 16px; margin: 12px 0; }
.warnings li { margin: 4px 0; } .warnings code { background: #fff1c4; }
.kind { font-weight: 600; color: #8a5a00; }
.summary { background: #f2f6fb; border-left: 5px solid #1f77b4; padding: 4px 16px; margin: 16px 0; }
.summary h2 { margin-top: 8px; border: none; } .summary li { margin: 6px 0; }
.ok { background: #eef8ee; border-left: 5px solid #4caf50; padding: 8px 16px; }
.failed { color: #b00020; font-weight: 600; }
figure { margin: 16px 0 32px; } figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; margin-top: 4px; max-width: 960px; }
details pre { background: #f7f7f7; padding: 8px; overflow-x: auto; }
"#;

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Turns `backticked` spans of a warning into `<code>`.
fn code_spans(s: &str) -> String {
    esc(s)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_owned()
            }
        })
        .collect()
}

fn warnings(list: &[Warning]) -> String {
    if list.is_empty() {
        return "<p class=\"ok\">No warnings: the setup matches the thesis'.</p>\n".into();
    }
    let mut out = format!(
        "<div class=\"warnings\"><strong>{} warning{}</strong> — each says what to do:<ul>\n",
        list.len(),
        if list.len() == 1 { "" } else { "s" }
    );
    for w in list {
        let kind = serde_json::to_value(w.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let scope = w
            .scope
            .as_deref()
            .map_or(String::new(), |s| format!("<b>{}</b>: ", esc(s)));
        let details = if w.details.is_empty() {
            String::new()
        } else {
            let items: String = w
                .details
                .iter()
                .map(|d| format!("<li>{}</li>", esc(d)))
                .collect();
            format!(
                "<details><summary>{} runs</summary><ul>{items}</ul></details>",
                w.details.len()
            )
        };
        out.push_str(&format!(
            "<li><span class=\"kind\">{kind}</span> {scope}{}{details}</li>\n",
            code_spans(&w.message)
        ));
    }
    out.push_str("</ul></div>\n");
    out
}

fn row(cells: &[String], first_left: usize) -> String {
    let tds: String = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let class = if i < first_left {
                " class=\"first\""
            } else {
                ""
            };
            format!("<td{class}>{}</td>", esc(c))
        })
        .collect();
    format!("<tr>{tds}</tr>\n")
}

/// A whole table: header, rows, the first `left` columns left-aligned.
fn table(head: &[&str], rows: Vec<Vec<String>>, left: usize) -> String {
    let mut t = String::from("<table>\n");
    t.push_str(&header(head, left));
    for cells in rows {
        t.push_str(&row(&cells, left));
    }
    t.push_str("</table>\n");
    t
}

fn texts(h: &[String]) -> Vec<&str> {
    h.iter().map(String::as_str).collect()
}

fn header(cells: &[&str], first_left: usize) -> String {
    let ths: String = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let class = if i < first_left {
                " class=\"first\""
            } else {
                ""
            };
            format!("<th{class}>{}</th>", esc(c))
        })
        .collect();
    format!("<tr>{ths}</tr>\n")
}

/// Table 3.1 of every hook kind, a column group of four per tracer and mode.
fn table31(r: &UsdtResult) -> String {
    let mut out = String::new();
    for t in Table31::per_hook(r) {
        out.push_str(&format!("<h3>{}</h3>\n", esc(&t.title())));
        out.push_str("<table>\n<tr><th class=\"first\" rowspan=\"2\">Case</th>");
        for &col in &t.columns {
            out.push_str(&format!(
                "<th class=\"group\" colspan=\"4\">{}</th>",
                esc(&t.column_label(col))
            ));
        }
        out.push_str("</tr>\n<tr>");
        for _ in &t.columns {
            out.push_str("<th class=\"gstart\">min</th><th>max</th><th>x̄</th><th>s</th>");
        }
        out.push_str("</tr>\n");
        for &case in &t.cases {
            out.push_str(&format!(
                "<tr><td class=\"first\">{}</td>",
                Table31::case_label(case)
            ));
            for &col in &t.columns {
                for (i, n) in t.numbers(col, case).iter().enumerate() {
                    let class = if i == 0 { " class=\"group\"" } else { "" };
                    out.push_str(&format!("<td{class}>{n}</td>"));
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    out.push_str(&format!("<p class=\"sub\">{}</p>\n", esc(TABLE31_NOTE)));
    out
}

fn usdt_details(r: &UsdtResult) -> String {
    let mut out = String::from("<table>\n");
    out.push_str(&header(
        &crate::usdt_rows::HEADER,
        crate::usdt_rows::TEXT_COLUMNS,
    ));
    for cells in crate::usdt_rows::rows(r) {
        out.push_str(&row(&cells, crate::usdt_rows::TEXT_COLUMNS));
    }
    out.push_str("</table>\n");
    out
}

/// The latency shifts against `none` beside `usdt`'s per-hit costs (see
/// [`crate::sweep_shift`]); empty without a `none` run.
fn shift_table(r: &SweepResult, report: &Report) -> String {
    let rows = crate::sweep_shift::rows(r, crate::sweep_shift::usdt_beside(report, r));
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h3>Latency shift against <code>none</code></h3>\n<p class=\"sub\">{}.</p>\n<table>\n",
        code_spans(crate::sweep_shift::NOTE)
    );
    out.push_str(&header(
        &crate::sweep_shift::HEADER,
        crate::sweep_shift::TEXT_COLUMNS,
    ));
    for cells in rows {
        out.push_str(&row(&cells, crate::sweep_shift::TEXT_COLUMNS));
    }
    out.push_str("</table>\n");
    out
}

fn sweep_table(r: &SweepResult) -> String {
    let mut out = String::from("<table>\n");
    out.push_str(&header(
        &crate::sweep_rows::HEADER,
        crate::sweep_rows::TEXT_COLUMNS,
    ));
    for run in crate::sweep_rows::rows(r) {
        let mut cells = row(&run.cells, crate::sweep_rows::TEXT_COLUMNS);
        if run.failed {
            cells = cells.replace("<td>FAILED</td>", "<td class=\"failed\">FAILED</td>");
        }
        out.push_str(&cells);
    }
    out.push_str("</table>\n");
    for (title, list) in [
        ("Not available here", &r.unavailable),
        ("Failed", &r.failed),
    ] {
        if !list.is_empty() {
            out.push_str(&format!("<p>{title}:</p><ul>\n"));
            for k in list {
                let src = k.source.map_or(String::new(), |s| format!(" ({s})"));
                out.push_str(&format!(
                    "<li><code>{}</code>{src}: {}</li>\n",
                    k.config,
                    code_spans(&k.reason)
                ));
            }
            out.push_str("</ul>\n");
        }
    }
    out
}

fn figure(f: &Figure, report: &Report) -> Result<String> {
    let svg = f
        .render(report)
        .with_context(|| format!("cannot draw {}", f.file))?;
    Ok(format!(
        "<figure id=\"{}\">\n{svg}\n<figcaption><b>{}.</b> {} <a href=\"{}\">SVG</a></figcaption>\n</figure>\n",
        esc(&f.file),
        esc(&f.title),
        esc(&f.caption),
        esc(&f.path())
    ))
}

/// One list item per line of `text`.
fn list(text: &str) -> String {
    let mut out = String::from("<ul>\n");
    for line in text.lines() {
        out.push_str(&format!("<li>{}</li>\n", esc(line)));
    }
    out.push_str("</ul>\n");
    out
}

/// The per-hit cost decomposition: one table per tracer, path and hook site (`usdt --decompose`).
fn staircase(r: &UsdtResult, alone: &[&Entry]) -> String {
    let tables = crate::staircase::tables(r, alone);
    if tables.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h3>Where the nanoseconds go</h3>\n<p class=\"sub\">{}.</p>\n",
        code_spans(crate::staircase::NOTE)
    );
    for t in tables {
        out.push_str(&format!(
            "<p><b>{}</b> ({})</p>\n<table>\n",
            esc(&t.title),
            code_spans(&t.check)
        ));
        out.push_str(&header(
            &crate::staircase::HEADER,
            crate::staircase::TEXT_COLUMNS,
        ));
        for cells in t.rows {
            out.push_str(&row(&cells, crate::staircase::TEXT_COLUMNS));
        }
        out.push_str("</table>\n");
    }
    let lines: Vec<String> = crate::staircase::program_cost_lines(r)
        .into_iter()
        .chain(crate::staircase::uncounted_line(r))
        .collect();
    if !lines.is_empty() {
        out.push_str("<ul>\n");
        for l in lines {
            out.push_str(&format!("<li>{}</li>\n", esc(&l)));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// The reference comparisons, each with what differs between its two sides.
fn reference(r: &UsdtResult) -> String {
    let items = crate::reference::items(r);
    if items.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Reference comparisons (same run)</h3>\n<ul>\n");
    for i in items {
        out.push_str(&format!("<li>{}", esc(&i.line)));
        if let Some(d) = i.differs {
            out.push_str(&format!(
                "<br><span class=\"sub\">differs: {}</span>",
                esc(&d)
            ));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
    out
}

fn environment(e: &Entry) -> String {
    let mut out = String::from("<table class=\"env\">\n");
    for (k, v) in environment_rows(e.result.environment()) {
        out.push_str(&format!("<tr><td>{k}</td><td>{}</td></tr>\n", esc(&v)));
    }
    out.push_str("</table>\n");
    out
}

/// `text` with its first letter upper-case.
fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

fn section(e: &Entry, figures: &[Figure], report: &Report) -> Result<String> {
    let mut out = format!("<section id=\"{}\">\n", esc(&e.id));
    let file = e
        .file
        .as_deref()
        .map_or(String::new(), |f| format!(" — <code>{}</code>", esc(f)));
    let config = match &e.result {
        AnyResult::Usdt(r) => {
            out.push_str(&format!(
                "<h2>{} (<code>{}</code>){file}</h2>\n",
                esc(&capitalized(crate::staircase::usdt_heading(r))),
                esc(&e.id)
            ));
            out.push_str(&format!(
                "<p class=\"sub\">{} iterations per case (after {} warm-up) on CPU {}; {}; {}. Durations in ns.</p>\n",
                r.config.iterations, r.config.warmup, r.config.run.cpu, esc(&e.kernel()), esc(&r.environment.cpu_model)
            ));
            if let Some(n) = crate::threads::note(r) {
                out.push_str(&format!("<p class=\"sub\">{}.</p>\n", esc(&n)));
            }
            out.push_str(&warnings(&e.warnings));
            out.push_str(&table31(r));
            let rows = crate::threads::rows(r);
            if !rows.is_empty() {
                out.push_str("<h3>Per loop thread</h3>\n<table>\n");
                out.push_str(&header(
                    &crate::threads::HEADER,
                    crate::threads::TEXT_COLUMNS,
                ));
                for cells in rows {
                    out.push_str(&row(&cells, crate::threads::TEXT_COLUMNS));
                }
                out.push_str("</table>\n");
            }
            out.push_str("<h3>Percentiles (ns) and event accounting</h3>\n");
            out.push_str(&usdt_details(r));
            out.push_str("<h3>How these numbers are made</h3>\n");
            out.push_str(&list(&crate::statistics::method_lines(r, "")));
            let dormant = crate::statistics::dormant_lines(r, "");
            if !dormant.is_empty() {
                out.push_str("<h3>Dormant cases against case 0 (95% CI over rounds)</h3>\n");
                out.push_str(&list(&dormant));
            }
            out.push_str(&reference(r));
            out.push_str(&staircase(r, &crate::staircase::alone_beside(report, r)));
            serde_json::to_string_pretty(&r.config)?
        }
        AnyResult::Sweep(r) => {
            out.push_str(&format!(
                "<h2>Wake-up latency (<code>{}</code>){file}</h2>\n",
                esc(&e.id)
            ));
            out.push_str(&format!(
                "<p class=\"sub\">{} loops every {} µs on CPU {} (SCHED_FIFO {}); {}; {}. Latencies in µs. {}.</p>\n",
                r.config.loops, r.config.interval_us, r.config.run.cpu, r.config.run.priority.unwrap_or(0), esc(&e.kernel()), esc(&r.environment.cpu_model),
                esc(&crate::format::sweep_notes(r).join(". "))
            ));
            out.push_str(&warnings(&e.warnings));
            out.push_str("<h3>Latency per configuration (µs) and event accounting</h3>\n");
            out.push_str(&sweep_table(r));
            out.push_str(&shift_table(r, report));
            serde_json::to_string_pretty(&r.config)?
        }
        AnyResult::Rate(r) => {
            out.push_str(&format!(
                "<h2>Highest lossless event rate (<code>{}</code>){file}</h2>\n",
                esc(&e.id)
            ));
            out.push_str(&format!(
                "<p class=\"sub\">{} ms per run on {}; {}; {}. {}.</p>\n",
                r.config.duration_ms,
                esc(&crate::rate::on(r)),
                esc(&e.kernel()),
                esc(&r.environment.cpu_model),
                esc(crate::rate::NOTE)
            ));
            out.push_str(&warnings(&e.warnings));
            out.push_str(&table(
                &crate::rate::HEADER,
                crate::rate::rows(r),
                crate::rate::TEXT_COLUMNS,
            ));
            out.push_str("<details><summary>Every run</summary>\n");
            out.push_str(&table(
                &crate::rate::POINT_HEADER,
                crate::rate::point_rows(r),
                3,
            ));
            out.push_str("</details>\n");
            out.push_str(&failures(&r.failed));
            serde_json::to_string_pretty(&r.config)?
        }
        AnyResult::Npt(r) => {
            out.push_str(&format!(
                "<h2>npt: gaps of a tight loop (<code>{}</code>){file}</h2>\n",
                esc(&e.id)
            ));
            out.push_str(&format!(
                "<p class=\"sub\">{}; {}. {}.</p>\n",
                esc(&e.kernel()),
                esc(&r.environment.cpu_model),
                esc(&crate::npt::note(r))
            ));
            out.push_str(&warnings(&e.warnings));
            let mut t = String::from("<table>\n");
            t.push_str(&header(&crate::npt::HEADER, crate::npt::TEXT_COLUMNS));
            for cells in crate::npt::rows(r) {
                t.push_str(&row(&cells, crate::npt::TEXT_COLUMNS));
            }
            t.push_str("</table>\n");
            out.push_str(&t);
            out.push_str(&format!(
                "<pre>{}</pre>\n",
                esc(crate::npt::osnoise_line(r).trim_end())
            ));
            out.push_str(&failures(&r.failed));
            serde_json::to_string_pretty(&r.config)?
        }
        AnyResult::Events(r) => {
            out.push_str(&format!(
                "<h2>events: per-event cost of tracer features (<code>{}</code>){file}</h2>\n",
                esc(&e.id)
            ));
            out.push_str(&format!(
                "<p class=\"sub\">{}; {}. {}.</p>\n",
                esc(&e.kernel()),
                esc(&r.environment.cpu_model),
                esc(&crate::events::note(r))
            ));
            out.push_str(&warnings(&e.warnings));
            let cost_header = crate::events::cost_header(r);
            let slowdown_header = crate::events::slowdown_header(r);
            for w in r.workloads() {
                out.push_str(&format!(
                    "<h3>{}: per-event cost, ns (Piotrowski's Table IV)</h3>\n",
                    esc(w.name())
                ));
                out.push_str(&table(
                    &texts(&cost_header),
                    crate::events::cost_rows(r, w),
                    2,
                ));
                out.push_str(&format!(
                    "<h3>{}: slowdown (Piotrowski's Table V)</h3>\n",
                    esc(w.name())
                ));
                out.push_str(&table(
                    &texts(&slowdown_header),
                    crate::events::slowdown_rows(r, w),
                    1,
                ));
            }
            out.push_str("<h3>Accounting: each tracer kept to the workload's process</h3>\n");
            out.push_str(&table(
                &crate::events::CHECK_HEADER,
                crate::events::check_rows(r),
                3,
            ));
            let not = crate::events::not_run(r);
            if !not.is_empty() {
                out.push_str("<h3>Not run here</h3>\n<ul>\n");
                for l in not {
                    out.push_str(&format!("<li>{}</li>\n", esc(&l)));
                }
                out.push_str("</ul>\n");
            }
            if !r.retried.is_empty() {
                out.push_str("<h3>Runs retried once</h3>\n<ul>\n");
                for l in &r.retried {
                    out.push_str(&format!("<li>{}</li>\n", esc(l)));
                }
                out.push_str("</ul>\n");
            }
            out.push_str("<details><summary>Programs, Gregg's fastest-run statistic, output checked</summary>\n");
            out.push_str(&table(
                &crate::events::DETAIL_HEADER,
                crate::events::detail_rows(r),
                4,
            ));
            out.push_str("</details>\n");
            out.push_str(&failures(&r.failed));
            serde_json::to_string_pretty(&r.config)?
        }
    };
    let ratios = crate::ratios::of_entry(&e.result)?;
    if !ratios.rows.is_empty() {
        out.push_str(&format!(
            "<h3>{}</h3>\n<p>{}:</p>\n<ul>\n",
            ratios.title,
            esc(&ratios.method)
        ));
        for r in ratios.rows {
            out.push_str(&format!("<li>{}</li>\n", esc(&r.sentence())));
        }
        out.push_str("</ul>\n");
    }
    let mine: Vec<&Figure> = figures
        .iter()
        .filter(|f| f.entries == [e.id.clone()])
        .collect();
    if !mine.is_empty() {
        out.push_str("<h3>Figures</h3>\n");
        for f in mine {
            out.push_str(&figure(f, report)?);
        }
    }
    out.push_str("<h3>Environment</h3>\n");
    out.push_str(&environment(e));
    out.push_str(&format!(
        "<details><summary>Configuration</summary><pre>{}</pre></details>\n</section>\n",
        esc(&config)
    ));
    Ok(out)
}

/// The HTML page.
pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn export(&self, report: &Report) -> Result<Vec<Output>> {
        let figures = figures::plan(report);
        let total: usize = report.entries.iter().map(|e| e.warnings.len()).sum();
        let mut body = String::new();
        let mut nav = String::new();
        for e in &report.entries {
            nav.push_str(&format!("<a href=\"#{0}\">{0}</a>", esc(&e.id)));
            body.push_str(&section(e, &figures, report)?);
        }
        let shared: Vec<&Figure> = figures.iter().filter(|f| f.entries.len() > 1).collect();
        if !shared.is_empty() {
            nav.push_str("<a href=\"#across\">across results</a>");
            body.push_str("<section id=\"across\"><h2>Across results</h2>\n");
            for f in shared {
                body.push_str(&figure(f, report)?);
            }
            body.push_str("</section>\n");
        }
        let mut summary = String::from("<section class=\"summary\"><h2>Summary</h2>\n");
        for (title, lines) in crate::summary::of_report(report) {
            if let Some(t) = title {
                summary.push_str(&format!("<h3>{}</h3>\n", esc(&t)));
            }
            summary.push_str("<ul>\n");
            for l in lines {
                summary.push_str(&format!("<li>{}</li>\n", esc(&l)));
            }
            summary.push_str("</ul>\n");
        }
        summary.push_str("</section>\n");
        let page = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>rtrace-bench report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>rtrace-bench report</h1>\n<p class=\"sub\">The observer effect of Linux tracers on real-time workloads: {} result{}, {total} warning{}. Tables: <a href=\"report.md\">Markdown</a>, <a href=\"results.csv\">CSV</a>.</p>\n<nav>{nav}</nav>\n{summary}{body}</body>\n</html>\n",
            report.entries.len(),
            if report.entries.len() == 1 { "" } else { "s" },
            if total == 1 { "" } else { "s" },
        );
        Ok(vec![Output::new("index.html", page)])
    }
}

/// The failed runs of a result, as a list; empty when none failed.
fn failures(failed: &[String]) -> String {
    if failed.is_empty() {
        return String::new();
    }
    list(
        &failed
            .iter()
            .map(|f| format!("failed: {f}"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn page_is_self_contained_and_has_everything() {
        let report = Report::new([
            (None, AnyResult::Usdt(fixtures::usdt())),
            (None, AnyResult::Sweep(fixtures::sweep("PREEMPT", 2))),
            (None, AnyResult::Sweep(fixtures::sweep("PREEMPT_RT", 1))),
        ]);
        let page = String::from_utf8(Html.export(&report).unwrap().remove(0).bytes).unwrap();
        assert_eq!(page.matches("<svg").count(), figures::plan(&report).len());
        for needle in [
            "Table 3.1",
            "<th class=\"group\" colspan=\"4\">ftrace</th>",
            "events-lost",
            "Across results",
            "PREEMPT_RT",
        ] {
            assert!(page.contains(needle), "missing {needle}");
        }
        assert!(!page.contains("src=\"http"), "no external resources");
    }

    #[test]
    fn warnings_escape_and_mark_code() {
        assert_eq!(code_spans("run `a<b` now"), "run <code>a&lt;b</code> now");
    }

    #[test]
    fn warning_details_are_folded() {
        let w: Warning = serde_json::from_value(serde_json::json!({
            "kind": "outliers", "scope": null,
            "message": "in 2 of 9 runs the maximum is more than 10× p99.99",
            "details": ["a: max 9 ns", "b<c: max 8 ns"]
        }))
        .unwrap();
        let html = warnings(&[w]);
        assert!(
            html.contains("<details><summary>2 runs</summary><ul><li>a: max 9 ns</li><li>b&lt;c: max 8 ns</li></ul></details>"),
            "{html}"
        );
    }
}
