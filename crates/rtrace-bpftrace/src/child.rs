//! The bpftrace process: started (dying with the thread that started it, and tagged with the
//! run in `RTRACE_BENCH_RUN`), watched until its probes are attached, stopped with SIGINT,
//! killed if dropped.

use anyhow::{bail, ensure, Result};
use nix::sys::signal::Signal;
use rtrace_tracer::tool::{Exited, NotReady, Spawn, Stdout, Tool};
use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::output::{error_line, NOTIFY_ATTACHED};

/// bpftrace compiles its program with LLVM before attaching: allow for a slow first run.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(60);
/// After SIGINT bpftrace drains its perf buffers and prints its maps.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a stopping bpftrace that idles outside the kernel gets SIGINT again.
const NUDGE: Duration = Duration::from_secs(2);

/// How long bpftrace may stay in the kernel detaching its probes before it counts as hung.
/// Removing a uprobe waits for an RCU Tasks Trace grace period (`uprobe_unregister_sync` →
/// `synchronize_rcu_tasks_trace`): seen here to take over 30 s while QEMU kept both CPUs busy.
pub const KERNEL_DETACH_TIMEOUT: Duration = Duration::from_secs(300);

/// What a process's threads say about its progress: whether any of them is in uninterruptible
/// sleep (state `D`: inside the kernel, here waiting for a grace period while it removes its
/// probes; the thread doing so need not be the main one) and the CPU time its threads have used
/// (ticks, user + system).
fn progress(pid: u32) -> Option<(bool, u64)> {
    let threads = rtrace_tracer::procs::threads(pid).filter(|t| !t.is_empty())?;
    let in_kernel = threads.iter().any(|t| t.state == 'D');
    Some((in_kernel, threads.iter().map(|t| t.ticks).sum()))
}

/// A running bpftrace whose probes are attached.
pub struct Bpftrace {
    tool: Tool,
    /// N of its "Attaching N probes..." line; [`UNSEEN`] until it is read.
    attaching: Arc<AtomicU64>,
}

/// [`Bpftrace::attaching`] before the line is read.
const UNSEEN: u64 = u64::MAX;

/// The line of what bpftrace printed that explains its failure.
pub fn why(e: &Exited) -> String {
    error_line(&e.stderr)
        .or_else(|| error_line(&e.stdout))
        .unwrap_or_else(|| format!("bpftrace exited with {}", e.status))
}

impl Bpftrace {
    /// Starts `program args...` on `cpus` and returns once bpftrace reports its probes
    /// attached. It dies with us: a SIGKILLed harness must not leave its probe on the workload
    /// binary.
    pub fn start(
        program: &Path,
        args: &[OsString],
        env: &[(&str, String)],
        cpus: &[usize],
    ) -> Result<Bpftrace> {
        let mut all_env = vec![(NOTIFY_ATTACHED.to_owned(), "1".to_owned())];
        all_env.extend(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
        // 0.17 prints the line on stderr, later versions on stdout: the tool watches both.
        // "Attaching N probes..." (stdout, or the -o file) comes before the probes are attached.
        let attaching = Arc::new(AtomicU64::new(UNSEEN));
        let seen = Arc::clone(&attaching);
        let ready = move |l: &str| {
            if let Some(n) = crate::output::attaching(l) {
                seen.store(n, Ordering::SeqCst);
            }
            l == NOTIFY_ATTACHED
        };
        let mut tool = Tool::spawn(Spawn {
            env: all_env,
            stdout: Stdout::Lines,
            ready: Some(Arc::new(ready)),
            ..Spawn::new("bpftrace", "bpftrace", program, args.to_vec(), cpus)
        })?;
        match tool.wait_ready(ATTACH_TIMEOUT, STOP_TIMEOUT) {
            Ok(()) => Ok(Bpftrace { tool, attaching }),
            Err(NotReady::Exited(e)) => {
                bail!("bpftrace failed to attach: {}", why(&e))
            }
            Err(NotReady::Timeout(_)) => bail!(
                "bpftrace did not attach within {} s: check `{} -l` and the system load",
                ATTACH_TIMEOUT.as_secs(),
                program.display()
            ),
        }
    }

    /// N of the "Attaching N probes..." line bpftrace printed on stdout before attaching;
    /// waits up to `wait` for it (stdout and stderr, where 0.17 says it attached, are read by
    /// two threads). `None` if it printed none (its output went to an `-o` file).
    pub fn attaching(&self, wait: Duration) -> Option<u64> {
        let start = Instant::now();
        loop {
            let n = self.attaching.load(Ordering::SeqCst);
            if n != UNSEEN {
                return Some(n);
            }
            if start.elapsed() >= wait {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGINT, then waits for bpftrace to print its results and exit. SIGKILL once bpftrace
    /// made no progress (neither in the kernel detaching its probes nor using CPU time) for
    /// [`STOP_TIMEOUT`], or after [`KERNEL_DETACH_TIMEOUT`] in all. SIGINT again after every
    /// [`NUDGE`] it idles (no CPU time, not in the kernel): bpftrace 0.17 can miss a SIGINT that
    /// comes right after its probes are attached (seen in CI: a bpftrace with a uprobe on libc's
    /// `read` in every process sat in epoll_wait for 30 s after it). An error unless it exited
    /// successfully.
    pub fn stop(mut self) -> Result<Exited> {
        // ESRCH: it exited in between (e.g. its -p process ended); the wait tells.
        self.tool.signal(Signal::SIGINT)?;
        let start = Instant::now();
        // bpftrace is making progress while it is in the kernel (state D) or uses CPU time
        // (draining and printing on a loaded machine): only a bpftrace that did neither for
        // the timeout is hung.
        let mut last_progress = Instant::now();
        let mut last_nudge = Instant::now();
        let mut ticks = None;
        let status = loop {
            if let Some(s) = self.tool.try_wait()? {
                break s;
            }
            let pid = self.tool.pid();
            if let Some((in_kernel, now_ticks)) = progress(pid) {
                if in_kernel || ticks.is_some_and(|t| t != now_ticks) {
                    last_progress = Instant::now();
                }
                ticks = Some(now_ticks);
                // Idle (no CPU time, not in the kernel) since the last SIGINT: it did not see it.
                if last_progress.elapsed() >= NUDGE && last_nudge.elapsed() >= NUDGE {
                    self.tool.signal(Signal::SIGINT)?;
                    last_nudge = Instant::now();
                }
            }
            let stalled = last_progress.elapsed() > STOP_TIMEOUT;
            if stalled || start.elapsed() > KERNEL_DETACH_TIMEOUT {
                let threads = rtrace_tracer::procs::where_threads_are(pid);
                let (_, stderr) = self.tool.kill();
                bail!(
                    "bpftrace did not stop after SIGINT (no progress for {} s, or still running after {} s) and was killed: its counts are lost; rerun on a less loaded system (its threads: {threads}; its last words: {})",
                    STOP_TIMEOUT.as_secs(),
                    KERNEL_DETACH_TIMEOUT.as_secs(),
                    stderr.last().map_or("none", String::as_str)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let exited = self.tool.exited(status);
        ensure!(exited.status.success(), "bpftrace failed: {}", why(&exited));
        Ok(exited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_sleeping_child_is_not_in_the_kernel_and_a_busy_one_uses_cpu_time() {
        let mut sleeping = Command::new("sleep").arg("10").spawn().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let (in_kernel, _) = progress(sleeping.id()).expect("its stat");
        assert!(!in_kernel, "sleep(1) waits interruptibly");
        sleeping.kill().unwrap();
        sleeping.wait().unwrap();

        let busy = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn();
        let mut busy = busy.unwrap();
        let (_, before) = progress(busy.id()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let (_, after) = progress(busy.id()).unwrap();
        busy.kill().unwrap();
        busy.wait().unwrap();
        assert!(after > before, "200 ms of work is at least one tick");
        assert!(progress(u32::MAX).is_none(), "no such process");
    }
}
