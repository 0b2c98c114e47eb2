//! `cargo xtask thesis`: the README's main command. Installs what is missing, builds, and runs
//! the usdt comparison with every tracer available here (quick defaults), writing a results
//! directory.

use crate::exec::{cargo, exec};
use crate::packages;
use anyhow::Result;
use std::path::PathBuf;
use std::process::Command;

#[derive(clap::Args)]
pub struct Options {
    /// Timed iterations per case (the thesis used 10,000,000).
    #[arg(long, default_value_t = 1_000_000)]
    iterations: u64,
    /// Results directory (default: results/thesis-<timestamp>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not install missing Debian packages.
    #[arg(long)]
    no_install: bool,
}

pub fn run(o: Options) -> Result<()> {
    if !o.no_install {
        packages::ensure()?;
    }
    exec(cargo().args(["build", "--workspace", "--release", "--bins"]))?;
    let out = o.out.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("results/thesis-{now}"))
    });
    let bench = crate::exec::target_dir()?.join("release/rtrace-bench");
    exec(
        Command::new(&bench)
            .args(["usdt", "--tracer", "all", "--priority", "99"])
            .args(["--iterations", &o.iterations.to_string()])
            .arg("--out")
            .arg(out.join("usdt")),
    )?;
    eprintln!("xtask: results in {}", out.display());
    Ok(())
}
