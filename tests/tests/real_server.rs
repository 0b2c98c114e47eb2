//! A server's process tree (issue #33): every tracer counts a probe in every process of the
//! command's tree — workers forked after the attach, under another user, through wrappers
//! (`sh`, `env`, `runuser`), in an exec'd image — with its semaphore raised in each; a probe that
//! never fired is a warning, not a silent 0; and nothing the command started outlives `count`,
//! not even a daemon that double-forked and called setsid.
//!
//! The fixture `forkserver` is a small PostgreSQL: a "postmaster" that fires nothing and forks
//! workers, each of which fires the semaphore-guarded `fsrv:query__start` once per query.

use nix::sys::signal::Signal;
use rtrace_tests::*;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `forkserver WORKERS QUERIES [--exec-self] [--daemon PIDFILE]`: the parent forks WORKERS
/// workers (with `--exec-self` each first execs `/proc/self/exe --worker QUERIES`); each fires
/// `fsrv:query__start` QUERIES times *only while a tracer has raised its semaphore*, prints how
/// many times it fired to stderr, and exits 0; the parent exits 0 when all did. `--daemon`:
/// fork, setsid, fork; the grandchild writes PIDFILE and fires the probe every 10 ms forever;
/// the original exits 0 once PIDFILE is written, the intermediate at once.
/// `--lower-semaphore`: each worker sets its semaphore to 0 first (as a tracer that did not
/// raise it leaves it), so it fires nothing.
/// Thread shapes, with no worker process: `--main-exits`: the main thread starts a thread and
/// leaves with `pthread_exit`; the thread fires QUERIES queries once the leader is gone.
/// `--exec-from-thread`: the main thread fires QUERIES queries, then a second thread execs
/// `/proc/self/exe --worker QUERIES` (the kernel ends the old leader first; the pid stays).
const FORKSERVER_C: &str = r#"
#define _SDT_HAS_SEMAPHORES 1
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
unsigned short fsrv_query__start_semaphore __attribute__((unused)) __attribute__((section(".probes")));

/* One query: the probe fires only while a tracer has raised the semaphore. */
static __attribute__((noinline)) long query(long i) {
    if (fsrv_query__start_semaphore) { STAP_PROBE1(fsrv, query__start, i); return 1; }
    return 0;
}

/* Milliseconds a worker stays after its queries (an idle connection). */
static long linger_ms;
/* Whether a worker lowers its own semaphore first. */
static int lower_semaphore;

static int worker(long queries) {
    long fired = 0;
    if (lower_semaphore) fsrv_query__start_semaphore = 0;
    for (long i = 0; i < queries; i++) fired += query(i);
    fprintf(stderr, "forkserver worker %d (uid %d): %ld of %ld queries fired the probe\n",
            (int)getpid(), (int)getuid(), fired, queries);
    struct timespec linger = {linger_ms / 1000, (linger_ms % 1000) * 1000000};
    nanosleep(&linger, NULL);
    return 0;
}

/* A classic daemon: fork, setsid, fork again; the grandchild writes PIDFILE, then serves
 * forever (a query every 10 ms). The original waits until the pid file is written (a readiness
 * pipe, as pg_ctl or systemd's Type=forking expect) and exits 0; the intermediate exits at once. */
static int daemon_loop(const char *pidfile) {
    int ready[2];
    if (pipe(ready) < 0) return 1;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid > 0) {
        char c;
        ssize_t n;
        close(ready[1]);
        do n = read(ready[0], &c, 1); while (n < 0 && errno == EINTR);
        return n == 1 ? 0 : 1;
    }
    close(ready[0]);
    if (setsid() < 0) _exit(1);
    pid = fork();
    if (pid < 0) _exit(1);
    if (pid > 0) _exit(0);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); if (null > 2) close(null); }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
    FILE *f = fopen(tmp, "w");
    if (!f) _exit(1);
    fprintf(f, "%d\n", (int)getpid());
    if (fclose(f) != 0 || rename(tmp, pidfile) != 0) _exit(1);
    if (write(ready[1], "r", 1) != 1) _exit(1);
    close(ready[1]);
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    for (long i = 0;; i++) { query(i); nanosleep(&ten_ms, NULL); }
}

static long thread_queries;
static char *self_name;

/* --main-exits: fires once the leader thread has left (its /proc/PID/task entry is gone). */
static void *after_leader(void *unused) {
    char leader[64];
    snprintf(leader, sizeof leader, "/proc/self/task/%d/stat", (int)getpid());
    for (int i = 0; i < 5000; i++) {
        FILE *f = fopen(leader, "r");
        char buf[512] = "";
        if (!f) break;
        /* `pid (comm) Z ...`: a zombie leader is gone for our purpose. */
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        char *state = strrchr(buf, ')');
        if (n == 0 || (state && state[1] == ' ' && (state[2] == 'Z' || state[2] == 'X'))) break;
        usleep(1000);
    }
    worker(thread_queries);
    return unused;
}

/* --exec-from-thread: a thread that is not the leader execs the program as a worker. */
static void *exec_worker(void *unused) {
    char q[32];
    snprintf(q, sizeof q, "%ld", thread_queries);
    execl("/proc/self/exe", self_name, "--worker", q, (char *)NULL);
    perror("exec /proc/self/exe");
    _exit(127);
    return unused;
}

static int thread_shape(int exec_from_thread, long queries) {
    pthread_t t;
    thread_queries = queries;
    if (exec_from_thread) {
        long fired = 0;
        for (long i = 0; i < queries; i++) fired += query(i);
        fprintf(stderr, "forkserver main thread %d: %ld of %ld queries fired the probe\n",
                (int)getpid(), fired, queries);
        if (pthread_create(&t, NULL, exec_worker, NULL) != 0) return 1;
        for (;;) pause();
    }
    if (pthread_create(&t, NULL, after_leader, NULL) != 0) return 1;
    pthread_exit(NULL);
}

int main(int argc, char **argv) {
    self_name = argv[0];
    if (argc == 3 && strcmp(argv[1], "--worker") == 0) return worker(atol(argv[2]));
    if (argc < 3) {
        fprintf(stderr, "usage: forkserver WORKERS QUERIES [--exec-self] [--linger MS] [--daemon PIDFILE]\n");
        return 2;
    }
    long workers = atol(argv[1]), queries = atol(argv[2]);
    int exec_self = 0;
    for (int a = 3; a < argc; a++) {
        if (strcmp(argv[a], "--exec-self") == 0) exec_self = 1;
        else if (strcmp(argv[a], "--linger") == 0 && a + 1 < argc) linger_ms = atol(argv[++a]);
        else if (strcmp(argv[a], "--daemon") == 0 && a + 1 < argc) return daemon_loop(argv[++a]);
        else if (strcmp(argv[a], "--lower-semaphore") == 0) lower_semaphore = 1;
        else if (strcmp(argv[a], "--main-exits") == 0) return thread_shape(0, queries);
        else if (strcmp(argv[a], "--exec-from-thread") == 0) return thread_shape(1, queries);
        else { fprintf(stderr, "forkserver: unknown argument %s\n", argv[a]); return 2; }
    }
    /* The "postmaster": fires nothing, forks its workers, waits for them. */
    for (long w = 0; w < workers; w++) {
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); return 1; }
        if (pid == 0) {
            if (exec_self) {
                char q[32];
                snprintf(q, sizeof q, "%ld", queries);
                execl("/proc/self/exe", argv[0], "--worker", q, (char *)NULL);
                perror("exec /proc/self/exe");
                _exit(127);
            }
            _exit(worker(queries));
        }
    }
    int ok = 1, status;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ok = 0;
    return ok ? 0 : 1;
}
"#;

const PROBE: &str = "fsrv:query__start";

/// Builds the fixture in its own directory, readable and executable by every user (`nobody`
/// runs it through `runuser`).
fn forkserver() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("rtrace-forkserver")
        .tempdir_in("/tmp")
        .unwrap();
    let prog = build_c(
        dir.path(),
        "forkserver",
        &[("forkserver", FORKSERVER_C)],
        &["-pthread"],
    );
    for p in [dir.path(), prog.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (dir, prog)
}

fn tracers() -> Vec<&'static str> {
    let mut t = vec!["ftrace", "ebpf"];
    if Path::new("/usr/bin/bpftrace").is_file() {
        t.push("bpftrace");
    }
    if Path::new(rtrace_perf::PERF).is_file() {
        t.push("perf");
    }
    t
}

/// `rtrace-bench count -t TRACER -p fsrv:query__start --binary PROG --json .. -- COMMAND` run
/// to its end: its output and JSON result.
fn count(
    dir: &Path,
    tag: &str,
    tracer: &str,
    prog: &Path,
    command: &[&str],
) -> (std::process::Output, serde_json::Value) {
    let (out, v) = try_count(dir, tag, tracer, prog, command);
    assert_ok(&out);
    (out, v.expect("a result"))
}

/// As [`count`], the result `None` when the run failed.
fn try_count(
    dir: &Path,
    tag: &str,
    tracer: &str,
    prog: &Path,
    command: &[&str],
) -> (std::process::Output, Option<serde_json::Value>) {
    count_with(dir, tag, tracer, prog, &[], command)
}

/// As [`try_count`], with `options` before the command.
fn count_with(
    dir: &Path,
    tag: &str,
    tracer: &str,
    prog: &Path,
    options: &[&str],
    command: &[&str],
) -> (std::process::Output, Option<serde_json::Value>) {
    let json = dir.join(format!("{tag}.json"));
    let mut args = vec![
        "count",
        "-t",
        tracer,
        "-p",
        PROBE,
        "--binary",
        prog.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(options);
    args.push("--");
    args.extend_from_slice(command);
    let out = bench(&args);
    let v = out.status.success().then(|| read_json(&json));
    (out, v)
}

/// `count`'s command line for `command`, started in the background.
fn count_command(tracer: &str, prog: &Path, command: &[&str]) -> Command {
    let mut cmd = Command::new(bin("rtrace-bench"));
    cmd.args(["count", "-t", tracer, "-p", PROBE, "--binary"])
        .arg(prog)
        .arg("--")
        .args(command)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for `child` for up to `secs`, SIGKILLing it after that (a hung `count` must not hang
/// CI); its output and how long the wait took.
fn wait_at_most(child: std::process::Child, secs: u64) -> (std::process::Output, Duration) {
    let start = Instant::now();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(Duration::from_secs(secs)).is_err() {
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
    });
    let out = child.wait_with_output().unwrap();
    let took = start.elapsed();
    let _ = tx.send(());
    watchdog.join().unwrap();
    (out, took)
}

/// The fixture's daemon, SIGKILLed when this is dropped if it still runs (also when the test
/// panics): a failing test leaves no process behind.
struct Daemon(u32);

impl Daemon {
    /// Waits up to `secs` for `pidfile` to name a running process.
    fn from_pidfile(pidfile: &Path, secs: u64) -> Option<Daemon> {
        let mut pid = None;
        wait_for(secs, || {
            pid = std::fs::read_to_string(pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                .filter(|&p| running(p));
            pid.is_some()
        });
        pid.map(Daemon)
    }

    /// Whether it still runs (as the fixture, not a process that reused its pid).
    fn runs(&self) -> bool {
        running(self.0)
            && std::fs::read_to_string(format!("/proc/{}/comm", self.0))
                .is_ok_and(|c| c.trim() == "forkserver")
    }

    /// Whether it has ended within `secs`.
    fn ends_within(&self, secs: u64) -> bool {
        wait_for(secs, || !self.runs())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.runs() {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0 as i32), Signal::SIGKILL);
            wait_for(2, || !running(self.0));
        }
    }
}

#[test]
fn forked_workers_through_runuser_count_exactly_for_every_tracer() {
    let before = MachineState::now();
    let (dir, prog) = forkserver();
    let fx = prog.to_str().unwrap();
    let exec_self = format!("exec env runuser -u nobody -- {fx} 3 100 --exec-self");
    for tracer in tracers() {
        let mut events = Vec::new();
        for (workers, queries, command) in [
            (2, 50, vec!["runuser", "-u", "nobody", "--", fx, "2", "50"]),
            (
                4,
                300,
                vec!["runuser", "-u", "nobody", "--", fx, "4", "300"],
            ),
            (3, 100, vec!["sh", "-c", exec_self.as_str()]),
        ] {
            let tag = format!("{tracer}-{workers}x{queries}");
            let started = Instant::now();
            let (out, v) = count(dir.path(), &tag, tracer, &prog, &command);
            println!(
                "{tracer}: {workers} workers x {queries} queries via {}: events {} (recorded {}, lost {}), exit {} in {:?}",
                command[0],
                v["events"],
                v["recorded"],
                v["lost"],
                v["exit_code"],
                started.elapsed()
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(v["exit_code"], 0, "{tag}: {v}\n{stderr}");
            assert_eq!(v["lost"], 0, "{tag}: nothing lost at this rate: {v}");
            assert_eq!(
                v["events"],
                workers * queries,
                "{tag}: every worker's queries, none of the postmaster: {v}\n{stderr}"
            );
            events.push(v["events"].as_u64().unwrap());
        }
        assert_eq!(events[1] - events[0], 1100, "{tracer}: {events:?}");
    }
    before.returns(10).expect("the machine is left as it was");
}

/// A process belongs to the tree until its whole thread group is gone: a main thread that
/// leaves first (`pthread_exit`) and an exec from a thread that is not the leader (the kernel
/// ends the old leader first, the pid stays) keep it, on every tracer.
#[test]
fn a_process_whose_leader_thread_leaves_first_stays_in_the_tree_for_every_tracer() {
    let before = MachineState::now();
    let (dir, prog) = forkserver();
    let fx = prog.to_str().unwrap();
    for tracer in tracers() {
        for (shape, expect) in [("--main-exits", 300), ("--exec-from-thread", 600)] {
            let tag = format!("{tracer}{shape}");
            let want = expect.to_string();
            let (out, v) = count_with(
                dir.path(),
                &tag,
                tracer,
                &prog,
                &["--expect", &want],
                &[fx, "0", "300", shape],
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            println!(
                "{tracer} {shape}: {} {}",
                String::from_utf8_lossy(&out.stdout).trim(),
                stderr.trim()
            );
            assert!(out.status.success(), "{tag}: {}\n{stderr}", out.status);
            let v = v.expect("a result");
            assert_eq!(v["events"], expect, "{tag}: {v}");
            assert_eq!(v["lost"], 0, "{tag}: {v}");
        }
    }
    before.returns(10).expect("the machine is left as it was");
}

/// A worker whose semaphore stays 0 fires nothing, so the kernel counts no hit either: `count`
/// fails naming the cause instead of reporting a short count, on every tracer.
#[test]
fn a_semaphore_left_at_zero_in_the_tree_fails_count_for_every_tracer() {
    let before = MachineState::now();
    let (dir, prog) = forkserver();
    let fx = prog.to_str().unwrap();
    for tracer in tracers() {
        let tag = format!("{tracer}-lowered");
        let command = [fx, "2", "50", "--lower-semaphore", "--linger", "300"];
        let (out, _) = count_with(dir.path(), &tag, tracer, &prog, &[], &command);
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!(
            "{tracer}: workers that lower their semaphore: {}",
            stderr.trim()
        );
        assert_eq!(out.status.code(), Some(1), "{tag}: {stderr}");
        assert!(
            stderr.contains("stayed 0 while the probe was attached in 2 process(es)"),
            "{tag}: {stderr}"
        );
    }
    before.returns(10).expect("the machine is left as it was");
}

#[test]
fn a_probe_that_never_fires_warns_with_the_causes_checked() {
    let before = MachineState::now();
    let (dir, prog) = forkserver();
    let fx = prog.to_str().unwrap();
    for tracer in ["ftrace", "ebpf"] {
        // The worker stays 300 ms: `count` samples the tree every 50 ms.
        let linger = [fx, "1", "0", "--linger", "300"];
        let (out, v) = count(dir.path(), tracer, tracer, &prog, &linger);
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!(
            "{tracer}: 1 worker x 0 queries: events {}, exit {}; stderr:\n{stderr}",
            v["events"], out.status
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{tracer}: the command's status\n{stderr}"
        );
        assert_eq!(v["events"], 0, "{tracer}: {v}");
        let warning = stderr
            .lines()
            .find(|l| l.contains("warning:") && l.contains("never fired"));
        assert!(
            warning.is_some(),
            "{tracer}: a count of 0 must warn that the probe never fired:\n{stderr}"
        );
        assert!(
            stderr.contains(fx),
            "{tracer}: the warning names the binary {fx}:\n{stderr}"
        );
        // The cause checked: the worker mapped the binary, its semaphore raised, no hit.
        assert!(
            warning
                .unwrap()
                .contains("never reached the probe, its semaphore seen raised in"),
            "{tracer}: {stderr}"
        );
        let sem = &v["tree"]["semaphore"];
        assert_eq!(sem["raised"], sem["read"], "{v}");
        assert!(v["tree"]["mapped_binary"].as_u64() >= Some(1), "{v}");
        // A binary none of the command's processes runs: that cause is named.
        let other = dir.path().join("not-run");
        std::fs::copy(&prog, &other).unwrap();
        let linger = [fx, "1", "5", "--linger", "300"];
        let (out, _) = count(
            dir.path(),
            &format!("{tracer}-other"),
            tracer,
            &other,
            &linger,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!("{tracer}: a binary the command does not run:\n{stderr}");
        assert!(
            stderr.contains("warning:") && stderr.contains("process(es) of the tree seen mapped"),
            "{tracer}: {stderr}"
        );
    }
    before.returns(10).expect("the machine is left as it was");
}

#[test]
fn a_server_outside_the_tree_is_not_counted() {
    let before = MachineState::now();
    let (dir, prog) = forkserver();
    let fx = prog.to_str().unwrap();
    // A daemon started before and outside `count`, firing the probe every 10 ms once a tracer
    // raises its semaphore.
    let pidfile = dir.path().join("outside.pid");
    let started = Command::new(&prog)
        .args(["0", "0", "--daemon", pidfile.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(started.success());
    let daemon = Daemon::from_pidfile(&pidfile, 5).expect("the daemon runs");
    for tracer in tracers() {
        let (out, v) = count(
            dir.path(),
            &format!("{tracer}-beside"),
            tracer,
            &prog,
            &[fx, "2", "50"],
        );
        println!(
            "{tracer}: 2 workers x 50 queries beside a daemon firing outside the tree: events {}, outside_tree {}",
            v["events"], v["tree"]["outside_tree"]
        );
        assert_eq!(
            v["events"],
            100,
            "{tracer}: {v}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if tracer == "ebpf" {
            // Attached to every process, the eBPF tracer saw the daemon's hits and left them out.
            assert!(v["tree"]["outside_tree"].as_u64() > Some(0), "{v}");
        }
    }
    assert!(
        daemon.runs(),
        "a process outside the tree is not count's to end"
    );
    drop(daemon);
    before.returns(10).expect("the machine is left as it was");
}

#[test]
fn sigterm_to_count_ends_a_double_forked_daemon_within_5_s() {
    let (dir, prog) = forkserver();
    for tracer in ["ftrace", "ebpf"] {
        let before = MachineState::now();
        let pidfile = dir.path().join(format!("{tracer}.pid"));
        // The command stays (sh, then sleep) after the daemon detached: count is still running
        // when the signal comes.
        let script = format!(
            "{} 0 0 --daemon {} && exec sleep 60",
            prog.display(),
            pidfile.display()
        );
        let child = count_command(tracer, &prog, &["sh", "-c", &script])
            .spawn()
            .unwrap();
        let daemon = Daemon::from_pidfile(&pidfile, 30);
        let Some(daemon) = daemon else {
            signal(&child, Signal::SIGTERM);
            let (out, _) = wait_at_most(child, 20);
            panic!(
                "{tracer}: the daemon never wrote {}: {}",
                pidfile.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        };
        std::thread::sleep(Duration::from_millis(200));
        let sent = Instant::now();
        signal(&child, Signal::SIGTERM);
        let (out, took) = wait_at_most(child, 20);
        let ended = daemon.ends_within(5);
        let gone_after = sent.elapsed();
        println!(
            "{tracer}: count exit {:?} {took:?} after SIGTERM; daemon {} {} {gone_after:?} after SIGTERM",
            out.status,
            daemon.0,
            if ended { "ended" } else { "STILL RUNNING" },
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.signal().is_none(),
            "{tracer}: count did not exit by itself ({:?})\n{stderr}",
            out.status
        );
        assert_eq!(
            out.status.code(),
            Some(128 + 15),
            "{tracer}: the command was killed by SIGTERM\n{stderr}"
        );
        assert!(
            ended && gone_after < Duration::from_millis(5050),
            "{tracer}: the double-forked daemon {} still ran 5 s after SIGTERM\n{stderr}",
            daemon.0
        );
        drop(daemon);
        before
            .returns(10)
            .unwrap_or_else(|d| panic!("{tracer}: left behind: {d}"));
    }
}

#[test]
fn count_at_the_end_ends_what_its_command_left_running() {
    let before = MachineState::now();
    let (dir, prog) = forkserver();
    let pidfile = dir.path().join("ftrace.pid");
    let child = count_command(
        "ftrace",
        &prog,
        &[
            prog.to_str().unwrap(),
            "0",
            "0",
            "--daemon",
            pidfile.to_str().unwrap(),
        ],
    )
    .spawn()
    .unwrap();
    let (out, took) = wait_at_most(child, 30);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The command exits only once the daemon wrote its pid file.
    let daemon = Daemon(
        std::fs::read_to_string(&pidfile)
            .unwrap_or_else(|e| panic!("{}: {e}\n{stderr}", pidfile.display()))
            .trim()
            .parse()
            .unwrap(),
    );
    let ended = daemon.ends_within(5);
    println!(
        "ftrace: count exit {:?} after {took:?}; daemon {} {} within 5 s of count's end",
        out.status,
        daemon.0,
        if ended { "ended" } else { "STILL RUNNING" },
    );
    assert_eq!(out.status.code(), Some(0), "the command's status\n{stderr}");
    assert!(
        ended,
        "the double-forked daemon {} outlived count by 5 s\n{stderr}",
        daemon.0
    );
    drop(daemon);
    before.returns(10).expect("the machine is left as it was");
}
