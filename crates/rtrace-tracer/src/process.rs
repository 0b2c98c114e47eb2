//! Process facts backends need.

/// Whether a process with this pid exists (zombies count as alive until reaped).
pub fn is_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
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

/// The kernel's CPU list syntax, `0-3,5,7-8` (surrounding whitespace allowed): the one parser.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.trim().parse::<usize>().ok()?..=b.trim().parse().ok()?),
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    Some(cpus)
}

/// `cpus` (sorted) in the kernel's CPU list syntax.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(match i == j {
            true => cpus[i].to_string(),
            false => format!("{}-{}", cpus[i], cpus[j]),
        });
        i = j + 1;
    }
    out.join(",")
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
    fn cpu_lists_parse_and_print() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-4,7"), Some(vec![0, 2, 3, 4, 7]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(cpu_list(&[0, 2, 3, 4, 7]), "0,2-4,7");
        assert_eq!(cpu_list(&[]), "");
    }
}
