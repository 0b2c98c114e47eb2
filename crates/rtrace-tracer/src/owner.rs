//! Ownership by proof: which run owns an object, and whether that run still lives.
//!
//! A run (one rtrace-bench process) draws a random tag before it creates its first object and
//! holds an exclusive `flock` on `<run dir>/<tag>.lock` for as long as it lives (the file appears
//! already locked: it is locked under a temporary name, then renamed). Every object it creates
//! carries the tag: tracefs instances and uprobe groups and LTTng sessions are named
//! `rtrace_<tag>_<seq>` ([`run_tag`]), processes it starts that could outlive it (bpftrace) carry
//! `RTRACE_BENCH_RUN=<tag>` in their environment ([`RUN_ENV`]). A later run removes an object
//! only when the lock of its tag is free or absent ([`Stale`]): the kernel releases an flock when
//! its holder dies, whatever PID namespace it ran in and whichever pid it had, so neither pid
//! reuse nor namespaces can make a live run's objects look dead.
//!
//! The run directory ([`run_dir`]) does not depend on tracefs: `/run/rtrace-bench` for root.
//! Runs in containers are protected from each other when they share it (a run whose lock file
//! this directory does not hold counts as gone).

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// Prefix of every kernel object and session name this tool creates: `rtrace_<tag>_<seq>`.
pub const PREFIX: &str = "rtrace_";

/// Environment variable naming the run that started a process (bpftrace): `RTRACE_BENCH_RUN=<tag>`.
pub const RUN_ENV: &str = "RTRACE_BENCH_RUN";

/// Hex digits of a tag.
const TAG_LEN: usize = 16;

/// Where runs keep their lock files: `/run/rtrace-bench` for root, else a directory of this user.
pub fn run_dir() -> PathBuf {
    if nix::unistd::geteuid().is_root() && Path::new("/run").is_dir() {
        return PathBuf::from("/run/rtrace-bench");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("rtrace-bench"),
        _ => std::env::temp_dir().join(format!("rtrace-bench-{}", nix::unistd::geteuid())),
    }
}

/// This process's lock, taken at the first [`run_id`].
struct RunLock {
    tag: String,
    path: PathBuf,
    _lock: Flock<File>,
}

static OWN: OnceLock<std::result::Result<RunLock, String>> = OnceLock::new();

/// This run's tag (16 hex digits); the first call takes the run's lock.
pub fn run_id() -> Result<&'static str> {
    match OWN.get_or_init(|| acquire().map_err(|e| format!("{e:#}"))) {
        Ok(l) => Ok(&l.tag),
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

/// A run-unique object name `rtrace_<tag>_<seq>`: `seq` counts up within this run. A valid
/// tracefs and LTTng identifier of at most 34 characters.
pub fn run_tag() -> Result<String> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    Ok(format!(
        "{PREFIX}{}_{}",
        run_id()?,
        SEQ.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The tag of a name made by [`run_tag`] (`rtrace_<tag>_<seq>`), if it is one. Tags of older
/// versions (decimal pids) parse too: without a lock file, their objects count as gone once that
/// pid is.
pub fn owner_tag(name: &str) -> Option<&str> {
    let (tag, seq) = name.strip_prefix(PREFIX)?.rsplit_once('_')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(seq) && is_tag(tag)).then_some(tag)
}

/// The pid of an older version's tag (`rtrace_<pid>_<seq>`, before runs took locks).
fn legacy_pid(tag: &str) -> Option<u32> {
    (tag.len() < TAG_LEN && tag.bytes().all(|b| b.is_ascii_digit()))
        .then(|| tag.parse().ok())
        .flatten()
}

fn is_tag(s: &str) -> bool {
    (1..=TAG_LEN).contains(&s.len()) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Removes this run's lock file: call when the run has removed everything it created, just
/// before the process exits (the lock itself goes with the process).
pub fn release() {
    if let Some(Ok(l)) = OWN.get() {
        let _ = std::fs::remove_file(&l.path);
    }
}

fn acquire() -> Result<RunLock> {
    let dir = run_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the run directory {}", dir.display()))?;
    let tag = random_tag()?;
    let tmp = dir.join(format!(".{tag}.tmp"));
    let path = dir.join(format!("{tag}.lock"));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .with_context(|| format!("cannot create the run lock {}", tmp.display()))?;
    let mut lock = Flock::lock(file, FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| e)
        .with_context(|| format!("cannot lock {}", tmp.display()))?;
    let _ = lock.write_all(describe_self().as_bytes());
    // Appears under its real name already locked: never free while its run lives.
    std::fs::rename(&tmp, &path)
        .with_context(|| format!("cannot create the run lock {}", path.display()))?;
    Ok(RunLock {
        tag,
        path,
        _lock: lock,
    })
}

fn random_tag() -> Result<String> {
    use std::io::Read;
    let mut b = [0u8; TAG_LEN / 2];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .context("cannot read /dev/urandom")?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// What a lock file says about its holder, for people and error messages.
fn describe_self() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let start = crate::procs::myself().map_or(0, |s| s.start_ticks);
    let cmd: Vec<String> = std::env::args().collect();
    format!(
        "pid {} (start {start} ticks, boot {}): {}\n",
        std::process::id(),
        boot.trim(),
        cmd.join(" ")
    )
}

/// The lock of a run that no longer lives, held while its leftovers are removed.
struct DeadRun {
    path: PathBuf,
    lock: Option<Flock<File>>,
}

/// `Some` when the run tagged `tag` is gone: its lock file is absent, or present and free (then
/// it is held until the `DeadRun` is dropped, so that two cleaners do not interleave). `None`
/// while it lives, and for this run.
fn dead_run(tag: &str) -> Option<DeadRun> {
    if matches!(OWN.get(), Some(Ok(l)) if l.tag == tag) {
        return None;
    }
    let path = run_dir().join(format!("{tag}.lock"));
    match File::open(&path) {
        Ok(f) => Flock::lock(f, FlockArg::LockExclusiveNonblock)
            .ok()
            .map(|l| DeadRun {
                path,
                lock: Some(l),
            }),
        // An older version named objects after its pid and took no lock: spare them while that
        // pid lives (this run's tags have 16 digits, pids at most 7).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match legacy_pid(tag) {
            Some(pid) if crate::process::is_alive(pid) => None,
            _ => Some(DeadRun { path, lock: None }),
        },
        // Cannot tell: spare it.
        Err(_) => None,
    }
}

/// One stale-cleanup pass: judges each tag once and keeps dead runs' locks until
/// [`Stale::finish`], which removes their lock files once their objects are gone.
#[derive(Default)]
pub struct Stale {
    runs: HashMap<String, Option<DeadRun>>,
}

impl Stale {
    pub fn new() -> Stale {
        Stale::default()
    }

    /// Whether `name` (`rtrace_<tag>_<seq>`) belongs to a run that is gone.
    pub fn is_dead_name(&mut self, name: &str) -> bool {
        owner_tag(name).is_some_and(|tag| self.is_dead(tag))
    }

    /// Whether the run tagged `tag` is gone.
    pub fn is_dead(&mut self, tag: &str) -> bool {
        if !is_tag(tag) {
            return false;
        }
        self.runs
            .entry(tag.to_owned())
            .or_insert_with(|| dead_run(tag))
            .is_some()
    }

    /// Removes the lock files of the dead runs seen (their objects have been removed). Only
    /// [`remove_dead_locks`] calls it, after every backend: backends drop their `Stale`.
    pub fn finish(self) {
        for run in self.runs.into_values().flatten() {
            if run.lock.is_some() {
                let _ = std::fs::remove_file(&run.path);
            }
        }
    }
}

/// Removes the lock files of every run that is gone (each backend has removed their objects
/// first), the free CPU and directory locks of killed runs, and temporary lock files older than a
/// minute (a run killed while taking its lock).
pub fn remove_dead_locks() {
    let Ok(dir) = std::fs::read_dir(run_dir()) else {
        return;
    };
    let mut stale = Stale::new();
    for e in dir.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".lock") {
            if is_tag(stem) {
                stale.is_dead(stem);
            } else if let Ok(Ok(free)) = try_lock(stem) {
                // A CPU or directory lock whose run was killed: taken and dropped, it goes.
                drop(free);
            }
        } else if name.starts_with('.') && name.ends_with(".tmp") {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > Duration::from_secs(60));
            if old {
                if let Ok(Ok(_l)) = File::open(e.path())
                    .map(|f| Flock::lock(f, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| e))
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
    stale.finish();
}

/// Processes that carry `var` in their environment, with its value.
pub fn marked_processes(var: &str) -> Vec<(u32, String)> {
    crate::procs::with_env_var(var)
}

/// Stops the processes tagged with a run that is gone ([`RUN_ENV`]) whose command name is
/// `comm` (every tagged process for `None`): a tracer that outlived its run keeps its probes on
/// the traced binary, and every later run would pay their trap. Returns each process stopped,
/// as `comm (pid N) of run TAG`.
pub fn stop_dead_runs_processes(comm: Option<&str>) -> Vec<String> {
    let mut stale = Stale::new();
    let comm_of = |pid: u32| crate::procs::comm(pid).unwrap_or_default();
    let orphans: Vec<(u32, String, String)> = marked_processes(RUN_ENV)
        .into_iter()
        .map(|(pid, tag)| (pid, tag, comm_of(pid)))
        .filter(|(_, _, c)| comm.is_none_or(|want| c == want))
        .filter(|(_, tag, _)| stale.is_dead(tag))
        .collect();
    let pids: Vec<u32> = orphans.iter().map(|(p, _, _)| *p).collect();
    stop_processes(&pids, Duration::from_secs(2));
    // Dead runs' lock files go last, in `remove_dead_locks`, once every backend has judged
    // their tags: a lock file removed here would make the next backend misjudge them.
    drop(stale);
    orphans
        .into_iter()
        .map(|(pid, tag, comm)| format!("{comm} (pid {pid}) of run {tag}"))
        .collect()
}

/// SIGTERM to each of `pids`, SIGKILL to those still alive after `grace`; returns once they are
/// gone (or after another second).
pub fn stop_processes(pids: &[u32], grace: Duration) {
    use nix::sys::signal::{kill, Signal};
    let pid = |p: u32| nix::unistd::Pid::from_raw(p as i32);
    for &p in pids {
        let _ = kill(pid(p), Signal::SIGTERM);
    }
    let gone = |pids: &[u32]| pids.iter().all(|&p| !crate::procs::is_running(p));
    let deadline = Instant::now() + grace;
    while !gone(pids) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for &p in pids.iter().filter(|&&p| crate::procs::is_running(p)) {
        let _ = kill(pid(p), Signal::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while !gone(pids) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An exclusive lock on a named resource of the run directory (a CPU, an output directory),
/// held until dropped; its file goes with it.
#[derive(Debug)]
pub struct NamedLock {
    path: PathBuf,
    _lock: Flock<File>,
}

impl Drop for NamedLock {
    fn drop(&mut self) {
        // Removed while still locked: whoever opened the old file finds, once it has the lock,
        // that the path no longer leads to it, and opens the path again (`try_lock`).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Locks `<run dir>/<name>.lock` exclusively; `Ok(Err(holder))` when another live run holds it,
/// `holder` being what that run wrote in it (its pid and command line).
pub fn try_lock(name: &str) -> Result<std::result::Result<NamedLock, String>> {
    use std::os::unix::fs::MetadataExt;
    let dir = run_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the run directory {}", dir.display()))?;
    let path = dir.join(format!("{name}.lock"));
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut lock) => {
                // The previous holder may have removed the file between our open and our lock.
                let same = match (lock.metadata(), std::fs::metadata(&path)) {
                    (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                    _ => false,
                };
                if !same {
                    continue;
                }
                let _ = lock.set_len(0);
                let _ = lock.write_all(describe_self().as_bytes());
                return Ok(Ok(NamedLock { path, _lock: lock }));
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                return Ok(Err(holder.trim().to_owned()));
            }
            Err((_, e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", path.display()))
            }
        }
    }
}

/// A shared lock on `<run dir>/<name>` (waits while someone holds it exclusively).
pub fn lock_shared(name: &str) -> Result<Flock<File>> {
    let (path, file) = shared_file(name)?;
    Flock::lock(file, FlockArg::LockShared)
        .map_err(|(_, e)| e)
        .with_context(|| format!("cannot lock {}", path.display()))
}

/// An exclusive lock on `<run dir>/<name>` if nobody holds it, shared or not.
pub fn try_lock_exclusive(name: &str) -> Result<Option<Flock<File>>> {
    let (_, file) = shared_file(name)?;
    Ok(Flock::lock(file, FlockArg::LockExclusiveNonblock).ok())
}

/// `<run dir>/<name>`, opened (created if absent).
fn shared_file(name: &str) -> Result<(PathBuf, File)> {
    let dir = run_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the run directory {}", dir.display()))?;
    let path = dir.join(name);
    let file = File::open(&path)
        .or_else(|_| File::create(&path))
        .with_context(|| format!("cannot open {}", path.display()))?;
    Ok((path, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_parse_back_and_only_tags_do() {
        for name in ["rtrace_0123456789abcdef_0", "rtrace_0123456789abcdef_12"] {
            assert_eq!(owner_tag(name), Some("0123456789abcdef"));
        }
        assert_eq!(
            owner_tag("rtrace_4242_7"),
            Some("4242"),
            "older versions: a pid"
        );
        for other in [
            "rtrace",
            "rtrace_",
            "rtrace_abc",
            "rtrace_abc_",
            "rtrace_abc_x",
            "rtrace_ABC_1",
            "rtrace_xyz_1",
            "rtrace_0123456789abcdef0_1",
            "other_abc_1",
        ] {
            assert_eq!(owner_tag(other), None, "{other}");
        }
    }

    #[test]
    fn random_tags_are_valid_identifiers() {
        let a = random_tag().unwrap();
        let b = random_tag().unwrap();
        assert_ne!(a, b);
        assert!(is_tag(&a), "{a}");
        let name = format!("{PREFIX}{a}_{}", u32::MAX);
        crate::validate_name("object", &name).unwrap();
        assert_eq!(owner_tag(&name), Some(a.as_str()));
    }

    #[test]
    fn only_free_or_absent_locks_are_dead() {
        let dir = run_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let tag = |n: u8| format!("fe{}", format!("{n:02x}").repeat(7));
        let (free, held, absent) = (tag(1), tag(2), tag(3));
        let path = |t: &str| dir.join(format!("{t}.lock"));
        std::fs::write(path(&free), "").unwrap();
        std::fs::write(path(&held), "").unwrap();
        let _holder = Flock::lock(File::open(path(&held)).unwrap(), FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .unwrap();
        let _ = std::fs::remove_file(path(&absent));
        let mut stale = Stale::new();
        assert!(stale.is_dead_name(&format!("rtrace_{free}_0")));
        assert!(!stale.is_dead_name(&format!("rtrace_{held}_3")));
        assert!(stale.is_dead(&absent));
        assert!(!stale.is_dead("not-a-tag"));
        // An older version's pid tag without a lock file: spared while the pid lives.
        assert!(!stale.is_dead(&std::process::id().to_string()));
        assert!(stale.is_dead("4194303"), "above pid_max");
        assert!(!stale.is_dead(run_id().unwrap()), "this run lives");
        stale.finish();
        assert!(!path(&free).exists(), "a dead run's lock file goes");
        assert!(path(&held).exists());
        std::fs::remove_file(path(&held)).unwrap();
        release();
    }

    #[test]
    fn named_locks_are_exclusive_and_leave_no_file() {
        let name = format!("test-{}", random_tag().unwrap());
        let file = run_dir().join(format!("{name}.lock"));
        let held = try_lock(&name).unwrap().unwrap();
        let holder = try_lock(&name).unwrap().unwrap_err();
        assert!(holder.contains(&std::process::id().to_string()), "{holder}");
        drop(held);
        assert!(!file.exists());
        let again = try_lock(&name).unwrap().unwrap();
        assert!(file.exists());
        drop(again);
    }
}
