//! Compiles `../../bpf/rtrace.bpf.c` and `events.bpf.c` into libbpf skeletons
//! (`$OUT_DIR/{rtrace,events}.skel.rs`) that the crate embeds: the binary needs no clang or LLVM at run time.

use libbpf_cargo::SkeletonBuilder;
use std::env;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let bpf_dir = manifest.join("../../bpf");
    for name in ["rtrace", "events"] {
        skeleton(&bpf_dir, name);
    }
    for f in [
        "rtrace.bpf.c",
        "rtrace.h",
        "events.bpf.c",
        "events.h",
        "log2.h",
    ] {
        println!("cargo:rerun-if-changed={}", bpf_dir.join(f).display());
    }
}

/// `bpf/NAME.bpf.c` → `$OUT_DIR/NAME.skel.rs`.
fn skeleton(bpf_dir: &std::path::Path, name: &str) {
    let src = bpf_dir.join(format!("{name}.bpf.c"));
    let out =
        PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join(format!("{name}.skel.rs"));
    SkeletonBuilder::new()
        .source(&src)
        .clang_args([
            // usdt.bpf.h includes <linux/errno.h> -> <asm/errno.h>: multiarch include dir.
            "-I/usr/include/x86_64-linux-gnu".into(),
            format!("-I{}", bpf_dir.display()),
            "-Wall".into(),
        ])
        .build_and_generate(&out)
        .unwrap_or_else(|e| {
            panic!(
                "building the BPF skeleton from {} failed (needs clang, libelf-dev, zlib1g-dev): {e:#}",
                src.display()
            )
        });
}
