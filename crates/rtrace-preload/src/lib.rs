//! `librtrace_preload.so`: the LTTng half of the sweep's real-cyclictest cross-check for
//! user-space tracing, without patching rt-tests. Preloaded into cyclictest, it wraps libc's
//! `clock_nanosleep`: the real call, then, for an absolute-time sleep (cyclictest's measuring
//! thread; its main thread's `usleep` sleeps relative), the tracepoint `rtrace:event` (the
//! workload's provider, `workload/lttng/tp.c`). The tracepoint thus fires once per wake-up,
//! between the wake-up and cyclictest's clock reading, as the uretprobe on `clock_nanosleep`
//! does for ftrace, eBPF and bpftrace.

#[cfg(rtrace_lttng_ust)]
mod wrapper {
    use std::sync::OnceLock;

    type ClockNanosleep = unsafe extern "C" fn(
        libc::clockid_t,
        libc::c_int,
        *const libc::timespec,
        *mut libc::timespec,
    ) -> libc::c_int;

    extern "C" {
        /// `lttng_ust_tracepoint(rtrace, event, rc)` (preload.c).
        fn rtrace_preload_fire(rc: libc::c_long);
    }

    /// libc's `clock_nanosleep`, the next definition after this library's.
    fn real() -> ClockNanosleep {
        static REAL: OnceLock<usize> = OnceLock::new();
        let f = *REAL.get_or_init(|| {
            // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
            unsafe { libc::dlsym(libc::RTLD_NEXT, c"clock_nanosleep".as_ptr()) as usize }
        });
        assert!(f != 0, "librtrace_preload: libc has no clock_nanosleep");
        // SAFETY: libc's clock_nanosleep has this signature.
        unsafe { std::mem::transmute::<usize, ClockNanosleep>(f) }
    }

    /// The wrapper: libc's `clock_nanosleep`, then the tracepoint after an absolute-time sleep.
    ///
    /// # Safety
    /// As libc's `clock_nanosleep`.
    #[no_mangle]
    pub unsafe extern "C" fn clock_nanosleep(
        clock: libc::clockid_t,
        flags: libc::c_int,
        request: *const libc::timespec,
        remain: *mut libc::timespec,
    ) -> libc::c_int {
        // SAFETY: the caller's arguments, passed on unchanged.
        let rc = unsafe { real()(clock, flags, request, remain) };
        if flags & libc::TIMER_ABSTIME != 0 {
            // SAFETY: a plain C function taking a long; the provider is linked in.
            unsafe { rtrace_preload_fire(libc::c_long::from(rc)) };
        }
        rc
    }
}

/// Whether this build wraps `clock_nanosleep` (it was built with liblttng-ust): 1 or 0.
#[no_mangle]
pub extern "C" fn rtrace_preload_has_lttng() -> libc::c_int {
    libc::c_int::from(cfg!(rtrace_lttng_ust))
}
