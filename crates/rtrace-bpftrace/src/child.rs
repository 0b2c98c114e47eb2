//! The bpftrace process: started (dying with the thread that started it, and tagged with the
//! run in `RTRACE_BENCH_RUN`), watched until its probes are attached, stopped with SIGINT,
//! killed if dropped.

use anyhow::{anyhow, bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::output::{error_line, NOTIFY_ATTACHED};

/// bpftrace compiles its program with LLVM before attaching: allow for a slow first run.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(60);
/// After SIGINT bpftrace drains its perf buffers and prints its maps.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long bpftrace may stay in the kernel detaching its probes before it counts as hung.
/// Removing a uprobe waits for an RCU Tasks Trace grace period (`uprobe_unregister_sync` →
/// `synchronize_rcu_tasks_trace`): seen here to take over 30 s while QEMU kept both CPUs busy.
pub const KERNEL_DETACH_TIMEOUT: Duration = Duration::from_secs(300);
/// bpftrace counts as detaching while it was in uninterruptible sleep this recently.
const DETACH_QUIET: Duration = Duration::from_secs(2);

/// Whether process `pid` is in uninterruptible sleep (state `D`: inside the kernel, here
/// waiting for a grace period while it removes its probes).
fn uninterruptible(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // `pid (comm) S ...`: the state follows the last `)`.
            let rest = &s[s.rfind(')')? + 1..];
            rest.split_whitespace().next().map(|st| st == "D")
        })
        .unwrap_or(false)
}

/// A running bpftrace whose probes are attached.
pub struct Bpftrace {
    child: Option<Child>,
    stdout: Option<JoinHandle<Vec<String>>>,
    stderr: Option<JoinHandle<Vec<String>>>,
}

/// What a stopped bpftrace printed.
pub struct Exited {
    pub status: ExitStatus,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

impl Exited {
    /// The line that explains a failure.
    pub fn why(&self) -> String {
        error_line(&self.stderr)
            .or_else(|| error_line(&self.stdout))
            .unwrap_or_else(|| format!("bpftrace exited with {}", self.status))
    }
}

impl Bpftrace {
    /// Starts `program args...` and returns once bpftrace reports its probes attached.
    pub fn start(
        program: &Path,
        args: &[OsString],
        env: &[(&str, String)],
        cpus: &[usize],
    ) -> Result<Bpftrace> {
        let mut cmd = Command::new(program);
        // Dies with us (a SIGKILLed harness must not leave its probe on the workload binary),
        // and carries our run's tag in case it ever outlives us (`crate::remove_stale`).
        rtrace_tracer::die_with_parent(&mut cmd)
            .args(args)
            .env(
                rtrace_tracer::owner::RUN_ENV,
                rtrace_tracer::owner::run_id()?,
            )
            .env(NOTIFY_ATTACHED, "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Only our SIGINT stops it, not a Ctrl-C meant for rtrace-bench.
            .process_group(0);
        let mut child = cmd.spawn().with_context(|| {
            format!(
                "cannot run {} (apt-get install bpftrace)",
                program.display()
            )
        })?;
        let pid = child.id();
        // 0.17 prints the line on stderr, later versions on stdout: watch both.
        let (ready_tx, ready_rx) = mpsc::channel();
        let watch = |r: Box<dyn Read + Send>, ready: mpsc::Sender<()>| {
            std::thread::spawn(move || {
                lines(r, |l| {
                    if l == NOTIFY_ATTACHED {
                        let _ = ready.send(());
                        false
                    } else {
                        true
                    }
                })
            })
        };
        let stdout = watch(
            Box::new(child.stdout.take().expect("piped stdout")),
            ready_tx.clone(),
        );
        let stderr = watch(
            Box::new(child.stderr.take().expect("piped stderr")),
            ready_tx,
        );
        let mut bt = Bpftrace {
            child: Some(child),
            stdout: Some(stdout),
            stderr: Some(stderr),
        };
        if let Err(e) = pin(pid, cpus) {
            bt.kill();
            return Err(e);
        }
        match ready_rx.recv_timeout(ATTACH_TIMEOUT) {
            Ok(()) => Ok(bt),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed before the line: bpftrace is exiting.
                let exited = bt.wait(STOP_TIMEOUT)?;
                Err(anyhow!("bpftrace failed to attach: {}", exited.why()))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                bt.kill();
                bail!(
                    "bpftrace did not attach within {} s: check `{} -l` and the system load",
                    ATTACH_TIMEOUT.as_secs(),
                    program.display()
                )
            }
        }
    }

    /// SIGINT, then waits for bpftrace to print its results and exit.
    pub fn stop(mut self) -> Result<Exited> {
        if let Some(child) = self.child.as_mut() {
            if child.try_wait()?.is_none() {
                // ESRCH: it exited in between (e.g. its -p process ended); wait() tells.
                let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGINT);
            }
        }
        self.wait(STOP_TIMEOUT)
    }

    /// Waits for exit, then collects the output. SIGKILL after `timeout`, unless bpftrace is
    /// still in the kernel detaching its probes (see [`KERNEL_DETACH_TIMEOUT`]).
    fn wait(&mut self, timeout: Duration) -> Result<Exited> {
        let mut child = self.child.take().expect("child present until waited");
        let start = Instant::now();
        let mut last_in_kernel: Option<Instant> = None;
        let status = loop {
            if let Some(s) = child.try_wait().context("waiting for bpftrace")? {
                break s;
            }
            if uninterruptible(child.id()) {
                last_in_kernel = Some(Instant::now());
            }
            let detaching = last_in_kernel.is_some_and(|t| t.elapsed() < DETACH_QUIET);
            let limit = if detaching {
                KERNEL_DETACH_TIMEOUT
            } else {
                timeout
            };
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                self.join_readers();
                bail!(
                    "bpftrace did not stop within {} s of SIGINT and was killed: its counts are lost; rerun on a less loaded system",
                    timeout.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let (stdout, stderr) = self.join_readers();
        Ok(Exited {
            status,
            stdout,
            stderr,
        })
    }

    fn join_readers(&mut self) -> (Vec<String>, Vec<String>) {
        let join = |h: Option<JoinHandle<Vec<String>>>| {
            h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
        };
        (join(self.stdout.take()), join(self.stderr.take()))
    }

    /// SIGKILL and reap (fd-based BPF objects die with it).
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.join_readers();
    }
}

impl Drop for Bpftrace {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads `r` to the end; lines for which `keep` is true are returned.
fn lines(r: impl Read, mut keep: impl FnMut(&str) -> bool) -> Vec<String> {
    BufReader::new(r)
        .lines()
        .map_while(Result::ok)
        .filter(|l| keep(l))
        .collect()
}

/// Moves the (just started) bpftrace to `cpus`; threads it starts later inherit the mask.
fn pin(pid: u32, cpus: &[usize]) -> Result<()> {
    use nix::sched::{sched_setaffinity, CpuSet};
    if cpus.is_empty() {
        return Ok(());
    }
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c).with_context(|| {
            format!(
                "consumer CPU {c} is out of range: pass CPUs below {}",
                CpuSet::count()
            )
        })?;
    }
    sched_setaffinity(Pid::from_raw(pid as i32), &set).with_context(|| {
        format!("cannot pin bpftrace to CPUs {cpus:?}: pass online CPUs (see `nproc`)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_is_not_in_the_kernel() {
        assert!(!uninterruptible(std::process::id()));
        assert!(!uninterruptible(u32::MAX), "no such process");
    }
}
