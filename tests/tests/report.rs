//! Root integration tests of the reports: a real `usdt` run writes its run directory, the
//! Markdown Table 3.1 carries exactly the JSON's numbers, `report` regenerates the same files
//! from the JSON, and `compare` prints ratios with confidence intervals.

use rtrace_tests::*;
use std::path::Path;

/// A short real ftrace run (all cases) into `dir`; returns the parsed `usdt.json`.
fn usdt_run(dir: &Path) -> serde_json::Value {
    let out = bench(&[
        "usdt",
        "--rounds",
        "3",
        "--tracer",
        "ftrace",
        "-n",
        "50000",
        "--warmup",
        "1000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_ok(&out);
    keep_result(&dir.join("usdt.json"));
    read_json(&dir.join("usdt.json"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Table 3.1 cells of the Markdown report: (tracer, case) -> [min, max, mean, s] as printed.
fn markdown_table31(md: &str) -> Vec<((String, u64), [String; 4])> {
    let mut cells = Vec::new();
    let mut tracers: Vec<String> = Vec::new();
    for line in md.lines().filter(|l| l.starts_with("| ")) {
        let row: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if row[0] == "Case" {
            tracers = row[1..]
                .chunks(4)
                .map(|c| c[0].trim_end_matches(" min").to_owned())
                .collect();
        } else if let Some(case) = row[0].strip_prefix("Case ") {
            // `Case 0 (baseline)`: the one uninstrumented run, shown in every column group.
            let case: u64 = case.split_whitespace().next().unwrap().parse().unwrap();
            for (t, c) in tracers.iter().zip(row[1..].chunks(4)) {
                let t = if case == 0 {
                    "none".to_owned()
                } else {
                    t.clone()
                };
                let nums = [c[0], c[1], c[2], c[3]].map(str::to_owned);
                if c[0] != "-" && !cells.iter().any(|(k, _)| *k == (t.clone(), case)) {
                    cells.push(((t, case), nums));
                }
            }
        } else if row[0] != "---" {
            tracers.clear();
        }
    }
    cells
}

/// One real run serves every check: each reads its run directory, none changes it.
#[test]
fn a_usdt_run_directory_its_regenerated_report_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let v = usdt_run(dir.path());
    markdown_table_numbers_equal_the_json(dir.path(), &v);
    run_directory_has_every_format_and_report_regenerates_it(dir.path());
    compare_prints_ratios_with_intervals(dir.path());
}

fn markdown_table_numbers_equal_the_json(dir: &Path, v: &serde_json::Value) {
    let md = read(&dir.join("report.md"));
    let cells = markdown_table31(&md);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(cells.len(), runs.len(), "one Table 3.1 cell per run:\n{md}");
    for r in runs {
        let key = (
            r["tracer"].as_str().unwrap().to_owned(),
            r["case"].as_u64().unwrap(),
        );
        let (_, nums) = cells
            .iter()
            .find(|(k, _)| *k == key)
            .unwrap_or_else(|| panic!("{key:?} missing in\n{md}"));
        let s = &r["summary"];
        let f = |k: &str| s[k].as_f64().unwrap();
        let parsed: Vec<f64> = nums.iter().map(|n| n.parse().unwrap()).collect();
        assert_eq!(parsed[0], f("min_ns"), "{key:?} min");
        assert_eq!(parsed[1], f("max_ns"), "{key:?} max");
        assert!((parsed[2] - f("mean_ns")).abs() <= 0.005, "{key:?} mean");
        assert!((parsed[3] - f("stddev_ns")).abs() <= 0.005, "{key:?} s");
    }
    // Warnings are stored in the result and shown in every format.
    let warnings = v["warnings"].as_array().unwrap();
    assert!(
        !warnings.is_empty(),
        "50000 iterations must at least warn about the count"
    );
    assert!(md.contains("few-iterations"), "{md}");
}

fn run_directory_has_every_format_and_report_regenerates_it(dir: &Path) {
    for f in [
        "usdt.json",
        "index.html",
        "report.md",
        "report.txt",
        "csv/usdt-percentiles.csv",
        "figures/usdt-case1-box.svg",
        "figures/usdt-case1-polygon.svg",
        "figures/usdt-cases-box.svg",
        "figures/verdict-per-hit.svg",
        "csv/verdict-tracers.csv",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let html = read(&dir.join("index.html"));
    assert_eq!(
        html.matches("<svg").count(),
        4,
        "figures are inline (and the verdict's)"
    );
    let csv = read(&dir.join("csv/usdt-percentiles.csv"));
    assert_eq!(csv.lines().count(), 1 + 4, "header + one row per case");

    let again = tempfile::tempdir().unwrap();
    let json = dir.join("usdt.json");
    let out = bench(&[
        "report",
        json.to_str().unwrap(),
        "--out",
        again.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("index.html"));
    for f in [
        "report.md",
        "csv/usdt-percentiles.csv",
        "figures/usdt-case1-box.svg",
    ] {
        let a = read(&dir.join(f));
        let b = read(&again.path().join(f));
        // The regenerated Markdown names its source file; everything else is identical.
        let b = b.replace(&format!(" (`{}`)", json.display()), "");
        assert_eq!(a, b, "{f} differs after `report`");
    }
}

fn compare_prints_ratios_with_intervals(dir: &Path) {
    let json = dir.join("usdt.json");
    let out_dir = tempfile::tempdir().unwrap();
    let out_json = out_dir.path().join("compare.json");
    let j = json.to_str().unwrap();
    let out = bench(&["compare", j, j, "--json", out_json.to_str().unwrap()]);
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A run against itself: the extra cost per hit is 1.00× with an interval over rounds.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("B ftrace case 1"))
        .unwrap_or_else(|| panic!("no ftrace case 1 row:\n{stdout}"));
    assert!(row.contains("1.00× ("), "{row}");
    let v = read_json(&out_json);
    let mean = &v["ratios"][0]["mean"];
    assert!(
        mean["low"].as_f64().unwrap() <= 1.0 && mean["high"].as_f64().unwrap() >= 1.0,
        "{v}"
    );
}
