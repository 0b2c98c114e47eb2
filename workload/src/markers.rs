//! Exported, never-inlined marker functions: the attachment points of dynamic instrumentation
//! (uprobe on entry, uretprobe on return). Their names are `rtrace_protocol::MARKER_HIT` and
//! `MARKER_IDLE`.
//!
//! They are written in assembly so that their first instruction is fixed and the same in every
//! build: `push %rbp`, the frame-pointer prologue most non-leaf functions start with. x86
//! uprobes emulate a `push` (like the USDT `nop` site) but single-step most other instructions
//! out of line, which costs a second trap: measured here, a uprobe on a leaf function starting
//! with `mov %rdi,-8(%rsp)` (what rustc emits for a plain marker) or `endbr64` cost ~8-9 µs per
//! hit against ~1.4 µs on `push %rbp`. With the prologue fixed, usdt, uprobe and uretprobe rows
//! differ by the hook mechanism only.

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".pushsection .text.rtrace_markers,\"ax\",@progbits",
    ".globl rtrace_marker_hit",
    ".type rtrace_marker_hit,@function",
    ".p2align 4",
    "rtrace_marker_hit:",
    "push %rbp",
    "mov %rsp, %rbp",
    "mov %rdi, %rax",
    "pop %rbp",
    "ret",
    ".size rtrace_marker_hit, .-rtrace_marker_hit",
    ".globl rtrace_marker_idle",
    ".type rtrace_marker_idle,@function",
    ".p2align 4",
    "rtrace_marker_idle:",
    "push %rbp",
    "mov %rsp, %rbp",
    "lea 1(%rdi), %rax",
    "pop %rbp",
    "ret",
    ".size rtrace_marker_idle, .-rtrace_marker_idle",
    ".popsection",
    options(att_syntax)
);

#[cfg(target_arch = "x86_64")]
mod asm {
    extern "C" {
        pub fn rtrace_marker_hit(i: u64) -> u64;
        pub fn rtrace_marker_idle(i: u64) -> u64;
    }
}

/// Called once per iteration by `Body::Call`; returns `i`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rtrace_marker_hit(i: u64) -> u64 {
    // SAFETY: the assembly above only moves registers and touches its own stack frame.
    unsafe { asm::rtrace_marker_hit(i) }
}

/// Never called during a run (case 2 attaches here); returns `i + 1`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rtrace_marker_idle(i: u64) -> u64 {
    // SAFETY: as above.
    unsafe { asm::rtrace_marker_idle(i) }
}

/// Other architectures: plain exported functions (their first instruction is the compiler's).
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
#[inline(never)]
pub extern "C" fn rtrace_marker_hit(i: u64) -> u64 {
    std::hint::black_box(i)
}

#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
#[inline(never)]
pub extern "C" fn rtrace_marker_idle(i: u64) -> u64 {
    std::hint::black_box(i).wrapping_add(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn markers_return_their_argument() {
        assert_eq!(super::rtrace_marker_hit(41), 41);
        assert_eq!(super::rtrace_marker_idle(41), 42);
    }
}
