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

/// A `cargo` command using the cargo that runs xtask.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
