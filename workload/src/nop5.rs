//! A second pair of USDT probes, `rtrace:event_nop5` and `rtrace:idle_nop5`, whose site is
//! `nop; nop5` (`90 0f 1f 44 00 00`) instead of the single `nop` of `sys/sdt.h` and of the
//! `probe` crate (which emits `rtrace:event`).
//!
//! Kernels from 6.18 on x86_64 can optimise a uprobe on a 5-byte nop into a call to a
//! trampoline that enters the kernel through the uprobe syscall, without the int3 trap; libbpf
//! from 1.6 recognises this site and attaches its USDT programs to the `nop5` (one byte past the
//! note's address). Tools that attach at the note's address (ftrace uprobe events, bpftrace
//! 0.17) still trap on the `nop`. The `usdt-nop5` hook kind measures both on the same probe.
//!
//! The note layout is the `probe` crate's (`probe-0.5.2/src/platform/systemtap.rs`), with the
//! extra `nop5` and without `nostack`: the optimised uprobe's `call` pushes a return address
//! below the stack pointer, so the compiler must not keep data in the red zone across the site.

/// Fires `rtrace:$name` with one 8-byte argument at a `nop; nop5` site.
macro_rules! sdt_nop5 {
    ($name:literal, $arg:expr) => {
        // SAFETY: two nops and a note section; the operand is only named in the note.
        unsafe {
            ::core::arch::asm!(
                concat!(
                    r#"
990:    nop
        .byte 0x0f, 0x1f, 0x44, 0x00, 0x00
        .pushsection .note.stapsdt,"?","note"
        .balign 4
        .4byte 992f-991f, 994f-993f, 3
991:    .asciz "stapsdt"
992:    .balign 4
993:    .8byte 990b
        .8byte _.stapsdt.base
        .8byte 0
        .asciz "rtrace"
        .asciz ""#,
                    $name,
                    r#""
        .asciz "-8@{}"
994:    .balign 4
        .popsection
.ifndef _.stapsdt.base
        .pushsection .stapsdt.base,"aGR","progbits",.stapsdt.base,comdat
        .weak _.stapsdt.base
        .hidden _.stapsdt.base
_.stapsdt.base: .space 1
        .size _.stapsdt.base, 1
        .popsection
.endif"#
                ),
                in(reg) ($arg) as isize,
                options(readonly, preserves_flags, att_syntax),
            )
        }
    };
}

/// `rtrace:event_nop5`, fired every iteration of cases 1 and 3 of the `usdt-nop5` hook kind.
#[inline(always)]
pub fn event(i: u64) {
    sdt_nop5!("event_nop5", i);
}

/// `rtrace:idle_nop5`: in the binary, never fired during a run (case 2).
#[inline(never)]
pub fn idle(i: u64) {
    sdt_nop5!("idle_nop5", i);
}
