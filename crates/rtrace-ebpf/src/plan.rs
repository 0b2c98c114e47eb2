//! Pure decisions made before anything touches the kernel: which program, which probe, how big
//! the ring buffer is. Unit-tested without root.

use anyhow::{bail, ensure, Result};
use rtrace_tracer::{validate_name, Hook};

use crate::EbpfMode;

/// The one kernel tracepoint this backend carries a program for.
pub const NANOSLEEP_EXIT: (&str, &str) = ("syscalls", "sys_exit_clock_nanosleep");

/// Most tracepoints one script attaches to (this kernel has ~2,000 in all; each is a link and a
/// perf event, i.e. two fds).
pub const MAX_SCRIPT_POINTS: usize = 16_384;

/// Ring buffer size when `Target::buffer_size_kb` is not given: at ~1 µs per hit and 32 bytes per
/// record, 16 MiB holds ~0.5 s of events, ten times the consumer's poll interval.
pub const DEFAULT_RING_BYTES: u64 = 16 << 20;

/// Largest ring buffer the kernel accepts (max_entries is a u32 power of two).
const MAX_RING_BYTES: u64 = 1 << 31;

/// Whether this backend has a program for `hook`; the error names the fix.
pub fn check(hook: &Hook) -> Result<()> {
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
        }
        Hook::KernelTracepoint { category, name } => ensure!(
            (category.as_str(), name.as_str()) == NANOSLEEP_EXIT,
            "the ebpf tracer has a program only for {}:{}, not {category}:{name}: use the ftrace tracer for other tracepoints",
            NANOSLEEP_EXIT.0,
            NANOSLEEP_EXIT.1
        ),
        Hook::Tracepoints(script) => {
            ensure!(
                !script.points.is_empty(),
                "the tracepoint script `{}` matched no tracepoint: check its patterns against `ls /sys/kernel/tracing/events`",
                script.label()
            );
            ensure!(
                script.points.len() <= MAX_SCRIPT_POINTS,
                "the tracepoint script `{}` has {} tracepoints, more than the {MAX_SCRIPT_POINTS} the ebpf tracer attaches: narrow its patterns",
                script.label(),
                script.points.len()
            );
            for (category, name) in &script.points {
                validate_name("tracepoint category", category)?;
                validate_name("tracepoint", name)?;
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
            ..
        } => ensure!(
            *offset > 0,
            "function {function} of {} has no file offset: pick a function listed by `rtrace-bench probes {} --symbols PATTERN`",
            binary.display(),
            binary.display()
        ),
    }
    Ok(())
}

/// Name of the BPF program (in `rtrace.bpf.c`) for `hook` (as [`check`] lets through) in
/// `mode` (`record-wakeup` runs the record program with its rodata flag `wakeup_per_event`
/// set, `count` and `floor` the aggregate program with its rodata `agg_level` lowered).
pub fn program(hook: &Hook, mode: EbpfMode) -> &'static str {
    let record = mode.records();
    match hook {
        Hook::Usdt { .. } if record => "usdt_record",
        Hook::Usdt { .. } => "usdt_aggregate",
        Hook::Uprobe { ret: false, .. } if record => "up_record",
        Hook::Uprobe { ret: false, .. } => "up_aggregate",
        Hook::Uprobe { ret: true, .. } if record => "uret_record",
        Hook::Uprobe { ret: true, .. } => "uret_aggregate",
        Hook::Tracepoints(_) if record => "script_record",
        Hook::Tracepoints(_) => "script_count",
        _ if record => "tp_record",
        _ => "tp_aggregate",
    }
}

/// A script's counts per point index as `category:name` keys, in the script's order.
pub fn by_probe(points: &[(String, String)], counts: &[u64]) -> Vec<(String, u64)> {
    points
        .iter()
        .zip(counts.iter().copied().chain(std::iter::repeat(0)))
        .map(|((c, n), k)| (format!("{c}:{n}"), k))
        .collect()
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

    /// The hook's program in each mode.
    fn programs(h: &Hook) -> [&'static str; 5] {
        [Record, RecordWakeup, Aggregate, Count, Floor].map(|m| program(h, m))
    }

    #[test]
    fn usdt_hook_becomes_provider_and_name() {
        let h = usdt(&[("rtest", "hit"), ("rtest", "hit")]);
        check(&h).unwrap();
        let [record, wakeup, aggregate, count, floor] = programs(&h);
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
            assert!(check(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_the_nanosleep_tracepoint_is_supported() {
        let tp = |c: &str, n: &str| {
            let (category, name) = (c.into(), n.into());
            Hook::KernelTracepoint { category, name }
        };
        let h = tp("syscalls", "sys_exit_clock_nanosleep");
        check(&h).unwrap();
        let want = ["tp_record", "tp_record", "tp_aggregate"];
        assert_eq!(programs(&h)[..3], want);
        let err = check(&tp("sched", "sched_switch")).unwrap_err();
        assert!(format!("{err:#}").contains("ftrace"), "{err:#}");
        let (provider, event) = ("p".into(), "e".into());
        let err = check(&Hook::LttngUst { provider, event }).unwrap_err();
        assert!(format!("{err:#}").contains("lttng"));
    }

    #[test]
    fn uprobe_hooks_pick_the_entry_or_return_program() {
        let hook = |ret, offset| Hook::Uprobe {
            binary: "/bin/x".into(),
            function: "f".into(),
            offset,
            ret,
        };
        check(&hook(false, 0x1a0)).unwrap();
        let entry = programs(&hook(false, 1));
        assert_eq!(entry[..3], ["up_record", "up_record", "up_aggregate"]);
        let r = programs(&hook(true, 1));
        assert_eq!(r[..3], ["uret_record", "uret_record", "uret_aggregate"]);
        let e = format!("{:#}", check(&hook(false, 0)).unwrap_err());
        assert!(e.contains("--symbols"), "{e}");
    }

    fn script(points: &[(&str, &str)]) -> Hook {
        Hook::Tracepoints(rtrace_tracer::tracepoints::Script {
            patterns: vec!["syscalls:sys_enter_*".into()],
            points: points
                .iter()
                .map(|&(c, n)| (c.to_owned(), n.to_owned()))
                .collect(),
        })
    }

    #[test]
    fn a_script_runs_one_generic_program_per_mode() {
        let h = script(&[
            ("syscalls", "sys_enter_read"),
            ("syscalls", "sys_enter_write"),
        ]);
        check(&h).unwrap();
        let [record, wakeup, aggregate, count, floor] = programs(&h);
        assert_eq!([record, wakeup], ["script_record"; 2]);
        assert_eq!([aggregate, count, floor], ["script_count"; 3]);
        let empty = format!("{:#}", check(&script(&[])).unwrap_err());
        assert!(empty.contains("matched no tracepoint"), "{empty}");
        assert!(check(&script(&[("syscalls", "a/b")])).is_err());
        assert!(check(&script(&[("a b", "x")])).is_err());
    }

    #[test]
    fn counts_by_probe_are_keyed_category_colon_name() {
        let points = [("syscalls", "sys_enter_read"), ("sched", "sched_switch")]
            .map(|(c, n)| (c.to_owned(), n.to_owned()));
        assert_eq!(
            by_probe(&points, &[3, 4]),
            vec![
                ("syscalls:sys_enter_read".to_owned(), 3),
                ("sched:sched_switch".to_owned(), 4)
            ]
        );
        assert_eq!(by_probe(&points, &[3])[1].1, 0);
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
