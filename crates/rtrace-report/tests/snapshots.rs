//! The report of the thesis job's result files (trimmed copies, `testdata/README.md`), each
//! section rendered in Markdown and for the terminal, against the files in
//! `testdata/snapshots/`. After an intended change, `UPDATE_SNAPSHOTS=1 cargo test -p
//! rtrace-report --test snapshots` rewrites them: review their diff before committing.

use rtrace_report::doc::{items, Block, Document, Value};
use rtrace_report::terminal::{self, Paint};
use rtrace_report::{markdown, AnyResult, Report};
use std::path::PathBuf;

/// The thesis job's result files, in the order its report takes them.
const FIXTURES: [&str; 6] = [
    "usdt",
    "decompose",
    "cyclictest-sweep",
    "rate",
    "npt",
    "events",
];

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

fn report() -> Report {
    Report::new(FIXTURES.map(|f| {
        let path = testdata().join(format!("{f}.json"));
        let text = std::fs::read_to_string(&path).unwrap();
        (
            Some(format!("testdata/{f}.json")),
            AnyResult::from_json(&text).unwrap(),
        )
    }))
}

/// `text` against `testdata/snapshots/<name>`, or written there with `UPDATE_SNAPSHOTS` set.
fn check(name: &str, text: &str) -> Option<String> {
    let path = testdata().join("snapshots").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, text).unwrap();
        return None;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    if want == text {
        return None;
    }
    let line = want
        .lines()
        .zip(text.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(want.lines().count().min(text.lines().count()));
    Some(format!(
        "{name} differs from line {}:\n  want: {:?}\n  got:  {:?}",
        line + 1,
        want.lines().nth(line).unwrap_or("<end>"),
        text.lines().nth(line).unwrap_or("<end>")
    ))
}

#[test]
fn every_section_renders_as_its_snapshot() {
    let report = report();
    let doc = Document::of(&report);
    let mut failures = Vec::new();
    for (s, name) in doc.sections.iter().zip(FIXTURES) {
        let one = Document {
            report: &report,
            summary: vec![Block::List(items(s.summary.iter().cloned()))],
            sections: vec![s.clone()],
            shared: Vec::new(),
        };
        failures.extend(check(&format!("{name}.md"), &markdown::render(&one)));
        failures.extend(check(
            &format!("{name}.txt"),
            &terminal::render(&one, Paint::new(false)),
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_kind_of_table_has_rows_and_full_precision_numbers() {
    let report = report();
    let doc = Document::of(&report);
    let ids: Vec<String> = doc
        .tables()
        .iter()
        .map(|(s, t)| {
            assert!(!t.rows.is_empty(), "{}-{} is empty", s.id, t.id);
            format!("{}-{}", s.id, t.id)
        })
        .collect();
    for want in [
        "usdt-table31-usdt",
        "usdt-table31-usdt-nop5",
        "usdt-table31-uprobe",
        "usdt-table31-uretprobe",
        "usdt-percentiles",
        "usdt-hooks",
        "usdt-2-table31-usdt",
        "usdt-2-staircase-ebpf-maps-usdt",
        "cyclictest-sweep-latency",
        "cyclictest-sweep-shift",
        "rate-rates",
        "rate-points",
        "npt-gaps",
        "events-costs-read-loop",
        "events-slowdowns-read-loop",
        "events-costs-dd",
        "events-slowdowns-dd",
        "events-accounting",
        "events-programs",
    ] {
        assert!(ids.iter().any(|id| id == want), "no {want} in {ids:?}");
    }
    // Table 3.1's mean of ftrace case 1 is the result file's, unrounded behind its two decimals.
    let AnyResult::Usdt(u) = &report.entries[0].result else {
        panic!("usdt first");
    };
    let ftrace = u
        .runs
        .iter()
        .find(|c| c.tracer.name() == "ftrace" && c.case.number() == 1)
        .unwrap();
    let (_, t31) = doc
        .tables()
        .into_iter()
        .find(|(s, t)| s.id == "usdt" && t.id == "table31-usdt")
        .unwrap();
    let mean = &t31.rows[1][3];
    assert_eq!(mean.value, Value::Number(ftrace.summary.mean_ns));
    assert_eq!(mean.shown, format!("{:.2}", ftrace.summary.mean_ns));
}
