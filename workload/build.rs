//! Builds the LTTng-UST tracepoint provider (`lttng/tp.c`) and the tracef wrapper
//! (`lttng/tracef.c`) for the `workload-lttng` binary.
//!
//! Only `workload-lttng` links it (and liblttng-ust): the USDT `workload` binary stays free of
//! LTTng. Without liblttng-ust-dev the build still succeeds, and `workload-lttng` then fails at
//! run time with a line naming the package to install (cfg `rtrace_lttng_ust` is not set).
//! `RTRACE_NO_LTTNG=1` forces that fallback.

use std::path::Path;

const BIN: &str = "workload-lttng";
const HEADERS: [&str; 2] = [
    "/usr/include/lttng/tracepoint.h",
    "/usr/include/x86_64-linux-gnu/lttng/tracepoint.h",
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rtrace_lttng_ust)");
    println!("cargo::rerun-if-changed=lttng/tp.h");
    println!("cargo::rerun-if-changed=lttng/tp.c");
    println!("cargo::rerun-if-changed=lttng/tracef.c");
    println!("cargo::rerun-if-env-changed=RTRACE_NO_LTTNG");

    // RTRACE_NO_LTTNG=1 forces the fallback (to check that it still builds).
    if std::env::var_os("RTRACE_NO_LTTNG").is_some() {
        println!("cargo::warning=RTRACE_NO_LTTNG is set: {BIN} is built without LTTng-UST");
        return;
    }
    let have_ust = pkg_config_has("lttng-ust") || HEADERS.iter().any(|h| Path::new(h).exists());
    if !have_ust {
        println!(
            "cargo::warning=liblttng-ust-dev not found: {BIN} is built without LTTng-UST \
             (apt-get install liblttng-ust-dev)"
        );
        return;
    }

    // The archive is linked by `#[link]` in src/bin/workload-lttng.rs only: no cargo metadata
    // here, which would link it into every target of the package.
    cc::Build::new()
        .file("lttng/tp.c")
        .file("lttng/tracef.c")
        .include("lttng")
        .opt_level(2)
        .warnings(true)
        .cargo_metadata(false)
        .compile("rtrace_lttng_tp");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo::rustc-link-search=native={out}");
    println!("cargo::rustc-cfg=rtrace_lttng_ust");
    // rust-lld's default `-z start-stop-gc` garbage-collects the `__tracepoints_ptrs` section
    // that only `__start_`/`__stop_` symbols reference: the provider then never registers its
    // tracepoints and LTTng records nothing, silently. Keep those sections (this bin only).
    println!("cargo::rustc-link-arg-bin={BIN}=-Wl,-z,nostart-stop-gc");
}

fn pkg_config_has(lib: &str) -> bool {
    std::process::Command::new("pkg-config")
        .args(["--exists", lib])
        .status()
        .is_ok_and(|s| s.success())
}
