//! Debian packages the project needs, installed when missing (as root) or printed otherwise.

use crate::exec::{exec, is_root};
use anyhow::{bail, Result};
use std::process::Command;

/// Build: clang/libelf/zlib/pkg-config for libbpf-rs; tests: gcc + sys/sdt.h, g++, python3; tracers: bpftool,
/// bpftrace, perf, strace, LTTng; cyclictest; QEMU guests: qemu, busybox, cpio; the fleet playbook: Ansible.
pub const PACKAGES: &[&str] = &[
    "clang",
    "libelf-dev",
    "zlib1g-dev",
    "pkg-config",
    "gcc",
    "systemtap-sdt-dev",
    // Real-world probe targets of the root tests: a C++ program (libstdc++'s USDT probes) and
    // Debian's python3 (semaphore-guarded USDT probes).
    "g++",
    "python3",
    "bpftool",
    "bpftrace",
    // perf record (`--tracer perf`).
    "linux-perf",
    // The events suite's strace column (tests/tests/strace.rs).
    "strace",
    "rt-tests",
    "lttng-tools",
    "liblttng-ust-dev",
    "babeltrace2",
    "qemu-system-x86",
    "busybox-static",
    "cpio",
    // QEMU guests: LTTng modules built for the guest kernels (make), their depmod index (kmod),
    // the kernel decompressed for a PVH boot (xz-utils).
    "make",
    "kmod",
    "xz-utils",
    // The fleet playbook (deploy/fleet.yml) and its root test: ansible-playbook with the
    // ansible.builtin modules only (without recommends: 8 small packages, not the collections).
    "ansible-core",
    // `app`'s workloads: a kernel build (Linux 6.1's source, its build tools) and pgbench on
    // PostgreSQL 15 (its server with USDT probes, and pgbench).
    "linux-source-6.1",
    "flex",
    "bison",
    "bc",
    "postgresql-15",
    // `cargo xtask ci`'s browser check of a report (headless, xtask/src/browser.rs).
    "chromium",
];

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// Installs the missing packages with apt-get (root), or fails printing the command.
pub fn ensure() -> Result<()> {
    let missing: Vec<&str> = PACKAGES.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        bail!(
            "missing packages; run as root: apt-get install -y {}",
            missing.join(" ")
        );
    }
    exec(Command::new("apt-get").args(["update", "-qq"]))?;
    exec(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

#[cfg(test)]
mod tests {
    use super::PACKAGES;

    /// The runtime packages the fleet playbook installs on every machine (`deploy/vars.yml`,
    /// `fleet_packages_default`): a subset of what the project's own machine gets.
    #[test]
    fn the_playbook_installs_a_subset_of_ours() {
        let vars =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/vars.yml"))
                .expect("deploy/vars.yml");
        let runtime: Vec<&str> = vars
            .lines()
            .skip_while(|l| !l.starts_with("fleet_packages_default:"))
            .skip(1)
            .map_while(|l| l.strip_prefix("  - "))
            .map(str::trim)
            .collect();
        assert!(
            !runtime.is_empty(),
            "no fleet_packages_default list in deploy/vars.yml"
        );
        for p in runtime {
            assert!(
                PACKAGES.contains(&p),
                "{p} (deploy/vars.yml) is not in PACKAGES"
            );
        }
    }
}
