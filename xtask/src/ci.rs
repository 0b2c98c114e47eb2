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

pub fn run(o: Options) -> Result<()> {
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
        exec(cargo().args([
            "test",
            "--release",
            "-p",
            "rtrace-tests",
            "--",
            "--test-threads=1",
        ]))?;
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
