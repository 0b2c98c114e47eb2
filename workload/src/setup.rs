//! Placing the measuring thread: CPU pinning, memory locking, real-time priority.

use anyhow::{bail, Result};
use nix::sys::mman::{mlockall, MlockAllFlags};

pub struct Placed {
    pub mlocked: bool,
    pub priority: Option<i32>,
}

/// Pins the calling thread to `cpu`, locks all current and future memory, and switches to
/// SCHED_FIFO `priority` if given. Pinning and priority failures are errors; mlockall failure is
/// reported (an unprivileged user may lack RLIMIT_MEMLOCK) but not fatal.
pub fn place(cpu: usize, priority: Option<i32>) -> Result<Placed> {
    // Not `get_core_ids()`: that lists only the CPUs of the inherited mask, and the harness has
    // confined itself to the other CPUs.
    if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        bail!("cannot pin to CPU {cpu} (is it online?)");
    }
    let mlocked = mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE).is_ok();
    if let Some(p) = priority {
        set_fifo(p)?;
    }
    Ok(Placed { mlocked, priority })
}

/// Pins a further loop thread to `cpu` with the same SCHED_FIFO priority as the first (memory
/// is already locked for the whole process).
pub fn place_thread(cpu: usize, priority: Option<i32>) -> Result<()> {
    if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        bail!("cannot pin a loop thread to CPU {cpu} (is it online?)");
    }
    if let Some(p) = priority {
        set_fifo(p)?;
    }
    Ok(())
}

fn set_fifo(priority: i32) -> Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: plain syscall on the calling thread with a valid pointer.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        bail!(
            "cannot set SCHED_FIFO priority {priority}: {} (run as root, priority 1..99)",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}
