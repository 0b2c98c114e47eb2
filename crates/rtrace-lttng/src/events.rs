//! The `events` suite with LTTng's kernel tracer ([`Hook::Read`]): experiments 04 and 05 and
//! the accounting of the `read` syscall's tracepoints are an ordinary kernel session on
//! `--syscall read` (entry counted, or exit only), of every process or tracked to the workload;
//! why the other experiments do not run.

use rtrace_tracer::features::{Feature, ReadHook, ReadProgram, Unsupported};
use rtrace_tracer::Hook;

/// The kernel tracepoint an ordinary session records for `program`, or why LTTng does not
/// run it.
pub fn plan(program: ReadProgram) -> Result<Hook, Unsupported> {
    let syscall = |exit: bool| Hook::KernelTracepoint {
        category: "syscalls".into(),
        name: if exit {
            "sys_exit_read"
        } else {
            "sys_enter_read"
        }
        .into(),
    };
    let not_driven = |what: &str| {
        Unsupported::Unavailable(format!(
            "LTTng can ({what}), but this suite does not drive it yet"
        ))
    };
    match program {
        ReadProgram::Feature(Feature::TracepointEntry) | ReadProgram::Account(ReadHook::Enter) => {
            Ok(syscall(false))
        }
        ReadProgram::Feature(Feature::TracepointReturn) | ReadProgram::Account(ReadHook::Exit) => {
            Ok(syscall(true))
        }
        ReadProgram::Feature(Feature::Control) => Err(not_driven("a session with nothing enabled")),
        ReadProgram::Feature(Feature::Kprobe | Feature::Kretprobe)
        | ReadProgram::Account(ReadHook::Kprobe | ReadHook::Kretprobe) => {
            Err(not_driven("--probe / --function"))
        }
        ReadProgram::Feature(Feature::Uprobe | Feature::Uretprobe)
        | ReadProgram::Account(ReadHook::Uprobe | ReadHook::Uretprobe) => {
            Err(not_driven("--userspace-probe"))
        }
        ReadProgram::Feature(Feature::Filter) => Err(not_driven("--filter 'count > 0'")),
        ReadProgram::Feature(Feature::PerEvent) => Err(Unsupported::Inexpressible(
            "LTTng has no printf: its per-event output is the record of 04".into(),
        )),
        ReadProgram::Feature(_) => Err(Unsupported::Inexpressible(
            "LTTng records events; it has no in-kernel maps, stacks or histograms".into(),
        )),
    }
}

/// The program as the report's "program" column shows it.
pub fn describe(program: ReadProgram) -> String {
    let what = match plan(program) {
        Err(why) => return why.to_string(),
        Ok(hook) if hook.label().ends_with("sys_exit_read") => {
            "lttng enable-event -k --syscall read, exit only (filter on ret)"
        }
        Ok(_) => "lttng enable-event -k --syscall read (entry and exit recorded, entries counted)",
    };
    match program {
        ReadProgram::Account(_) => format!("{what}, lttng track --pid of the workload"),
        ReadProgram::Feature(_) => what.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_syscall_tracepoints_run() {
        let label = |p| plan(p).map(|h| h.label());
        assert_eq!(
            label(ReadProgram::Feature(Feature::TracepointReturn)).unwrap(),
            "syscalls:sys_exit_read"
        );
        assert_eq!(
            label(ReadProgram::Account(ReadHook::Enter)).unwrap(),
            "syscalls:sys_enter_read"
        );
        assert!(matches!(
            plan(ReadProgram::Feature(Feature::Filter)),
            Err(Unsupported::Unavailable(w)) if w.contains("does not drive it yet")
        ));
        assert!(matches!(
            plan(ReadProgram::Feature(Feature::PerEvent)),
            Err(Unsupported::Inexpressible(w)) if w.contains("no printf")
        ));
        assert!(matches!(
            plan(ReadProgram::Feature(Feature::Histogram)),
            Err(Unsupported::Inexpressible(_))
        ));
        assert_eq!(
            describe(ReadProgram::Feature(Feature::TracepointEntry)),
            "lttng enable-event -k --syscall read (entry and exit recorded, entries counted)"
        );
        assert!(describe(ReadProgram::Account(ReadHook::Exit)).contains("exit only"));
    }
}
