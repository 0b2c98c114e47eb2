//! What the kernel's own paths cost and did in this process, measured after the loop (outside
//! its timed intervals): a bare system call, and whether a uprobe was optimised into a call.

use crate::tsc;
use hdrhistogram::Histogram;

/// Timed bare system calls per run: ~1 ms here.
const SYSCALL_SAMPLES: u32 = 4000;

/// Median duration (ns) of a bare system call (`getppid` through `syscall(2)`: nothing cached
/// in user space), timed as the loop's bodies are, empty timed interval included: the kernel
/// entry and exit an optimised uprobe pays instead of the int3 trap.
pub fn bare_syscall_ns(ns_per_tick: f64) -> f64 {
    let mut h = Histogram::<u64>::new(3).expect("3 significant digits are valid");
    for _ in 0..SYSCALL_SAMPLES {
        let t0 = tsc::start();
        // SAFETY: getppid takes no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
        let t1 = tsc::stop();
        h.saturating_record(tsc::to_ns(t1 - t0, ns_per_tick));
    }
    h.value_at_quantile(0.5) as f64
}

/// Whether this process maps `[uprobes-trampoline]`: Linux >= 6.18 maps it the first time it
/// optimises a uprobe on a 5-byte nop into a call (the `usdt-nop5` site under libbpf). `None`
/// when `/proc/self/maps` cannot be read.
pub fn uprobes_trampoline() -> Option<bool> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    Some(maps.lines().any(|l| l.ends_with("[uprobes-trampoline]")))
}
