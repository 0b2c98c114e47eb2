//! The `perf record` process: started with its events disabled (`-D -1`), dying with the
//! thread that started it, tagged with the run in `RTRACE_BENCH_RUN`, pinned to the consumer
//! CPUs; enabled through its control pipe (`--control fd:CTL,ACK`: `enable`, answered `ack`
//! once perf has enabled every event), stopped with SIGINT, killed if dropped.

use anyhow::{anyhow, bail, Context, Result};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// perf opens its events (one per CPU and thread) before it reads its control pipe.
pub const ENABLE_TIMEOUT: Duration = Duration::from_secs(30);
/// After SIGINT (or the end of its `-p` process) perf reads its buffers and writes them out:
/// about 80 MB for a million events.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `perf record` whose events are enabled.
pub struct Record {
    child: Option<Child>,
    stderr: Option<JoinHandle<Vec<String>>>,
    /// Our end of perf's control pipe, open while perf runs: perf 6.1 fails its main loop
    /// ("Thread and evlist pollfd index mismatch") and writes no data section once the control
    /// pipe hangs up.
    _ctl: Option<std::fs::File>,
}

/// How a `perf record` ended.
pub struct Exited {
    pub status: ExitStatus,
    pub stderr: Vec<String>,
}

impl Exited {
    /// The line that explains a failure.
    pub fn why(&self) -> String {
        self.stderr
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .cloned()
            .unwrap_or_else(|| format!("perf exited with {}", self.status))
    }
}

/// A pipe whose one end perf inherits: that end's descriptor stays open across exec.
fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC).context("cannot create a pipe for perf's --control")
}

impl Record {
    /// Starts `program record ARGS --control fd:..` and returns once perf acknowledged `enable`.
    pub fn start(program: &Path, args: &[OsString], cpus: &[usize]) -> Result<Record> {
        let (ctl_r, ctl_w) = pipe()?;
        let (ack_r, ack_w) = pipe()?;
        let (ctl_fd, ack_fd) = (ctl_r.as_raw_fd(), ack_w.as_raw_fd());
        let mut cmd = Command::new(program);
        // Dies with us (a SIGKILLed harness must not leave perf's uprobes on the workload), and
        // carries our run's tag in case it ever outlives us (`crate::remove_stale`).
        rtrace_tracer::die_with_parent(&mut cmd)
            .arg("record")
            .args(args)
            .arg("--control")
            .arg(format!("fd:{ctl_fd},{ack_fd}"))
            .env(
                rtrace_tracer::owner::RUN_ENV,
                rtrace_tracer::owner::run_id()?,
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Only our SIGINT stops it, not a Ctrl-C meant for rtrace-bench.
            .process_group(0);
        // SAFETY: fcntl is async-signal-safe; it only clears close-on-exec of perf's two ends.
        unsafe {
            cmd.pre_exec(move || {
                for fd in [ctl_fd, ack_fd] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().with_context(|| {
            format!(
                "cannot run {} (apt-get install linux-perf)",
                program.display()
            )
        })?;
        // perf's ends live in perf only: its exit then closes the ack pipe.
        drop((ctl_r, ack_w));
        let pid = child.id();
        let err = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            BufReader::new(err)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        let mut rec = Record {
            child: Some(child),
            stderr: Some(stderr),
            _ctl: None,
        };
        if let Err(e) = rtrace_tracer::pin(pid, cpus, "perf") {
            rec.kill();
            return Err(e);
        }
        let ctl = rec._ctl.insert(std::fs::File::from(ctl_w));
        match enable(ctl, &ack_r) {
            Ok(()) => Ok(rec),
            Err(e) => {
                // Exited already, or hung: its words explain either.
                let exited = rec.wait(Duration::from_secs(2));
                let why = match exited {
                    Ok(x) => x.why(),
                    Err(_) => "perf did not exit either".into(),
                };
                Err(anyhow!("perf record failed to start tracing: {e:#}: {why}"))
            }
        }
    }

    /// SIGINT (perf exits by itself once its `-p` process ends), then waits for it to write
    /// its file and exit.
    pub fn stop(mut self) -> Result<Exited> {
        if let Some(child) = self.child.as_mut() {
            if child.try_wait()?.is_none() {
                // ESRCH: it exited in between; wait() tells.
                let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGINT);
            }
        }
        self.wait(STOP_TIMEOUT)
    }

    /// Waits up to `timeout` for exit; SIGKILL after it.
    fn wait(&mut self, timeout: Duration) -> Result<Exited> {
        let mut child = self.child.take().expect("child present until waited");
        let waited =
            rtrace_tracer::wait_or_kill(&mut child, timeout).context("waiting for perf")?;
        let Some(status) = waited else {
            let stderr = self.join_stderr();
            bail!(
                "perf record did not exit within {} s after SIGINT and was killed: its data is lost; rerun with fewer events or a smaller --buffer-size-kb (its last words: {})",
                timeout.as_secs(),
                stderr.last().map_or("none", String::as_str)
            );
        };
        Ok(Exited {
            status,
            stderr: self.join_stderr(),
        })
    }

    fn join_stderr(&mut self) -> Vec<String> {
        self.stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// SIGKILL and reap (the kernel drops perf's events, and with them the uprobes they
    /// registered).
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.join_stderr();
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Writes `enable` to perf's control pipe and waits for its `ack`.
fn enable(ctl: &mut std::fs::File, ack: &OwnedFd) -> Result<()> {
    ctl.write_all(b"enable\n")
        .context("perf closed its control pipe")?;
    let flags = fcntl(ack.as_fd(), FcntlArg::F_GETFL).context("fcntl")?;
    fcntl(
        ack.as_fd(),
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .context("fcntl")?;
    let deadline = Instant::now() + ENABLE_TIMEOUT;
    let mut got = Vec::new();
    let mut file = std::fs::File::from(ack.try_clone().context("dup of the ack pipe")?);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!(
                "no `ack` from perf within {} s of `enable`",
                ENABLE_TIMEOUT.as_secs()
            );
        }
        let mut fds = [PollFd::new(ack.as_fd(), PollFlags::POLLIN)];
        let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
        poll(&mut fds, PollTimeout::from(ms)).context("poll of perf's ack pipe")?;
        let mut buf = [0u8; 64];
        match file.read(&mut buf) {
            Ok(0) => bail!("perf exited before it acknowledged `enable`"),
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"ack\n") {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e).context("reading perf's ack pipe"),
        }
    }
}
