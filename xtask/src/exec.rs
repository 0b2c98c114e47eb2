//! Running commands: echo them, fail with the command line and status.

use anyhow::{bail, Context, Result};
use std::process::Command;

/// Runs `cmd`, inheriting stdio; fails naming the command line and its status.
pub fn exec(cmd: &mut Command) -> Result<()> {
    let line = format!("{cmd:?}").replace('"', "");
    eprintln!("xtask: $ {line}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot run `{line}`"))?;
    if !status.success() {
        bail!("`{line}` failed: {status}");
    }
    Ok(())
}

/// Copies the ELF file `from` to `to` (the same path: in place) without its debug info.
pub fn strip_debug(from: &std::path::Path, to: &std::path::Path) -> Result<()> {
    let status = Command::new("objcopy")
        .arg("--strip-debug")
        .args([from, to])
        .status()
        .context("cannot run objcopy (binutils)")?;
    if !status.success() {
        bail!("objcopy --strip-debug {} failed: {status}", from.display());
    }
    Ok(())
}

/// A `cargo` command using the cargo that runs xtask.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `results/<job>-<unix seconds>`: a job's default results directory.
pub fn results_dir(job: &str) -> std::path::PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("results/{job}-{now}").into()
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The cargo target directory (honours CARGO_TARGET_DIR and config via `cargo metadata`).
pub fn target_dir() -> Result<std::path::PathBuf> {
    let out = cargo()
        .args(["metadata", "--format-version=1", "--no-deps"])
        .output()
        .context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("cargo metadata printed invalid JSON")?;
    meta["target_directory"]
        .as_str()
        .map(std::path::PathBuf::from)
        .context("no target_directory in cargo metadata")
}
