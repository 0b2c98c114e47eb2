//! An external tool a backend runs (perf, bpftrace, strace): tagged with the run
//! (`RTRACE_BENCH_RUN`, in case it ever outlives us), dying with the thread that started it,
//! pinned before its exec (it never runs on the measured CPU, not even for a moment), in its own
//! process group (only our signal stops it, not a Ctrl-C meant for rtrace-bench), its output
//! read line by line on threads, ready once a line says so, stopped by a signal and then waited
//! for or killed, and killed if dropped.

use anyhow::{Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// The line that says a tool is ready (its probes attached, its process traced). It is not
/// kept in the output.
pub type ReadyLine = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How to start a tool.
pub struct Spawn<'a> {
    /// Names it in errors: `perf`, `bpftrace`, `strace`.
    pub name: &'static str,
    /// The Debian package that installs it, named when it cannot run.
    pub package: &'static str,
    pub program: &'a Path,
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
    /// The CPUs it runs on from its exec (none: anywhere); threads it starts inherit them.
    pub cpus: &'a [usize],
    /// What becomes of its stdout.
    pub stdout: Stdout,
    /// Descriptors it inherits: their close-on-exec flag is cleared in the child.
    pub inherit: Vec<RawFd>,
    /// Watched for on stdout and stderr; `None`: ready once started.
    pub ready: Option<ReadyLine>,
    /// Whether it carries the run's tag: a tool that could outlive the run does, so that the
    /// next run's stale cleanup stops it; a daemon that serves several runs must not.
    pub tagged: bool,
}

impl<'a> Spawn<'a> {
    /// `program args`, output on stderr only, no further environment or descriptors.
    pub fn new(
        name: &'static str,
        package: &'static str,
        program: &'a Path,
        args: Vec<OsString>,
        cpus: &'a [usize],
    ) -> Spawn<'a> {
        Spawn {
            name,
            package,
            program,
            args,
            env: Vec::new(),
            cpus,
            stdout: Stdout::Null,
            inherit: Vec::new(),
            ready: None,
            tagged: true,
        }
    }
}

/// A tool's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdout {
    /// `/dev/null`.
    Null,
    /// Read into lines, as stderr always is.
    Lines,
    /// A pipe the caller reads ([`Tool::take_stdout`]).
    Pipe,
}

/// What a tool printed, and how it ended.
#[derive(Debug)]
pub struct Exited {
    pub name: &'static str,
    pub status: ExitStatus,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

impl Exited {
    /// Its last non-empty line on stderr, else on stdout: what explains a failure.
    pub fn last_words(&self) -> Option<&str> {
        let stderr = self.stderr.iter().rev();
        stderr
            .chain(self.stdout.iter().rev())
            .find(|l| !l.trim().is_empty())
            .map(String::as_str)
    }

    /// [`Exited::last_words`], else its exit status.
    pub fn why(&self) -> String {
        match self.last_words() {
            Some(l) => l.to_owned(),
            None => format!("{} exited with {}", self.name, self.status),
        }
    }
}

/// Why a tool did not say it was ready.
#[derive(Debug)]
pub enum NotReady {
    /// It exited first.
    Exited(Exited),
    /// Not within the time given: it was killed; what it printed on stderr.
    Timeout(Vec<String>),
}

/// A running tool.
pub struct Tool {
    name: &'static str,
    child: Option<Child>,
    stdout: Option<JoinHandle<Vec<String>>>,
    stderr: Option<JoinHandle<Vec<String>>>,
    ready: Option<mpsc::Receiver<()>>,
}

impl Tool {
    /// Starts the tool; [`Tool::wait_ready`] waits for its ready line.
    pub fn spawn(s: Spawn) -> Result<Tool> {
        let set = match s.cpus {
            [] => None,
            cpus => Some(crate::cpu_set(cpus)?),
        };
        let mut cmd = Command::new(s.program);
        if s.tagged {
            cmd.env(crate::owner::RUN_ENV, crate::owner::run_id()?);
        }
        cmd.args(&s.args)
            .envs(s.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(match s.stdout {
                Stdout::Null => Stdio::null(),
                Stdout::Lines | Stdout::Pipe => Stdio::piped(),
            })
            .stderr(Stdio::piped())
            .process_group(0);
        let inherit = s.inherit.clone();
        // SAFETY: prctl, sched_setaffinity and fcntl are async-signal-safe; nothing else runs
        // between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // SIGKILL when the thread that started it ends: a tool holding kernel state or
                // writing trace data must not outlive a SIGKILLed harness (start such tools from
                // a thread that lives as long as them). It does not pass to a daemon's fork.
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
                if let Some(set) = &set {
                    nix::sched::sched_setaffinity(Pid::from_raw(0), set)
                        .map_err(std::io::Error::from)?;
                }
                for &fd in &inherit {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().with_context(|| {
            format!(
                "cannot run {} (apt-get install {})",
                s.program.display(),
                s.package
            )
        })?;
        let (tx, rx) = mpsc::channel();
        let read = |r: Box<dyn Read + Send>| {
            let (ready, tx) = (s.ready.clone(), tx.clone());
            std::thread::spawn(move || lines(r, ready.as_deref(), &tx))
        };
        let stdout = match s.stdout {
            Stdout::Lines => child.stdout.take().map(|o| read(Box::new(o))),
            Stdout::Null | Stdout::Pipe => None,
        };
        let stderr = child.stderr.take().map(|e| read(Box::new(e)));
        Ok(Tool {
            name: s.name,
            child: Some(child),
            stdout,
            stderr,
            ready: s.ready.is_some().then_some(rx),
        })
    }

    /// Its stdout, with [`Stdout::Pipe`] (once).
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.as_mut()?.stdout.take()
    }

    /// Waits for its exit however long it takes: a command run to completion.
    pub fn finish(&mut self) -> Result<Exited> {
        let child = self
            .child
            .as_mut()
            .context("the tool was waited for already")?;
        let status = child
            .wait()
            .with_context(|| format!("waiting for {}", self.name))?;
        Ok(self.exited(status))
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Waits up to `timeout` for the ready line; a tool that exits first is waited for up to
    /// `exit` (then killed), one that says nothing in time is killed.
    pub fn wait_ready(&mut self, timeout: Duration, exit: Duration) -> Result<(), NotReady> {
        let Some(rx) = self.ready.take() else {
            return Ok(());
        };
        match rx.recv_timeout(timeout) {
            Ok(()) => Ok(()),
            // Both streams closed before the line: the tool is exiting.
            Err(mpsc::RecvTimeoutError::Disconnected) => match self.wait(exit) {
                Ok(Some(exited)) => Err(NotReady::Exited(exited)),
                _ => Err(NotReady::Timeout(self.kill().1)),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => Err(NotReady::Timeout(self.kill().1)),
        }
    }

    /// Its exit status if it has exited.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => c
                .try_wait()
                .with_context(|| format!("waiting for {}", self.name)),
            None => Ok(None),
        }
    }

    /// `signal` unless it has exited (it may exit in between: its wait tells).
    pub fn signal(&mut self, signal: Signal) -> Result<()> {
        if self.child.is_some() && self.try_wait()?.is_none() {
            let _ = kill(Pid::from_raw(self.pid() as i32), signal);
        }
        Ok(())
    }

    /// Waits up to `timeout` for its exit and returns what it printed; `None`: it did not exit
    /// in time and was killed (its stderr then is in [`Tool::kill`]'s answer, already taken:
    /// the caller says what was lost).
    pub fn wait(&mut self, timeout: Duration) -> Result<Option<Exited>> {
        let Some(child) = self.child.as_mut() else {
            return Ok(None);
        };
        let waited = crate::wait_or_kill(child, timeout)
            .with_context(|| format!("waiting for {}", self.name))?;
        Ok(waited.map(|status| self.exited(status)))
    }

    /// What it printed, once `status` says it exited.
    pub fn exited(&mut self, status: ExitStatus) -> Exited {
        self.child = None;
        let (stdout, stderr) = self.join();
        Exited {
            name: self.name,
            status,
            stdout,
            stderr,
        }
    }

    /// SIGKILL to its process group (what it started dies with it, and with them every copy of
    /// its output pipes) and reap; what it printed on stdout and stderr.
    pub fn kill(&mut self) -> (Vec<String>, Vec<String>) {
        if let Some(mut child) = self.child.take() {
            if child.try_wait().is_ok_and(|s| s.is_none()) {
                let _ = nix::sys::signal::killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.join()
    }

    fn join(&mut self) -> (Vec<String>, Vec<String>) {
        let join = |h: Option<JoinHandle<Vec<String>>>| {
            h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
        };
        (join(self.stdout.take()), join(self.stderr.take()))
    }
}

/// Runs `s` to completion and returns its stdout (lines, each ending in a newline); fails with
/// the command line and the first lines of its stderr.
pub fn output(s: Spawn) -> Result<String> {
    let line = std::iter::once(s.program.as_os_str())
        .chain(s.args.iter().map(|a| a.as_os_str()))
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let exited = Tool::spawn(Spawn {
        stdout: Stdout::Lines,
        ..s
    })
    .and_then(|mut t| t.finish())
    .with_context(|| format!("cannot run `{line}`"))?;
    if !exited.status.success() {
        anyhow::bail!(
            "`{line}` failed ({}): {}",
            exited.status,
            first_lines(&exited.stderr, 3)
        );
    }
    Ok(exited.stdout.iter().map(|l| format!("{l}\n")).collect())
}

/// Fails unless `program` is installed (as [`Unsupported::Unavailable`](crate::features::Unsupported),
/// naming the Debian `package`) and we run as root: the first check of a backend that runs
/// the tool `name`.
pub fn require(name: &'static str, package: &str, program: &Path) -> Result<()> {
    if !program.is_file() {
        return Err(crate::features::Unsupported::Unavailable(format!(
            "{name} not found: apt-get install {package} (looked for {})",
            program.display()
        ))
        .into());
    }
    crate::require_root(name)?;
    Ok(())
}

/// The first `n` non-empty lines, trimmed and joined with ` / ` (an error stays one line).
pub fn first_lines(lines: &[impl AsRef<str>], n: usize) -> String {
    let kept: Vec<&str> = lines
        .iter()
        .map(|l| l.as_ref().trim())
        .filter(|l| !l.is_empty())
        .take(n)
        .collect();
    match kept.is_empty() {
        true => "no error message".to_owned(),
        false => kept.join(" / "),
    }
}

impl Drop for Tool {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads `r` to the end; a line `ready` accepts is signalled, not kept.
fn lines(
    r: impl Read,
    ready: Option<&(dyn Fn(&str) -> bool + Send + Sync)>,
    tx: &mpsc::Sender<()>,
) -> Vec<String> {
    let mut out = Vec::new();
    for l in BufReader::new(r).lines().map_while(Result::ok) {
        if ready.is_some_and(|f| f(&l)) {
            let _ = tx.send(());
        } else {
            out.push(l);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sh(script: &str, ready: Option<ReadyLine>) -> Spawn<'static> {
        Spawn {
            stdout: Stdout::Lines,
            ready,
            ..Spawn::new(
                "sh",
                "dash",
                Path::new("/bin/sh"),
                vec!["-c".into(), script.into()],
                &[],
            )
        }
    }

    #[test]
    fn a_tool_is_ready_on_its_line_which_is_not_kept() {
        let ready: ReadyLine = Arc::new(|l| l == "attached");
        let mut t = Tool::spawn(sh("echo before; echo attached >&2; read x", Some(ready))).unwrap();
        t.wait_ready(Duration::from_secs(10), Duration::from_secs(1))
            .unwrap();
        t.signal(Signal::SIGTERM).unwrap();
        let exited = t.wait(Duration::from_secs(10)).unwrap().expect("exits");
        assert_eq!(exited.stdout, ["before"]);
        assert!(exited.stderr.is_empty(), "{:?}", exited.stderr);
        assert!(!exited.status.success());
    }

    #[test]
    fn one_that_exits_or_stays_silent_is_not_ready() {
        let ready: ReadyLine = Arc::new(|l| l == "attached");
        let mut t = Tool::spawn(sh("echo no such probe >&2; exit 3", Some(ready.clone()))).unwrap();
        match t.wait_ready(Duration::from_secs(10), Duration::from_secs(5)) {
            Err(NotReady::Exited(e)) => {
                assert_eq!(e.status.code(), Some(3));
                assert_eq!(e.last_words(), Some("no such probe"));
            }
            other => panic!("{other:?}"),
        }
        let mut t = Tool::spawn(sh("echo waiting >&2; sleep 30", Some(ready))).unwrap();
        let started = Instant::now();
        match t.wait_ready(Duration::from_millis(300), Duration::from_secs(1)) {
            Err(NotReady::Timeout(stderr)) => assert_eq!(stderr, ["waiting"]),
            other => panic!("{other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn it_runs_on_its_cpus_from_its_exec_and_a_missing_program_names_its_package() {
        let script = "grep Cpus_allowed_list /proc/self/status";
        let out = {
            let mut t = Tool::spawn(Spawn {
                cpus: &[0],
                ..sh(script, None)
            })
            .unwrap();
            t.wait(Duration::from_secs(10)).unwrap().expect("exits")
        };
        assert_eq!(out.stdout, ["Cpus_allowed_list:\t0"]);
        let missing = Spawn::new(
            "perf",
            "linux-perf",
            Path::new("/nonexistent/perf"),
            vec![],
            &[],
        );
        let e = format!("{:#}", Tool::spawn(missing).err().unwrap());
        assert!(e.contains("apt-get install linux-perf"), "{e}");
    }
}
