//! Process facts backends need.

/// Whether a process with this pid exists (zombies count as alive until reaped).
pub fn is_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether `pid` exists and is not a zombie (a daemonized process is reaped by whoever adopted
/// it, maybe late).
pub fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}

/// Inode number of the initial PID namespace (`PROC_PID_INIT_INO`).
const INITIAL_PID_NS: &str = "pid:[4026531836]";

/// Whether this process runs in the initial PID namespace, where the pids it sees are the ones
/// the kernel's tracing filters (`set_event_pid`, `common_pid`) use.
pub fn in_initial_pid_namespace() -> bool {
    std::fs::read_link("/proc/self/ns/pid")
        .map(|l| l.to_string_lossy() == INITIAL_PID_NS)
        .unwrap_or(true)
}

/// Makes the child `cmd` starts die (SIGKILL) when the thread that starts it ends: children that
/// hold kernel state or write trace data must not outlive a SIGKILLed harness. The signal fires
/// when the *starting thread* exits, so start such children from a thread that lives as long as
/// them (the main thread). It does not pass to a daemon's double fork.
pub fn die_with_parent(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        })
    }
}

/// The CPU set of `cpus`; the error names the fix.
pub fn cpu_set(cpus: &[usize]) -> anyhow::Result<nix::sched::CpuSet> {
    use anyhow::Context;
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c).with_context(|| {
            let n = nix::sched::CpuSet::count();
            format!("consumer CPU {c} is out of range: pass CPUs below {n}")
        })?;
    }
    Ok(set)
}

/// Pins process or thread `pid` (0: the calling thread) to `cpus`, none if empty (threads it
/// starts later inherit the mask); `what` names it in the error.
pub fn pin(pid: u32, cpus: &[usize], what: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    if cpus.is_empty() {
        return Ok(());
    }
    let pid = nix::unistd::Pid::from_raw(pid as i32);
    nix::sched::sched_setaffinity(pid, &cpu_set(cpus)?).with_context(|| {
        format!("cannot pin {what} to CPUs {cpus:?}: pass online CPUs (see `nproc`)")
    })
}

/// Not root → one line naming the fix.
#[derive(Debug, thiserror::Error)]
#[error("{what} needs root: run rtrace-bench as root (e.g. `sudo rtrace-bench ...`)")]
pub struct NotRoot {
    pub what: &'static str,
}

pub fn require_root(what: &'static str) -> Result<(), NotRoot> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(NotRoot { what })
    }
}

/// Waits up to `timeout` for `child` to exit; past it, SIGKILLs and reaps it and returns `None`
/// (the caller says what was lost). The wait of every external tool a backend stops (perf,
/// strace).
pub fn wait_or_kill(
    child: &mut std::process::Child,
    timeout: std::time::Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let start = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(Some(s));
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs() {
        assert!(is_running(std::process::id()));
        assert!(!is_running(4_194_303), "above pid_max");
    }
}
