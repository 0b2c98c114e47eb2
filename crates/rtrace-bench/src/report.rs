//! `rtrace-bench report RESULT.json... [--out DIR]`: regenerates a report directory (HTML page,
//! Markdown, CSV, SVG figures, text) from result files. Experiments call [`write_dir`] after
//! every run so their run directory always holds a report of what was measured so far.

use anyhow::{Context, Result};
use rtrace_report::terminal::{self, Paint};
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

/// Writes every file of `report` under `dir`; returns the HTML page's path.
pub fn write_dir(dir: &Path, report: &Report) -> Result<PathBuf> {
    for out in rtrace_report::render(report)? {
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
    let results = results
        .iter()
        .map(|p| Ok((Some(p.display().to_string()), load(p)?)))
        .collect::<Result<Vec<_>>>()?;
    let report = Report::new(results).leaving_out(left_out);
    let dir = match out {
        Some(d) => crate::output::claim_dir("--out", d, true)?,
        None => crate::output::claim_dir("--out", &crate::options::default_out("report"), false)?,
    };
    let index = write_dir(&dir.path, &report)?;
    print!("{}", terminal(&report));
    eprintln!("report: {}", index.display());
    Ok(0)
}

/// The terminal text of `report`: what every experiment prints at its end.
pub fn terminal(report: &Report) -> String {
    terminal::text(report, paint())
}

#[cfg(test)]
mod tests {
    use super::*;

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
