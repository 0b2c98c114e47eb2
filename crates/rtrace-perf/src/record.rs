//! The `perf record` process: started with its events disabled (`-D -1`), dying with the
//! thread that started it, tagged with the run in `RTRACE_BENCH_RUN`, pinned to the consumer
//! CPUs; enabled through its control pipe (`--control fd:CTL,ACK`: `enable`, answered `ack`
//! once perf has enabled every event), stopped with SIGINT, killed if dropped.

use anyhow::{anyhow, bail, Context, Result};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use rtrace_tracer::tool::{Spawn, Tool};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

pub use rtrace_tracer::tool::Exited;

/// perf opens its events (one per CPU and thread) before it reads its control pipe.
pub const ENABLE_TIMEOUT: Duration = Duration::from_secs(30);
/// After SIGINT (or the end of its `-p` process) perf reads its buffers and writes them out:
/// about 80 MB for a million events.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `perf record` whose events are enabled.
pub struct Record {
    tool: Tool,
    /// Our end of perf's control pipe, open while perf runs: perf 6.1 fails its main loop
    /// ("Thread and evlist pollfd index mismatch") and writes no data section once the control
    /// pipe hangs up.
    _ctl: Option<std::fs::File>,
}

/// A pipe whose one end perf inherits: that end's descriptor stays open across exec.
fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC).context("cannot create a pipe for perf's --control")
}

impl Record {
    /// Starts `program record ARGS --control fd:..` on `cpus` and returns once perf
    /// acknowledged `enable`. It dies with us: a SIGKILLed harness must not leave perf's
    /// uprobes on the workload.
    pub fn start(program: &Path, args: &[OsString], cpus: &[usize]) -> Result<Record> {
        let (ctl_r, ctl_w) = pipe()?;
        let (ack_r, ack_w) = pipe()?;
        let (ctl_fd, ack_fd) = (ctl_r.as_raw_fd(), ack_w.as_raw_fd());
        let mut all: Vec<OsString> = vec!["record".into()];
        all.extend(args.iter().cloned());
        all.push("--control".into());
        all.push(format!("fd:{ctl_fd},{ack_fd}").into());
        let tool = Tool::spawn(Spawn {
            inherit: vec![ctl_fd, ack_fd],
            ..Spawn::new("perf", "linux-perf", program, all, cpus)
        })?;
        // perf's ends live in perf only: its exit then closes the ack pipe.
        drop((ctl_r, ack_w));
        let mut rec = Record { tool, _ctl: None };
        let ctl = rec._ctl.insert(std::fs::File::from(ctl_w));
        match enable(ctl, &ack_r) {
            Ok(()) => Ok(rec),
            Err(e) => {
                // Exited already, or hung: its words explain either.
                let why = match rec.tool.wait(Duration::from_secs(2)) {
                    Ok(Some(x)) => x.why(),
                    _ => "perf did not exit either".into(),
                };
                Err(anyhow!("perf record failed to start tracing: {e:#}: {why}"))
            }
        }
    }

    /// The perf process's id (its descriptors are checked after `enable`).
    pub fn pid(&self) -> u32 {
        self.tool.pid()
    }

    /// SIGINT (perf exits by itself once its `-p` process ends), then waits for it to write
    /// its file and exit; SIGKILL after [`STOP_TIMEOUT`].
    pub fn stop(mut self) -> Result<Exited> {
        self.tool.signal(Signal::SIGINT)?;
        match self.tool.wait(STOP_TIMEOUT)? {
            Some(exited) => Ok(exited),
            None => {
                let (_, stderr) = self.tool.kill();
                bail!(
                    "perf record did not exit within {} s after SIGINT and was killed: its data is lost; rerun with fewer events or a smaller --buffer-size-kb (its last words: {})",
                    STOP_TIMEOUT.as_secs(),
                    stderr.last().map_or("none", String::as_str)
                )
            }
        }
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
