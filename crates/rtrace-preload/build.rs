//! Compiles the LTTng-UST tracepoint provider of the workload (`workload/lttng/tp.c`) and the
//! firing half of the wrapper (`preload.c`) into this library. Without liblttng-ust-dev the
//! library still builds and passes every call through unchanged (cfg `rtrace_lttng_ust` unset);
//! the sweep then reports the LTTng cross-check as unavailable, as it does for `usdt-lttng`.

use std::path::Path;

const HEADERS: [&str; 2] = [
    "/usr/include/lttng/tracepoint.h",
    "/usr/include/x86_64-linux-gnu/lttng/tracepoint.h",
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rtrace_lttng_ust)");
    println!("cargo::rerun-if-changed=preload.c");
    println!("cargo::rerun-if-changed=../../workload/lttng/tp.c");
    println!("cargo::rerun-if-changed=../../workload/lttng/tp.h");
    println!("cargo::rerun-if-env-changed=RTRACE_NO_LTTNG");
    if std::env::var_os("RTRACE_NO_LTTNG").is_some()
        || !HEADERS.iter().any(|h| Path::new(h).exists())
    {
        return;
    }
    cc::Build::new()
        .file("preload.c")
        .file("../../workload/lttng/tp.c")
        .include("../../workload/lttng")
        .opt_level(2)
        .warnings(true)
        .compile("rtrace_preload_tp");
    println!("cargo::rustc-link-lib=dylib=lttng-ust");
    println!("cargo::rustc-link-lib=dylib=dl");
    println!("cargo::rustc-cfg=rtrace_lttng_ust");
    // As for workload-lttng: keep the `__tracepoints_ptrs` section that rust-lld's default
    // `-z start-stop-gc` would drop (the provider would never register its tracepoint).
    println!("cargo::rustc-link-arg-cdylib=-Wl,-z,nostart-stop-gc");
}
