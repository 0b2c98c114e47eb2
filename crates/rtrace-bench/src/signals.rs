//! Ctrl-C / SIGTERM: kill the running workload so the normal error path removes all tracing
//! state, then exit 130 from `main`.

pub fn install() {
    // Failing to install (already installed) only loses graceful interruption.
    let _ = ctrlc::set_handler(rtrace_measure::spawn::interrupt);
}

/// Keeps the harness (and every thread and process it starts) off the measured CPU.
pub fn pin_harness(cpus: &[usize]) -> anyhow::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)?;
    Ok(())
}
