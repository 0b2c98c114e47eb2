//! The strace process: started on a pid (pinned from its exec, dying with the thread that
//! started it, tagged with the run in `RTRACE_BENCH_RUN`), ready once it says
//! `PROGRAM: Process PID attached`, followed out when its process exits, killed if dropped.

use anyhow::{anyhow, bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest wait for strace to attach (it needs no compilation: well under a second).
const ATTACH_TIMEOUT: Duration = Duration::from_secs(20);
/// How long strace may take to follow its process out once the process has exited.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// After SIGINT strace detaches and flushes its output.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running strace attached to its process.
pub struct Strace {
    child: Option<Child>,
    stderr: Option<JoinHandle<Vec<String>>>,
}

/// Whether process `pid` runs strace (its command name).
pub fn is_strace(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == "strace")
}

impl Strace {
    /// Starts `program -f -o output -p pid` on `cpus` (none: anywhere) and returns once strace
    /// reports the process attached.
    pub fn attach(program: &Path, output: &Path, pid: u32, cpus: &[usize]) -> Result<Strace> {
        let set = match cpus {
            [] => None,
            cpus => Some(rtrace_tracer::cpu_set(cpus)?),
        };
        let mut cmd = Command::new(program);
        // Dies with us (a strace left behind stops its process at every call), and carries our
        // run's tag in case it ever outlives us (`crate::remove_stale`).
        rtrace_tracer::die_with_parent(&mut cmd)
            .arg("-f")
            .arg("-o")
            .arg(output)
            .arg("-p")
            .arg(pid.to_string())
            .env(
                rtrace_tracer::owner::RUN_ENV,
                rtrace_tracer::owner::run_id()?,
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Only our SIGINT stops it, not a Ctrl-C meant for rtrace-bench.
            .process_group(0);
        if let Some(set) = set {
            // Pinned before it attaches: every stop of its process wakes it there.
            // SAFETY: sched_setaffinity is async-signal-safe; nothing else runs before exec.
            unsafe {
                cmd.pre_exec(move || {
                    nix::sched::sched_setaffinity(Pid::from_raw(0), &set)
                        .map_err(std::io::Error::from)
                });
            }
        }
        let mut child = cmd.spawn().with_context(|| {
            format!("cannot run {} (apt-get install strace)", program.display())
        })?;
        let stderr = child.stderr.take().expect("piped stderr");
        let (ready_tx, ready_rx) = mpsc::channel();
        // strace names itself by its argv[0]: `/usr/bin/strace: Process 123 attached`.
        let attached = format!(": Process {pid} attached");
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for l in BufReader::new(stderr).lines().map_while(Result::ok) {
                if l.ends_with(&attached) {
                    let _ = ready_tx.send(());
                }
                lines.push(l);
            }
            lines
        });
        let mut s = Strace {
            child: Some(child),
            stderr: Some(reader),
        };
        match ready_rx.recv_timeout(ATTACH_TIMEOUT) {
            Ok(()) => Ok(s),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stderr closed before the line: strace is exiting.
                let (status, lines) = s.wait(STOP_TIMEOUT)?;
                Err(anyhow!(
                    "strace failed to attach to process {pid} ({status}): {}",
                    last(&lines)
                ))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                s.kill();
                let lines = s.join_reader();
                bail!(
                    "strace did not attach to process {pid} within {} s: check the system load (strace said: {})",
                    ATTACH_TIMEOUT.as_secs(),
                    lines.join(" / ")
                )
            }
        }
    }

    /// Waits for strace to follow its process out (the process has exited); SIGINT (strace
    /// detaches) if it still runs after [`EXIT_GRACE`]. An error unless strace exited cleanly.
    pub fn stop(mut self) -> Result<()> {
        let child = self.child.as_mut().expect("child present until waited");
        let deadline = Instant::now() + EXIT_GRACE;
        while child.try_wait()?.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let detached = child.try_wait()?.is_none();
        if detached {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGINT);
        }
        let (status, lines) = self.wait(STOP_TIMEOUT)?;
        // Detached by SIGINT, strace 6.1 exits with 128 + SIGINT (measured).
        let interrupted = detached && status.code() == Some(128 + Signal::SIGINT as i32);
        if !status.success() && !interrupted {
            bail!("strace failed ({status}): {}", last(&lines));
        }
        Ok(())
    }

    /// Waits up to `timeout` for exit (then SIGKILL and an error); returns its stderr lines.
    fn wait(&mut self, timeout: Duration) -> Result<(ExitStatus, Vec<String>)> {
        let mut child = self.child.take().expect("child present until waited");
        let waited =
            rtrace_tracer::wait_or_kill(&mut child, timeout).context("waiting for strace")?;
        let Some(status) = waited else {
            let lines = self.join_reader();
            bail!(
                "strace did not exit within {} s of SIGINT and was killed (its last words: {})",
                timeout.as_secs(),
                last(&lines)
            );
        };
        Ok((status, self.join_reader()))
    }

    fn join_reader(&mut self) -> Vec<String> {
        self.stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// SIGKILL and reap (the kernel detaches its process); its stderr is read by
    /// [`Strace::join_reader`].
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Strace {
    fn drop(&mut self) {
        self.kill();
        self.join_reader();
    }
}

/// strace's last line on stderr, which says why it failed.
fn last(lines: &[String]) -> &str {
    lines.last().map_or("nothing on stderr", String::as_str)
}
