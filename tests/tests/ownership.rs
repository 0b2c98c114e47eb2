//! Leftovers are owned by proof, not by pid number (issue #19): a live run holds an flock on
//! `/run/rtrace-bench/<tag>.lock`, every object it creates carries the tag, and stale cleanup
//! removes only objects whose lock is free or absent.

use nix::fcntl::{Flock, FlockArg};
use rtrace_tests::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const RUN_DIR: &str = "/run/rtrace-bench";
const TRACING: &str = "/sys/kernel/tracing";
const MARKER: &str = "RTRACE_BENCH_RUN";

fn append_uprobe(line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(format!("{TRACING}/uprobe_events"))
        .unwrap();
    writeln!(f, "{line}").unwrap_or_else(|e| panic!("`{line}`: {e}"));
}

/// A process carrying the run marker of `tag`, as the bpftrace of a run does.
fn marked_process(tag: &str) -> std::process::Child {
    let (prog, args): (&str, &[&str]) = if Path::new("/usr/bin/bpftrace").is_file() {
        (
            "/usr/bin/bpftrace",
            &[
                "-e",
                "tracepoint:syscalls:sys_enter_getppid { @c = count(); }",
            ],
        )
    } else {
        ("sleep", &["600"])
    };
    Command::new(prog)
        .args(args)
        .env(MARKER, tag)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Objects named after `tag`: a tracefs instance and a uprobe event on `prog`'s `rtest:hit`.
fn fake_objects(tag: &str, prog: &Path) -> String {
    let name = format!("rtrace_{tag}_0");
    std::fs::create_dir(format!("{TRACING}/instances/{name}")).unwrap();
    let site = &rtrace_sdt::find(prog, "rtest", "hit").unwrap()[0];
    append_uprobe(&format!(
        "p:{name}/hit {}:{:#x}",
        prog.display(),
        site.offset
    ));
    name
}

fn exists(name: &str) -> (bool, bool) {
    let instance = Path::new(TRACING).join("instances").join(name).exists();
    let uprobe = std::fs::read_to_string(format!("{TRACING}/uprobe_events"))
        .unwrap()
        .contains(&format!(":{name}/"));
    (instance, uprobe)
}

fn remove(name: &str) {
    let _ = std::fs::remove_dir(format!("{TRACING}/instances/{name}"));
    if exists(name).1 {
        append_uprobe(&format!("-:{name}/hit"));
    }
}

fn alive(child: &mut std::process::Child) -> bool {
    child.try_wait().unwrap().is_none()
}

#[test]
fn objects_of_a_run_whose_lock_is_free_are_removed_even_if_its_pid_lives() {
    let dir = tempfile::tempdir().unwrap();
    let prog = sdt_loop(dir.path());
    std::fs::create_dir_all(RUN_DIR).unwrap();

    // Dead run: its tag is a live pid (ours), its lock file exists but nobody holds it.
    let dead = std::process::id().to_string();
    let dead_lock = Path::new(RUN_DIR).join(format!("{dead}.lock"));
    std::fs::write(&dead_lock, "fake run of the ownership test\n").unwrap();
    let dead_name = fake_objects(&dead, &prog);
    let mut dead_process = marked_process(&dead);

    // Live run: its lock is held (by this test).
    let live = "a1b2c3d4e5f60718";
    let live_file = std::fs::File::create(Path::new(RUN_DIR).join(format!("{live}.lock"))).unwrap();
    let live_lock = Flock::lock(live_file, FlockArg::LockExclusiveNonblock).unwrap();
    let live_name = fake_objects(live, &prog);
    let mut live_process = marked_process(live);
    std::thread::sleep(Duration::from_millis(200));

    let out = bench(&[
        "count",
        "-p",
        "rtest:hit",
        "--",
        prog.to_str().unwrap(),
        "10",
    ]);
    let dead_left = exists(&dead_name);
    let dead_gone = wait_for(5, || !alive(&mut dead_process));
    let live_left = exists(&live_name);
    let live_lives = alive(&mut live_process);
    let dead_lock_left = dead_lock.exists();

    // Clean up before asserting.
    for name in [&dead_name, &live_name] {
        remove(name);
    }
    for p in [&mut dead_process, &mut live_process] {
        let _ = p.kill();
        let _ = p.wait();
    }
    let _ = std::fs::remove_file(&dead_lock);
    let _ = std::fs::remove_file(Path::new(RUN_DIR).join(format!("{live}.lock")));
    drop(live_lock);

    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("recorded 10 lost 0"));
    assert_eq!(
        dead_left,
        (false, false),
        "the dead run's instance / uprobe survived"
    );
    assert!(dead_gone, "the dead run's marked process survived");
    assert!(!dead_lock_left, "the dead run's lock file survived");
    assert_eq!(
        live_left,
        (true, true),
        "the live run's instance / uprobe was removed"
    );
    assert!(live_lives, "the live run's marked process was killed");
}

#[test]
fn a_host_run_leaves_a_run_in_another_pid_namespace_alone() {
    let dir = tempfile::tempdir().unwrap();
    let prog = sdt_loop(dir.path());
    // The namespaced rtrace-bench gets a pid that no host process has: a rule by pid number
    // would take its objects for a dead run's.
    let pid = (400..100_000)
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap();
    let out = dir.path().join("ns-run");
    let json = dir.path().join("ns.json");
    let script = format!(
        "echo {} > /proc/sys/kernel/ns_last_pid && {} usdt --rounds 1 -t ftrace -c 1 -n 3000000 --warmup 0 --cpu 1 --out {} --json {}; exit $?",
        pid - 1,
        bin("rtrace-bench").display(),
        out.display(),
        json.display()
    );
    let before = our_instances();
    let ns_run = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_for(30, || our_instances().len() > before.len()),
        "the namespaced run never created its instance"
    );
    std::thread::sleep(Duration::from_millis(300));
    let ns_instances: Vec<String> = our_instances()
        .into_iter()
        .filter(|i| !before.contains(i))
        .collect();

    let host = bench(&[
        "count",
        "-p",
        "rtest:hit",
        "--",
        prog.to_str().unwrap(),
        "10",
    ]);
    let after_host = our_instances();
    let ns = ns_run.wait_with_output().unwrap();

    assert_ok(&host);
    let host_err = String::from_utf8_lossy(&host.stderr);
    assert!(!host_err.contains("removed stale"), "{host_err}");
    for i in &ns_instances {
        assert!(
            after_host.contains(i),
            "the host run removed {i} of the namespaced run"
        );
    }
    assert!(
        ns.status.success(),
        "the namespaced run failed ({}): {}",
        ns.status,
        String::from_utf8_lossy(&ns.stderr)
    );
    let result = read_json(&json);
    let run = result["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case"] == 1 || r["case"] == "traced")
        .unwrap_or_else(|| panic!("no case 1 in {result}"));
    let e = &run["events"];
    println!("namespaced run: {e}");
    assert_eq!(
        e["recorded"].as_u64().unwrap() + e["lost"].as_u64().unwrap(),
        e["hits"].as_u64().unwrap()
    );
    assert_eq!(e["hits"].as_u64().unwrap(), 3_000_000);
}
