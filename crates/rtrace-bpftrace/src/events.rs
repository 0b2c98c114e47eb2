//! The `events` suite with the real bpftrace ([`Hook::Read`](rtrace_tracer::Hook)): Gregg's
//! one-liners (BPF Performance Tools, ch. 18) as published, hooking every process; on a kernel
//! without kprobes, experiments 8-17 hook the `read` syscall's tracepoints instead of
//! `vfs_read` (its `count` is vfs_read's arg2). The accounting programs count one hook's events
//! per pid. The output (`-o` file) is read for what it shows of the workload's events, then
//! removed (the suite keeps no per-event output).

use anyhow::{bail, Context, Result};
use rtrace_tracer::features::{Evidence, Feature, ReadHook, ReadProgram, Unsupported, NO_KPROBES};
use rtrace_tracer::{Attachment, EventStats, Target};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::child::Bpftrace;

/// bpftrace's output below the run's directory.
const OUTPUT_FILE: &str = "bpftrace-output.txt";

/// The experiment's one-liner. `kprobes`: whether the kernel has them (Gregg's own hooks);
/// `libc`: the library whose `read` experiments 6 and 7 hook. `None`: the experiment needs
/// kprobes and the kernel has none.
fn script(feature: Feature, kprobes: bool, libc: &Path) -> Option<String> {
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
fn account_script(hook: ReadHook, libc: &Path) -> String {
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

/// The program bpftrace runs for `program`; `Unsupported` where it cannot run here.
pub fn program(program: ReadProgram, kprobes: bool, libc: &Path) -> Result<String> {
    let script = match program {
        ReadProgram::Feature(f) => script(f, kprobes, libc),
        ReadProgram::Account(_) if program.needs_kprobes() && !kprobes => None,
        ReadProgram::Account(h) => Some(account_script(h, libc)),
    };
    script.ok_or_else(|| Unsupported::Unavailable(NO_KPROBES.into()).into())
}

/// bpftrace running a program of the suite; killed if dropped without `finish` / `evidence`.
pub struct ReadAttachment {
    bpftrace: Bpftrace,
    program: ReadProgram,
    /// The process an accounting program counts.
    pid: Option<u32>,
    output: PathBuf,
}

impl ReadAttachment {
    /// Starts `bpftrace` on `script` (from [`program`]) with `perf_rb_pages` pages of perf
    /// buffer per CPU, pinned to the target's consumer CPUs; returns once its probes are
    /// attached.
    pub fn start(
        bpftrace: &Path,
        program: ReadProgram,
        script: &str,
        target: &Target,
        perf_rb_pages: u64,
    ) -> Result<ReadAttachment> {
        let output = target.out_dir.join(OUTPUT_FILE);
        let args: Vec<OsString> = vec![
            "-o".into(),
            output.clone().into(),
            "-e".into(),
            script.into(),
        ];
        let env = vec![("BPFTRACE_PERF_RB_PAGES", perf_rb_pages.to_string())];
        let bpftrace = Bpftrace::start(bpftrace, &args, &env, &target.consumer_cpus)
            .with_context(|| format!("bpftrace program: {script}"))?;
        Ok(ReadAttachment {
            bpftrace,
            program,
            pid: target.pid,
            output,
        })
    }

    /// Stops bpftrace (SIGINT: it prints its maps), reads its output and removes it.
    fn stop(self) -> Result<Printed> {
        let exited = self.bpftrace.stop()?;
        anyhow::ensure!(exited.status.success(), "bpftrace failed: {}", exited.why());
        let text = std::fs::read_to_string(&self.output)
            .with_context(|| format!("cannot read {}", self.output.display()))?;
        let _ = std::fs::remove_file(&self.output);
        Ok(Printed::parse(&text))
    }
}

impl Attachment for ReadAttachment {
    /// Every event the printed output counts (of every process; an accounting program's: of
    /// its process). Fails for the empty-action experiments, which print nothing to count.
    fn finish(self: Box<Self>) -> Result<EventStats> {
        let (program, pid) = (self.program, self.pid);
        let printed = self.stop()?;
        let Some(recorded) = printed.total(program, pid) else {
            bail!("bpftrace's program for {program:?} prints nothing to count: read its evidence instead");
        };
        Ok(EventStats {
            recorded,
            lost: printed.lost,
            overwritten: 0,
        })
    }

    fn evidence(self: Box<Self>, pid: u32, comm: &str) -> Result<Evidence> {
        let program = self.program;
        Ok(self.stop()?.evidence(program, pid, comm))
    }
}

/// What bpftrace 0.17 printed: its maps, hist buckets, lines and loss reports.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Printed {
    /// `@[key]: n` on one line, or `@: n` (key "").
    keyed: Vec<(String, u64)>,
    /// `]: n` closing a multi-line key (stacks).
    closed: u64,
    /// hist bucket lines: `[lo, hi)   n |@@@|`.
    buckets: u64,
    /// `N bytes`.
    lines: u64,
    lost: u64,
}

impl Printed {
    fn parse(text: &str) -> Printed {
        let mut p = Printed::default();
        for l in text.lines() {
            let t = l.trim();
            if let Some(rest) = t.strip_prefix("Lost ") {
                p.lost += rest
                    .split(' ')
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            } else if t.ends_with(" bytes") && t.starts_with(|c: char| c.is_ascii_digit()) {
                p.lines += 1;
            } else if let Some(rest) = t.strip_prefix("]: ") {
                p.closed += rest.parse::<u64>().unwrap_or(0);
            } else if t.starts_with('[') && t.contains('|') {
                let n = t
                    .split(']')
                    .nth(1)
                    .or_else(|| t.split(')').nth(1))
                    .and_then(|r| r.split('|').next())
                    .and_then(|n| n.trim().parse::<u64>().ok());
                p.buckets += n.unwrap_or(0);
            } else if let Some(rest) = t.strip_prefix('@') {
                if let Some((key, n)) = rest.rsplit_once(": ") {
                    if let Ok(n) = n.trim().parse::<u64>() {
                        let key = key.trim_start_matches('[').trim_end_matches(']');
                        p.keyed.push((key.to_owned(), n));
                    }
                }
            }
        }
        p
    }

    fn at(&self, want: &str) -> u64 {
        self.keyed
            .iter()
            .filter(|(k, _)| k == want)
            .map(|r| r.1)
            .sum()
    }

    /// Events in the output: every process's, an accounting program's at `pid`; `None` where
    /// the program prints nothing to count.
    fn total(&self, program: ReadProgram, pid: Option<u32>) -> Option<u64> {
        let keyed = || self.keyed.iter().map(|r| r.1).sum();
        Some(match program {
            ReadProgram::Account(_) => self.at(&pid?.to_string()),
            ReadProgram::Feature(f) => match f {
                Feature::Map | Feature::SingleKey | Feature::StringKey | Feature::TwoKeys => {
                    keyed()
                }
                Feature::KernelStack | Feature::UserStack => self.closed,
                Feature::Histogram | Feature::Timing | Feature::Multiple => self.buckets,
                Feature::PerEvent => self.lines,
                _ => return None,
            },
        })
    }

    /// What the output shows of the workload `pid` / `comm`.
    fn evidence(&self, program: ReadProgram, pid: u32, comm: &str) -> Evidence {
        let e = |workload, all, source: String| Evidence {
            workload,
            all,
            lost: self.lost,
            source,
        };
        let feature = match program {
            // Printed as experiment 10's `@[pid]`.
            ReadProgram::Account(_) => Feature::SingleKey,
            ReadProgram::Feature(f) => f,
        };
        match feature {
            Feature::Map => {
                let n = self.at("");
                e(None, Some(n), format!("@: {n} (every process)"))
            }
            Feature::SingleKey => {
                let n = self.at(&pid.to_string());
                e(Some(n), None, format!("@[{pid}]: {n}"))
            }
            Feature::StringKey => {
                let n = self.at(comm);
                e(Some(n), None, format!("@[{comm}]: {n}"))
            }
            Feature::TwoKeys => {
                let n = self.at(&format!("{pid}, {comm}"));
                e(Some(n), None, format!("@[{pid}, {comm}]: {n}"))
            }
            Feature::KernelStack | Feature::UserStack => e(
                None,
                Some(self.closed),
                format!("{} over the printed stacks (every process)", self.closed),
            ),
            Feature::Histogram | Feature::Timing | Feature::Multiple => e(
                None,
                Some(self.buckets),
                format!(
                    "{} in the printed histogram buckets (every process)",
                    self.buckets
                ),
            ),
            Feature::PerEvent => e(
                None,
                Some(self.lines),
                format!("{} printed lines (every process)", self.lines),
            ),
            _ => e(None, None, "no output (the action is empty)".into()),
        }
    }
}

/// What bpftrace 0.17's printed maps (or lines) show of the workload's events.
#[cfg(test)]
fn evidence(feature: Feature, text: &str, pid: u32, comm: &str) -> Evidence {
    Printed::parse(text).evidence(ReadProgram::Feature(feature), pid, comm)
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
    fn accounting_reads_the_workloads_pid_and_kprobes_need_a_kernel_with_them() {
        let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let acct = ReadProgram::Account(ReadHook::Exit);
        assert_eq!(
            program(acct, false, libc).unwrap(),
            "tracepoint:syscalls:sys_exit_read { @[pid] = count(); }"
        );
        let e = program(ReadProgram::Account(ReadHook::Kprobe), false, libc).unwrap_err();
        assert_eq!(
            e.downcast_ref::<Unsupported>(),
            Some(&Unsupported::Unavailable(NO_KPROBES.into()))
        );
        assert!(program(ReadProgram::Feature(Feature::Kretprobe), false, libc).is_err());
        let printed = Printed::parse("@[1]: 3\n@[4242]: 1000\n");
        assert_eq!(printed.evidence(acct, 4242, "w").workload, Some(1000));
        assert_eq!(printed.total(acct, Some(4242)), Some(1000));
        // An experiment's program: every process's events; none where it prints nothing.
        let single = ReadProgram::Feature(Feature::SingleKey);
        assert_eq!(printed.total(single, None), Some(1003));
        let control = ReadProgram::Feature(Feature::Control);
        assert_eq!(Printed::default().total(control, None), None);
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
