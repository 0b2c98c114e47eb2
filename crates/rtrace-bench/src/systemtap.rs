//! SystemTap, which rtrace-bench does not run: why it cannot run on this machine, checked each
//! time `events` runs so that the report's "not run here" list is true wherever it ran. Cheap:
//! `stap -V` and a few files, no compilation. What was measured on the development host (stap
//! 4.8, Linux 6.18 without loadable modules) is in the reasons; a machine where none of them
//! holds could run its module runtime, which rtrace-bench does not drive yet.

use rtrace_measure::events::UnavailableTracer;
use std::path::Path;

/// Why SystemTap cannot run here (or that rtrace-bench does not drive it).
pub fn check() -> UnavailableTracer {
    let Some(version) = version() else {
        return UnavailableTracer {
            tracer: "systemtap".into(),
            why: "not installed (apt-get install systemtap)".into(),
        };
    };
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let why = reasons(
        &version,
        &release,
        Path::new(&format!("/lib/modules/{release}/build/.config")).exists(),
        Path::new("/proc/modules").exists(),
        has_cap_sys_resource(),
    );
    UnavailableTracer {
        tracer: format!("systemtap {version}"),
        why,
    }
}

/// The reasons, from what was found: the kernel's build tree (`.config` in
/// `/lib/modules/RELEASE/build`), loadable modules (`/proc/modules`), CAP_SYS_RESOURCE.
fn reasons(version: &str, release: &str, build: bool, modules: bool, resource: bool) -> String {
    let mut why = Vec::new();
    if !build {
        why.push(format!("no kernel build tree for {release} (/lib/modules/{release}/build: every runtime needs the kernel's .config and headers)"));
    }
    if !modules {
        why.push("the kernel has no loadable modules (CONFIG_MODULES unset, no /proc/modules): the module runtime cannot load".to_owned());
    }
    if !resource {
        why.push("its BPF runtime (stapbpf) fails raising RLIMIT_MEMLOCK without CAP_SYS_RESOURCE, which this root lacks".to_owned());
    }
    if version == "4.8" && !(build && modules) {
        why.push("stap 4.8's BPF runtime cannot express kernel.trace() on this kernel, uretprobes or a USDT probe's $arg1 (measured)".to_owned());
    }
    if why.is_empty() {
        why.push(
            "its module runtime could run here, but rtrace-bench does not drive SystemTap yet"
                .to_owned(),
        );
    }
    why.join("; ")
}

/// `4.8` from `stap -V`'s `Systemtap translator/driver (version 4.8/0.188, ...)` (on stderr).
fn version() -> Option<String> {
    let o = std::process::Command::new("stap")
        .arg("-V")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    version_of(&text)
}

fn version_of(text: &str) -> Option<String> {
    let after = text.split_once("(version ")?.1;
    let v: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (!v.is_empty()).then_some(v)
}

/// Whether this process has CAP_SYS_RESOURCE (bit 24 of `CapEff` in /proc/self/status).
fn has_cap_sys_resource() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 24) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_stap_s_translator_version() {
        let v = "Systemtap translator/driver (version 4.8/0.188, Debian version 4.8-2)\nCopyright";
        assert_eq!(version_of(v).as_deref(), Some("4.8"));
        assert_eq!(version_of("stap: command not found"), None);
    }

    #[test]
    fn every_missing_piece_is_a_reason() {
        let here = reasons("4.8", "6.18.44", false, false, false);
        for part in [
            "no kernel build tree for 6.18.44",
            "CONFIG_MODULES",
            "CAP_SYS_RESOURCE",
            "4.8's BPF runtime",
        ] {
            assert!(here.contains(part), "{part}: {here}");
        }
        let guest = reasons("4.8", "6.1.0", true, true, true);
        assert!(guest.contains("does not drive SystemTap yet"), "{guest}");
        assert!(!reasons("5.0", "6.1", true, false, true).contains("5.0"));
    }

    #[test]
    fn a_check_here_always_gives_a_reason() {
        let u = check();
        assert!(u.tracer.starts_with("systemtap"), "{u:?}");
        assert!(!u.why.is_empty() && !u.why.contains('\n'), "{u:?}");
    }
}
