//! SIGINT / SIGTERM / SIGHUP: kill the running workload (or `count`'s command) so the normal
//! error path removes all tracing state, then exit 128 + the signal from `main`.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Failing to install only loses graceful interruption.
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    rtrace_measure::spawn::interrupt(signal);
                }
            });
    });
}

/// Exit code of a run interrupted by a signal: 128 + its number, as a shell reports it.
pub fn exit_code() -> i32 {
    128 + rtrace_measure::spawn::interrupting_signal().unwrap_or(SIGINT)
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
