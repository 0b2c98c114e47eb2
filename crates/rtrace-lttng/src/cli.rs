//! Running the LTTng command-line tools.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The tools are missing → one line naming the fix.
#[derive(Debug, thiserror::Error)]
#[error("lttng-tools not found ({missing} is not in PATH): apt-get install lttng-tools liblttng-ust-dev babeltrace2")]
pub struct ToolsMissing {
    pub missing: &'static str,
}

/// The programs this backend runs.
pub const TOOLS: [&str; 3] = ["lttng", "lttng-sessiond", "babeltrace2"];

/// `name` resolved through `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Fails with [`ToolsMissing`] unless every program of [`TOOLS`] is installed.
pub fn require_tools() -> Result<(), ToolsMissing> {
    match TOOLS.into_iter().find(|t| which(t).is_none()) {
        Some(missing) => Err(ToolsMissing { missing }),
        None => Ok(()),
    }
}

/// Runs `lttng --no-sessiond ARGS` (never auto-spawns a session daemon behind our back) and
/// returns its standard output. Fails with the command line and lttng's own error message.
pub fn lttng(args: &[&str]) -> Result<String> {
    run(Command::new("lttng").arg("--no-sessiond").args(args))
}

/// [`lttng`] with the machine interface (`--mi xml`): stable output for parsing.
pub fn lttng_mi(args: &[&str]) -> Result<String> {
    run(Command::new("lttng")
        .args(["--no-sessiond", "--mi", "xml"])
        .args(args))
}

/// Runs `cmd` to completion; fails with its command line and the first lines of its stderr.
pub fn run(cmd: &mut Command) -> Result<String> {
    let line = command_line(cmd);
    let out = rtrace_tracer::die_with_parent(cmd)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{line}`"))?;
    if !out.status.success() {
        bail!(
            "`{line}` failed ({}): {}",
            out.status,
            first_lines(&String::from_utf8_lossy(&out.stderr), 3)
        );
    }
    String::from_utf8(out.stdout).with_context(|| format!("`{line}` printed non-UTF-8"))
}

fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first `n` non-empty lines of `s`, joined with ` / ` (error messages stay one line).
pub fn first_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(n)
        .collect();
    if lines.is_empty() {
        "no error message".to_owned()
    } else {
        lines.join(" / ")
    }
}

/// `path` as a `&str` for a command line (LTTng takes paths as text).
pub fn path_arg(path: &Path) -> Result<&str> {
    path.to_str()
        .with_context(|| format!("path {} is not UTF-8", path.display()))
}
