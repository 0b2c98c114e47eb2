//! Exported, never-inlined marker functions: the attachment points of dynamic instrumentation
//! (uprobe on entry, uretprobe on return). Their names are `rtrace_protocol::MARKER_HIT` and
//! `MARKER_IDLE`.

/// Called once per iteration by `Body::Call`.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rtrace_marker_hit(i: u64) -> u64 {
    std::hint::black_box(i)
}

/// Never called during a run (case 2 attaches here).
#[no_mangle]
#[inline(never)]
pub extern "C" fn rtrace_marker_idle(i: u64) -> u64 {
    std::hint::black_box(i).wrapping_add(1)
}
