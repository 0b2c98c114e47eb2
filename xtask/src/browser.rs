//! `cargo xtask browser-check DIR`: a report's `index.html` as a reader sees it, in headless
//! Chromium at 1400 × 900 px. A copy of the page runs `browser_check.js`, which lists what is
//! broken (an image or figure file that does not load, an empty figure, a table wider than the
//! page, a table-of-contents entry with no section, a console error); the page's screenshot is
//! kept beside it. CI runs it on a report of the root tests' results, and on two copies broken on
//! purpose (a figure file deleted, a table made 3000 px wide), which it must find broken.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

const CHECKER: &str = include_str!("browser_check.js");
const CHROMIUM: &str = "chromium";
const WINDOW: &str = "--window-size=1400,900";

#[derive(clap::Args)]
pub struct Options {
    /// A report directory (`rtrace-bench report ... --out DIR`, or a main job's `report/`).
    #[arg(required_unless_present = "results")]
    dir: Option<PathBuf>,
    /// Where the screenshot goes (default: DIR/screenshot.png).
    #[arg(long, conflicts_with = "results")]
    screenshot: Option<PathBuf>,
    /// CI's check instead: render the report of these result files (a directory), check it,
    /// and check that two copies broken on purpose fail (in target/browser-check).
    #[arg(long, value_name = "DIR", conflicts_with = "dir")]
    results: Option<PathBuf>,
}

pub fn run(o: Options) -> Result<()> {
    let target = crate::exec::target_dir()?;
    if let Some(results) = o.results {
        let bench = target.join("release/rtrace-bench");
        return ci(&bench, &results, &target.join("browser-check"));
    }
    let dir = o.dir.expect("clap requires DIR without --results");
    let shot = o.screenshot.unwrap_or_else(|| dir.join("screenshot.png"));
    let checked = check(&dir, &shot)?;
    eprintln!("xtask: browser check: {}", checked.summary);
    if !checked.problems.is_empty() {
        bail!(
            "the report in {} is broken in a browser:\n  {}",
            dir.display(),
            checked.problems.join("\n  ")
        );
    }
    eprintln!("xtask: screenshot: {}", shot.display());
    Ok(())
}

/// What the browser saw.
#[derive(Debug)]
pub struct Checked {
    /// `checked: 37 figures, 49 tables, 37 figure files`.
    pub summary: String,
    /// One line per problem; empty when the page is whole.
    pub problems: Vec<String>,
}

/// Loads `dir/index.html` in headless Chromium with the checker and writes its screenshot to
/// `screenshot`. An error: Chromium missing or the page never finished loading.
pub fn check(dir: &Path, screenshot: &Path) -> Result<Checked> {
    let index = dir.join("index.html");
    let html = std::fs::read_to_string(&index)
        .with_context(|| format!("{}: no report here", index.display()))?;
    // Beside index.html, so that its relative links resolve as the page's do.
    let probe = dir.join(".browser-check.html");
    std::fs::write(&probe, instrument(&html)?)?;
    let dom = chromium(&["--virtual-time-budget=30000", "--dump-dom", &url(&probe)?]);
    let _ = std::fs::remove_file(&probe);
    let checked = parse(&dom?)?;
    chromium(&[
        "--hide-scrollbars",
        &format!("--screenshot={}", screenshot.display()),
        &url(&index)?,
    ])?;
    Ok(checked)
}

/// The page with the checker as the first script of its head, before anything can fail.
fn instrument(html: &str) -> Result<String> {
    let Some(at) = html.find("<head>") else {
        bail!("index.html has no <head>: not a report page");
    };
    let at = at + "<head>".len();
    Ok(format!(
        "{}<script>{CHECKER}</script>{}",
        &html[..at],
        &html[at..]
    ))
}

fn url(path: &Path) -> Result<String> {
    let abs = std::fs::canonicalize(path)?;
    Ok(format!("file://{}", abs.display()))
}

/// Seconds Chromium may take to load and check a page before the check fails.
const LIMIT_S: &str = "120";

/// Runs headless Chromium with `args`, its profile in a directory of its own (removed after)
/// and a time limit; its standard output.
fn chromium(args: &[&str]) -> Result<String> {
    let profile = std::env::temp_dir().join(format!("rtrace-browser-check-{}", std::process::id()));
    let out = Command::new("timeout")
        .args(["--kill-after=5", LIMIT_S, CHROMIUM])
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            WINDOW,
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output();
    let _ = std::fs::remove_dir_all(&profile);
    let out = out.with_context(|| format!("cannot run {CHROMIUM}: apt-get install chromium"))?;
    if out.status.code() == Some(124) {
        bail!("{CHROMIUM} did not finish within {LIMIT_S} s");
    }
    if !out.status.success() {
        bail!(
            "{CHROMIUM} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The checker's verdict in the dumped DOM: its last `<pre id="rtrace-browser-check">`.
fn parse(dom: &str) -> Result<Checked> {
    const OPEN: &str = "<pre id=\"rtrace-browser-check\">";
    let Some(at) = dom.rfind(OPEN) else {
        bail!("the page never finished loading in {CHROMIUM} (no verdict of the checker)");
    };
    let body = &dom[at + OPEN.len()..];
    let body = &body[..body.find("</pre>").unwrap_or(body.len())];
    let text = body
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let mut lines = text.lines();
    let summary = lines.next().unwrap_or_default().to_owned();
    Ok(Checked {
        summary,
        problems: lines
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// CI's check: the report of `results` passes; a copy with a figure file deleted and one with a
/// table 3000 px wide fail, each naming what broke. The report and its screenshot stay in `out`.
pub fn ci(bench: &Path, results: &Path, out: &Path) -> Result<()> {
    let report = out.join("report");
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out)?;
    crate::exec::exec(
        Command::new(bench)
            .arg("report")
            .arg(results)
            .arg("--out")
            .arg(&report)
            .stdout(std::process::Stdio::null()),
    )?;
    let whole = check(&report, &out.join("report.png"))?;
    if !whole.problems.is_empty() {
        bail!(
            "the report of the root tests' results is broken in a browser ({}):\n  {}",
            report.display(),
            whole.problems.join("\n  ")
        );
    }
    eprintln!(
        "xtask: browser check passed: {} (screenshot {})",
        whole.summary,
        out.join("report.png").display()
    );
    let figure = first_figure(&report)?;
    let broken = copy(&report, &out.join("deleted-figure"))?;
    std::fs::remove_file(broken.join(&figure))?;
    expect_broken(&broken, "does not load", &figure)?;
    let wide = copy(&report, &out.join("wide-table"))?;
    let html = std::fs::read_to_string(wide.join("index.html"))?;
    let Some(at) = html.find("<table") else {
        bail!("the report has no table");
    };
    let html = format!(
        "{}<table style=\"min-width: 3000px\"{}",
        &html[..at],
        &html[at + "<table".len()..]
    );
    std::fs::write(wide.join("index.html"), html)?;
    expect_broken(&wide, "px wide", "table 0")?;
    Ok(())
}

/// The first figure file the page links (`figures/usdt-cases-box.svg`).
fn first_figure(report: &Path) -> Result<String> {
    let html = std::fs::read_to_string(report.join("index.html"))?;
    html.split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .find(|h| h.starts_with("figures/") && h.ends_with(".svg"))
        .map(str::to_owned)
        .context("the report links no figure file")
}

fn copy(from: &Path, to: &Path) -> Result<PathBuf> {
    crate::exec::exec(Command::new("cp").arg("-a").arg(from).arg(to))?;
    Ok(to.to_owned())
}

/// The check must fail on `dir` with a problem holding both `what` and `of`.
fn expect_broken(dir: &Path, what: &str, of: &str) -> Result<()> {
    let c = check(dir, &dir.join("screenshot.png"))?;
    if !c
        .problems
        .iter()
        .any(|p| p.contains(what) && p.contains(of))
    {
        bail!(
            "the browser check missed a broken page ({}: expected `{what}` about `{of}`), it said: {:?}",
            dir.display(),
            c.problems
        );
    }
    eprintln!(
        "xtask: browser check finds the broken copy {}: {}",
        dir.display(),
        c.problems.join("; ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_is_read_from_the_last_pre_and_unescaped() {
        let dom = "<script>x = '<pre id=\"rtrace-browser-check\">';</script>\
                   <pre id=\"rtrace-browser-check\">checked: 2 figures\ntable 0 &lt;x&gt; is 3000 px wide\n</pre>";
        let c = parse(dom).unwrap();
        assert_eq!(c.summary, "checked: 2 figures");
        assert_eq!(c.problems, ["table 0 <x> is 3000 px wide"]);
        let whole = parse("<pre id=\"rtrace-browser-check\">checked: 0 figures\n</pre>").unwrap();
        assert!(whole.problems.is_empty());
        assert!(parse("<html></html>").is_err(), "no verdict is an error");
    }

    #[test]
    fn the_checker_goes_first_in_the_head() {
        let page = instrument("<html><head><title>t</title></head></html>").unwrap();
        assert!(page.starts_with("<html><head><script>"), "{}", &page[..40]);
        assert!(page.ends_with("</script><title>t</title></head></html>"));
        assert!(instrument("<html></html>").is_err());
    }
}
