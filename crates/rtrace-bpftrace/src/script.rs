//! The bpftrace program and command line for a target (pure; unit-tested).
//!
//! The scripts are the thesis' kind: `record` prints every event with `printf` into a file
//! (`-o`), `aggregate` only counts (`@c = count();`). Every name that reaches the script is
//! checked first: provider/probe/tracepoint names with [`rtrace_tracer::validate_name`], the
//! binary path against a conservative character set.

use anyhow::{bail, ensure, Result};
use rtrace_tracer::{validate_name, Hook};
use std::ffi::OsString;
use std::path::Path;

use crate::BpftraceMode;

/// The `printf` of record mode: the same fields as the eBPF backend's events.
const RECORD_FORMAT: &str = r#""%llu %u %u %lld\n", nsecs, cpu, pid"#;

/// The attach point, e.g. `usdt:"/usr/bin/x":prov:name` (paths always quoted: bpftrace 0.17
/// cannot parse a `+` in a bare path, as in `libstdc++.so.6`), and the expression of the probe's
/// argument (`arg0`, `args->ret`, or `0` for a probe without argument).
pub fn attach_point(hook: &Hook) -> Result<(String, &'static str)> {
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
            let bin = plain_path(binary)?;
            let arg = if first.args.is_empty() { "0" } else { "arg0" };
            Ok((format!("usdt:\"{bin}\":{}:{}", first.provider, first.name), arg))
        }
        Hook::KernelTracepoint { category, name } => {
            validate_name("tracepoint category", category)?;
            validate_name("tracepoint", name)?;
            let arg = if category == "syscalls" && name.starts_with("sys_exit_") {
                "args->ret"
            } else {
                "0"
            };
            Ok((format!("tracepoint:{category}:{name}"), arg))
        }
        Hook::Tracepoints(_) => {
            bail!("tracepoint scripts have a program of their own (a bug: please report it)")
        }
        Hook::Read { .. } => {
            bail!("the events suite's programs have scripts of their own (a bug: please report it)")
        }
        Hook::LttngUst { provider, event } => bail!(
            "{provider}:{event} is an LTTng-UST tracepoint, invisible to bpftrace: use the lttng tracer, or a USDT build of the workload"
        ),
        Hook::Uprobe {
            binary,
            function,
            ret,
            ..
        } => {
            validate_name("function", function)?;
            let bin = plain_path(binary)?;
            Ok(if *ret {
                (format!("uretprobe:\"{bin}\":{function}"), "retval")
            } else {
                (format!("uprobe:\"{bin}\":{function}"), "arg0")
            })
        }
    }
}

/// An absolute path bpftrace's parser takes inside quotes (no quotes, spaces, colons...).
pub(crate) fn plain_path(p: &Path) -> Result<String> {
    let s = p.to_str().unwrap_or_default();
    let ok = s.starts_with('/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._+-".contains(c));
    ensure!(
        ok,
        "bpftrace cannot take the binary path {:?}: give an absolute path of letters, digits and /._+- (e.g. a symlink)",
        p
    );
    Ok(s.to_owned())
}

/// How the events of one process are selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidFilter {
    /// Every process.
    None,
    /// `-p PID`: bpftrace attaches the USDT probes to that process only. bpftrace 0.17 then
    /// exits by itself when the process ends, draining its perf buffers for only one more round:
    /// fine for maps (read at exit), not for printed events.
    DashP(u32),
    /// A `/pid == PID/` predicate: the probes fire in every process, the program keeps only
    /// this one. bpftrace runs until SIGINT and drains everything.
    Predicate(u32),
    /// The process and every process it starts later (`Target::tree`): the probes fire in
    /// every process (the kernel raises USDT semaphores in processes that map the binary
    /// later), a predicate keeps the tree's hits, and two more probes keep the tree in the map
    /// `@rtrace_tree`: a new process (not a thread) of a process in it joins it
    /// (`task:task_newtask`), a process leaves it with its last thread (`signal->live` 0: a
    /// main thread that exits first or an exec from another thread keeps it; its pid may then
    /// be reused).
    Tree(u32),
}

/// The map of [`PidFilter::Tree`], cleared in `END` so that bpftrace does not print it.
const TREE_MAP: &str = "@rtrace_tree";

/// `CLONE_THREAD` of `task_newtask`'s `clone_flags`.
const CLONE_THREAD: u64 = 0x0001_0000;

/// The probes that keep the tree of process `root` in [`TREE_MAP`].
fn tree_probes(root: u32) -> String {
    let m = TREE_MAP;
    format!(
        "tracepoint:task:task_newtask /(pid == {root} || {m}[pid]) && (args->clone_flags & {CLONE_THREAD:#x}) == 0/ {{ {m}[args->pid] = 1; }} \
tracepoint:sched:sched_process_exit /{m}[pid] && curtask->signal->live.counter == 0/ {{ delete({m}[pid]); }} \
END {{ clear({m}); }}"
    )
}

impl PidFilter {
    /// `-p` for USDT and uprobe counts; a predicate for printed events (see [`PidFilter::DashP`]) and for
    /// kernel tracepoints (`-p` does not filter them).
    pub fn choose(hook: &Hook, mode: BpftraceMode, pid: Option<u32>, tree: bool) -> PidFilter {
        match (hook, mode, pid) {
            (_, _, None) => PidFilter::None,
            (_, _, Some(p)) if tree => PidFilter::Tree(p),
            (Hook::Usdt { .. } | Hook::Uprobe { .. }, BpftraceMode::Aggregate, Some(p)) => {
                PidFilter::DashP(p)
            }
            (_, _, Some(p)) => PidFilter::Predicate(p),
        }
    }
}

/// The bpftrace program; hits of thread `skip_tid` are left out by its predicate. A record
/// program carries `flush` (`crate::flush::probe`), if given, as its second probe.
pub fn program(
    hook: &Hook,
    mode: BpftraceMode,
    filter: PidFilter,
    skip_tid: Option<u32>,
    flush: Option<&str>,
) -> Result<String> {
    let (point, arg) = attach_point(hook)?;
    let mut tests = Vec::new();
    match filter {
        PidFilter::Predicate(pid) => tests.push(format!("pid == {pid}")),
        PidFilter::Tree(root) => tests.push(format!("(pid == {root} || {TREE_MAP}[pid])")),
        PidFilter::None | PidFilter::DashP(_) => {}
    }
    if let Some(tid) = skip_tid {
        tests.push(format!("tid != {tid}"));
    }
    let predicate = if tests.is_empty() {
        String::new()
    } else {
        format!(" /{}/", tests.join(" && "))
    };
    let action = match mode {
        BpftraceMode::Record => format!("printf({RECORD_FORMAT}, {arg});"),
        BpftraceMode::Aggregate => "@c = count();".to_owned(),
    };
    let mut program = format!("{point}{predicate} {{ {action} }}");
    if let PidFilter::Tree(root) = filter {
        program.push(' ');
        program.push_str(&tree_probes(root));
    }
    if let (BpftraceMode::Record, Some(flush)) = (mode, flush) {
        program.push(' ');
        program.push_str(flush);
    }
    Ok(program)
}

/// The arguments after the program name.
pub fn args(
    hook: &Hook,
    mode: BpftraceMode,
    (pid, tree): (Option<u32>, bool),
    skip_tid: Option<u32>,
    events_file: Option<&Path>,
    flush: Option<&str>,
) -> Result<Vec<OsString>> {
    let filter = PidFilter::choose(hook, mode, pid, tree);
    let mut args: Vec<OsString> = Vec::new();
    if let PidFilter::DashP(pid) = filter {
        args.extend(["-p".into(), pid.to_string().into()]);
    }
    if let Some(f) = events_file {
        args.extend(["-o".into(), f.as_os_str().to_owned()]);
    }
    args.extend([
        "-e".into(),
        program(hook, mode, filter, skip_tid, flush)?.into(),
    ]);
    Ok(args)
}

/// The program in an argument list made by [`args`] (after `-e`).
pub fn program_of(args: &[OsString]) -> Option<String> {
    let at = args.iter().position(|a| a == "-e")?;
    args.get(at + 1).map(|p| p.to_string_lossy().into_owned())
}

/// 1 GiB of 4 KiB pages per CPU.
const MAX_PERF_RB_PAGES: u64 = 1 << 18;

/// `BPFTRACE_PERF_RB_PAGES` for `buffer_size_kb` per CPU: pages per CPU, a power of two.
pub fn perf_rb_pages(buffer_size_kb: u64) -> Result<u64> {
    ensure!(
        buffer_size_kb > 0,
        "buffer size must be at least 1 KiB: pass a positive --buffer-size-kb"
    );
    let pages = buffer_size_kb
        .div_ceil(4)
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX);
    ensure!(
        pages <= MAX_PERF_RB_PAGES,
        "buffer size of {buffer_size_kb} KiB per CPU is too large for bpftrace: pass at most 1 GiB"
    );
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_sdt::{Arg, ArgLocation, Probe};
    use BpftraceMode::{Aggregate as Agg, Record as Rec};
    use PidFilter::{DashP, Predicate};

    fn usdt(bin: &str, provider: &str, name: &str, nargs: usize) -> Hook {
        let location = ArgLocation::Register("rdx".into());
        let arg = Arg {
            size: 8,
            signed: true,
            location,
        };
        Hook::Usdt {
            binary: bin.into(),
            sites: vec![Probe {
                provider: provider.into(),
                name: name.into(),
                address: 0,
                offset: 0,
                semaphore_address: None,
                semaphore_offset: None,
                args: vec![arg; nargs],
            }],
        }
    }

    fn tp(c: &str, n: &str) -> Hook {
        let (category, name) = (c.into(), n.into());
        Hook::KernelTracepoint { category, name }
    }

    fn uprobe(binary: &str, function: &str, ret: bool) -> Hook {
        Hook::Uprobe {
            binary: binary.into(),
            function: function.into(),
            offset: 0x10,
            ret,
        }
    }

    /// The program without a flush probe.
    fn prog(h: &Hook, mode: BpftraceMode, filter: PidFilter, skip_tid: Option<u32>) -> String {
        program(h, mode, filter, skip_tid, None).unwrap()
    }

    fn strs(a: &[OsString]) -> Vec<&str> {
        a.iter().map(|s| s.to_str().unwrap()).collect()
    }

    #[test]
    fn usdt_scripts() {
        let h = usdt("/tmp/x/sdt_loop", "rtest", "hit", 1);
        let point = r#"usdt:"/tmp/x/sdt_loop":rtest:hit"#;
        let record = r#"printf("%llu %u %u %lld\n", nsecs, cpu, pid, arg0);"#;
        let cases = [
            (Agg, DashP(7), "{ @c = count(); }".to_owned()),
            (Rec, PidFilter::None, format!("{{ {record} }}")),
            (Rec, Predicate(7), format!("/pid == 7/ {{ {record} }}")),
        ];
        for (mode, filter, body) in cases {
            assert_eq!(prog(&h, mode, filter, None), format!("{point} {body}"));
        }
        let plus = usdt("/lib/libstdc++.so.6", "libstdcxx", "throw", 2);
        let plus = prog(&plus, Agg, PidFilter::None, None);
        assert!(plus.starts_with(r#"usdt:"/lib/libstdc++.so.6":libstdcxx:throw "#));
        let no_arg = usdt("/b", "p", "n", 0);
        assert!(prog(&no_arg, Rec, PidFilter::None, None).ends_with("pid, 0); }"));
    }

    #[test]
    fn a_tree_is_a_predicate_on_a_map_the_fork_and_exit_tracepoints_keep() {
        let h = usdt("/b", "p", "n", 1);
        for mode in [Agg, Rec] {
            let a = args(&h, mode, (Some(42), true), Some(43), None, None).unwrap();
            let a = strs(&a);
            assert!(!a.contains(&"-p"), "{a:?}");
            let p = &a[a.len() - 1];
            assert!(
                p.starts_with(r#"usdt:"/b":p:n /(pid == 42 || @rtrace_tree[pid]) && tid != 43/ {"#),
                "{p}"
            );
            assert!(
                p.contains(" tracepoint:task:task_newtask /(pid == 42 || @rtrace_tree[pid]) && (args->clone_flags & 0x10000) == 0/ { @rtrace_tree[args->pid] = 1; } tracepoint:sched:sched_process_exit /@rtrace_tree[pid] && curtask->signal->live.counter == 0/ { delete(@rtrace_tree[pid]); } END { clear(@rtrace_tree); }"),
                "{p}"
            );
        }
        assert_eq!(PidFilter::choose(&h, Agg, None, true), PidFilter::None);
    }

    #[test]
    fn usdt_counts_use_dash_p_printed_events_a_predicate() {
        let h = usdt("/b", "p", "n", 1);
        let a = args(&h, Agg, (Some(42), false), None, None, None).unwrap();
        assert_eq!(&strs(&a)[..3], ["-p", "42", "-e"]);
        let flush = "usdt:\"/h\":rtrace_bench:bpftrace_flush { }";
        let a = args(
            &h,
            Rec,
            (Some(42), false),
            None,
            Some(Path::new("/o/f")),
            Some(flush),
        );
        let a = a.unwrap();
        let a = strs(&a);
        assert_eq!(&a[..3], ["-o", "/o/f", "-e"]);
        assert!(a[3].contains("/pid == 42/"), "{}", a[3]);
        let carried = a[3].ends_with(&format!(" {flush}"));
        assert!(
            carried,
            "a record program carries the flush probe: {}",
            a[3]
        );
        let a = args(&h, Agg, (None, false), None, None, None).unwrap();
        assert_eq!(a[0], "-e");
    }

    #[test]
    fn skipped_thread_joins_the_predicate() {
        let h = uprobe("/lib/libc.so.6", "clock_nanosleep", true);
        assert_eq!(
            prog(&h, Agg, DashP(7), Some(7)),
            r#"uretprobe:"/lib/libc.so.6":clock_nanosleep /tid != 7/ { @c = count(); }"#
        );
        assert!(prog(&h, Rec, Predicate(7), Some(7)).contains(" /pid == 7 && tid != 7/ "));
    }

    #[test]
    fn tracepoint_pid_goes_to_a_predicate() {
        let h = tp("syscalls", "sys_exit_clock_nanosleep");
        assert_eq!(PidFilter::choose(&h, Agg, Some(9), false), Predicate(9));
        let a = args(&h, Agg, (Some(9), false), None, None, None).unwrap();
        let script = "tracepoint:syscalls:sys_exit_clock_nanosleep /pid == 9/ { @c = count(); }";
        assert_eq!(strs(&a), ["-e", script]);
        assert!(prog(&h, Rec, PidFilter::None, None).contains("args->ret"));
    }

    #[test]
    fn names_are_validated_before_they_reach_the_script() {
        for h in [
            usdt("/b", "p", "n } END { system(\"x\")", 1),
            usdt("/b", "p;", "n", 1),
            usdt("/b/with space", "p", "n", 1),
            usdt("/b/a:b", "p", "n", 1),
            usdt("relative", "p", "n", 1),
            tp("syscalls", "x/y"),
            uprobe("/b/w", "f } END { x", false),
            Hook::LttngUst {
                provider: "p".into(),
                event: "e".into(),
            },
        ] {
            let refused = program(&h, Agg, PidFilter::None, None, None).is_err();
            assert!(refused, "{h:?}");
        }
    }

    #[test]
    fn uprobe_scripts() {
        let entry = uprobe("/b/w", "rtrace_marker_hit", false);
        let want = r#"uprobe:"/b/w":rtrace_marker_hit { @c = count(); }"#;
        assert_eq!(prog(&entry, Agg, DashP(3), None), want);
        let ret = uprobe("/b/w", "rtrace_marker_hit", true);
        assert_eq!(
            prog(&ret, Rec, Predicate(3), None),
            r#"uretprobe:"/b/w":rtrace_marker_hit /pid == 3/ { printf("%llu %u %u %lld\n", nsecs, cpu, pid, retval); }"#
        );
        let a = args(&ret, Agg, (Some(3), false), None, None, None).unwrap();
        assert_eq!(&strs(&a)[..2], ["-p", "3"]);
        assert_eq!(program_of(&a).unwrap(), prog(&ret, Agg, DashP(3), None));
    }

    #[test]
    fn perf_buffer_pages() {
        assert_eq!(perf_rb_pages(4).unwrap(), 1);
        assert_eq!(perf_rb_pages(256).unwrap(), 64);
        assert_eq!(perf_rb_pages(300).unwrap(), 128);
        assert!(perf_rb_pages(0).is_err());
        assert!(perf_rb_pages(u64::MAX).is_err());
    }
}
