//! strace backend: `strace -f -o /dev/null -p PID`, strace as Gebai and Dagenais ran it for
//! their Table V (strace's cost per system call), as a column of the events suite.
//!
//! strace stops the process at every system call's entry and exit (ptrace syscall-stops) and
//! formats each call in user space. Of Gregg's suite it expresses experiments 04 and 05: it
//! sees every `read` call's entry and exit, in one program, so both are the same run; it sees
//! no kernel or user-space function (02, 03, 06, 07) and runs nothing in the kernel per event
//! (08-18, and 01: attached, it stops every call). It traces one process (`-p`; `-f` its
//! threads and children), never every process: [`Tracer::attaches_to_process`]. Every system
//! call is traced, strace's default as Gebai ran it: `-e trace=read` would not be cheaper,
//! since without `--seccomp-bpf` (which `-p` cannot use) strace still stops at every call and
//! only skips printing the others.
//!
//! Accounting: a timed run writes to /dev/null and leaves nothing to count; strace loses no
//! call (the process waits in each stop until strace resumes it). The accounting run writes to
//! a file (`-o FILE`) and counts the workload's `read` calls in it (module `lines`): entries
//! for `sys_enter_read`, completed calls for `sys_exit_read`.
//!
//! Tracepoint scripts ([`Hook::Tracepoints`], the `app` experiment): strace cannot trace
//! system-wide; it follows `Target::pid`'s tree (`strace -f -p PID`: the caller holds the
//! process before its exec and releases it once attached, as the events suite does) and
//! refuses `Target::pid == None`. It expresses the `syscalls` category only: a script with
//! another is refused in `check` ("strace sees system calls only"). The script's calls are its
//! `-e trace=` list (each `?NAME`: the ~20 calls newer than strace 6.1, such as `futex_wait`
//! or `mseal`, are then not seen rather than an error; x86-64 names where the kernel's differ,
//! module `script`). strace writes one line per call to `-o FILE` below the run's directory,
//! counted and removed at finish (module `script`), in the script's terms: one event per call
//! strace saw enter for each `syscalls:sys_enter_NAME` of the script, one per call it saw
//! return for each `syscalls:sys_exit_NAME`, so `syscalls:*` counts two per completed call.
//! recorded = their sum, lost = 0 (strace loses no call: the process waits in each stop);
//! [`Attachment::finish_by_probe`] gives each tracepoint's count. `-c` is not used: its summary
//! counts a call when it returns, so `exit_group` and a call a process dies in are missing.
//!
//! strace is pinned to the target's consumer CPUs like every consumer (its placement matters:
//! each stop wakes it, here on another CPU than the workload's), dies with the thread that
//! attached it, carries the run's tag, and [`remove_stale`] stops one whose run is gone.

mod child;
mod lines;
pub mod script;

use anyhow::{bail, Context, Result};
use rtrace_tracer::features::{Evidence, Feature, ReadHook, ReadProgram, Unsupported};
use rtrace_tracer::{Attachment, EventStats, Hook, Target, Tracer, TracerKind};
use std::path::PathBuf;

/// Where Debian installs strace.
pub const STRACE: &str = "/usr/bin/strace";

/// The accounting run's output below the run's directory.
const OUTPUT_FILE: &str = "strace-output.txt";

/// Why strace does not run in the other experiments (usdt, sweep, rate, npt, count).
pub const SYSCALLS_ONLY: &str = "strace sees system calls only (ptrace): it runs in `events` (experiments 04 and 05), not on a USDT probe, uprobe or tracepoint";

/// What strace has for a buffer, as the report shows it beside the others.
pub const BUFFER: &str = "none: strace stops the process at every system call's entry and exit until it has formatted the call (ptrace), and writes its lines through stdio (to /dev/null in timed runs)";

/// Where strace runs, which the report shows beside the buffers: unlike a kernel buffer's
/// consumer, strace is on the workload's path at every call.
pub const PLACEMENT: &str = "strace runs on the harness CPUs like every consumer: each of the workload's system calls stops it twice and wakes strace on another CPU, which costs more than strace on the workload's own CPU would (the two would take turns there)";

/// The strace backend.
#[derive(Debug, Clone)]
pub struct StraceTracer {
    program: PathBuf,
}

impl Default for StraceTracer {
    fn default() -> Self {
        StraceTracer::new()
    }
}

impl StraceTracer {
    pub fn new() -> StraceTracer {
        StraceTracer {
            program: PathBuf::from(STRACE),
        }
    }

    /// Uses another strace executable than [`STRACE`].
    pub fn with_program(mut self, program: impl Into<PathBuf>) -> StraceTracer {
        self.program = program.into();
        self
    }
}

/// Whether strace can express `program`, else why not.
pub fn expresses(program: ReadProgram) -> Result<(), Unsupported> {
    let no = |why: &str| Err(Unsupported::Inexpressible(why.into()));
    match program {
        ReadProgram::Feature(Feature::TracepointEntry | Feature::TracepointReturn)
        | ReadProgram::Account(ReadHook::Enter | ReadHook::Exit) => Ok(()),
        ReadProgram::Feature(Feature::Control) => no("attached, strace stops the process at every system call: its control run would be experiments 04 and 05"),
        ReadProgram::Feature(
            Feature::Kprobe | Feature::Kretprobe | Feature::Uprobe | Feature::Uretprobe,
        )
        | ReadProgram::Account(_) => no("strace sees system calls only (ptrace syscall-stops), not kernel or user-space functions"),
        ReadProgram::Feature(_) => no("strace runs nothing in the kernel per event: it stops the process at each call's entry and exit and formats the call in user space (its -c, -k and -T are not filters, maps or stacks computed per event)"),
    }
}

impl Tracer for StraceTracer {
    fn kind(&self) -> TracerKind {
        TracerKind::Strace
    }

    fn check(&self, hook: &Hook) -> Result<()> {
        if let Hook::Tracepoints(s) = hook {
            script::Plan::new(s)?;
            return rtrace_tracer::tool::require("strace", "strace", &self.program);
        }
        let Hook::Read(read) = hook else {
            bail!("{SYSCALLS_ONLY}");
        };
        expresses(read.program)?;
        rtrace_tracer::tool::require("strace", "strace", &self.program)
    }

    fn program(&self, hook: &Hook) -> String {
        if let Hook::Tracepoints(s) = hook {
            return format!(
                "strace -f -o FILE -e trace=<the {} calls of {}> -p PID, lines counted",
                script::Plan::new(s).map_or(0, |p| p.calls.len()),
                s.label()
            );
        }
        let Hook::Read(read) = hook else {
            return hook.label();
        };
        match read.program {
            ReadProgram::Feature(_) => {
                "strace -f -o /dev/null -p PID (every system call; 04 and 05 are the same program)"
                    .into()
            }
            ReadProgram::Account(h) => {
                format!("strace -f -o FILE -p PID, {} counted", lines::what(h))
            }
        }
    }

    fn attaches_to_process(&self) -> bool {
        true
    }

    fn attach(&self, target: &Target) -> Result<Box<dyn Attachment>> {
        self.check(&target.hook)?;
        if let Hook::Tracepoints(s) = &target.hook {
            let plan = script::Plan::new(s)?;
            let pid = target.pid.with_context(|| {
                format!("strace cannot trace every process (script `{}`): it follows one process's tree (-f -p PID); use --tracer ftrace or perf system-wide", s.label())
            })?;
            let output = target.out_dir.join(OUTPUT_FILE);
            let filter = plan.filter();
            let strace = child::Strace::attach(
                &self.program,
                &output,
                Some(&filter),
                pid,
                &target.consumer_cpus,
            )?;
            return Ok(Box::new(StraceAttachment {
                strace,
                account: None,
                script: Some(plan),
                output,
            }));
        }
        let Hook::Read(read) = &target.hook else {
            bail!("{SYSCALLS_ONLY}");
        };
        let pid = target.pid.with_context(|| {
            format!("strace attaches to one process: {} needs the workload's pid (a bug: please report it)", read.program.site(read.kprobes))
        })?;
        let account = read.program.account(target.pid)?;
        let output = match account {
            Some(_) => target.out_dir.join(OUTPUT_FILE),
            None => PathBuf::from("/dev/null"),
        };
        let strace =
            child::Strace::attach(&self.program, &output, None, pid, &target.consumer_cpus)?;
        Ok(Box::new(StraceAttachment {
            strace,
            account,
            script: None,
            output,
        }))
    }
}

/// A running strace; killed if dropped without `finish` / `evidence`.
struct StraceAttachment {
    strace: child::Strace,
    /// The accounting program's hook, if it is one.
    account: Option<ReadHook>,
    /// A tracepoint script, counted from the output.
    script: Option<script::Plan>,
    output: PathBuf,
}

impl StraceAttachment {
    /// A script's run: waits for strace to follow its process out, then counts each
    /// tracepoint's events in what it wrote (and removes it).
    fn stop_script(self, plan: &script::Plan) -> Result<(EventStats, Vec<(String, u64)>)> {
        self.strace.stop()?;
        let probes = plan.count(&self.output)?;
        let _ = std::fs::remove_file(&self.output);
        let recorded = probes.iter().map(|(_, n)| n).sum();
        Ok((EventStats::new(recorded, 0), probes))
    }

    /// Waits for strace to follow its process out, then counts what it wrote.
    fn stop(self) -> Result<Option<(ReadHook, u64)>> {
        self.strace.stop()?;
        let Some(h) = self.account else {
            return Ok(None);
        };
        let n = lines::count(&self.output, h)?;
        let _ = std::fs::remove_file(&self.output);
        Ok(Some((h, n)))
    }
}

impl Attachment for StraceAttachment {
    fn finish(self: Box<Self>) -> Result<EventStats> {
        if self.script.is_some() {
            return self.finish_by_probe().map(|(st, _)| st);
        }
        let recorded = self.stop()?.map_or(0, |(_, n)| n);
        Ok(EventStats::new(recorded, 0))
    }

    fn finish_by_probe(mut self: Box<Self>) -> Result<(EventStats, Vec<(String, u64)>)> {
        match self.script.take() {
            Some(plan) => self.stop_script(&plan),
            None => Ok((self.finish()?, Vec::new())),
        }
    }

    fn evidence(self: Box<Self>, _pid: u32, _comm: &str) -> Result<Evidence> {
        Ok(match self.stop()? {
            Some((h, n)) => Evidence::of_the_workload(
                EventStats::new(n, 0),
                &format!("strace's {} ({})", lines::what(h), h.label()),
            ),
            None => Evidence {
                source: "strace -o /dev/null: nothing to count (strace loses no call: the process waits in each stop; the accounting runs count its lines)".into(),
                ..Evidence::default()
            },
        })
    }
}

/// Stops the strace processes of runs that are gone (they carry the run's tag in
/// `RTRACE_BENCH_RUN`, see [`rtrace_tracer::owner`]): a strace that outlived its run would keep
/// stopping its process at every system call. Returns what was stopped.
pub fn remove_stale() -> Result<Vec<String>> {
    // SIGTERM: strace detaches, and its process runs on untraced.
    Ok(rtrace_tracer::owner::stop_dead_runs_processes(Some(
        "strace",
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_tracer::features::Read;

    fn read(program: ReadProgram) -> Hook {
        Hook::Read(Read {
            program,
            libc: "/lib/libc.so.6".into(),
            read_offset: 0x1234,
            kprobes: false,
        })
    }

    #[test]
    fn strace_expresses_the_syscall_experiments_only() {
        let runs: Vec<u8> = Feature::ALL
            .into_iter()
            .filter(|&f| expresses(ReadProgram::Feature(f)).is_ok())
            .map(Feature::number)
            .collect();
        assert_eq!(runs, [4, 5]);
        for f in Feature::ALL {
            if let Err(e) = expresses(ReadProgram::Feature(f)) {
                assert!(matches!(e, Unsupported::Inexpressible(_)), "{f}: {e}");
            }
        }
        assert!(expresses(ReadProgram::Account(ReadHook::Exit)).is_ok());
        assert!(expresses(ReadProgram::Account(ReadHook::Uprobe)).is_err());
    }

    #[test]
    fn other_hooks_and_a_missing_strace_are_one_line_naming_the_fix() {
        let t = StraceTracer::new().with_program("/nonexistent/strace");
        let usdt = Hook::KernelTracepoint {
            category: "syscalls".into(),
            name: "sys_exit_clock_nanosleep".into(),
        };
        let e = format!("{:#}", t.check(&usdt).unwrap_err());
        assert!(e.contains("runs in `events`"), "{e}");
        let e = t
            .check(&read(ReadProgram::Feature(Feature::TracepointEntry)))
            .unwrap_err();
        let why = e.downcast_ref::<Unsupported>().expect("unavailable");
        assert!(why
            .to_string()
            .starts_with("strace not found: apt-get install strace"));
        // What strace cannot express is said whether or not it is installed.
        let e = t
            .check(&read(ReadProgram::Feature(Feature::Map)))
            .unwrap_err();
        assert!(matches!(
            e.downcast_ref::<Unsupported>(),
            Some(Unsupported::Inexpressible(_))
        ));
    }

    #[test]
    fn the_program_is_gebais_command_line() {
        let t = StraceTracer::new();
        let p = t.program(&read(ReadProgram::Feature(Feature::TracepointReturn)));
        assert!(p.starts_with("strace -f -o /dev/null -p PID"), "{p}");
        let a = t.program(&read(ReadProgram::Account(ReadHook::Enter)));
        assert!(a.contains("-o FILE"), "{a}");
    }
}
