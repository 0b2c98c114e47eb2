//! The formats of `rtrace-doc` on documents this crate assembles from real result models.

use crate::assemble::document;
use crate::doc::{csv::Csv, html::Html, markdown, terminal, Exporter, Output};
use crate::fixtures::{self, assert_has};
use crate::format::{dec2, int, LOSSY};

#[test]
fn text_file_has_every_result_and_colour_only_when_asked() {
    let out = terminal::Text
        .export(&document(&fixtures::report()).unwrap())
        .unwrap();
    let text = String::from_utf8(out[0].bytes.clone()).unwrap();
    assert!(!text.contains('\x1b'));
    assert_has(
        &text,
        &[
            "usdt: per-probe duration",
            "cyclictest-sweep: wake-up latency",
            "Warning: ftrace case 1: 5000 of 20000 events",
            "Warning: measured in a virtual machine",
            "Figure: ",                   // figures are one line each
            "Configuration: folded here", // and so are details
        ],
    );
    let colour = crate::text(&fixtures::report(), terminal::Paint::new(true)).unwrap();
    assert!(colour.contains("\x1b["));
}

#[test]
fn table31_has_thesis_layout_and_the_result_numbers() {
    let r = fixtures::usdt();
    let report = crate::Report::one(crate::AnyResult::from(r.clone()));
    let md = markdown::render(&document(&report).unwrap());
    let from = md
        .find("### Table 3.1, usdt hook: routine duration (ns)")
        .unwrap();
    let header = "| Case | ftrace min | ftrace max | ftrace x̄ | ftrace s | lttng min | lttng max | lttng x̄ | lttng s |";
    assert_eq!(md[from..].lines().nth(2).unwrap(), header);
    let c1 = &r.runs[1].summary; // ftrace case 1
    let row = md.lines().find(|l| l.starts_with("| Case 1 |")).unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[2], int(c1.min_ns));
    let lossy = format!("{}{LOSSY}", dec2(c1.mean_ns));
    assert_eq!(cells[4], lossy, "ftrace case 1 lost events: marked");
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| Case ")).collect();
    assert_eq!(table.len(), 5, "a header and four cases: {md}");
    for l in &table[1..] {
        assert!(!l.split('|').any(|c| c.trim() == "-"), "an empty cell: {l}");
    }
    assert!(md.contains(crate::usdt::table31::NOTE));
}

#[test]
fn the_summary_ends_with_what_the_job_left_out() {
    let left = "the usdt-nop5 hook: rtrace-bench usdt --hook usdt-nop5".to_owned();
    let report = fixtures::report().leaving_out(vec![left.clone()]);
    let md = markdown::render(&document(&report).unwrap());
    let heading = md.find("Left out").expect("a heading");
    let line = md.find(&format!("- {left}"));
    assert!(line.is_some_and(|l| l > heading), "{md}");
    let first_section = heading + md[heading..].find("\n## `").unwrap();
    assert!(
        heading < first_section,
        "in the summary, before the sections"
    );
}

#[test]
fn report_has_every_section() {
    let md = markdown::render(&document(&fixtures::report()).unwrap());
    assert_has(
        &md,
        &[
            "## `usdt`: per-probe duration (`a/usdt.json`)",
            "## `cyclictest-sweep-2`: wake-up latency",
            "| usdt-ftrace | builtin |",
            "- **events-lost** ftrace case 1:",
            "![",
            "## Across results",
            "| preemption | PREEMPT_RT |",
            "<details><summary>Configuration</summary>",
        ],
    );
}

#[test]
fn page_is_self_contained_and_has_everything() {
    let report = fixtures::report();
    let doc = document(&report).unwrap();
    let out = Html.export(&doc).unwrap().remove(0);
    let page = String::from_utf8(out.bytes).unwrap();
    // Every planned figure, and the verdict's beside its table.
    let svgs = crate::figures::plan(&report).len() + 1;
    assert_eq!(doc.figures().len(), svgs);
    assert_eq!(page.matches("<svg").count(), svgs);
    assert_has(
        &page,
        &[
            "Table 3.1",
            "<th class=\"group\" colspan=\"4\">ftrace</th>",
            "events-lost",
            "Across results",
            "PREEMPT_RT",
            "<td class=\"first flag\">ftrace [lossy]</td>",
            "<a href=\"csv/usdt-percentiles.csv\">",
        ],
    );
    assert!(!page.contains("src=\"http"), "no external resources");
}

fn read(out: &[Output], path: &str) -> Vec<Vec<String>> {
    let o = out.iter().find(|o| o.path == path).expect(path);
    let mut r = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(&o.bytes[..]);
    r.records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

#[test]
fn every_table_with_exact_numbers() {
    let (u, s) = (fixtures::usdt(), fixtures::sweep("PREEMPT", 2));
    let doc = document(&fixtures::report()).unwrap();
    let out = Csv.export(&doc).unwrap();
    assert_eq!(out.len(), doc.tables().len());
    let t31 = read(&out, "csv/usdt-table31-usdt.csv");
    let ftrace = [
        "ftrace min (ns)",
        "ftrace max (ns)",
        "ftrace x̄ (ns)",
        "ftrace s (ns)",
    ];
    assert_eq!(t31[0][..5], [&["Case"][..], &ftrace].concat());
    let mean: f64 = t31[2][3].parse().unwrap();
    assert_eq!(mean, u.runs[1].summary.mean_ns, "the lossy mean, unrounded");
    let p = read(&out, "csv/usdt-percentiles.csv");
    assert_eq!((&*p[0][3], &*p[2][0]), ("p50 (ns)", "ftrace [lossy]"));
    assert_eq!(p[1][13], "", "untraced: no trace data");
    let latency = read(&out, "csv/cyclictest-sweep-latency.csv");
    let mean_us: f64 = latency[1][4].parse().unwrap();
    assert_eq!(mean_us, s.runs[0].latency.mean_ns / 1000.0);
    let shift = read(&out, "csv/cyclictest-sweep-shift.csv");
    let p50 = [
        "p50 − none (µs)",
        "p50 − none low (µs)",
        "p50 − none high (µs)",
    ];
    assert_eq!(shift[0][2..5], p50);
    let (est, low): (f64, f64) = (shift[1][2].parse().unwrap(), shift[1][3].parse().unwrap());
    assert!(low < est, "{:?}", shift[1]);
}
