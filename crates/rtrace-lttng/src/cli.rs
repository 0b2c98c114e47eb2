//! Running the LTTng command-line tools.

use anyhow::{Context, Result};
use rtrace_tracer::tool::Spawn;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What installs [`TOOLS`].
const PACKAGES: &str = "lttng-tools liblttng-ust-dev babeltrace2";

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
    run("lttng", &[&["--no-sessiond"], args].concat(), &[], &[])
}

/// [`lttng`] with the machine interface (`--mi xml`): stable output for parsing.
pub fn lttng_mi(args: &[&str]) -> Result<String> {
    run(
        "lttng",
        &[&["--no-sessiond", "--mi", "xml"], args].concat(),
        &[],
        &[],
    )
}

/// Runs one of [`TOOLS`] to completion on `cpus` (none: anywhere; its children inherit them)
/// with `env` besides ours; fails with its command line and the first lines of its stderr.
/// Untagged: a session daemon it starts serves later runs too.
pub fn run(
    program: &'static str,
    args: &[&str],
    env: &[(String, String)],
    cpus: &[usize],
) -> Result<String> {
    let args = args.iter().map(OsString::from).collect();
    rtrace_tracer::tool::output(Spawn {
        env: env.to_vec(),
        tagged: false,
        ..Spawn::new(program, PACKAGES, Path::new(program), args, cpus)
    })
}

/// The first `n` non-empty lines of `s`, joined with ` / ` (error messages stay one line).
pub fn first_lines(s: &str, n: usize) -> String {
    rtrace_tracer::tool::first_lines(&s.lines().collect::<Vec<_>>(), n)
}

/// `path` as a `&str` for a command line (LTTng takes paths as text).
pub fn path_arg(path: &Path) -> Result<&str> {
    path.to_str()
        .with_context(|| format!("path {} is not UTF-8", path.display()))
}
