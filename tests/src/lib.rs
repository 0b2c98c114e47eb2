//! Shared fixtures for the root integration tests in `tests/tests/`.
//!
//! The tests themselves need root and a real kernel; `cargo xtask ci` runs them with
//! `--test-threads=1` because they share kernel state (tracefs, BPF, LTTng sessions).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A C program with USDT probes, built by gcc from two units: `sdt_loop N` fires `rtest:hit` N
/// times (argument: the iteration; no semaphore), fires the is-enabled (semaphore) probe
/// `rtest:sem` N times *only while a tracer has enabled it*, and prints `hits=N sem_hits=M` on
/// exit. `rtest:never` exists but never fires.
pub const SDT_LOOP_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
long sem_probe(long i);
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    long sem_hits = 0;
    for (long i = 0; i < n; i++) {
        DTRACE_PROBE1(rtest, hit, i);
        sem_hits += sem_probe(i);
    }
    if (argc > 2) DTRACE_PROBE1(rtest, never, n);
    printf("hits=%ld sem_hits=%ld\n", n, sem_hits);
    return 0;
}
"#;

/// The semaphore unit of [`SDT_LOOP_C`]: with `_SDT_HAS_SEMAPHORES` every probe of a unit needs a
/// semaphore, so the is-enabled probe lives alone here.
pub const SDT_SEM_C: &str = r#"
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short rtest_sem_semaphore __attribute__((unused)) __attribute__((section(".probes")));
__attribute__((noinline)) long sem_probe(long i) {
    if (rtest_sem_semaphore) { DTRACE_PROBE1(rtest, sem, i); return 1; }
    return 0;
}
"#;

/// Builds the C `units` (name, source) with gcc into `dir/name` and returns the path. Panics with
/// gcc's output on failure (tests want a backtrace, not an error value).
pub fn build_c(dir: &Path, name: &str, units: &[(&str, &str)], flags: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut cmd = Command::new("gcc");
    cmd.args(["-O2", "-o"]).arg(&out).args(flags);
    for (unit, src) in units {
        let c = dir.join(format!("{unit}.c"));
        std::fs::write(&c, src).expect("write C source");
        cmd.arg(c);
    }
    let status = cmd
        .output()
        .expect("gcc must be installed (apt-get install gcc systemtap-sdt-dev)");
    assert!(
        status.status.success(),
        "gcc failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    out
}

/// Builds [`SDT_LOOP_C`] + [`SDT_SEM_C`] in `dir`.
pub fn sdt_loop(dir: &Path) -> PathBuf {
    build_c(
        dir,
        "sdt_loop",
        &[("sdt_loop", SDT_LOOP_C), ("sdt_sem", SDT_SEM_C)],
        &[],
    )
}

/// Parses `hits=N sem_hits=M` printed by `sdt_loop`.
pub fn parse_sdt_loop_output(stdout: &str) -> (u64, u64) {
    let mut hits = None;
    let mut sem = None;
    for word in stdout.split_whitespace() {
        if let Some(v) = word.strip_prefix("hits=") {
            hits = v.parse().ok();
        } else if let Some(v) = word.strip_prefix("sem_hits=") {
            sem = v.parse().ok();
        }
    }
    (
        hits.expect("sdt_loop printed hits="),
        sem.expect("sdt_loop printed sem_hits="),
    )
}

/// A snapshot of the global tracing state this project could leak: uprobe events, tracefs
/// instances, dynamic events. Compare before/after a run.
pub fn tracefs_snapshot() -> String {
    let t = Path::new("/sys/kernel/tracing");
    let read = |p: &str| std::fs::read_to_string(t.join(p)).unwrap_or_default();
    let mut instances: Vec<String> = std::fs::read_dir(t.join("instances"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    instances.sort();
    format!(
        "uprobe_events:\n{}\ndynamic_events:\n{}\ninstances: {:?}\n",
        read("uprobe_events"),
        read("dynamic_events"),
        instances
    )
}

/// The rtrace-bench binary and the workloads built next to it (same target dir as the tests).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/deps/test-xxxx -> target/<profile>/<name>
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let p = dir.join(name);
    assert!(
        p.exists(),
        "{} not built: run `cargo build --release --workspace` first (cargo xtask ci does)",
        p.display()
    );
    p
}

/// The timed intervals of a workload binary's machine code (objdump): the instructions from
/// each `rdtsc` to the next `rdtscp`, as objdump lines.
pub fn timed_windows(workload: &str) -> Vec<Vec<String>> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(bin(workload))
        .output()
        .expect("objdump (apt-get install binutils)");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut windows = Vec::new();
    let mut open: Option<Vec<String>> = None;
    for line in text.lines() {
        let insn = line.split('\t').nth(1).unwrap_or("").trim();
        if insn.starts_with("rdtscp") {
            windows.extend(open.take());
        } else if insn.starts_with("rdtsc") {
            open = Some(Vec::new());
        } else if let Some(w) = open.as_mut() {
            w.push(line.to_owned());
        }
    }
    windows
}

/// Runs `rtrace-bench ARGS` to completion.
pub fn bench(args: &[&str]) -> std::process::Output {
    Command::new(bin("rtrace-bench"))
        .args(args)
        .output()
        .expect("run rtrace-bench")
}

/// Asserts success, printing stderr/stdout otherwise.
pub fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "rtrace-bench failed: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts a clean rejection: non-zero exit and exactly one `Error:` line naming `needle`.
pub fn assert_rejected(out: &std::process::Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected failure, got success");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Error:")).collect();
    assert_eq!(errors.len(), 1, "one error line expected:\n{stderr}");
    assert!(
        errors[0].contains(needle),
        "error should mention `{needle}`: {}",
        errors[0]
    );
}

/// Polls `cond` every 20 ms for up to `secs`.
pub fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// Names of tracefs instances created by this project (`rtrace_*`).
pub fn our_instances() -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("rtrace_"))
                .collect()
        })
        .unwrap_or_default()
}

/// Copies result file `path` into `$RTRACE_KEEP_RESULTS` when it is set: `cargo xtask ci`
/// renders a report of these in a real browser (`xtask/src/browser.rs`).
pub fn keep_result(path: &Path) {
    let Some(dir) = std::env::var_os("RTRACE_KEEP_RESULTS") else {
        return;
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).expect("RTRACE_KEEP_RESULTS directory");
    let stem = path.file_stem().unwrap().to_string_lossy();
    let name = (0..)
        .map(|n| dir.join(format!("{stem}-{n}.json")))
        .find(|p| !p.exists())
        .unwrap();
    std::fs::copy(path, name).expect("copy a result file to RTRACE_KEEP_RESULTS");
}

/// Reads a usdt/sweep JSON result file.
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("result file")).expect("valid JSON")
}

/// A program started but held before it runs until [`Held::go`]: its pid is known first, so a
/// tracer can attach to that pid before the first probe fires.
pub struct Held {
    child: std::process::Child,
}

impl Held {
    fn start(cmd: &mut Command) -> Held {
        let child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn held program");
        Held { child }
    }

    /// Held in a shell that has not exec'd the program yet (the pid stays the same through exec).
    pub fn before_exec(program: &Path, args: &[String]) -> Held {
        let script = format!("read x; exec {} {}", program.display(), args.join(" "));
        Held::start(Command::new("sh").args(["-c", &script]))
    }

    /// Held in a constructor of the preloaded library `hold` that reads a line from stdin: the
    /// program is already exec'd.
    pub fn preloaded(hold: &Path, program: &Path, args: &[String]) -> Held {
        Held::start(Command::new(program).args(args).env("LD_PRELOAD", hold))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lets it run to the end; returns its stdout.
    pub fn go(mut self) -> String {
        use std::io::Write;
        let mut stdin = self.child.stdin.take().expect("piped");
        stdin.write_all(b"\n").expect("release the held child");
        drop(stdin);
        let out = self.child.wait_with_output().expect("wait for child");
        assert!(out.status.success(), "child failed: {:?}", out.status);
        String::from_utf8(out.stdout).expect("UTF-8 output")
    }
}

/// A child whose stdin and stdout are piped, already waiting for its release line.
impl From<std::process::Child> for Held {
    fn from(child: std::process::Child) -> Held {
        Held { child }
    }
}

/// Sends `sig` to `child`.
pub fn signal(child: &std::process::Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig)
        .expect("send signal");
}

/// Pids of the live processes whose `comm` is one of `names`. A zombie is not one: it has
/// exited and holds nothing (no memory, files, locks, BPF objects or probes), it only waits for
/// its parent to reap it; pid 1 of this VM reaps an orphan up to ~2 s after it died, which every
/// check of a killed run's processes or of a stopped daemon would otherwise wait for.
pub fn pids_named(names: &[&str]) -> std::collections::BTreeSet<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|&pid| {
                    std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .is_ok_and(|c| names.contains(&c.trim()))
                        && running(pid)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Ids of the BPF programs or links (`what`: `prog` / `link`) loaded now, from bpftool.
pub fn bpf_ids(what: &str) -> std::collections::BTreeSet<u64> {
    let out = Command::new("bpftool")
        .args(["-j", what, "show"])
        .output()
        .expect("bpftool (apt-get install bpftool)");
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return Default::default();
    }
    let v: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("bpftool json");
    v.iter().filter_map(|x| x["id"].as_u64()).collect()
}

/// Names of the LTTng sessions of the running session daemon (empty without one).
pub fn lttng_sessions() -> Vec<String> {
    let Ok(out) = Command::new("lttng")
        .args(["--no-sessiond", "--mi", "xml", "list"])
        .output()
    else {
        return Vec::new();
    };
    let xml = String::from_utf8_lossy(&out.stdout);
    let mut names: Vec<String> = xml
        .split("<session>")
        .skip(1)
        .filter_map(|s| {
            let s = s.split_once("<name>")?.1;
            Some(s.split_once("</name>")?.0.to_owned())
        })
        .collect();
    names.sort();
    names
}

/// Everything a run of any tracer could leave on the machine: tracefs objects, BPF programs and
/// links, LTTng sessions and daemons, bpftrace, perf and workload processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineState {
    pub tracefs: String,
    pub bpf_progs: std::collections::BTreeSet<u64>,
    pub bpf_links: std::collections::BTreeSet<u64>,
    pub lttng_sessions: Vec<String>,
    pub lttng_daemons: std::collections::BTreeSet<u32>,
    pub bpftraces: std::collections::BTreeSet<u32>,
    pub perfs: std::collections::BTreeSet<u32>,
    pub workloads: std::collections::BTreeSet<u32>,
}

impl MachineState {
    pub fn now() -> MachineState {
        MachineState {
            tracefs: tracefs_snapshot(),
            bpf_progs: bpf_ids("prog"),
            bpf_links: bpf_ids("link"),
            lttng_sessions: lttng_sessions(),
            lttng_daemons: pids_named(&["lttng-sessiond", "lttng-consumerd"]),
            bpftraces: pids_named(&["bpftrace"]),
            perfs: pids_named(&["perf"]),
            workloads: pids_named(&["workload", "workload-lttng"]),
        }
    }

    /// Waits up to `secs` for the machine to be back to `self` (the kernel frees BPF objects and
    /// daemons exit a moment later); the difference otherwise.
    pub fn returns(&self, secs: u64) -> Result<(), String> {
        let mut now = MachineState::now();
        if wait_for(secs, || {
            now = MachineState::now();
            &now == self
        }) {
            Ok(())
        } else {
            Err(format!("expected {self:#?}\nfound {now:#?}"))
        }
    }
}

/// The tag the live rtrace-bench process `pid` names its objects with (`rtrace_<tag>_<seq>`),
/// read from its lock file in the run directory (which says `pid N ...`); `None` before it
/// took its lock or after it ended.
pub fn run_tag_of(pid: u32) -> Option<String> {
    let dir = std::fs::read_dir("/run/rtrace-bench").ok()?;
    let holder = format!("pid {pid} ");
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let tag = name.strip_suffix(".lock")?;
            let is_tag = tag.len() == 16 && tag.bytes().all(|b| b.is_ascii_hexdigit());
            let text = std::fs::read_to_string(e.path()).ok()?;
            (is_tag && text.starts_with(&holder)).then(|| tag.to_owned())
        })
        .next()
}

/// Whether `pid` exists and is not a zombie (a daemon is reaped by whoever adopted it, maybe
/// late; a zombie no longer runs anything).
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_none_or(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}
