//! `cargo xtask ci`: the project's test command (README, `.ci/run`).

use crate::exec::{cargo, exec, is_root};
use crate::packages;
use anyhow::{bail, Result};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Options {
    /// Skip the root integration tests on the host.
    #[arg(long)]
    no_root_tests: bool,
    /// Skip the QEMU guest suites.
    #[arg(long)]
    no_vm: bool,
    /// Seconds a guest may run before it counts as hung (no verdict = failure). A backstop:
    /// each check has its own time limit in the guest, and the guest kernel panics on lockups.
    #[arg(long, default_value_t = 600)]
    vm_timeout: u64,
    /// Do not install missing Debian packages.
    #[arg(long)]
    no_install: bool,
}

/// Runs the test command; when it fails, the guest preparation still building in the
/// background (make, cc1: orphans once xtask returns) is ended first, so that nothing of a failed
/// CI run outlives it.
pub fn run(o: Options) -> Result<()> {
    let result = run_all(o);
    if result.is_err() {
        end_descendants();
    }
    result
}

/// Ends every process below us: stopped first, tree level by tree level until no new one
/// appears (a stopped process forks no more), then killed. Not a child subreaper: that would
/// keep the root tests' killed processes as zombies of ours, alive to their checks.
fn end_descendants() {
    let me = std::process::id() as i32;
    let mut all: Vec<i32> = Vec::new();
    loop {
        let new: Vec<i32> = descendants(me)
            .into_iter()
            .filter(|p| !all.contains(p))
            .collect();
        if new.is_empty() {
            break;
        }
        for p in new {
            // SAFETY: kill with a pid read from /proc and a signal number.
            unsafe { libc::kill(p, libc::SIGSTOP) };
            all.push(p);
        }
    }
    for p in &all {
        // SAFETY: as above.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
}

/// Every process below `pid`, parents before their children.
fn descendants(pid: i32) -> Vec<i32> {
    let mut found = children_of(pid);
    let mut i = 0;
    while i < found.len() {
        let below = children_of(found[i]);
        found.extend(below);
        i += 1;
    }
    found
}

/// The processes whose parent is `pid`.
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.filter_map(|p| p.ok()?.stat().ok())
        .filter(|s| s.ppid == pid)
        .map(|s| s.pid)
        .collect()
}

fn run_all(o: Options) -> Result<()> {
    let started = Instant::now();
    if !o.no_install {
        packages::ensure()?;
    }
    exec(cargo().args(["fmt", "--all", "--", "--check"]))?;
    exec(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--release",
        "--",
        "-D",
        "warnings",
    ]))?;
    exec(cargo().args(["build", "--workspace", "--release", "--bins", "--lib"]))?;
    // Unit tests: default members only, no root needed.
    exec(cargo().args(["test", "--release"]))?;
    if !o.no_root_tests && !is_root() {
        bail!("the root integration tests need root: run `cargo xtask ci` as root, or pass --no-root-tests");
    }
    // The guests' kernels and LTTng modules (~3 min of compiling) are prepared while the root
    // tests run, at the lowest priority: the tests' measured threads (SCHED_FIFO) and their
    // harness (nice 0) take the CPU whenever they want it; the build gets the idle time.
    let prepared = (!o.no_vm).then(|| {
        std::thread::spawn(|| {
            lowest_priority();
            crate::vm::prepare_ci()
        })
    });
    if !o.no_root_tests {
        // Some root tests keep their result files here: their report is checked in a browser.
        let target = crate::exec::target_dir()?;
        let kept = target.join("ci-results");
        let _ = std::fs::remove_dir_all(&kept);
        exec(
            cargo()
                .args([
                    "test",
                    "--release",
                    "-p",
                    "rtrace-tests",
                    "--",
                    "--test-threads=1",
                ])
                .env("RTRACE_KEEP_RESULTS", &kept),
        )?;
        let bench = target.join("release/rtrace-bench");
        crate::browser::ci(&bench, &kept, &target.join("browser-check"))?;
    }
    if let Some(prepared) = prepared {
        let prepared = prepared.join().expect("guest preparation panicked");
        crate::vm::ci_suites_on(prepared, std::time::Duration::from_secs(o.vm_timeout))?;
    }
    eprintln!(
        "xtask: ci passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Nice 19 for the calling thread and the processes it starts (Linux keeps a nice value per
/// thread; children inherit it).
fn lowest_priority() {
    // SAFETY: setpriority on the calling thread (who = 0) with a plain integer.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
    if rc != 0 {
        eprintln!(
            "xtask: could not lower the guest build's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_childs_children_are_found() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = sh.id() as i32;
        let mut below = Vec::new();
        for _ in 0..100 {
            below = super::descendants(std::process::id() as i32);
            if below.len() >= 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let sleeps: Vec<i32> = super::children_of(pid);
        assert_eq!(sleeps.len(), 2, "{below:?}");
        assert!(below.contains(&pid) && sleeps.iter().all(|s| below.contains(s)));
        // The shell first: killed after its sleeps, its `wait` could return and it exit 0.
        for p in [&pid].into_iter().chain(sleeps.iter()) {
            // SAFETY: kill with our own descendants' pids.
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        assert!(!sh.wait().unwrap().success());
    }
}
