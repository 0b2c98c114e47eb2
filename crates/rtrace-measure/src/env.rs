//! The environment a result was measured in: everything that changes the numbers.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Facts about the machine and kernel at measurement time. `None`: not exposed here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// The machine's name in fleet reports: `--machine`, else [`Environment::hostname`].
    /// Absent in files of older versions.
    #[serde(default)]
    pub label: Option<String>,
    /// `/proc/sys/kernel/hostname`; empty in files of older versions.
    #[serde(default)]
    pub hostname: String,
    /// The tracers' versions as installed (`lttng`, `bpftrace`: their `--version`; `ebpf`: the
    /// libbpf linked in; `ftrace`: the kernel's); empty in files of older versions.
    #[serde(default)]
    pub tracer_versions: std::collections::BTreeMap<String, String>,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (carries PREEMPT / PREEMPT_RT / PREEMPT_DYNAMIC).
    pub kernel_version: String,
    /// Preemption model, e.g. `PREEMPT_RT`, `PREEMPT_DYNAMIC (full)`, `PREEMPT`, `none`.
    pub preemption: String,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// `/sys/devices/system/cpu/isolated` (isolcpus).
    pub isolated_cpus: String,
    /// `/sys/devices/system/cpu/nohz_full`.
    pub nohz_full: String,
    pub cpu_model: String,
    pub online_cpus: usize,
    /// SMT active (`/sys/devices/system/cpu/smt/active`).
    pub smt_active: Option<bool>,
    /// cpufreq governor of the measured CPU.
    pub governor: Option<String>,
    /// Turbo/boost enabled.
    pub turbo: Option<bool>,
    pub clocksource: String,
    /// `constant_tsc` and `nonstop_tsc` CPU flags both present.
    pub tsc_invariant: bool,
    /// TSC frequency calibrated by the workload (Hz).
    pub tsc_hz: Option<f64>,
    /// The TSC's resolution measured by the workload (ns); absent in files of older versions.
    #[serde(default)]
    pub tsc_step_ns: Option<f64>,
    /// Running under a hypervisor (`hypervisor` CPU flag).
    pub virtualized: bool,
    /// Running under QEMU's TCG emulation (no KVM): latencies prove function, not timing.
    pub emulated: bool,
}

fn read(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned())
}

impl Environment {
    /// Reads the environment for a run measuring `cpu`.
    pub fn collect(cpu: usize) -> Environment {
        let uts = nix::sys::utsname::uname().ok();
        let field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
            uts.as_ref()
                .map(|u| f(u).to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let kernel_version = field(|u| u.version());
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let flags: Vec<&str> = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, f)| f.split_whitespace().collect())
            .unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_owned())
            .unwrap_or_default();
        let cpufreq = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq");
        Environment {
            label: None,
            hostname: read("/proc/sys/kernel/hostname").unwrap_or_default(),
            tracer_versions: Default::default(),
            kernel_release: field(|u| u.release()),
            preemption: preemption(&kernel_version),
            kernel_version,
            cmdline: read("/proc/cmdline").unwrap_or_default(),
            isolated_cpus: read("/sys/devices/system/cpu/isolated").unwrap_or_default(),
            nohz_full: read("/sys/devices/system/cpu/nohz_full").unwrap_or_default(),
            cpu_model: cpu_model.clone(),
            // Not available_parallelism(): that counts only the CPUs of our (pinned) mask.
            online_cpus: nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
                .ok()
                .flatten()
                .map_or(1, |n| n as usize),
            smt_active: read("/sys/devices/system/cpu/smt/active").map(|s| s == "1"),
            governor: read(format!("{cpufreq}/scaling_governor")),
            turbo: turbo(),
            clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .unwrap_or_default(),
            tsc_invariant: flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc"),
            tsc_hz: None,
            tsc_step_ns: None,
            virtualized: flags.contains(&"hypervisor"),
            emulated: flags.contains(&"hypervisor") && hypervisor_vendor() == "TCGTCGTCGTCG",
        }
    }
}

impl Environment {
    /// The machine's name: its label, else its hostname, else (files of older versions)
    /// `unnamed`.
    pub fn machine_name(&self) -> &str {
        match (&self.label, self.hostname.as_str()) {
            (Some(l), _) => l,
            (None, "") => "unnamed",
            (None, h) => h,
        }
    }

    /// What tells machines apart in a fleet: the name, the kernel, the CPU model. The same
    /// host booted on another kernel is another machine of the fleet.
    pub fn machine_key(&self) -> (&str, &str, &str) {
        (self.machine_name(), &self.kernel_release, &self.cpu_model)
    }
}

/// The hypervisor's CPUID vendor (leaf 0x40000000): `KVMKVMKVM`, `TCGTCGTCGTCG` (QEMU
/// emulation), ...; empty where there is none.
fn hypervisor_vendor() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        // CPUID leaf 0x40000000 is reserved for hypervisors (reads as data on bare metal).
        let r = core::arch::x86_64::__cpuid(0x4000_0000);
        let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        String::from_utf8_lossy(&bytes)
            .trim_end_matches('\0')
            .to_owned()
    }
    #[cfg(not(target_arch = "x86_64"))]
    String::new()
}

fn turbo() -> Option<bool> {
    if let Some(v) = read("/sys/devices/system/cpu/intel_pstate/no_turbo") {
        return Some(v == "0");
    }
    read("/sys/devices/system/cpu/cpufreq/boost").map(|v| v == "1")
}

/// The preemption model from `uname -v`, refined by the dynamic mode when debugfs shows it.
fn preemption(version: &str) -> String {
    let words: Vec<&str> = version.split_whitespace().collect();
    let model = if words.contains(&"PREEMPT_RT") {
        "PREEMPT_RT"
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC"
    } else if words.contains(&"PREEMPT") {
        "PREEMPT"
    } else {
        "none/voluntary"
    };
    if model != "PREEMPT_DYNAMIC" {
        return model.to_owned();
    }
    // The selected mode: debugfs when mounted, else `preempt=` on the kernel command line.
    let from_debugfs = read("/sys/kernel/debug/sched/preempt")
        .and_then(|modes| dynamic_mode(&modes).map(str::to_owned));
    let from_cmdline = || {
        read("/proc/cmdline").and_then(|c| {
            c.split_whitespace()
                .find_map(|w| w.strip_prefix("preempt="))
                .map(str::to_owned)
        })
    };
    match from_debugfs.or_else(from_cmdline) {
        Some(m) => format!("PREEMPT_DYNAMIC ({m})"),
        None => "PREEMPT_DYNAMIC (mode unknown: mount debugfs to read it)".to_owned(),
    }
}

/// The selected mode in `none voluntary (full) lazy`.
fn dynamic_mode(modes: &str) -> Option<&str> {
    modes
        .split_whitespace()
        .find(|m| m.starts_with('('))
        .map(|m| m.trim_matches(|c| c == '(' || c == ')'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_from_uname() {
        assert_eq!(preemption("#1 SMP PREEMPT_RT Debian 6.1.0"), "PREEMPT_RT");
        assert_eq!(preemption("#1 SMP PREEMPT Debian"), "PREEMPT");
        assert_eq!(preemption("#1 SMP Debian"), "none/voluntary");
        assert!(preemption("#1 SMP PREEMPT_DYNAMIC @0").starts_with("PREEMPT_DYNAMIC"));
    }

    #[test]
    fn dynamic_mode_is_the_parenthesised_one() {
        assert_eq!(dynamic_mode("none voluntary (full) lazy"), Some("full"));
        assert_eq!(dynamic_mode("none voluntary full"), None);
    }

    #[test]
    fn this_kvm_host_is_not_emulated() {
        let e = Environment::collect(0);
        if e.virtualized && hypervisor_vendor().starts_with("KVM") {
            assert!(!e.emulated);
        }
    }

    #[test]
    fn collect_reads_this_machine() {
        let e = Environment::collect(0);
        assert!(!e.kernel_release.is_empty());
        assert!(e.online_cpus >= 1);
    }
}
