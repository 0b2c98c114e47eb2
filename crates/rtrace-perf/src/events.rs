//! The `events` suite with `perf record` ([`Hook::Read`](rtrace_tracer::Hook)): what Gregg's
//! experiments become as perf command lines. perf writes every event it records as a sample to
//! its ring and `perf.data`; it keeps no per-event state in the kernel, so the experiments that
//! count, key or time events in kernel maps (09-12, 15-17) are not its to run.
//!
//! - 04, 05: `-e syscalls:sys_enter_read` / `sys_exit_read`, every process (`-a`), as the
//!   one-liners trace.
//! - 06, 07: libc's `read` entry or return, the ordinary uprobe event (ftrace's definition).
//! - 08: 04 with the kernel's event filter `--filter 'count > 0'` (the filter ftrace's 08 sets).
//! - 13, 14: 04 with the stack walked and written with every sample (`-g` with
//!   `--kernel-callchains` or `--user-callchains`, frame pointers): perf aggregates stacks after
//!   the run (`perf report`), not per event in a map, so each event pays the walk and the
//!   bigger sample.
//! - The accounting programs: the ordinary backend on the hook, kept to the workload (`-p`).

use rtrace_tracer::features::{Feature, Read, ReadHook, ReadProgram, Unsupported};
use rtrace_tracer::Hook;

/// The stack perf records with each sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    Kernel,
    User,
}

/// What perf runs for a program: `perf record` on `hook`, with a filter or a stack per event.
#[derive(Debug, Clone)]
pub struct PerfProgram {
    pub hook: Hook,
    pub filter: Option<&'static str>,
    pub stack: Option<Stack>,
}

/// The filter of experiment 08, ftrace's.
pub const FILTER: &str = "count > 0";

/// The program perf runs for `read`, or why it does not run it.
pub fn plan(read: &Read) -> Result<PerfProgram, Unsupported> {
    use Unsupported::{Inexpressible, Unavailable};
    read.check_kprobes()?;
    let not_driven =
        || Unavailable("perf's kprobe events (perf probe -k) are not driven by this suite".into());
    let ordinary = |h: ReadHook| read.ordinary(h).ok_or_else(not_driven);
    let on = |h: ReadHook, filter, stack| {
        Ok(PerfProgram {
            hook: ordinary(h)?,
            filter,
            stack,
        })
    };
    let feature = match read.program {
        ReadProgram::Account(h) => return on(h, None, None),
        ReadProgram::Feature(f) => f,
    };
    // Experiments 8-18 hook the read syscall's tracepoints here (no kprobes driven).
    let entry = ReadHook::Enter;
    match feature {
        Feature::Control => Err(Inexpressible(
            "perf record runs only with an event to record: its lightest run is 04".into(),
        )),
        Feature::Kprobe | Feature::Kretprobe => Err(not_driven()),
        Feature::TracepointEntry => on(ReadHook::Enter, None, None),
        Feature::TracepointReturn => on(ReadHook::Exit, None, None),
        Feature::Uprobe => on(ReadHook::Uprobe, None, None),
        Feature::Uretprobe => on(ReadHook::Uretprobe, None, None),
        Feature::Filter => on(entry, Some(FILTER), None),
        Feature::KernelStack => on(entry, None, Some(Stack::Kernel)),
        Feature::UserStack => on(entry, None, Some(Stack::User)),
        Feature::Map
        | Feature::SingleKey
        | Feature::StringKey
        | Feature::TwoKeys
        | Feature::Histogram
        | Feature::Multiple => Err(Inexpressible(
            "perf record keeps no per-event state in the kernel: it writes every event, and counts, keys and histograms are made from the samples after the run (perf report)".into(),
        )),
        Feature::Timing => Err(Inexpressible(
            "perf record writes entries and exits; pairing them into times is perf script's work after the run".into(),
        )),
        Feature::PerEvent => Err(Inexpressible(
            "perf has no printf: its per-event output is the sample of 04".into(),
        )),
    }
}

/// The program as the report's "program" column shows it (or why there is none).
pub fn describe(read: &Read) -> String {
    let p = match plan(read) {
        Ok(p) => p,
        Err(why) => return why.to_string(),
    };
    let mut text = match &p.hook {
        Hook::Uprobe { ret, .. } => format!(
            "perf record -e {} on libc read (ftrace's uprobe definition)",
            if *ret { "r:" } else { "p:" }
        ),
        h => format!("perf record -e {}", h.label()),
    };
    if let Some(f) = p.filter {
        text.push_str(&format!(" --filter '{f}'"));
    }
    for arg in crate::stack_args(p.stack) {
        text.push_str(&format!(" {}", arg.to_string_lossy()));
    }
    match read.program {
        ReadProgram::Account(_) => text.push_str(" -p of the workload"),
        ReadProgram::Feature(_) => text.push_str(" -a"),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(program: ReadProgram) -> Read {
        Read {
            program,
            libc: "/lib/x86_64-linux-gnu/libc.so.6".into(),
            read_offset: 0x1234,
            kprobes: false,
        }
    }

    #[test]
    fn perf_runs_what_it_records_per_event() {
        let runs: Vec<u8> = Feature::ALL
            .into_iter()
            .filter(|&f| plan(&read(ReadProgram::Feature(f))).is_ok())
            .map(Feature::number)
            .collect();
        assert_eq!(runs, [4, 5, 6, 7, 8, 13, 14]);
        let f = |f| describe(&read(ReadProgram::Feature(f)));
        assert_eq!(
            f(Feature::Filter),
            "perf record -e syscalls:sys_enter_read --filter 'count > 0' -a"
        );
        assert!(f(Feature::UserStack).ends_with("-g --user-callchains -a"));
        assert!(f(Feature::Uretprobe).starts_with("perf record -e r: on libc read"));
        assert!(f(Feature::Map).contains("no per-event state"));
        let account = describe(&read(ReadProgram::Account(ReadHook::Exit)));
        assert_eq!(
            account,
            "perf record -e syscalls:sys_exit_read -p of the workload"
        );
        assert!(matches!(
            plan(&read(ReadProgram::Account(ReadHook::Kprobe))),
            Err(Unsupported::Unavailable(_))
        ));
        assert!(matches!(
            plan(&read(ReadProgram::Feature(Feature::Kprobe))),
            Err(Unsupported::Unavailable(_))
        ));
    }
}
