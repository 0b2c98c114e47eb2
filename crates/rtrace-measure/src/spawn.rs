//! Runs one workload process through the ready → attach → go → done handshake.

use anyhow::{Context, Result};
use rtrace_protocol::{Done, Message, Ready, WorkloadConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Pid of the workload (or command) currently running (0: none), for [`interrupt`].
static CURRENT: AtomicI32 = AtomicI32::new(0);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The signal that interrupted us (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Called from a signal-handling thread (SIGINT, SIGTERM, SIGHUP: `signal`): kills the running
/// workload so the harness unwinds through its normal error path, which removes all tracing
/// state.
pub fn interrupt(signal: i32) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    let pid = CURRENT.load(Ordering::SeqCst);
    if pid > 0 {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Whether [`interrupt`] was called.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The first signal passed to [`interrupt`], if any.
pub fn interrupting_signal() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Makes `pid` the process an interruption kills (a command that `count` runs, whose tracer
/// must come off when we are stopped), until the guard is dropped. Kills it at once if we were
/// interrupted already.
pub fn watch(pid: u32) -> Watched {
    CURRENT.store(pid as i32, Ordering::SeqCst);
    if interrupted() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    Watched(())
}

/// See [`watch`].
pub struct Watched(());

impl Drop for Watched {
    fn drop(&mut self) {
        CURRENT.store(0, Ordering::SeqCst);
    }
}

/// The workload did not complete the handshake.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("workload binary {0} not found: build it with `cargo build --release` or pass --workload PATH")]
    Missing(String),
    #[error("interrupted")]
    Interrupted,
    #[error("workload failed {stage}: {status}{stderr}")]
    Failed {
        stage: &'static str,
        status: String,
        stderr: String,
    },
}

/// What one workload run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub ready: Ready,
    pub done: Done,
}

/// Kills and reaps the child on drop (error paths).
struct Running {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        CURRENT.store(0, Ordering::SeqCst);
    }
}

impl Running {
    fn read_message(&mut self, stage: &'static str) -> Result<Message> {
        let mut line = String::new();
        self.stdout.read_line(&mut line)?;
        if line.is_empty() {
            return Err(self.failure(stage).into());
        }
        Message::from_line(&line).with_context(|| format!("workload said `{}`", line.trim()))
    }

    fn failure(&mut self, stage: &'static str) -> WorkloadError {
        if interrupted() {
            return WorkloadError::Interrupted;
        }
        let status = match self.child.wait() {
            Ok(s) => s.to_string(),
            Err(e) => e.to_string(),
        };
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let stderr = match stderr.trim() {
            "" => String::new(),
            s => format!(" ({s})"),
        };
        WorkloadError::Failed {
            stage,
            status,
            stderr,
        }
    }
}

/// Starts `bin` with `config`, waits for it to be ready, calls `attach` (the tracer goes on
/// here), says go, and waits for its result. The workload dies with the harness
/// (PR_SET_PDEATHSIG) and is killed if anything fails.
pub fn run_workload<A>(
    bin: &Path,
    env: &[(String, String)],
    config: &WorkloadConfig,
    attach: impl FnOnce(&Ready) -> Result<A>,
) -> Result<(Outcome, A)> {
    let (ready, last, attached) = run_workload_message(bin, env, config, attach)?;
    match last {
        Message::Done(done) => Ok((Outcome { ready, done }, attached)),
        other => anyhow::bail!("workload sent {other:?} instead of its result"),
    }
}

/// [`run_workload`] for any mode: returns the `Ready` line and the workload's last line (its
/// result, e.g. [`Message::CyclicDone`]) as is.
pub fn run_workload_message<A>(
    bin: &Path,
    env: &[(String, String)],
    config: &WorkloadConfig,
    attach: impl FnOnce(&Ready) -> Result<A>,
) -> Result<(Ready, Message, A)> {
    if !bin.is_file() {
        return Err(WorkloadError::Missing(bin.display().to_string()).into());
    }
    if interrupted() {
        return Err(WorkloadError::Interrupted.into());
    }
    let mut cmd = Command::new(bin);
    cmd.arg(serde_json::to_string(config)?)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    CURRENT.store(child.id() as i32, Ordering::SeqCst);
    let stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut run = Running { child, stdout };

    let ready = match run.read_message("to start")? {
        Message::Ready(r) => r,
        other => anyhow::bail!("workload sent {other:?} instead of ready"),
    };
    let attached = attach(&ready)?;
    let go = run
        .child
        .stdin
        .as_mut()
        .expect("piped")
        .write_all(b"g")
        .and_then(|_| run.child.stdin.as_mut().expect("piped").flush());
    if go.is_err() {
        return Err(run.failure("before go").into());
    }
    let last = match run.read_message("while running")? {
        Message::Ready(_) => {
            anyhow::bail!("workload sent a second ready line instead of its result")
        }
        m => m,
    };
    let status = run.child.wait()?;
    if !status.success() {
        return Err(run.failure("at exit").into());
    }
    Ok((ready, last, attached))
}
