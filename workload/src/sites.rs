//! USDT probes whose site is not the single `nop` of `sys/sdt.h` and of the `probe` crate
//! (which emits `rtrace:event`): the instruction at the probe's address decides how the kernel
//! runs a uprobe there.
//!
//! `rtrace:event_nop5` / `rtrace:idle_nop5`: the site is `nop; nop5` (`90 0f 1f 44 00 00`).
//! Kernels from 6.18 on x86_64 can optimise a uprobe on a 5-byte nop into a call to a
//! trampoline that enters the kernel through the uprobe syscall, without the int3 trap; libbpf
//! from 1.6 recognises this site and attaches its USDT programs to the `nop5` (one byte past the
//! note's address). Tools that attach at the note's address (ftrace uprobe events, bpftrace
//! 0.17) still trap on the `nop`. The `usdt-nop5` hook kind measures both on the same probe.
//!
//! `rtrace:event_stepped` / `rtrace:idle_stepped`: the site is `cmpb $0, FLAG(%rip)`, an
//! instruction the kernel neither emulates nor optimises: it copies it out of line and
//! single-steps it (int3, then a debug trap), as on most function entries (libc's `read` starts
//! with such a `cmpb`). The `usdt-stepped` hook kind measures that floor beside the emulated
//! `nop`.
//!
//! The note layout is the `probe` crate's (`probe-0.5.2/src/platform/systemtap.rs`), with the
//! site's instruction and without `nostack`: the optimised uprobe's `call` pushes a return
//! address below the stack pointer, so the compiler must not keep data in the red zone across
//! the site.

/// Fires `rtrace:$name` with one 8-byte argument at a site made of `$site` (assembly; further
/// operands after the argument).
macro_rules! sdt_at {
    ($site:literal, $name:literal, $arg:expr $(, $($operands:tt)+)?) => {
        // SAFETY: the site instruction only reads its own operands; a note section.
        unsafe {
            ::core::arch::asm!(
                concat!(
                    "990:    ",
                    $site,
                    r#"
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
                $($($operands)+)?
                options(readonly, att_syntax),
            )
        }
    };
}

/// Read (never written) by the `usdt-stepped` site's RIP-relative `cmpb`.
static STEPPED_FLAG: u8 = 0;

/// `rtrace:event_nop5`, fired every iteration of cases 1 and 3 of the `usdt-nop5` hook kind.
#[inline(always)]
pub fn event_nop5(i: u64) {
    sdt_at!("nop; .byte 0x0f, 0x1f, 0x44, 0x00, 0x00", "event_nop5", i);
}

/// `rtrace:idle_nop5`: in the binary, never fired during a run (case 2).
#[inline(never)]
pub fn idle_nop5(i: u64) {
    sdt_at!("nop; .byte 0x0f, 0x1f, 0x44, 0x00, 0x00", "idle_nop5", i);
}

/// `rtrace:event_stepped`, fired every iteration of cases 1 and 3 of the `usdt-stepped` hook
/// kind.
#[inline(always)]
pub fn event_stepped(i: u64) {
    sdt_at!("cmpb $0, {flag}(%rip)", "event_stepped", i, flag = sym STEPPED_FLAG,);
}

/// `rtrace:idle_stepped`: in the binary, never fired during a run (case 2).
#[inline(never)]
pub fn idle_stepped(i: u64) {
    sdt_at!("cmpb $0, {flag}(%rip)", "idle_stepped", i, flag = sym STEPPED_FLAG,);
}
