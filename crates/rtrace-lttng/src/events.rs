//! The `events` suite with LTTng's kernel tracer ([`Hook::Read`]): experiments 04 and 05 and
//! the accounting of the `read` syscall's tracepoints are an ordinary kernel session on
//! `--syscall read` (entry counted, or exit only), of every process or tracked to the workload;
//! why the other experiments do not run.

use rtrace_tracer::features::{Feature, ReadHook, ReadProgram, Unsupported};
use rtrace_tracer::Hook;

/// The kernel tracepoint an ordinary session records for `program`, or why LTTng does not
/// run it.
pub fn plan(program: ReadProgram) -> Result<Hook, Unsupported> {
    use {Feature as F, ReadHook as H, ReadProgram as P};
    let not_driven = |what: &str| {
        Unsupported::Unavailable(format!(
            "LTTng can ({what}), but this suite does not drive it yet"
        ))
    };
    let exit = match program {
        P::Feature(F::TracepointEntry) | P::Account(H::Enter) => false,
        P::Feature(F::TracepointReturn) | P::Account(H::Exit) => true,
        P::Feature(F::Control) => return Err(not_driven("a session with nothing enabled")),
        P::Feature(F::Kprobe | F::Kretprobe) | P::Account(H::Kprobe | H::Kretprobe) => {
            return Err(not_driven("--probe / --function"))
        }
        P::Feature(F::Uprobe | F::Uretprobe) | P::Account(H::Uprobe | H::Uretprobe) => {
            return Err(not_driven("--userspace-probe"))
        }
        P::Feature(F::Filter) => return Err(not_driven("--filter 'count > 0'")),
        P::Feature(F::PerEvent) => {
            return Err(Unsupported::Inexpressible(
                "LTTng has no printf: its per-event output is the record of 04".into(),
            ))
        }
        P::Feature(_) => {
            return Err(Unsupported::Inexpressible(
                "LTTng records events; it has no in-kernel maps, stacks or histograms".into(),
            ))
        }
    };
    Ok(Hook::KernelTracepoint {
        category: "syscalls".into(),
        name: format!("sys_{}_read", if exit { "exit" } else { "enter" }),
    })
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
        let label = |p| plan(p).unwrap().label();
        let exit = label(ReadProgram::Feature(Feature::TracepointReturn));
        assert_eq!(exit, "syscalls:sys_exit_read");
        let enter = label(ReadProgram::Account(ReadHook::Enter));
        assert_eq!(enter, "syscalls:sys_enter_read");
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
        let entry = describe(ReadProgram::Feature(Feature::TracepointEntry));
        let want =
            "lttng enable-event -k --syscall read (entry and exit recorded, entries counted)";
        assert_eq!(entry, want);
        assert!(describe(ReadProgram::Account(ReadHook::Exit)).contains("exit only"));
    }
}
