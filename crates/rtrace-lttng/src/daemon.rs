//! The LTTng session daemon: found running, or started by us; stopped by whoever finds a daemon
//! that a run started without users.
//!
//! Every user of a daemon (a [`Sessiond`] handle, found or started) holds a shared lock on
//! `<run dir>/lttng-sessiond.users` (see [`rtrace_tracer::owner`]) from before it looks for the
//! daemon until it is dropped. A daemon a run starts carries [`DAEMON_ENV`] `=<tag>` in its
//! environment (its consumer daemons inherit it). [`stop_if_unused`] stops the marked daemons
//! when it can lock the users file exclusively: the last handle does it when dropped, and the
//! stale cleanup of any later run does it when the daemon's users were killed. A daemon started
//! otherwise (by the user, by systemd) is never stopped.

use crate::cli;
use anyhow::{bail, Context, Result};
use nix::fcntl::Flock;
use rtrace_tracer::owner;
use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Environment variable marking a session daemon started by a run: `RTRACE_BENCH_DAEMON=<tag>`.
pub const DAEMON_ENV: &str = "RTRACE_BENCH_DAEMON";

/// The users lock in the run directory.
const USERS: &str = "lttng-sessiond.users";

/// How long a marked daemon gets to exit after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// A session daemon this backend can talk to; see the module documentation for who stops it.
#[derive(Debug)]
pub struct Sessiond {
    /// Pid of the daemon we started, `None` for one we found.
    pub(crate) started: Option<u32>,
    /// Our shared lock on the users file.
    users: Option<Flock<File>>,
}

impl Sessiond {
    /// The running session daemon of this user, or a new one started with `--daemonize` and
    /// pinned to `cpus` (its consumer daemons inherit the affinity). Empty `cpus`: no pinning.
    pub fn ensure(cpus: &[usize]) -> Result<Sessiond> {
        // Waits while a last user stops the daemon, then starts a new one below.
        let users = Some(owner::lock_shared(USERS)?);
        if cli::lttng(&["list"]).is_ok() {
            return Ok(Sessiond {
                started: None,
                users,
            });
        }
        let marked = [(DAEMON_ENV.to_owned(), owner::run_id()?.to_owned())];
        cli::run("lttng-sessiond", &["--daemonize"], &marked, cpus)
            .context("cannot start lttng-sessiond")?;
        // `--daemonize` returns once the daemon is ready; its pid file appears with it.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pid = running_pid();
            if let (Some(pid), true) = (pid, cli::lttng(&["list"]).is_ok()) {
                return Ok(Sessiond {
                    started: Some(pid),
                    users,
                });
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
}

impl Drop for Sessiond {
    fn drop(&mut self) {
        drop(self.users.take());
        let _ = stop_if_unused();
    }
}

/// Stops the session daemons a run started (marked with [`DAEMON_ENV`]) if nobody uses them;
/// returns a description of each one stopped.
pub fn stop_if_unused() -> Result<Vec<String>> {
    let Some(_alone) = owner::try_lock_exclusive(USERS)? else {
        return Ok(Vec::new());
    };
    let marked = |comm: &str| -> Vec<u32> {
        owner::marked_processes(DAEMON_ENV)
            .into_iter()
            .map(|(pid, _)| pid)
            .filter(|&pid| rtrace_tracer::procs::comm(pid).is_some_and(|c| c == comm))
            .collect()
    };
    let mut stopped = Vec::new();
    // The session daemon stops its consumer daemons; any left (it was SIGKILLed) go after it.
    for comm in ["lttng-sessiond", "lttng-consumerd"] {
        let pids = marked(comm);
        if !pids.is_empty() {
            owner::stop_processes(&pids, STOP_GRACE);
            stopped.extend(
                pids.iter()
                    .map(|p| format!("{comm} (pid {p}) started by a run")),
            );
        }
    }
    Ok(stopped)
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

/// LTTng daemons already running (`lttng-sessiond`, `lttng-consumerd`) that may run on `cpu`: a
/// run uses a session daemon it finds as it is (it is not ours to pin), so the report says so.
/// One `comm (pid N, CPUs L)` per daemon.
pub fn daemons_allowed_on(cpu: usize) -> Vec<String> {
    use rtrace_tracer::procs;
    procs::all()
        .into_iter()
        .filter(|p| matches!(p.comm.as_str(), "lttng-sessiond" | "lttng-consumerd"))
        .filter_map(|p| {
            let cpus = procs::cpus_allowed(p.pid)?;
            let on = rtrace_tracer::parse_cpu_list(&cpus)?.contains(&cpu);
            on.then(|| format!("{} (pid {}, CPUs {cpus})", p.comm, p.pid))
        })
        .collect()
}

/// Pid of this user's live session daemon, from its pid file.
pub fn running_pid() -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    rtrace_tracer::is_running(pid).then_some(pid)
}
