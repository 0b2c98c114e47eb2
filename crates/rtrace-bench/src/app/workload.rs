//! What `app` times: a real program, prepared once, reset before every run (untimed) and run as
//! one command the harness starts itself. The built-in workloads (`kbuild`, `pgbench`) and the
//! user's own command implement [`AppWorkload`]; this module also has the helpers they share:
//! their directory on tmpfs, the lock that makes it theirs, and running a preparation step
//! quietly.

// Used by the `app` experiment, which is written beside these workloads.

use anyhow::{bail, Context, Result};
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Where the workloads keep their trees, caches and clusters: tmpfs, kept between invocations.
pub const APP_DIR: &str = "/dev/shm/rtrace-bench-app";

/// A program `app` times: prepared once, reset before every run (untimed), run as one command.
pub trait AppWorkload {
    /// Its name in results: "kbuild", "pgbench", "command".
    fn name(&self) -> &'static str;
    /// What it is, for the report: "Linux 6.1.x tinyconfig, make -j2 kernel/ (…)".
    fn describe(&self) -> String;
    /// Once per invocation: checks (a missing package is one clear error naming
    /// `apt-get install PKG`), extract/cache, start servers. Idempotent.
    fn prepare(&mut self) -> Result<()>;
    /// Before every timed run, untimed: clean the object tree, re-create pgbench's tables, …
    fn reset(&mut self) -> Result<()>;
    /// The command timed: argv, environment additions, working directory. The harness starts
    /// it itself (held before exec until a tracer is attached, not pinned) and waits for it
    /// with wait4 for its rusage.
    fn command(&self) -> Timed;
    /// After a timed run that exited 0: what its output says (pgbench: tps, latency
    /// percentiles); fails if the run did not do its work (pgbench: transactions processed !=
    /// asked).
    fn outcome(&mut self, stdout: &str, stderr: &str) -> Result<Outcome>;
    /// CPU time (user+system, all of it) spent since prepare() by processes of the workload
    /// that are NOT in the timed command's tree (PostgreSQL's server processes: the postmaster
    /// and its children, reaped or not); None when there are none. The harness reads it before
    /// and after each run.
    fn cpu_outside_ns(&self) -> Result<Option<u64>>;
    /// Binaries whose USDT probes belong to it (postgres), for user-space scripts.
    fn usdt_binaries(&self) -> Vec<PathBuf>;
    /// One USDT probe (`provider:name`) of [`usdt_binaries`](Self::usdt_binaries) whose hits
    /// during a timed run are known exactly from the run's outcome, and that number: a tracer
    /// that counts it can be checked. None when there is no such probe.
    fn ground_truth(&self, _outcome: &Outcome) -> Option<(String, u64)> {
        None
    }
}

/// The command a run times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed {
    pub argv: Vec<String>,
    /// Added to the harness's environment.
    pub env: Vec<(String, String)>,
    /// None: the harness's.
    pub cwd: Option<PathBuf>,
}

/// What a run's output says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Named values, e.g. ("tps", 812.3), ("latency_p99_ms", 4.1).
    pub metrics: Vec<(String, f64)>,
}

impl Outcome {
    /// The metric `name`, if the outcome has it.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
    }
}

/// The user's own command: `app -- make -j4` times it as it is.
#[derive(Debug, Clone)]
pub struct Command {
    pub argv: Vec<String>,
}

impl AppWorkload for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    fn describe(&self) -> String {
        format!("`{}`", self.argv.join(" "))
    }

    fn prepare(&mut self) -> Result<()> {
        let Some(program) = self.argv.first() else {
            bail!("no command given to time");
        };
        find_program(program)
            .with_context(|| format!("the command to time, `{program}`, cannot run"))?;
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        Ok(())
    }

    fn command(&self) -> Timed {
        Timed {
            argv: self.argv.clone(),
            env: Vec::new(),
            cwd: None,
        }
    }

    fn outcome(&mut self, _stdout: &str, _stderr: &str) -> Result<Outcome> {
        Ok(Outcome::default())
    }

    fn cpu_outside_ns(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// The program itself: its own USDT probes.
    fn usdt_binaries(&self) -> Vec<PathBuf> {
        self.argv
            .first()
            .and_then(|p| find_program(p).ok())
            .into_iter()
            .collect()
    }
}

/// `program` as exec would find it: a path with a slash as it is, else the first executable
/// file of that name on PATH.
pub fn find_program(program: &str) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        if executable(&p) {
            return Ok(p);
        }
        bail!("{program} is not an executable file");
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
        .with_context(|| format!("{program} not found on PATH"))
}

/// Fails unless every program is installed, naming each one missing and the packages that
/// install them: `{what} needs {needs}: apt-get install {packages}`.
pub fn require_programs(what: &str, needs: &str, programs: &[&str], packages: &str) -> Result<()> {
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| find_program(p).is_err())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{what} needs {needs}: apt-get install {packages} (missing: {})",
            missing.join(", ")
        );
    }
    Ok(())
}

/// `APP_DIR`, created (mode 755: PostgreSQL's user walks through it).
pub fn app_dir() -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let dir = PathBuf::from(APP_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot chmod {}", dir.display()))?;
    Ok(dir)
}

/// An exclusive lock on `APP_DIR/<name>.lock`, held while the workload's state is ours; the next
/// holder takes what it finds there as left by a run that is gone (ownership by lock, never by
/// pid).
pub fn lock(name: &str) -> Result<Flock<File>> {
    let path = app_dir()?.join(format!("{name}.lock"));
    let file = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| {
        anyhow::anyhow!(
            "{} is locked ({e}): another rtrace-bench app runs the {name} workload",
            path.display()
        )
    })
}

/// Runs a preparation step to completion, its output captured (never printed); fails with the
/// command line and the tail of its output. Returns its stdout.
pub fn run_quiet(cmd: &mut std::process::Command) -> Result<String> {
    let line = command_line(cmd);
    crate::hold::on_every_cpu(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run `{line}`"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        bail!(
            "`{line}` failed ({}): {}",
            out.status,
            tail(
                if stderr.trim().is_empty() {
                    &stdout
                } else {
                    &stderr
                },
                5
            )
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The command line of `cmd`, for errors.
pub fn command_line(cmd: &std::process::Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `n` non-empty lines of `text`, trimmed and joined with ` / ` (an error stays one
/// line).
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// Removes `path` (a tree or a file) if it exists.
pub fn remove_tree(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot stat {}", path.display())),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path)
            .with_context(|| format!("cannot remove {}", path.display())),
        Ok(_) => {
            std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_finds_its_program() {
        let mut c = Command {
            argv: vec!["sh".into(), "-c".into(), "true".into()],
        };
        c.prepare().unwrap();
        assert_eq!(c.command().argv, ["sh", "-c", "true"]);
        assert_eq!(c.cpu_outside_ns().unwrap(), None);
        let mut missing = Command {
            argv: vec!["no-such-program-rtrace".into()],
        };
        let e = format!("{:#}", missing.prepare().unwrap_err());
        assert!(e.contains("no-such-program-rtrace"), "{e}");
        assert!(Command { argv: vec![] }.prepare().is_err());
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\n\nb\nc\n", 2), "b / c");
        assert_eq!(tail("", 2), "");
    }

    #[test]
    fn outcome_get() {
        let o = Outcome {
            metrics: vec![("tps".into(), 2.0)],
        };
        assert_eq!(o.get("tps"), Some(2.0));
        assert_eq!(o.get("x"), None);
    }
}
