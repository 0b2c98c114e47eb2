//! The report of the thesis job's result files (trimmed copies, `testdata/README.md`), each
//! section rendered in Markdown and for the terminal, against the files in
//! `testdata/snapshots/`. After an intended change, `UPDATE_SNAPSHOTS=1 cargo test -p
//! rtrace-report --test snapshots` rewrites them: review their diff before committing.

use rtrace_measure::{events::EventsResult, sweep::SweepResult, usdt::UsdtResult};
use rtrace_report::doc::terminal::{self, Paint};
use rtrace_report::doc::{items, markdown, Block, Document, Value};
use rtrace_report::{AnyResult, Report};
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

/// The thesis job's final run (`testdata/thesis-final/`), whose report holds the consistency
/// table.
const THESIS_FINAL: [&str; 5] = ["usdt", "decompose", "cyclictest-sweep", "npt", "events"];

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

fn report() -> Report {
    load("", &FIXTURES)
}

/// The result files `names` of `testdata/<dir>`, in that order.
fn load(dir: &str, names: &[&str]) -> Report {
    Report::new(names.iter().map(|f| {
        let file = PathBuf::from("testdata")
            .join(dir)
            .join(format!("{f}.json"));
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(&file);
        let text = std::fs::read_to_string(&path).unwrap();
        (
            Some(file.display().to_string()),
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
    let doc = rtrace_report::document(&report).unwrap();
    let mut failures = Vec::new();
    for (s, name) in doc.sections.iter().zip(FIXTURES) {
        let one = Document {
            summary: vec![Block::List(items(s.summary.iter().cloned()))],
            sections: vec![s.clone()],
            warnings: doc.warnings,
            ..Document::default()
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
    let doc = rtrace_report::document(&report).unwrap();
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
    let u: &UsdtResult = report.entries[0].result.get().expect("usdt first");
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

/// Column of a consistency table's cells: per hit, its ratio to the reference, the flag.
const PER_HIT: usize = 5;
const RATIO: usize = 7;
const FLAG: usize = 8;

#[test]
fn the_consistency_table_of_the_thesis_job_holds_the_results_numbers_and_its_snapshot() {
    use rtrace_measure::events::Workload;
    use rtrace_measure::sweep::{Configuration, LatencyStat, Source};
    use rtrace_measure::usdt::{Case, HookKind};
    use rtrace_tracer::{features::Feature, TracerKind::Ebpf};
    let report = load("thesis-final", &THESIS_FINAL);
    let section = rtrace_report::consistency::section(&report).expect("five experiments");
    let interval = |e: rtrace_measure::interval::Estimate| Value::Interval {
        estimate: e.estimate,
        low: e.low,
        high: e.high,
    };
    let ebpf = section
        .blocks
        .iter()
        .find_map(|b| match b {
            Block::Table(t) if t.id == "ebpf" => Some(t),
            _ => None,
        })
        .expect("an ebpf table");
    let row = |hook: &str, source: &str| {
        let found = ebpf
            .rows
            .iter()
            .find(|r| (&*r[0].shown, &*r[2].shown) == (hook, source));
        found.unwrap_or_else(|| panic!("no {hook} {source} row"))
    };
    // eBPF on the marker's uprobe in usdt (the reference) and on libc's `read` in events 06.
    let u: &UsdtResult = report.entries[0].result.get().expect("usdt first");
    let ev: &EventsResult = report.entries[4].result.get().expect("events last");
    let run = u.runs.iter().find(|c| {
        (c.tracer, c.case, c.hook_kind) == (Ebpf, Case::Traced, HookKind::Uprobe)
            && u.run_mode(c).as_deref() == Some("record")
    });
    let usdt = rtrace_measure::probe_cost::per_hit(u, run.unwrap()).unwrap();
    assert_eq!(row("uprobe", "usdt")[PER_HIT].value, interval(usdt));
    assert_eq!(row("uprobe", "usdt")[FLAG].shown, "reference");
    let cell = ev.cell(Workload::Loop, Feature::Uprobe, Ebpf).unwrap();
    let events = ev.cost(cell).unwrap().per_event_ns;
    let r = row("uprobe", "events 06 loop");
    assert_eq!(r[PER_HIT].value, interval(events));
    assert_eq!(
        r[RATIO].value,
        Value::Number(events.estimate / usdt.estimate)
    );
    assert!(r[FLAG].flagged && r[FLAG].shown.starts_with("unexplained — "));
    // cyclictest's uretprobe on clock_nanosleep: its median shift against `none`, after a sleep.
    let sweep: &SweepResult = report.entries[2].result.get().expect("the sweep third");
    let (config, source) = (Configuration::UretprobeEbpf, Source::Cyclictest);
    let none = sweep.run(Configuration::None, source).unwrap();
    let shift =
        rtrace_measure::sweep::shift(sweep.run(config, source).unwrap(), none, LatencyStat::P50);
    let r = row("uretprobe", "cyclictest (uretprobe-ebpf)");
    assert_eq!(r[PER_HIT].value, interval(shift.unwrap()));
    // Its being cold is what differs, and nothing in the job measured what that costs.
    let cold = format!(
        "unexplained — not measured: cold, 1 hit per {} µs wake-up",
        sweep.config.interval_us
    );
    assert!(
        r[FLAG].shown.starts_with(&cold) && r[FLAG].flagged,
        "{:?}",
        r[FLAG]
    );
    let doc = Document {
        summary: vec![Block::List(items(section.summary.iter().cloned()))],
        consistency: Some(section),
        warnings: report.entries.iter().map(|e| e.warnings.len()).sum(),
        ..Document::default()
    };
    let failures: Vec<String> = [
        check("consistency.md", &markdown::render(&doc)),
        check(
            "consistency.txt",
            &terminal::render(&doc, Paint::new(false)),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
