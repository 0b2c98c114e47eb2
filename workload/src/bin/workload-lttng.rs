//! The LTTng-UST workload: the same loop as `workload`, instrumented with LTTng-UST instead of
//! USDT. The tracepoint provider is C (`workload/lttng/tp.{h,c}`, built by `build.rs`).
//!
//! The loop does what the C macro `lttng_ust_tracepoint()` expands to at a call site: it tests
//! the tracepoint's `state` inline (a volatile load and a branch, as
//! `lttng_ust_tracepoint_enabled()`) and calls out of line, through FFI, only when the
//! tracepoint is enabled (`lttng_ust_do_tracepoint()` in `tp.c`). A disabled tracepoint (cases 2
//! and 3) then costs what it costs in a C program, not a function call per iteration.
//!
//! The loop's event kind is chosen once at start from the environment variable
//! `RTRACE_LTTNG_EVENT` (two monomorphised loops, so neither pays for the other):
//!
//! - unset or `tracepoint`: `rtrace:event`, a `LTTNG_UST_TRACEPOINT_EVENT` with one integer field;
//! - `tracef`: the thesis' `lttng_ust_tracef("%s (%d)", "event", i)`, LTTng event
//!   `lttng_ust_tracef:event` (its `state` lives in liblttng-ust, tested inline the same way).
//!
//! In both kinds `rtrace:idle` is the never-fired tracepoint of case 2, and the `Ready` line
//! names the probes `rtrace:event` / `rtrace:idle` (the tracer maps the event for `tracef`).

/// Environment variable selecting the loop's event kind (`tracepoint` or `tracef`).
const EVENT_ENV: &str = "RTRACE_LTTNG_EVENT";

#[cfg(rtrace_lttng_ust)]
mod ust {
    /// The head of LTTng-UST's `struct lttng_ust_tracepoint` (`lttng/tracepoint-types.h`) up to
    /// `state`, the field `lttng_ust_tracepoint_enabled()` reads. Only ever used behind a
    /// pointer to the C definition; `tp.c` checks the offset of `state` at compile time.
    #[repr(C)]
    pub struct TracepointHead {
        struct_size: u32,
        provider_name: *const libc::c_char,
        event_name: *const libc::c_char,
        state: libc::c_int,
    }

    const _: () = assert!(std::mem::offset_of!(TracepointHead, state) == 24);

    #[link(name = "rtrace_lttng_tp", kind = "static")]
    #[link(name = "lttng-ust")]
    #[link(name = "dl")]
    extern "C" {
        /// `rtrace:event`, defined by the provider in `tp.c`.
        static lttng_ust_tracepoint_rtrace___event: TracepointHead;
        /// `rtrace:idle`, defined by the provider in `tp.c`.
        static lttng_ust_tracepoint_rtrace___idle: TracepointHead;
        /// `lttng_ust_tracef:event`, defined in liblttng-ust.
        static lttng_ust_tracepoint_lttng_ust_tracef___event: TracepointHead;
        /// `lttng_ust_do_tracepoint(rtrace, event, i)`: only called when enabled.
        #[cold]
        fn rtrace_lttng_event(i: libc::c_long);
        /// `lttng_ust_do_tracepoint(rtrace, idle, i)`: only called when enabled.
        #[cold]
        fn rtrace_lttng_idle(i: libc::c_long);
        /// `lttng_ust__tracef("%s (%d)", "event", (int) i)`: only called when enabled.
        #[cold]
        fn rtrace_lttng_tracef(i: libc::c_long);
    }

    /// `lttng_ust_tracepoint_enabled(provider, name)` for the tracepoint structure `$tp`:
    /// `CMM_LOAD_SHARED(tp.state)`, one 32-bit load that the compiler may neither merge nor move
    /// out of the loop (LTTng-UST sets `state` from another thread when a session enables the
    /// event). It is an `asm!` load, RIP-relative as gcc compiles the C macro into a (PIE)
    /// executable: a Rust `extern static` would be read through the GOT, one more dependent
    /// load per iteration than the C macro costs.
    macro_rules! enabled {
        ($tp:ident) => {{
            let state: u32;
            // SAFETY: reads the `state` field (offset 24, checked above and in `tp.c`) of a C
            // tracepoint structure that lives for the whole program; writes nothing.
            unsafe {
                std::arch::asm!(
                    "mov {state:e}, dword ptr [rip + {tp} + 24]",
                    tp = sym $tp,
                    state = out(reg) state,
                    options(nostack, readonly, preserves_flags),
                )
            };
            state != 0
        }};
    }

    /// `lttng_ust_tracepoint(rtrace, idle, i)`, never fired during a run.
    #[inline(never)]
    fn idle(i: u64) {
        if enabled!(lttng_ust_tracepoint_rtrace___idle) {
            // SAFETY: a plain C function taking a long; the provider is linked in.
            unsafe { rtrace_lttng_idle(i as libc::c_long) }
        }
    }

    /// The loop fires `rtrace:event`.
    pub struct Tracepoint;

    impl workload::Instrument for Tracepoint {
        const INSTRUMENTATION: &'static str = "lttng-ust";

        /// `lttng_ust_tracepoint(rtrace, event, i)`, inlined into the loop.
        #[inline(always)]
        fn event(i: u64) {
            if enabled!(lttng_ust_tracepoint_rtrace___event) {
                // SAFETY: a plain C function taking a long; the provider is linked in.
                unsafe { rtrace_lttng_event(i as libc::c_long) }
            }
        }

        fn idle(i: u64) {
            idle(i)
        }
    }

    /// The loop fires `lttng_ust_tracef:event`.
    pub struct Tracef;

    impl workload::Instrument for Tracef {
        const INSTRUMENTATION: &'static str = "lttng-ust";

        /// `lttng_ust_tracef("%s (%d)", "event", i)`, inlined into the loop.
        #[inline(always)]
        fn event(i: u64) {
            if enabled!(lttng_ust_tracepoint_lttng_ust_tracef___event) {
                // SAFETY: a plain C function taking a long; liblttng-ust provides tracef.
                unsafe { rtrace_lttng_tracef(i as libc::c_long) }
            }
        }

        fn idle(i: u64) {
            idle(i)
        }
    }
}

fn main() {
    let kind = std::env::var(EVENT_ENV).unwrap_or_default();
    #[cfg(rtrace_lttng_ust)]
    match kind.as_str() {
        "" | "tracepoint" => workload::main::<ust::Tracepoint>(),
        "tracef" => workload::main::<ust::Tracef>(),
        _ => {}
    }
    #[cfg(not(rtrace_lttng_ust))]
    {
        let _ = kind;
        eprintln!(
            "workload-lttng: built without LTTng-UST: apt-get install liblttng-ust-dev, then rebuild"
        );
        std::process::exit(2);
    }
    #[allow(unreachable_code)]
    {
        eprintln!("workload-lttng: {EVENT_ENV}={kind:?} is not `tracepoint` or `tracef`");
        std::process::exit(2);
    }
}
