//! The process tree `count`'s command starts: found, watched while it runs, and ended with it.
//!
//! `count` becomes a child subreaper, so that a process of the tree whose parent exits (a
//! daemon that double-forks and calls `setsid`) is re-parented to us instead of init: every
//! process of the tree stays a descendant of ours. Our other children (the tracer's own
//! processes: bpftrace) are named when the command starts, and their subtrees are not the
//! tree's. Processes are read from `/proc/PID/stat` (this kernel has no `/proc/PID/children`).

use anyhow::{Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Orphans of the tree come back to us (see the module doc).
pub fn become_subreaper() -> Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
        .context("cannot become a child subreaper (prctl PR_SET_CHILD_SUBREAPER)")
}

/// pid → (parent pid, state) of every live process.
fn processes() -> BTreeMap<u32, (u32, char)> {
    rtrace_tracer::procs::all()
        .into_iter()
        .map(|p| (p.pid, (p.ppid, p.state)))
        .collect()
}

/// The command's tree: our descendants but those of `others` (our children that are not the
/// command's: the tracer's processes).
#[derive(Debug, Clone)]
pub struct Tree {
    me: u32,
    others: BTreeSet<u32>,
}

impl Tree {
    /// Call once the tracer is attached and before the command starts (it is held: it has no
    /// children yet): our children other than `command` are the tracer's.
    pub fn of(command: u32) -> Tree {
        let me = std::process::id();
        let others = processes()
            .into_iter()
            .filter(|&(pid, (ppid, _))| ppid == me && pid != command)
            .map(|(pid, _)| pid)
            .collect();
        Tree { me, others }
    }

    /// The tree's live processes (zombies excluded), with their parents.
    fn members(&self) -> BTreeMap<u32, (u32, char)> {
        let all = processes();
        let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (&pid, &(ppid, _)) in &all {
            children.entry(ppid).or_default().push(pid);
        }
        let mut out = BTreeMap::new();
        let mut todo: Vec<u32> = children
            .get(&self.me)
            .into_iter()
            .flatten()
            .copied()
            .filter(|p| !self.others.contains(p))
            .collect();
        while let Some(pid) = todo.pop() {
            out.insert(pid, all[&pid]);
            todo.extend(children.get(&pid).into_iter().flatten().copied());
        }
        out
    }

    /// The tree's live processes, from one read of /proc; its zombies that are our children
    /// (re-parented orphans) are reaped on the way.
    fn alive(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (pid, (ppid, state)) in self.members() {
            if state != 'Z' {
                out.push(pid);
            } else if ppid == self.me {
                let _ = waitpid(Pid::from_raw(pid as i32), Some(WaitPidFlag::WNOHANG));
            }
        }
        out
    }

    /// Ends what is left of the tree: SIGTERM, up to `grace` to exit, then SIGKILL, until no
    /// process of it is left (processes it forks meanwhile included). Returns how many
    /// processes were still running when called.
    pub fn end(&self, grace: Duration) -> usize {
        let left = self.alive();
        if left.is_empty() {
            return 0;
        }
        let signal = |pids: &[u32], sig| {
            for &pid in pids {
                let _ = kill(Pid::from_raw(pid as i32), sig);
            }
        };
        signal(&left, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        let mut now = self.alive();
        while Instant::now() < deadline && !now.is_empty() {
            std::thread::sleep(Duration::from_millis(20));
            now = self.alive();
        }
        // A process that forks while we kill: repeat until none is left.
        for _ in 0..500 {
            if now.is_empty() {
                break;
            }
            signal(&now, Signal::SIGKILL);
            std::thread::sleep(Duration::from_millis(10));
            now = self.alive();
        }
        left.len()
    }
}

/// What the tree showed of the probed binary while it ran, sampled every [`Watch::PERIOD`]:
/// the causes a count of 0 can have that `count` can check.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// Processes of the tree seen.
    pub processes: BTreeSet<u32>,
    /// Of those, the ones that had the binary mapped.
    pub mapped: BTreeSet<u32>,
    /// Of those, the ones whose probe semaphore could be read (its page mapped), for a probe
    /// with one.
    pub semaphore_read: BTreeSet<u32>,
    /// Of those, the ones where it was seen raised (> 0).
    pub semaphore_raised: BTreeSet<u32>,
    /// Of those, the ones whose last reading was 0 twice, [`Watch::RECHECK`] apart (a process
    /// whose binary is being mapped may read 0 for microseconds).
    pub semaphore_lowered: BTreeSet<u32>,
}

/// Samples the tree in a thread until dropped or [`Watch::stop`]ped.
pub struct Watch {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    pub const PERIOD: Duration = Duration::from_millis(50);
    /// How long after reading a semaphore 0 it is read again.
    pub const RECHECK: Duration = Duration::from_millis(2);

    /// Watches `tree` for processes mapping `binary`, and reads the 2-byte semaphore at file
    /// offset `semaphore_offset` of the binary in each (USDT `*_ENABLED()` counters).
    pub fn start(tree: Tree, binary: &Path, semaphore_offset: Option<u64>) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let id = std::fs::metadata(binary).map(|m| (m.dev(), m.ino())).ok();
        let (s, w) = (stop.clone(), seen.clone());
        let thread = std::thread::Builder::new()
            .name("rtrace-tree".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    let members = tree.members();
                    let mut seen = w.lock().expect("not poisoned");
                    for (&pid, &(_, state)) in &members {
                        if state == 'Z' {
                            continue;
                        }
                        seen.processes.insert(pid);
                        let Some(id) = id else { continue };
                        let Some(maps) = mappings_of(pid, id) else {
                            continue;
                        };
                        seen.mapped.insert(pid);
                        let Some(off) = semaphore_offset else {
                            continue;
                        };
                        if let Some(v) = semaphore_of(pid, &maps, off) {
                            seen.semaphore_read.insert(pid);
                            let v = match v {
                                0 => {
                                    std::thread::sleep(Self::RECHECK);
                                    mappings_of(pid, id).and_then(|m| semaphore_of(pid, &m, off))
                                }
                                v => Some(v),
                            };
                            match v {
                                Some(0) => seen.semaphore_lowered.insert(pid),
                                Some(_) => {
                                    seen.semaphore_raised.insert(pid);
                                    seen.semaphore_lowered.remove(&pid)
                                }
                                None => false,
                            };
                        }
                    }
                    drop(seen);
                    std::thread::sleep(Self::PERIOD);
                }
            })
            .ok();
        Watch { stop, seen, thread }
    }

    /// Stops sampling; what was seen.
    pub fn stop(mut self) -> Seen {
        self.halt();
        self.seen.lock().expect("not poisoned").clone()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.halt();
    }
}

/// A file-backed mapping: start address, file offset, length.
type Mapping = (u64, u64, u64);

/// The mappings of the file `(dev, inode)` in process `pid`, if it maps it.
fn mappings_of(pid: u32, (dev, ino): (u64, u64)) -> Option<Vec<Mapping>> {
    let want_dev = (libc::major(dev) as i32, libc::minor(dev) as i32);
    let maps = procfs::process::Process::new(i32::try_from(pid).ok()?)
        .ok()?
        .maps()
        .ok()?;
    let out: Vec<Mapping> = maps
        .into_iter()
        .filter(|m| m.inode == ino && m.dev == want_dev)
        .map(|m| (m.address.0, m.offset, m.address.1 - m.address.0))
        .collect();
    (!out.is_empty()).then_some(out)
}

/// The 2-byte semaphore at file offset `off` of a mapped binary, read from the process' memory.
fn semaphore_of(pid: u32, maps: &[Mapping], off: u64) -> Option<u16> {
    use std::os::unix::fs::FileExt;
    let &(start, map_off, _) = maps
        .iter()
        .find(|&&(_, o, len)| (o..o + len).contains(&off))?;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut b = [0u8; 2];
    mem.read_exact_at(&mut b, start + (off - map_off)).ok()?;
    Some(u16::from_ne_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_of_ours_maps_its_own_executable() {
        let exe = std::fs::canonicalize("/proc/self/exe").unwrap();
        let id = std::fs::metadata(&exe).map(|m| (m.dev(), m.ino())).unwrap();
        let maps = mappings_of(std::process::id(), id).expect("our executable is mapped");
        assert!(maps.iter().any(|&(_, off, _)| off == 0), "{maps:?}");
    }

    #[test]
    fn a_child_is_in_the_tree_unless_the_tracer_started_it() {
        // (Ending the tree is a root test's: here it would signal other tests' children.)
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let theirs = Tree::of(u32::MAX);
        assert!(theirs.others.contains(&child.id()));
        assert!(!theirs.alive().contains(&child.id()));
        assert!(Tree::of(child.id()).alive().contains(&child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
