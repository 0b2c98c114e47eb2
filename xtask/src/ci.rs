//! `cargo xtask ci`: the project's test command (README, `.ci/run`).

use crate::exec::{cargo, exec, is_root};
use crate::packages;
use anyhow::{bail, Result};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Options {
    /// Skip the root integration tests on the host.
    #[arg(long)]
    no_root_tests: bool,
    /// Skip the QEMU guest suites.
    #[arg(long)]
    no_vm: bool,
    /// Seconds a guest may run before it counts as hung (no verdict = failure). A backstop:
    /// each check has its own time limit in the guest, and the guest kernel panics on lockups.
    #[arg(long, default_value_t = 600)]
    vm_timeout: u64,
    /// Do not install missing Debian packages.
    #[arg(long)]
    no_install: bool,
}

pub fn run(o: Options) -> Result<()> {
    let started = Instant::now();
    if !o.no_install {
        packages::ensure()?;
    }
    exec(cargo().args(["fmt", "--all", "--", "--check"]))?;
    exec(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--release",
        "--",
        "-D",
        "warnings",
    ]))?;
    exec(cargo().args(["build", "--workspace", "--release", "--bins", "--lib"]))?;
    // Unit tests: default members only, no root needed.
    exec(cargo().args(["test", "--release"]))?;
    if !o.no_root_tests {
        if !is_root() {
            bail!("the root integration tests need root: run `cargo xtask ci` as root, or pass --no-root-tests");
        }
        exec(cargo().args([
            "test",
            "--release",
            "-p",
            "rtrace-tests",
            "--",
            "--test-threads=1",
        ]))?;
    }
    if !o.no_vm {
        crate::vm::ci_suites(std::time::Duration::from_secs(o.vm_timeout))?;
    }
    eprintln!(
        "xtask: ci passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
