//! Pure decisions made before anything touches the kernel: which program, which probe, how big
//! the ring buffer is. Unit-tested without root.

use anyhow::{bail, ensure, Result};
use rtrace_tracer::{validate_name, Hook};
use std::path::PathBuf;

use crate::EbpfMode;

/// The one kernel tracepoint this backend carries a program for.
pub const NANOSLEEP_EXIT: (&str, &str) = ("syscalls", "sys_exit_clock_nanosleep");

/// Ring buffer size when `Target::buffer_size_kb` is not given: at ~1 µs per hit and 32 bytes per
/// record, 16 MiB holds ~0.5 s of events, ten times the consumer's poll interval.
pub const DEFAULT_RING_BYTES: u64 = 16 << 20;

/// Largest ring buffer the kernel accepts (max_entries is a u32 power of two).
const MAX_RING_BYTES: u64 = 1 << 31;

/// What the BPF programs are attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Every site of USDT `provider:name` in `binary` (libbpf finds the sites and semaphores).
    Usdt {
        binary: PathBuf,
        provider: String,
        name: String,
    },
    /// The entry (uprobe) or return (`ret`, uretprobe) of the function at file offset `offset`
    /// of `binary`.
    Uprobe {
        binary: PathBuf,
        function: String,
        offset: u64,
        ret: bool,
    },
    /// `syscalls:sys_exit_clock_nanosleep`.
    NanosleepExit,
}

impl Probe {
    /// Resolves a hook into a probe this backend has a program for; the error names the fix.
    pub fn from_hook(hook: &Hook) -> Result<Probe> {
        match hook {
            Hook::Usdt { binary, sites } => {
                let Some(first) = sites.first() else {
                    bail!(
                        "no USDT probe sites given for {}: pick a probe listed by `rtrace-bench probes {}`",
                        binary.display(),
                        binary.display()
                    );
                };
                validate_name("USDT provider", &first.provider)?;
                validate_name("USDT probe", &first.name)?;
                ensure!(
                    sites
                        .iter()
                        .all(|s| s.provider == first.provider && s.name == first.name),
                    "the USDT sites given for {} belong to several probes: pass the sites of one probe",
                    binary.display()
                );
                Ok(Probe::Usdt {
                    binary: binary.clone(),
                    provider: first.provider.clone(),
                    name: first.name.clone(),
                })
            }
            Hook::KernelTracepoint { category, name } => {
                if (category.as_str(), name.as_str()) == NANOSLEEP_EXIT {
                    Ok(Probe::NanosleepExit)
                } else {
                    bail!(
                        "the ebpf tracer has a program only for {}:{}, not {category}:{name}: use the ftrace tracer for other tracepoints",
                        NANOSLEEP_EXIT.0,
                        NANOSLEEP_EXIT.1
                    )
                }
            }
            Hook::Read { .. } => {
                bail!("the events suite's programs are not a probe of rtrace.bpf.c (a bug: please report it)")
            }
            Hook::LttngUst { provider, event } => bail!(
                "{provider}:{event} is an LTTng-UST tracepoint, invisible to eBPF: use the lttng tracer, or a USDT build of the workload"
            ),
            Hook::Uprobe {
                binary,
                function,
                offset,
                ret,
            } => {
                ensure!(
                    *offset > 0,
                    "function {function} of {} has no file offset: pick a function listed by `rtrace-bench probes {} --symbols PATTERN`",
                    binary.display(),
                    binary.display()
                );
                Ok(Probe::Uprobe {
                    binary: binary.clone(),
                    function: function.clone(),
                    offset: *offset,
                    ret: *ret,
                })
            }
        }
    }

    /// Name of the BPF program (in `rtrace.bpf.c`) for this probe in `mode` (`record-wakeup`
    /// runs the record program with its rodata flag `wakeup_per_event` set, `count` and `floor`
    /// the aggregate program with its rodata `agg_level` lowered).
    pub fn program(&self, mode: EbpfMode) -> &'static str {
        let mode = match mode {
            EbpfMode::RecordWakeup => EbpfMode::Record,
            EbpfMode::Count | EbpfMode::Floor => EbpfMode::Aggregate,
            m => m,
        };
        match (self, mode) {
            (Probe::Usdt { .. }, EbpfMode::Record) => "usdt_record",
            (Probe::Usdt { .. }, EbpfMode::Aggregate) => "usdt_aggregate",
            (Probe::Uprobe { ret: false, .. }, EbpfMode::Record) => "up_record",
            (Probe::Uprobe { ret: false, .. }, EbpfMode::Aggregate) => "up_aggregate",
            (Probe::Uprobe { ret: true, .. }, EbpfMode::Record) => "uret_record",
            (Probe::Uprobe { ret: true, .. }, EbpfMode::Aggregate) => "uret_aggregate",
            (Probe::NanosleepExit, EbpfMode::Record) => "tp_record",
            (Probe::NanosleepExit, EbpfMode::Aggregate) => "tp_aggregate",
            (_, EbpfMode::RecordWakeup | EbpfMode::Count | EbpfMode::Floor) => {
                unreachable!("mapped to Record or Aggregate above")
            }
        }
    }
}

/// Ring buffer bytes for `buffer_size_kb` per CPU on `ncpus` CPUs: the BPF ring buffer is shared
/// by all CPUs, so it gets the total, rounded up to a power of two (a kernel requirement) and at
/// least one page.
pub fn ring_bytes(buffer_size_kb: Option<u64>, ncpus: usize) -> Result<u32> {
    let want = match buffer_size_kb {
        None => DEFAULT_RING_BYTES,
        Some(kb) => {
            ensure!(
                kb > 0,
                "buffer size must be at least 1 KiB: pass a positive --buffer-size-kb"
            );
            kb.saturating_mul(1024).saturating_mul(ncpus.max(1) as u64)
        }
    };
    let bytes = want
        .max(page_size())
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX);
    ensure!(
        bytes <= MAX_RING_BYTES,
        "ring buffer of {want} bytes exceeds the kernel's 2 GiB limit: pass a smaller --buffer-size-kb"
    );
    Ok(bytes as u32)
}

fn page_size() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map(|p| p as u64)
        .unwrap_or(4096)
}

/// Log2 bucket bounds as the BPF side defines them (`bpf/rtrace.h`): bucket 0 holds values ≤ 0,
/// bucket k ≥ 1 holds `[2^(k-1), 2^k)`; the last bucket is open-ended.
pub fn bucket_range(k: usize) -> (i128, Option<i128>) {
    match k {
        0 => (i128::from(i64::MIN), Some(1)),
        63 => (1 << 62, None),
        k => (1 << (k - 1), Some(1 << k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EbpfMode::*;

    fn usdt(sites: &[(&str, &str)]) -> Hook {
        let site = |&(provider, name): &(&str, &str)| rtrace_sdt::Probe {
            provider: provider.into(),
            name: name.into(),
            address: 0x1000,
            offset: 0x1000,
            semaphore_address: None,
            semaphore_offset: None,
            args: vec![],
        };
        Hook::Usdt {
            binary: "/bin/x".into(),
            sites: sites.iter().map(site).collect(),
        }
    }

    /// The probe's program in each mode.
    fn programs(p: &Probe) -> [&'static str; 5] {
        [Record, RecordWakeup, Aggregate, Count, Floor].map(|m| p.program(m))
    }

    #[test]
    fn usdt_hook_becomes_provider_and_name() {
        let p = Probe::from_hook(&usdt(&[("rtest", "hit"), ("rtest", "hit")])).unwrap();
        let expected = Probe::Usdt {
            binary: "/bin/x".into(),
            provider: "rtest".into(),
            name: "hit".into(),
        };
        assert_eq!(p, expected);
        let [record, wakeup, aggregate, count, floor] = programs(&p);
        assert_eq!([record, wakeup], ["usdt_record"; 2]);
        assert_eq!([aggregate, count, floor], ["usdt_aggregate"; 3]);
    }

    #[test]
    fn bad_names_and_mixed_sites_are_rejected() {
        for bad in [
            usdt(&[("a b", "hit")]),
            usdt(&[("rtest", "x:y")]),
            usdt(&[]),
            usdt(&[("rtest", "hit"), ("rtest", "sem")]),
        ] {
            assert!(Probe::from_hook(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_the_nanosleep_tracepoint_is_supported() {
        let tp = |c: &str, n: &str| Hook::KernelTracepoint {
            category: c.into(),
            name: n.into(),
        };
        let p = Probe::from_hook(&tp("syscalls", "sys_exit_clock_nanosleep")).unwrap();
        assert_eq!(p, Probe::NanosleepExit);
        assert_eq!(p.program(Record), "tp_record");
        let err = Probe::from_hook(&tp("sched", "sched_switch")).unwrap_err();
        assert!(format!("{err:#}").contains("ftrace"), "{err:#}");
        let lttng = Hook::LttngUst {
            provider: "p".into(),
            event: "e".into(),
        };
        assert!(format!("{:#}", Probe::from_hook(&lttng).unwrap_err()).contains("lttng"));
    }

    #[test]
    fn uprobe_hooks_pick_the_entry_or_return_program() {
        let hook = |ret, offset| Hook::Uprobe {
            binary: "/bin/x".into(),
            function: "f".into(),
            offset,
            ret,
        };
        let p = Probe::from_hook(&hook(false, 0x1a0)).unwrap();
        assert_eq!(programs(&p)[1..3], ["up_record", "up_aggregate"]);
        let r = Probe::from_hook(&hook(true, 0x1a0)).unwrap();
        assert_eq!(
            programs(&r)[..3],
            ["uret_record", "uret_record", "uret_aggregate"]
        );
        let e = format!("{:#}", Probe::from_hook(&hook(false, 0)).unwrap_err());
        assert!(e.contains("--symbols"), "{e}");
    }

    #[test]
    fn ring_size_is_a_power_of_two_total() {
        assert_eq!(ring_bytes(None, 2).unwrap() as u64, DEFAULT_RING_BYTES);
        assert_eq!(ring_bytes(Some(1024), 2).unwrap(), 2 << 20);
        assert_eq!(ring_bytes(Some(1000), 3).unwrap(), 4 << 20);
        assert_eq!(ring_bytes(Some(1), 1).unwrap() as u64, page_size());
        assert!(ring_bytes(Some(0), 2).is_err());
        assert!(ring_bytes(Some(u64::MAX), 2).is_err());
    }

    #[test]
    fn buckets_cover_the_line() {
        assert_eq!(bucket_range(1), (1, Some(2)));
        assert_eq!(bucket_range(2), (2, Some(4)));
        for k in 1..62 {
            assert_eq!(bucket_range(k).1, Some(bucket_range(k + 1).0));
        }
        assert_eq!(bucket_range(63).1, None);
    }
}
