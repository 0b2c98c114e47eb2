//! Process facts backends need.

/// Whether a process with this pid exists (zombies count as alive until reaped).
pub fn is_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Not root → one line naming the fix.
#[derive(Debug, thiserror::Error)]
#[error("{what} needs root: run rtrace-bench as root (e.g. `sudo rtrace-bench ...`)")]
pub struct NotRoot {
    pub what: &'static str,
}

pub fn require_root(what: &'static str) -> Result<(), NotRoot> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(NotRoot { what })
    }
}
