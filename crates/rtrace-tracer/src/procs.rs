//! What `/proc` says about processes, read in this one place through the `procfs` crate: every
//! live process with its parent and state, a process's threads and their CPU time, its command
//! name, an environment variable, the CPUs it may run on.

use procfs::process::Process;

/// One process or thread as its `stat` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    pub ppid: u32,
    /// `R`, `S`, `D` (uninterruptible: in the kernel), `Z` (zombie), …
    pub state: char,
    /// The command name (`comm`: at most 15 bytes).
    pub comm: String,
    /// CPU time used, user and system, in clock ticks.
    pub ticks: u64,
    /// When it started, in clock ticks since boot.
    pub start_ticks: u64,
}

impl Stat {
    fn of(s: procfs::process::Stat) -> Stat {
        Stat {
            pid: s.pid as u32,
            ppid: s.ppid as u32,
            state: s.state,
            comm: s.comm,
            ticks: s.utime + s.stime,
            start_ticks: s.starttime,
        }
    }
}

fn process(pid: u32) -> Option<Process> {
    Process::new(i32::try_from(pid).ok()?).ok()
}

/// Process `pid`'s stat; `None` once it is gone.
pub fn stat(pid: u32) -> Option<Stat> {
    process(pid)?.stat().ok().map(Stat::of)
}

/// This process's stat.
pub fn myself() -> Option<Stat> {
    Process::myself().ok()?.stat().ok().map(Stat::of)
}

/// Every live process (zombies too), in no order.
pub fn all() -> Vec<Stat> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.filter_map(|p| p.ok()?.stat().ok().map(Stat::of))
        .collect()
}

/// The threads of `pid` (each its `pid` field the thread id); `None` once it is gone.
pub fn threads(pid: u32) -> Option<Vec<Stat>> {
    let tasks = process(pid)?.tasks().ok()?;
    Some(
        tasks
            .filter_map(|t| t.ok()?.stat().ok().map(Stat::of))
            .collect(),
    )
}

/// Whether `pid` exists and is not a zombie (a daemonized process is reaped by whoever adopted
/// it, maybe late).
pub fn is_running(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.state != 'Z')
}

/// The command name of `pid`, if it lives.
pub fn comm(pid: u32) -> Option<String> {
    stat(pid).map(|s| s.comm)
}

/// The value of environment variable `var` in `pid`'s environment as it started.
pub fn env_var(pid: u32, var: &str) -> Option<String> {
    let env = process(pid)?.environ().ok()?;
    env.get(std::ffi::OsStr::new(var))
        .map(|v| v.to_string_lossy().into_owned())
}

/// Every other process whose environment holds `var`, with its value.
pub fn with_env_var(var: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.filter_map(|p| {
        let p = p.ok()?;
        let pid = u32::try_from(p.pid).ok()?;
        let value = p
            .environ()
            .ok()?
            .get(std::ffi::OsStr::new(var))?
            .to_string_lossy()
            .into_owned();
        (pid != me).then_some((pid, value))
    })
    .collect()
}

/// The CPUs `pid` may run on, as the kernel lists them (`0-3,5`).
pub fn cpus_allowed(pid: u32) -> Option<String> {
    let status = process(pid)?.status().ok()?;
    let ranges = status.cpus_allowed_list?;
    let parts: Vec<String> = ranges
        .iter()
        .map(|&(a, b)| match a == b {
            true => a.to_string(),
            false => format!("{a}-{b}"),
        })
        .collect();
    Some(parts.join(","))
}

/// Where each thread of `pid` is, for an error about a process that stopped making progress:
/// `tid N S in WCHAN [frame < frame]`, or `gone`.
pub fn where_threads_are(pid: u32) -> String {
    let Some(threads) = threads(pid) else {
        return "gone".into();
    };
    let mut out = Vec::new();
    for t in threads {
        let read = |f: &str| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{}/{f}", t.pid)).unwrap_or_default()
        };
        let stack: Vec<String> = read("stack")
            .lines()
            .take(4)
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
            .collect();
        out.push(format!(
            "tid {} {} in {} [{}]",
            t.pid,
            t.state,
            read("wchan"),
            stack.join(" < ")
        ));
    }
    out.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_and_its_thread_read_back() {
        let me = myself().expect("our stat");
        assert_eq!(me.pid, std::process::id());
        assert!(is_running(me.pid));
        assert!(!is_running(4_194_303), "above pid_max");
        assert!(all().iter().any(|s| s.pid == me.pid && s.ppid == me.ppid));
        let threads = threads(me.pid).unwrap();
        assert!(threads.iter().any(|t| t.pid == me.pid));
        assert!(cpus_allowed(me.pid).is_some_and(|l| !l.is_empty()));
        assert_eq!(env_var(me.pid, "RTRACE_NO_SUCH_VARIABLE"), None);
        let path = std::env::var("PATH").unwrap();
        assert_eq!(env_var(me.pid, "PATH"), Some(path));
    }

    #[test]
    fn a_sleeping_child_is_named_and_its_threads_placed() {
        let mut child = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let s = stat(child.id()).unwrap();
        assert_eq!((s.comm.as_str(), s.state), ("sleep", 'S'));
        assert_eq!(s.ppid, std::process::id());
        let said = where_threads_are(child.id());
        assert!(
            said.starts_with(&format!("tid {} S in ", child.id())),
            "{said}"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(where_threads_are(child.id()), "gone");
    }
}
