//! The `events` suite with the real bpftrace ([`Hook::Read`](rtrace_tracer::Hook)): Gregg's
//! one-liners (BPF Performance Tools, ch. 18) as published, hooking every process; on a kernel
//! without kprobes, experiments 8-17 hook the `read` syscall's tracepoints instead of
//! `vfs_read` (its `count` is vfs_read's arg2). The accounting programs count one hook's events
//! per pid. The output (`-o` file) is read for what it shows of the workload's events, then
//! removed (the suite keeps no per-event output).

use anyhow::{bail, Context, Result};
use rtrace_tracer::features::{Evidence, Feature, Read, ReadHook, ReadProgram};
use rtrace_tracer::{Attachment, EventStats, Target};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::child::Bpftrace;

/// bpftrace's output below the run's directory.
const OUTPUT_FILE: &str = "bpftrace-output.txt";

/// The script bpftrace runs for `read`: the experiment's one-liner, on the hooks of
/// [`Read::hooks`] (libc's path in the uprobes; `args->count` for vfs_read's arg2 on the
/// syscall's tracepoint), or the accounting script of a hook (its output reads as experiment
/// 10's `@[pid]`); `Unsupported` where it needs kprobes and the kernel has none.
pub fn program(read: &Read) -> Result<String> {
    read.check_kprobes()?;
    let libc = format!(":{}:", read.libc.display());
    let probe = |h: ReadHook| h.label().replacen(":libc:", &libc, 1);
    let hooks: Vec<String> = read.hooks().into_iter().map(probe).collect();
    let entry = hooks.first().map_or("BEGIN", String::as_str);
    let arg = if read.kprobes { "arg2" } else { "args->count" };
    let feature = match read.program {
        ReadProgram::Account(_) => return Ok(format!("{entry} {{ @[pid] = count(); }}")),
        ReadProgram::Feature(f) => f,
    };
    Ok(match feature {
        Feature::Filter => format!("{entry} /{arg} > 0/ {{ 1 }}"),
        Feature::Map => format!("{entry} {{ @ = count(); }}"),
        Feature::SingleKey => format!("{entry} {{ @[pid] = count(); }}"),
        Feature::StringKey => format!("{entry} {{ @[comm] = count(); }}"),
        Feature::TwoKeys => format!("{entry} {{ @[pid, comm] = count(); }}"),
        Feature::KernelStack => format!("{entry} {{ @[kstack] = count(); }}"),
        Feature::UserStack => format!("{entry} {{ @[ustack] = count(); }}"),
        Feature::Histogram => format!("{entry} {{ @ = hist({arg}); }}"),
        Feature::Timing => format!(
            "{entry} {{ @s[tid] = nsecs; }} {} /@s[tid]/ {{ @ = hist(nsecs - @s[tid]); delete(@s[tid]); }}",
            hooks[1]
        ),
        Feature::Multiple => format!("{entry} {{ @[kstack, ustack] = hist({arg}); }}"),
        Feature::PerEvent => format!("{entry} {{ printf(\"%d bytes\\n\", {arg}); }}"),
        // 1-7: an empty action on the hook.
        _ => format!("{entry} {{ 1 }}"),
    })
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
    /// Starts `bpftrace` on `read`'s script ([`program`]) with `perf_rb_pages` pages of perf
    /// buffer per CPU, pinned to the target's consumer CPUs; returns once its probes are
    /// attached.
    pub fn start(
        bpftrace: &Path,
        read: &Read,
        target: &Target,
        perf_rb_pages: u64,
    ) -> Result<ReadAttachment> {
        let script = program(read)?;
        let output = target.out_dir.join(OUTPUT_FILE);
        let args: Vec<OsString> = vec![
            "-o".into(),
            output.clone().into(),
            "-e".into(),
            script.as_str().into(),
        ];
        let env = vec![("BPFTRACE_PERF_RB_PAGES", perf_rb_pages.to_string())];
        let bpftrace = Bpftrace::start(bpftrace, &args, &env, &target.consumer_cpus)
            .with_context(|| format!("bpftrace program: {script}"))?;
        Ok(ReadAttachment {
            bpftrace,
            program: read.program,
            pid: target.pid,
            output,
        })
    }

    /// Stops bpftrace (SIGINT: it prints its maps), reads its output and removes it.
    fn stop(self) -> Result<Printed> {
        self.bpftrace.stop()?;
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
        Ok(EventStats::new(recorded, printed.lost))
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
        use Feature::*;
        Some(match program {
            ReadProgram::Account(_) => self.at(&pid?.to_string()),
            ReadProgram::Feature(Map | SingleKey | StringKey | TwoKeys) => {
                self.keyed.iter().map(|r| r.1).sum()
            }
            ReadProgram::Feature(KernelStack | UserStack) => self.closed,
            ReadProgram::Feature(Histogram | Timing | Multiple) => self.buckets,
            ReadProgram::Feature(PerEvent) => self.lines,
            ReadProgram::Feature(_) => return None,
        })
    }

    /// What the output shows of the workload `pid` / `comm`.
    fn evidence(&self, program: ReadProgram, pid: u32, comm: &str) -> Evidence {
        use Feature::*;
        let feature = match program {
            // Printed as experiment 10's `@[pid]`.
            ReadProgram::Account(_) => SingleKey,
            ReadProgram::Feature(f) => f,
        };
        let key = match feature {
            SingleKey => Some(pid.to_string()),
            StringKey => Some(comm.to_owned()),
            TwoKeys => Some(format!("{pid}, {comm}")),
            _ => None,
        };
        let every = |n: u64, what: &str| (None, Some(n), format!("{n} {what} (every process)"));
        let (workload, all, source) = match (feature, key) {
            (_, Some(key)) => {
                let n = self.at(&key);
                (Some(n), None, format!("@[{key}]: {n}"))
            }
            (Map, _) => {
                let n = self.at("");
                (None, Some(n), format!("@: {n} (every process)"))
            }
            (KernelStack | UserStack, _) => every(self.closed, "over the printed stacks"),
            (Histogram | Timing | Multiple, _) => {
                every(self.buckets, "in the printed histogram buckets")
            }
            (PerEvent, _) => every(self.lines, "printed lines"),
            _ => (None, None, "no output (the action is empty)".into()),
        };
        Evidence {
            workload,
            all,
            lost: self.lost,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_tracer::features::{Unsupported, NO_KPROBES};
    use Feature::{Control, Filter, Kprobe, PerEvent, Timing, Uretprobe};

    fn script(program: ReadProgram, kprobes: bool) -> Result<String> {
        super::program(&Read {
            program,
            libc: "/lib/x86_64-linux-gnu/libc.so.6".into(),
            read_offset: 1,
            kprobes,
        })
    }

    /// What bpftrace 0.17's printed maps (or lines) show of the workload's events.
    fn evidence(feature: Feature, text: &str, pid: u32, comm: &str) -> Evidence {
        Printed::parse(text).evidence(ReadProgram::Feature(feature), pid, comm)
    }

    #[test]
    fn published_one_liners_move_to_the_syscall_tracepoint_without_kprobes() {
        let f = ReadProgram::Feature;
        let unavailable = Unsupported::Unavailable(NO_KPROBES.into());
        for program in [
            f(Kprobe),
            f(Feature::Kretprobe),
            ReadProgram::Account(ReadHook::Kprobe),
        ] {
            let e = script(program, false).unwrap_err();
            assert_eq!(e.downcast_ref::<Unsupported>(), Some(&unavailable));
        }
        let timing = "tracepoint:syscalls:sys_enter_read { @s[tid] = nsecs; } tracepoint:syscalls:sys_exit_read /@s[tid]/ { @ = hist(nsecs - @s[tid]); delete(@s[tid]); }";
        let exit = ReadProgram::Account(ReadHook::Exit);
        for (program, kprobes, want) in [
            (f(Control), false, "BEGIN { 1 }"),
            (f(Filter), true, "kprobe:vfs_read /arg2 > 0/ { 1 }"),
            (
                f(Filter),
                false,
                "tracepoint:syscalls:sys_enter_read /args->count > 0/ { 1 }",
            ),
            (
                f(Uretprobe),
                false,
                "uretprobe:/lib/x86_64-linux-gnu/libc.so.6:read { 1 }",
            ),
            (f(Timing), false, timing),
            (
                f(PerEvent),
                true,
                r#"kprobe:vfs_read { printf("%d bytes\n", arg2); }"#,
            ),
            (
                exit,
                false,
                "tracepoint:syscalls:sys_exit_read { @[pid] = count(); }",
            ),
        ] {
            assert_eq!(script(program, kprobes).unwrap(), want);
        }
    }

    #[test]
    fn accounting_reads_the_workloads_pid() {
        let acct = ReadProgram::Account(ReadHook::Exit);
        let printed = Printed::parse("@[1]: 3\n@[4242]: 1000\n");
        assert_eq!(printed.evidence(acct, 4242, "w").workload, Some(1000));
        assert_eq!(printed.total(acct, Some(4242)), Some(1000));
        // An experiment's program: every process's events; none where it prints nothing.
        let single = ReadProgram::Feature(Feature::SingleKey);
        assert_eq!(printed.total(single, None), Some(1003));
        let control = ReadProgram::Feature(Control);
        assert_eq!(Printed::default().total(control, None), None);
    }

    #[test]
    fn keyed_counts_are_the_workloads() {
        let text = "Attaching 1 probe...\n\n\n@[1]: 3\n@[4242]: 1000\n@[77]: 9\n";
        let ev = evidence(Feature::SingleKey, text, 4242, "workload");
        assert_eq!(
            (ev.workload, ev.source.as_str()),
            (Some(1000), "@[4242]: 1000")
        );
        let text = "@[4242, workload]: 1000\n@[4242, other]: 2\n";
        let ev = evidence(Feature::TwoKeys, text, 4242, "workload");
        assert_eq!(ev.workload, Some(1000));
        let text = "@[workload]: 1000\n@[sshd]: 4\n";
        let ev = evidence(Feature::StringKey, text, 1, "workload");
        assert_eq!(ev.workload, Some(1000));
        let ev = evidence(Feature::Map, "@: 1004\n", 1, "w");
        let want = (Some(1004), "@: 1004 (every process)");
        assert_eq!((ev.all, ev.source.as_str()), want);
    }

    #[test]
    fn stacks_hist_buckets_and_lines_are_summed() {
        let stacks = "@[\n    ksys_read+5\n    do_syscall_64+80\n]: 1000\n@[\n    x+1\n]: 4\n";
        let ev = evidence(Feature::KernelStack, stacks, 1, "w");
        assert_eq!(ev.all, Some(1004));
        assert_eq!(ev.source, "1004 over the printed stacks (every process)");
        let hist = "@: \n[1]                 1000 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n[2, 4)                 3 |                                                    |\n[1K, 2K)               1 |                                                    |\n";
        assert_eq!(evidence(Feature::Histogram, hist, 1, "w").all, Some(1004));
        let lines = "1 bytes\n1 bytes\nLost 5 events\n";
        let ev = evidence(PerEvent, lines, 1, "w");
        assert_eq!((ev.all, ev.lost), (Some(2), 5));
    }
}
