//! `cargo xtask thesis`: the README's main command. Installs what is missing, builds, runs the
//! usdt comparison, its per-hit cost decomposition, the cyclictest sweep, the lossless-rate
//! search, npt and Gregg's per-event cost suite (`events`) with every tracer available here
//! (quick defaults), and writes one report directory (`index.html`, `report.md`,
//! `csv/` with one file per table, `figures/`).

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
    /// Wake-ups per cyclictest-sweep configuration (the thesis used 10,000,000).
    #[arg(long, default_value_t = 100_000)]
    loops: u64,
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
    exec(cargo().args(["build", "--workspace", "--release", "--bins", "--lib"]))?;
    let out = o.out.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("results/thesis-{now}"))
    });
    let bench = crate::exec::target_dir()?.join("release/rtrace-bench");
    // Every step runs even if an earlier one failed (e.g. a tracer's event accounting did not
    // add up): its results are still written, and the failure is reported at the end.
    let mut failed = Vec::new();
    let mut step = |name: &str, cmd: &mut Command| {
        if let Err(e) = exec(cmd) {
            failed.push(format!("{name}: {e:#}"));
        }
    };
    step(
        "usdt",
        Command::new(&bench)
            .args(["usdt", "--tracer", "all", "--priority", "99"])
            .args(["--bpf-mode", "record,record-wakeup,aggregate"])
            .args(["--lttng-event", "tracepoint,tracef"])
            .args(["--hook", "usdt,usdt-nop5,usdt-stepped,uprobe,uretprobe"])
            .args(["--iterations", &o.iterations.to_string()])
            .arg("--out")
            .arg(out.join("usdt")),
    );
    // The per-hit cost decomposition; the report checks each staircase's sum against the same
    // configuration in the plain usdt run above (a separate invocation).
    step(
        "decompose",
        Command::new(&bench)
            .args(["usdt", "--decompose", "--priority", "99"])
            .args(["--iterations", &o.iterations.to_string()])
            .arg("--out")
            .arg(out.join("decompose")),
    );
    step(
        "cyclictest-sweep",
        Command::new(&bench)
            .args(["cyclictest-sweep", "--configs", "all"])
            .args(["--loops", &o.loops.to_string()])
            .arg("--out")
            .arg(out.join("cyclictest-sweep")),
    );
    step(
        "rate",
        Command::new(&bench)
            .args(["rate", "--tracer", "all", "--duration-ms", "200"])
            .arg("--out")
            .arg(out.join("rate")),
    );
    step(
        "npt",
        Command::new(&bench)
            .args(["npt", "--tracer", "all", "--duration-ms", "1000"])
            .arg("--out")
            .arg(out.join("npt")),
    );
    step(
        "events",
        Command::new(&bench)
            .args([
                "events", "--tracer", "all", "--reads", "200000", "--rounds", "3",
            ])
            .arg("--out")
            .arg(out.join("events")),
    );
    let results: Vec<PathBuf> = [
        out.join("usdt/usdt.json"),
        out.join("decompose/usdt.json"),
        out.join("cyclictest-sweep/cyclictest-sweep.json"),
        out.join("rate/rate.json"),
        out.join("npt/npt.json"),
        out.join("events/events.json"),
    ]
    .into_iter()
    .filter(|p| p.exists())
    .collect();
    if !results.is_empty() {
        step(
            "report",
            Command::new(&bench)
                .arg("report")
                .args(&results)
                .arg("--out")
                .arg(&out),
        );
    }
    eprintln!("xtask: results in {}", out.display());
    eprintln!("xtask: report: {}", out.join("index.html").display());
    if !failed.is_empty() {
        anyhow::bail!(
            "{} step(s) reported failures (their results and warnings are in the report):\n  {}",
            failed.len(),
            failed.join("\n  ")
        );
    }
    Ok(())
}
