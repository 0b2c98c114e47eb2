//! The LTTng session daemon: found running, or started by us and stopped when we are done.

use crate::cli;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// A session daemon this backend can talk to. When we started it, dropping the last handle
/// stops it (SIGTERM, then wait until it is gone); one that was already running is left alone.
#[derive(Debug)]
pub struct Sessiond {
    /// Pid of the daemon we started, `None` for one we found.
    started: Option<u32>,
}

impl Sessiond {
    /// The running session daemon of this user, or a new one started with `--daemonize` and
    /// pinned to `cpus` (its consumer daemons inherit the affinity). Empty `cpus`: no pinning.
    pub fn ensure(cpus: &[usize]) -> Result<Sessiond> {
        if cli::lttng(&["list"]).is_ok() {
            return Ok(Sessiond { started: None });
        }
        let mut cmd = Command::new("lttng-sessiond");
        cmd.arg("--daemonize");
        if !cpus.is_empty() {
            let mut set = nix::sched::CpuSet::new();
            for &c in cpus {
                set.set(c)
                    .with_context(|| format!("consumer CPU {c} is out of range"))?;
            }
            // SAFETY: sched_setaffinity is a plain syscall, async-signal-safe; nothing else runs
            // between fork and exec.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
                        .map_err(std::io::Error::from)
                });
            }
        }
        cli::run(&mut cmd).context("cannot start lttng-sessiond")?;
        // `--daemonize` returns once the daemon is ready; its pid file appears with it.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pid = running_pid();
            if let (Some(pid), true) = (pid, cli::lttng(&["list"]).is_ok()) {
                return Ok(Sessiond { started: Some(pid) });
            }
            if Instant::now() > deadline {
                bail!(
                    "lttng-sessiond --daemonize returned but {} (pid file {})",
                    if pid.is_some() {
                        "it does not answer"
                    } else {
                        "it wrote no pid"
                    },
                    pid_file().display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Pid of the daemon if this handle started it.
    pub fn started_pid(&self) -> Option<u32> {
        self.started
    }
}

impl Drop for Sessiond {
    fn drop(&mut self) {
        let Some(pid) = self.started else { return };
        let target = nix::unistd::Pid::from_raw(pid as i32);
        if nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGTERM).is_err() {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if alive(pid) {
            let _ = nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Where this user's session daemon writes its pid: `/var/run/lttng` for root, else
/// `$LTTNG_HOME` or `$HOME` + `/.lttng`.
pub fn pid_file() -> PathBuf {
    let dir = if nix::unistd::geteuid().is_root() {
        PathBuf::from("/var/run/lttng")
    } else {
        std::env::var_os("LTTNG_HOME")
            .or_else(|| std::env::var_os("HOME"))
            .map(|h| PathBuf::from(h).join(".lttng"))
            .unwrap_or_else(|| PathBuf::from(".lttng"))
    };
    dir.join("lttng-sessiond.pid")
}

/// Pid of this user's live session daemon, from its pid file.
pub fn running_pid() -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    alive(pid).then_some(pid)
}

/// Alive and not a zombie (a daemonized process is reaped by whoever adopted it, maybe late).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // state is the first field after the parenthesised command name
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}
