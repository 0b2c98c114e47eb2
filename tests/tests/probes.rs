//! `probes` shows, for every USDT site and function, the instruction a uprobe there replaces and
//! how the kernel runs it. Reads files only: no root needed.

use rtrace_tests::*;
use serde_json::{json, Value};
use std::path::Path;

fn listing(args: &[&str]) -> Vec<Value> {
    let mut args = args.to_vec();
    args.push("--json");
    let out = bench(&args);
    assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("probes --json prints a JSON array")
}

/// libc's `read` starts with `cmpb $0x0, <rip-relative>` (glibc 2.36): single-stepped, ~10 µs
/// a hit where a nop costs 0.5.
#[test]
fn libc_read_is_single_stepped() {
    let libc = "/lib/x86_64-linux-gnu/libc.so.6";
    if !Path::new(libc).exists() {
        println!("SKIPPED: no {libc}");
        return;
    }
    let read = listing(&["probes", libc, "--symbols", "read"]);
    assert_eq!(read.len(), 1, "{read:?}");
    let mechanism = &read[0]["site"]["mechanism"];
    assert_eq!(mechanism["kind"], "single-stepped", "{read:?}");
    let text = bench(&["probes", libc, "--symbols", "read"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("single-stepped out of line"), "{text}");
}

/// The workload's `rtrace:event` sites are a `nop` (emulated); `event_nop5` is `nop; nop5`,
/// whose nop5 libbpf attaches to; the marker functions start with `push %rbp` (emulated).
#[test]
fn workload_sites_are_emulated_or_nop5() {
    let workload = bin("workload");
    let workload = workload.to_str().unwrap();
    let probes = listing(&["probes", workload]);
    let named =
        |name: &str| -> Vec<&Value> { probes.iter().filter(|p| p["name"] == name).collect() };
    let nop = json!({"kind": "emulated", "op": "nop"});
    for site in named("event") {
        assert_eq!(site["site"]["mechanism"], nop, "{site}");
        assert!(site.get("libbpf_site").is_none(), "{site}");
    }
    let nop5 = named("event_nop5");
    assert!(!nop5.is_empty(), "{probes:?}");
    for site in nop5 {
        assert_eq!(site["site"]["mechanism"], nop, "{site}");
        assert_eq!(
            site["libbpf_site"]["mechanism"],
            json!({"kind": "nop5"}),
            "{site}"
        );
    }
    let markers = listing(&["probes", workload, "--symbols", "rtrace_marker_*"]);
    assert_eq!(markers.len(), 2, "{markers:?}");
    for marker in &markers {
        let push = json!({"kind": "emulated", "op": "push"});
        assert_eq!(marker["site"]["mechanism"], push, "{marker}");
    }
}
