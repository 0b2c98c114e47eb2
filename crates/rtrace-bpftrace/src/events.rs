//! The `events` suite with the real bpftrace: Gregg's one-liners (BPF Performance Tools,
//! ch. 18) as published, hooking every process; on a kernel without kprobes, experiments 8-17
//! hook the `read` syscall's tracepoints instead of `vfs_read` (its `count` is vfs_read's arg2).
//! The output (`-o` file) is read for what it shows of the workload's events.

use anyhow::{Context, Result};
use rtrace_tracer::features::{Evidence, Feature, ReadHook};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::child::Bpftrace;

/// bpftrace's output below the run's directory.
pub const OUTPUT_FILE: &str = "bpftrace-output.txt";

/// The experiment's program. `kprobes`: whether the kernel has them (Gregg's own hooks);
/// `libc`: the library whose `read` experiments 6 and 7 hook. `None`: the experiment needs
/// kprobes and the kernel has none.
pub fn script(feature: Feature, kprobes: bool, libc: &Path) -> Option<String> {
    let (entry, ret, arg) = if kprobes {
        ("kprobe:vfs_read", "kretprobe:vfs_read", "arg2")
    } else {
        (
            "tracepoint:syscalls:sys_enter_read",
            "tracepoint:syscalls:sys_exit_read",
            "args->count",
        )
    };
    let libc = libc.display();
    Some(match feature {
        Feature::Control => "BEGIN { 1 }".into(),
        Feature::Kprobe | Feature::Kretprobe if !kprobes => return None,
        Feature::Kprobe => "kprobe:vfs_read { 1 }".into(),
        Feature::Kretprobe => "kretprobe:vfs_read { 1 }".into(),
        Feature::TracepointEntry => "tracepoint:syscalls:sys_enter_read { 1 }".into(),
        Feature::TracepointReturn => "tracepoint:syscalls:sys_exit_read { 1 }".into(),
        Feature::Uprobe => format!("uprobe:{libc}:read {{ 1 }}"),
        Feature::Uretprobe => format!("uretprobe:{libc}:read {{ 1 }}"),
        Feature::Filter => format!("{entry} /{arg} > 0/ {{ 1 }}"),
        Feature::Map => format!("{entry} {{ @ = count(); }}"),
        Feature::SingleKey => format!("{entry} {{ @[pid] = count(); }}"),
        Feature::StringKey => format!("{entry} {{ @[comm] = count(); }}"),
        Feature::TwoKeys => format!("{entry} {{ @[pid, comm] = count(); }}"),
        Feature::KernelStack => format!("{entry} {{ @[kstack] = count(); }}"),
        Feature::UserStack => format!("{entry} {{ @[ustack] = count(); }}"),
        Feature::Histogram => format!("{entry} {{ @ = hist({arg}); }}"),
        Feature::Timing => format!(
            "{entry} {{ @s[tid] = nsecs; }} {ret} /@s[tid]/ {{ @ = hist(nsecs - @s[tid]); delete(@s[tid]); }}"
        ),
        Feature::Multiple => format!("{entry} {{ @[kstack, ustack] = hist({arg}); }}"),
        Feature::PerEvent => format!("{entry} {{ printf(\"%d bytes\\n\", {arg}); }}"),
    })
}

/// The accounting run of `hook`: the workload's events on it, per process. Its output reads as
/// experiment 10's (`@[pid]`).
pub fn account_script(hook: ReadHook, libc: &Path) -> String {
    let libc = libc.display();
    let probe = match hook {
        ReadHook::Enter => "tracepoint:syscalls:sys_enter_read".to_owned(),
        ReadHook::Exit => "tracepoint:syscalls:sys_exit_read".to_owned(),
        ReadHook::Uprobe => format!("uprobe:{libc}:read"),
        ReadHook::Uretprobe => format!("uretprobe:{libc}:read"),
        ReadHook::Kprobe => "kprobe:vfs_read".to_owned(),
        ReadHook::Kretprobe => "kretprobe:vfs_read".to_owned(),
    };
    format!("{probe} {{ @[pid] = count(); }}")
}

/// A bpftrace running one experiment.
pub struct FeatureRun {
    bpftrace: Bpftrace,
    feature: Feature,
    output: PathBuf,
}

impl FeatureRun {
    /// Starts bpftrace on `program` (from [`script`]); returns once its probes are attached.
    pub fn start(
        bpftrace: &Path,
        feature: Feature,
        program: &str,
        out_dir: &Path,
        cpus: &[usize],
    ) -> Result<FeatureRun> {
        let output = out_dir.join(OUTPUT_FILE);
        let args: Vec<OsString> = vec![
            "-o".into(),
            output.clone().into(),
            "-e".into(),
            program.into(),
        ];
        let env = vec![(
            "BPFTRACE_PERF_RB_PAGES",
            crate::script::perf_rb_pages(crate::DEFAULT_BUFFER_KB)?.to_string(),
        )];
        let bpftrace = Bpftrace::start(bpftrace, &args, &env, cpus)
            .with_context(|| format!("bpftrace program: {program}"))?;
        Ok(FeatureRun {
            bpftrace,
            feature,
            output,
        })
    }

    /// Stops bpftrace (SIGINT: it prints its maps) and reads its output.
    pub fn finish(self, workload_pid: u32, workload_comm: &str) -> Result<Evidence> {
        let exited = self.bpftrace.stop()?;
        anyhow::ensure!(exited.status.success(), "bpftrace failed: {}", exited.why());
        let text = std::fs::read_to_string(&self.output)
            .with_context(|| format!("cannot read {}", self.output.display()))?;
        Ok(evidence(self.feature, &text, workload_pid, workload_comm))
    }
}

/// What bpftrace 0.17's printed maps (or lines) show of the workload's events.
pub fn evidence(feature: Feature, text: &str, pid: u32, comm: &str) -> Evidence {
    let mut keyed = Vec::<(String, u64)>::new(); // `@[key]: n` on one line, or `@: n`
    let mut closed = 0u64; // `]: n` closing a multi-line key (stacks)
    let mut buckets = 0u64; // hist bucket lines: `[lo, hi)   n |@@@|`
    let mut lines = 0u64; // `N bytes`
    let mut lost = 0u64;
    for l in text.lines() {
        let t = l.trim();
        if let Some(rest) = t.strip_prefix("Lost ") {
            lost += rest
                .split(' ')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        } else if t.ends_with(" bytes") && t.starts_with(|c: char| c.is_ascii_digit()) {
            lines += 1;
        } else if let Some(rest) = t.strip_prefix("]: ") {
            closed += rest.parse::<u64>().unwrap_or(0);
        } else if t.starts_with('[') && t.contains('|') {
            let n = t
                .split(']')
                .nth(1)
                .or_else(|| t.split(')').nth(1))
                .and_then(|r| r.split('|').next())
                .and_then(|n| n.trim().parse::<u64>().ok());
            buckets += n.unwrap_or(0);
        } else if let Some(rest) = t.strip_prefix('@') {
            if let Some((key, n)) = rest.rsplit_once(": ") {
                if let Ok(n) = n.trim().parse::<u64>() {
                    let key = key.trim_start_matches('[').trim_end_matches(']');
                    keyed.push((key.to_owned(), n));
                }
            }
        }
    }
    let at = |want: &str| keyed.iter().filter(|(k, _)| k == want).map(|r| r.1).sum();
    let e = |workload, all, source: String| Evidence {
        workload,
        all,
        lost,
        source,
    };
    match feature {
        Feature::Map => {
            let n = at("");
            e(None, Some(n), format!("@: {n} (every process)"))
        }
        Feature::SingleKey => {
            let n = at(&pid.to_string());
            e(Some(n), None, format!("@[{pid}]: {n}"))
        }
        Feature::StringKey => {
            let n = at(comm);
            e(Some(n), None, format!("@[{comm}]: {n}"))
        }
        Feature::TwoKeys => {
            let n = at(&format!("{pid}, {comm}"));
            e(Some(n), None, format!("@[{pid}, {comm}]: {n}"))
        }
        Feature::KernelStack | Feature::UserStack => e(
            None,
            Some(closed),
            format!("{closed} over the printed stacks (every process)"),
        ),
        Feature::Histogram | Feature::Timing | Feature::Multiple => e(
            None,
            Some(buckets),
            format!("{buckets} in the printed histogram buckets (every process)"),
        ),
        Feature::PerEvent => e(
            None,
            Some(lines),
            format!("{lines} printed lines (every process)"),
        ),
        _ => e(None, None, "no output (the action is empty)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_one_liners_move_to_the_syscall_tracepoint_without_kprobes() {
        let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!(script(Feature::Kprobe, false, libc), None);
        assert_eq!(
            script(Feature::Filter, true, libc).unwrap(),
            "kprobe:vfs_read /arg2 > 0/ { 1 }"
        );
        assert_eq!(
            script(Feature::Filter, false, libc).unwrap(),
            "tracepoint:syscalls:sys_enter_read /args->count > 0/ { 1 }"
        );
        assert!(script(Feature::Uretprobe, false, libc)
            .unwrap()
            .starts_with("uretprobe:/lib/x86_64-linux-gnu/libc.so.6:read"));
        assert!(script(Feature::Timing, false, libc)
            .unwrap()
            .contains("tracepoint:syscalls:sys_exit_read /@s[tid]/"));
    }

    #[test]
    fn keyed_counts_are_the_workloads() {
        let text = "Attaching 1 probe...\n\n\n@[1]: 3\n@[4242]: 1000\n@[77]: 9\n";
        let ev = evidence(Feature::SingleKey, text, 4242, "workload");
        assert_eq!(ev.workload, Some(1000));
        let text = "@[4242, workload]: 1000\n@[4242, other]: 2\n";
        assert_eq!(
            evidence(Feature::TwoKeys, text, 4242, "workload").workload,
            Some(1000)
        );
        let text = "@[workload]: 1000\n@[sshd]: 4\n";
        assert_eq!(
            evidence(Feature::StringKey, text, 1, "workload").workload,
            Some(1000)
        );
        assert_eq!(evidence(Feature::Map, "@: 1004\n", 1, "w").all, Some(1004));
    }

    #[test]
    fn stacks_hist_buckets_and_lines_are_summed() {
        let stacks = "@[\n    ksys_read+5\n    do_syscall_64+80\n]: 1000\n@[\n    x+1\n]: 4\n";
        assert_eq!(
            evidence(Feature::KernelStack, stacks, 1, "w").all,
            Some(1004)
        );
        let hist = "@: \n[1]                 1000 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n[2, 4)                 3 |                                                    |\n[1K, 2K)               1 |                                                    |\n";
        assert_eq!(evidence(Feature::Histogram, hist, 1, "w").all, Some(1004));
        let lines = "1 bytes\n1 bytes\nLost 5 events\n";
        let ev = evidence(Feature::PerEvent, lines, 1, "w");
        assert_eq!((ev.all, ev.lost), (Some(2), 5));
    }
}
