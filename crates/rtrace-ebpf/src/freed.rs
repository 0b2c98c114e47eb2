//! Waiting until the kernel has freed the BPF objects of a session: closing the last fd of a
//! uprobe program frees it only after an RCU grace period, and `finish`/`Drop` promise that
//! nothing of ours is left when they return.

use libbpf_rs::MapCore;
use std::time::{Duration, Instant};

/// How long `finish`/`Drop` wait for the kernel to free our program and maps after their last fd
/// is closed (uprobe programs go after an RCU grace period, ~30 ms here).
pub const FREE_TIMEOUT: Duration = Duration::from_secs(2);

/// Kernel IDs of the BPF objects a session created.
#[derive(Default)]
pub struct KernelIds {
    progs: Vec<u32>,
    maps: Vec<u32>,
}

impl KernelIds {
    /// The programs and maps of a loaded object.
    pub fn of(object: &libbpf_rs::Object) -> KernelIds {
        use std::os::fd::AsFd;
        let mut ids = KernelIds::default();
        for prog in object.progs() {
            if let Ok(id) = libbpf_rs::Program::id_from_fd(prog.as_fd()) {
                ids.progs.push(id);
            }
        }
        for map in object.maps() {
            if let Ok(info) = map.info() {
                ids.maps.push(info.info.id);
            }
        }
        ids
    }

    /// Polls until none of the objects exists any more, or `timeout` passes (the kernel frees
    /// them on its own then; nothing of ours holds them).
    pub fn wait_until_freed(&self, timeout: Duration) {
        let start = Instant::now();
        let alive = |ids: &KernelIds| {
            ids.progs
                .iter()
                .any(|&id| libbpf_rs::Program::fd_from_id(id).is_ok())
                || ids
                    .maps
                    .iter()
                    .any(|&id| libbpf_rs::MapHandle::from_map_id(id).is_ok())
        };
        while alive(self) && start.elapsed() < timeout {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
