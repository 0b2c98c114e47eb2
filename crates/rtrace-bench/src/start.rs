//! The start the experiments without rounds of cases share (`rate`, `npt`, `events`) once their
//! options are checked and every tracer passed its check: the `--json` path checked, the
//! measured CPU claimed against other live runs, the output directory taken, the harness pinned
//! off the measured CPU, signals routed to the normal error path, stale state of dead runs
//! removed. Nothing before it changes the machine.

use crate::cpus::Cpus;
use crate::{output, signals, tracers};
use anyhow::{Context, Result};
use rtrace_tracer::owner::NamedLock;
use std::path::{Path, PathBuf};

/// What a started run holds until it ends.
pub struct Started {
    pub cpus: Cpus,
    pub out: PathBuf,
    _cpu: NamedLock,
    _dir: output::RunDir,
}

pub fn start(cpus: &Cpus, out: &Path, out_given: bool, json: Option<&Path>) -> Result<Started> {
    if let Some(j) = json {
        output::check_file("--json", j)?;
    }
    let (cpus, cpu) = cpus.claim()?;
    let dir = output::claim_dir("--out", out, out_given)?;
    signals::pin_harness(&cpus.harness)?;
    signals::install();
    tracers::remove_stale()?;
    std::fs::create_dir_all(&dir.path)
        .with_context(|| format!("cannot create output directory {}", dir.path.display()))?;
    Ok(Started {
        cpus,
        out: dir.path.clone(),
        _cpu: cpu,
        _dir: dir,
    })
}

/// Seconds since the epoch, for `started_unix`.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
