//! Compiles `../../bpf/rtrace.bpf.c` into a libbpf skeleton (`$OUT_DIR/rtrace.skel.rs`) that the
//! crate embeds: the binary needs no clang or LLVM at run time.

use libbpf_cargo::SkeletonBuilder;
use std::env;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let bpf_dir = manifest.join("../../bpf");
    let src = bpf_dir.join("rtrace.bpf.c");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("rtrace.skel.rs");

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

    for f in ["rtrace.bpf.c", "rtrace.h"] {
        println!("cargo:rerun-if-changed={}", bpf_dir.join(f).display());
    }
}
