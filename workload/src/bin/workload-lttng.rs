//! The LTTng-UST workload: the same loop as `workload`, instrumented with LTTng-UST instead of
//! USDT. The tracepoint provider is C (`workload/lttng/tp.{h,c}`, built by `build.rs`); the loop
//! calls it through FFI, one call per iteration, exactly like a C program calling
//! `lttng_ust_tracepoint()` from a non-inlined helper.
//!
//! The loop's event kind is chosen once at start from the environment variable
//! `RTRACE_LTTNG_EVENT` (two monomorphised loops, so neither pays for the other):
//!
//! - unset or `tracepoint`: `rtrace:event`, a `LTTNG_UST_TRACEPOINT_EVENT` with one integer field;
//! - `tracef`: the thesis' `lttng_ust_tracef("%s (%d)", "event", i)`, LTTng event
//!   `lttng_ust_tracef:event`.
//!
//! In both kinds `rtrace:idle` is the never-fired tracepoint of case 2, and the `Ready` line
//! names the probes `rtrace:event` / `rtrace:idle` (the tracer maps the event for `tracef`).

/// Environment variable selecting the loop's event kind (`tracepoint` or `tracef`).
const EVENT_ENV: &str = "RTRACE_LTTNG_EVENT";

#[cfg(rtrace_lttng_ust)]
mod ust {
    use rtrace_protocol::Probes;

    #[link(name = "rtrace_lttng_tp", kind = "static")]
    #[link(name = "lttng-ust")]
    #[link(name = "dl")]
    extern "C" {
        /// `lttng_ust_tracepoint(rtrace, event, i)`.
        fn rtrace_lttng_event(i: libc::c_long);
        /// `lttng_ust_tracepoint(rtrace, idle, i)`.
        fn rtrace_lttng_idle(i: libc::c_long);
        /// `lttng_ust_tracef("%s (%d)", "event", (int) i)`.
        fn rtrace_lttng_tracef(i: libc::c_long);
    }

    fn probes() -> Probes {
        Probes {
            provider: "rtrace".into(),
            event: "event".into(),
            idle: "idle".into(),
        }
    }

    /// The loop fires `rtrace:event`.
    pub struct Tracepoint;

    impl workload::Instrument for Tracepoint {
        const INSTRUMENTATION: &'static str = "lttng-ust";

        fn probes() -> Probes {
            probes()
        }

        #[inline(always)]
        fn event(i: u64) {
            // SAFETY: a plain C function taking a long; the provider is linked in.
            unsafe { rtrace_lttng_event(i as libc::c_long) }
        }

        #[inline(never)]
        fn idle(i: u64) {
            // SAFETY: as above.
            unsafe { rtrace_lttng_idle(i as libc::c_long) }
        }
    }

    /// The loop fires `lttng_ust_tracef:event`.
    pub struct Tracef;

    impl workload::Instrument for Tracef {
        const INSTRUMENTATION: &'static str = "lttng-ust";

        fn probes() -> Probes {
            probes()
        }

        #[inline(always)]
        fn event(i: u64) {
            // SAFETY: a plain C function taking a long; liblttng-ust provides tracef.
            unsafe { rtrace_lttng_tracef(i as libc::c_long) }
        }

        #[inline(never)]
        fn idle(i: u64) {
            // SAFETY: as above.
            unsafe { rtrace_lttng_idle(i as libc::c_long) }
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
