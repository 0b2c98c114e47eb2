//! `rtrace-bench report RESULT.json... [--out DIR]`: regenerates a report directory (HTML page,
//! Markdown, CSV, SVG figures, text) from result files. Experiments call [`write_dir`] after
//! every run so their run directory always holds a report of what was measured so far.

use anyhow::{Context, Result};
use rtrace_report::doc::terminal::{self, Paint};
use rtrace_report::doc::Document;
use rtrace_report::{AnyResult, Report};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Reads any result file; errors name the file and the fix.
pub fn load(path: &Path) -> Result<AnyResult> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        anyhow::bail!(
            "{} is not a regular file: give the path of a result file (usdt.json, cyclictest-sweep.json)",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {}: check the path", path.display()))?;
    AnyResult::from_json(&text).with_context(|| format!("{}", path.display()))
}

/// A result with the file it was read from.
pub type Loaded = (Option<String>, AnyResult);

/// The result files `paths` name: a file is read as given; a directory is searched (its
/// subdirectories too, in name order) for JSON files that name an experiment, so that a fleet's
/// folders (one per machine) or a run directory can be given whole. A result found twice (a run
/// directory's file and its report's copy) is read once. Returns the results and the files of
/// the directories that name an experiment but could not be read, each with the reason.
pub fn load_all(paths: &[PathBuf]) -> Result<(Vec<Loaded>, Vec<String>)> {
    let mut out: Vec<Loaded> = Vec::new();
    let mut unread = Vec::new();
    for path in paths {
        if !std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            out.push((Some(path.display().to_string()), load(path)?));
            continue;
        }
        let files = walkdir::WalkDir::new(path)
            .sort_by_file_name()
            .into_iter()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_file())
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"));
        let mut found = 0;
        for f in files {
            let Ok(text) = std::fs::read_to_string(f.path()) else {
                continue;
            };
            if !names_an_experiment(&text) {
                continue;
            }
            found += 1;
            match AnyResult::from_json(&text) {
                Ok(r) if out.iter().any(|(_, o)| o.same_run(&r)) => {}
                Ok(r) => out.push((Some(f.path().display().to_string()), r)),
                Err(e) => unread.push(format!("{}: {e:#}", f.path().display())),
            }
        }
        if found == 0 {
            anyhow::bail!(
                "{} holds no result file: give a directory a run wrote (results/usdt-…) or result files",
                path.display()
            );
        }
    }
    Ok((out, unread))
}

/// Whether a JSON text has a top-level `experiment` field: cheap before parsing, and what
/// tells a result from the other JSON files of a run directory (cyclictest's).
fn names_an_experiment(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v.get("experiment").is_some_and(|e| e.is_string()))
}

/// Writes every file of `doc` under `dir`; returns the HTML page's path.
pub fn write_dir(dir: &Path, doc: &Document) -> Result<PathBuf> {
    for out in rtrace_report::doc::render(doc)? {
        let path = dir.join(&out.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        crate::output::write_atomic(&path, &out.bytes)?;
    }
    Ok(dir.join("index.html"))
}

/// Terminal colour: only when stdout is a terminal and NO_COLOR is unset.
pub fn paint() -> Paint {
    Paint::new(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none())
}

/// Reports `results` into `out` (default: a fresh `results/report-<timestamp>`), its summary
/// ending with what the job `left_out`.
pub fn run(results: &[PathBuf], out: Option<&Path>, left_out: Vec<String>) -> Result<i32> {
    let (results, unread) = load_all(results)?;
    let left_out = left_out
        .into_iter()
        .chain(unread.into_iter().map(|u| format!("not read: {u}")))
        .collect();
    let report = Report::new(results).leaving_out(left_out);
    let dir = match out {
        Some(d) => crate::output::claim_dir("--out", d, true)?,
        None => crate::output::claim_dir("--out", &crate::options::default_out("report"), false)?,
    };
    let doc = rtrace_report::document(&report)?;
    let index = write_dir(&dir.path, &doc)?;
    print!("{}", terminal(&doc));
    eprintln!("report: {}", index.display());
    Ok(0)
}

/// The terminal text of `doc`: what every experiment prints at its end.
pub fn terminal(doc: &Document) -> String {
    terminal::render(doc, paint())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_give_each_result_once_and_name_what_they_could_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, bytes: &[u8]| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        };
        let labelled = |label: &str| {
            let mut u = rtrace_report::fixtures::usdt();
            u.header.environment.label = Some(label.into());
            AnyResult::from(u).to_json().unwrap()
        };
        write("a/usdt/usdt.json", &labelled("a"));
        write("a/usdt.json", &labelled("a")); // its report's copy
        write("a/usdt/cyclictest.json", br#"{"histogram":[]}"#);
        write("b/usdt.json", &labelled("b"));
        write("b/count.json", br#"{"experiment":"count"}"#);
        let (results, unread) = load_all(&[dir.path().join("a"), dir.path().join("b")]).unwrap();
        let labels: Vec<_> = results
            .iter()
            .map(|(_, r)| r.environment().label.clone().unwrap())
            .collect();
        assert_eq!(labels, ["a", "b"]);
        assert_eq!(unread.len(), 1, "{unread:?}");
        assert!(unread[0].contains("count.json") && unread[0].contains("unknown experiment"));
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        let e = format!("{:#}", load_all(&[dir.path().join("empty")]).unwrap_err());
        assert!(e.contains("holds no result file"), "{e}");
    }

    #[test]
    fn unreadable_files_name_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let e = format!("{:#}", load(&dir.path().join("missing.json")).unwrap_err());
        assert!(e.contains("check the path"), "{e}");
        let junk = dir.path().join("junk.json");
        std::fs::write(&junk, r#"{"experiment":"count"}"#).unwrap();
        let e = format!("{:#}", load(&junk).unwrap_err());
        assert!(
            e.contains("junk.json") && e.contains("unknown experiment"),
            "{e}"
        );
    }
}
