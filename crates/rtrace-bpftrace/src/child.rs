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

/// How often a stopping bpftrace that idles outside the kernel gets SIGINT again.
const NUDGE: Duration = Duration::from_secs(2);

/// How long bpftrace may stay in the kernel detaching its probes before it counts as hung.
/// Removing a uprobe waits for an RCU Tasks Trace grace period (`uprobe_unregister_sync` →
/// `synchronize_rcu_tasks_trace`): seen here to take over 30 s while QEMU kept both CPUs busy.
pub const KERNEL_DETACH_TIMEOUT: Duration = Duration::from_secs(300);

/// What `/proc/PID/task/*/stat` say about a process's progress: whether any of its threads is
/// in uninterruptible sleep (state `D`: inside the kernel, here waiting for a grace period while
/// it removes its probes; the thread doing so need not be the main one) and the CPU time its
/// threads have used (ticks, user + system).
fn progress(pid: u32) -> Option<(bool, u64)> {
    let mut any = false;
    let (mut in_kernel, mut ticks) = (false, 0u64);
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue; // the thread exited in between
        };
        let Some((state, t)) = thread_state(&stat) else {
            continue;
        };
        any = true;
        in_kernel |= state == "D";
        ticks += t;
    }
    any.then_some((in_kernel, ticks))
}

/// A thread's state and CPU ticks from its `stat` line.
fn thread_state(stat: &str) -> Option<(&str, u64)> {
    // `pid (comm) S ppid ...`: the state follows the last `)`; utime and stime are fields 14
    // and 15 of the line, i.e. 11 and 12 after the state.
    let f: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((*f.first()?, ticks))
}

/// Where each thread of `pid` is (state, wait channel, kernel stack's first frames), for the
/// error of a bpftrace that stopped making progress.
fn where_threads_are(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return "gone".into();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let read = |f: &str| std::fs::read_to_string(task.path().join(f)).unwrap_or_default();
        let stat = read("stat");
        let state = thread_state(&stat).map_or("?", |(s, _)| s).to_owned();
        let stack: Vec<String> = read("stack")
            .lines()
            .take(4)
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
            .collect();
        out.push(format!(
            "tid {} {state} in {} [{}]",
            task.file_name().to_string_lossy(),
            read("wchan"),
            stack.join(" < ")
        ));
    }
    out.join("; ")
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
        // Threads it starts later inherit the mask.
        if let Err(e) = rtrace_tracer::pin(pid, cpus, "bpftrace") {
            bt.kill();
            return Err(e);
        }
        match ready_rx.recv_timeout(ATTACH_TIMEOUT) {
            Ok(()) => Ok(bt),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed before the line: bpftrace is exiting.
                let exited = bt.wait(STOP_TIMEOUT, false)?;
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
        self.wait(STOP_TIMEOUT, true)
    }

    /// Waits for exit, then collects the output. SIGKILL once bpftrace made no progress (neither
    /// in the kernel detaching its probes nor using CPU time) for `timeout`, or after
    /// [`KERNEL_DETACH_TIMEOUT`] in all. `nudge`: SIGINT again after every [`NUDGE`] it idles
    /// (no CPU time, not in the kernel): bpftrace 0.17 can miss a SIGINT that comes right after
    /// its probes are attached (seen in CI: a bpftrace with a uprobe on libc's `read` in every
    /// process sat in epoll_wait for 30 s after it).
    fn wait(&mut self, timeout: Duration, nudge: bool) -> Result<Exited> {
        let mut child = self.child.take().expect("child present until waited");
        let start = Instant::now();
        // bpftrace is making progress while it is in the kernel (state D) or uses CPU time
        // (draining and printing on a loaded machine): only a bpftrace that did neither for
        // `timeout` is hung.
        let mut last_progress = Instant::now();
        let mut last_nudge = Instant::now();
        let mut ticks = None;
        let status = loop {
            if let Some(s) = child.try_wait().context("waiting for bpftrace")? {
                break s;
            }
            if let Some((in_kernel, now_ticks)) = progress(child.id()) {
                if in_kernel || ticks.is_some_and(|t| t != now_ticks) {
                    last_progress = Instant::now();
                }
                ticks = Some(now_ticks);
                // Idle (no CPU time, not in the kernel) since the last SIGINT: it did not see it.
                if nudge && last_progress.elapsed() >= NUDGE && last_nudge.elapsed() >= NUDGE {
                    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGINT);
                    last_nudge = Instant::now();
                }
            }
            let stalled = last_progress.elapsed() > timeout;
            if stalled || start.elapsed() > KERNEL_DETACH_TIMEOUT {
                let threads = where_threads_are(child.id());
                let _ = child.kill();
                let _ = child.wait();
                let (_, stderr) = self.join_readers();
                bail!(
                    "bpftrace did not stop after SIGINT (no progress for {} s, or still running after {} s) and was killed: its counts are lost; rerun on a less loaded system (its threads: {threads}; its last words: {})",
                    timeout.as_secs(),
                    KERNEL_DETACH_TIMEOUT.as_secs(),
                    stderr.last().map_or("none", String::as_str)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleeping_child_is_not_in_the_kernel_and_a_busy_one_uses_cpu_time() {
        let mut sleeping = Command::new("sleep").arg("10").spawn().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let (in_kernel, _) = progress(sleeping.id()).expect("its stat");
        assert!(!in_kernel, "sleep(1) waits interruptibly");
        let said = where_threads_are(sleeping.id());
        assert_eq!(said.matches("tid ").count(), 1, "{said}");
        assert!(
            said.contains(" S in "),
            "state S and its wait channel: {said}"
        );
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
        assert_eq!(where_threads_are(u32::MAX), "gone");
    }

    #[test]
    fn a_stat_line_gives_state_and_ticks() {
        // The command name may hold spaces and parentheses.
        let line = "12 (a (b) c) D 1 2 3 4 5 6 7 8 9 10 7 5 0";
        assert_eq!(thread_state(line), Some(("D", 12)));
        assert_eq!(thread_state("garbage"), None);
    }
}
