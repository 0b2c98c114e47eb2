//! The `events` suite with ftrace ([`Hook::Read`]): what Gregg's experiments become in tracefs.
//! The syscall tracepoints (04, 05) and the filter (08, an event filter on `count`) are enabled
//! in a private instance in overwrite mode with the target's `buffer_size_kb`, on every process
//! as the one-liners are; the instance's per-CPU stats count every event written or
//! overwritten. The aggregations (09-17) are hist triggers, which need CONFIG_HIST_TRIGGERS.
//! Uprobes (06, 07) and the accounting programs (the syscall's tracepoint or libc's `read`,
//! kept to the workload's threads) go through the ordinary backend.

use anyhow::{bail, Context, Result};
use rtrace_tracer::features::{Evidence, Feature, ReadHook, ReadProgram};
use rtrace_tracer::{Attachment, EventStats, Hook};
use std::path::Path;

use crate::instance::Instance;
use crate::stats::account;
use crate::tracefs::Tracefs;

/// What ftrace does for a program here. Everything but the uprobes hooks the `read` syscall's
/// tracepoints (ftrace's kprobe events are not driven by this suite).
#[derive(Debug, Clone)]
pub enum FtracePlan {
    /// `syscalls:EVENT` (with a filter, or with a hist trigger instead of recording) in an
    /// instance; an empty event enables nothing (the control experiment).
    Event {
        event: &'static str,
        filter: Option<&'static str>,
        trigger: Option<&'static str>,
    },
    /// The ordinary backend on this hook: a uprobe event on libc's `read` (06, 07), or an
    /// accounting program's hook kept to the workload's threads.
    Ordinary(Hook),
    /// This machine lacks the mechanism.
    Unavailable(String),
    /// ftrace cannot express the experiment.
    Inexpressible(String),
}

/// Why ftrace does not run a program on `vfs_read`.
const KPROBES_NOT_DRIVEN: &str = "ftrace kprobe events are not driven by this suite";

/// The plan of `program` (see [`Hook::Read`] for the other arguments).
pub fn plan(
    program: ReadProgram,
    kprobes: bool,
    libc: &Path,
    read_offset: u64,
    fs: &Tracefs,
) -> FtracePlan {
    let libc_read = |ret| {
        FtracePlan::Ordinary(Hook::Uprobe {
            binary: libc.to_owned(),
            function: "read".into(),
            offset: read_offset,
            ret,
        })
    };
    let syscall = |name: &str| {
        FtracePlan::Ordinary(Hook::KernelTracepoint {
            category: "syscalls".into(),
            name: name.into(),
        })
    };
    let feature = match program {
        ReadProgram::Account(h) => {
            return match h {
                ReadHook::Enter => syscall("sys_enter_read"),
                ReadHook::Exit => syscall("sys_exit_read"),
                ReadHook::Uprobe => libc_read(false),
                ReadHook::Uretprobe => libc_read(true),
                ReadHook::Kprobe | ReadHook::Kretprobe => {
                    FtracePlan::Unavailable(KPROBES_NOT_DRIVEN.into())
                }
            }
        }
        ReadProgram::Feature(f) => f,
    };
    if kprobes && !feature.needs_kprobes() && feature.number() >= 8 {
        return FtracePlan::Unavailable(format!(
            "{KPROBES_NOT_DRIVEN}: its programs hook the read syscall's tracepoints"
        ));
    }
    let hist = fs.path("events/syscalls/sys_enter_read/hist").exists();
    let event = |event, filter| FtracePlan::Event {
        event,
        filter,
        trigger: None,
    };
    let trigger = |t| {
        if hist {
            FtracePlan::Event {
                event: "sys_enter_read",
                filter: None,
                trigger: Some(t),
            }
        } else {
            FtracePlan::Unavailable(
                "this kernel has no hist triggers (CONFIG_HIST_TRIGGERS is off: no events/*/hist file); the QEMU guests' Debian kernels have them".into(),
            )
        }
    };
    let no_comm = || {
        FtracePlan::Inexpressible(
            "hist triggers key by pid; `.execname` only prints the comm beside it".into(),
        )
    };
    match feature {
        Feature::Control => event("", None),
        Feature::Kprobe | Feature::Kretprobe if !fs.path("kprobe_events").exists() => {
            FtracePlan::Unavailable(
                "kprobes are unavailable on this kernel (no kprobe_events in tracefs)".into(),
            )
        }
        Feature::Kprobe | Feature::Kretprobe => FtracePlan::Unavailable(format!(
            "{KPROBES_NOT_DRIVEN} (eBPF runs 02 and 03 here)"
        )),
        Feature::TracepointEntry => event("sys_enter_read", None),
        Feature::TracepointReturn => event("sys_exit_read", None),
        Feature::Uprobe => libc_read(false),
        Feature::Uretprobe => libc_read(true),
        Feature::Filter => event("sys_enter_read", Some("count > 0")),
        Feature::Map => trigger("hist:keys=common_type"),
        Feature::SingleKey => trigger("hist:keys=common_pid"),
        Feature::StringKey | Feature::TwoKeys => no_comm(),
        Feature::KernelStack => trigger("hist:keys=stacktrace"),
        Feature::Histogram => trigger("hist:keys=count.log2"),
        Feature::UserStack | Feature::Multiple => FtracePlan::Inexpressible(
            "hist triggers key kernel stacks only (no user stack)".into(),
        ),
        Feature::Timing => FtracePlan::Unavailable(
            "ftrace times enter -> exit with a synthetic event (global tracefs state), which this suite does not create".into(),
        ),
        Feature::PerEvent => FtracePlan::Inexpressible(
            "ftrace has no printf: its per-event output is the ring-buffer record of 04".into(),
        ),
    }
}

/// The plan as the report's "program" column shows it.
pub fn describe(plan: &FtracePlan, program: ReadProgram) -> String {
    let kept = match program {
        ReadProgram::Account(_) => ", kept to the workload's threads",
        ReadProgram::Feature(_) => "",
    };
    match plan {
        FtracePlan::Event { event: "", .. } => "an instance with nothing enabled".to_owned(),
        FtracePlan::Event {
            event,
            trigger: Some(t),
            ..
        } => format!("syscalls:{event} trigger '{t}'"),
        FtracePlan::Event {
            event,
            filter: Some(f),
            ..
        } => format!("syscalls:{event} with filter '{f}'"),
        FtracePlan::Event { event, .. } => format!("syscalls:{event} enabled in an instance"),
        FtracePlan::Ordinary(Hook::Uprobe { ret, .. }) => format!(
            "{} event on libc read{kept}",
            if *ret { "r:" } else { "p:" }
        ),
        FtracePlan::Ordinary(h) => format!("{} enabled in an instance{kept}", h.label()),
        FtracePlan::Unavailable(why) | FtracePlan::Inexpressible(why) => why.clone(),
    }
}

/// Totals of a hist file: every hit (`Totals: Hits`, the dropped ones included) and those
/// dropped (`Dropped`: the table was full).
fn hist_totals(text: &str) -> (u64, u64) {
    let total = |name: &str| {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(name))
            .filter_map(|v| v.trim().parse::<u64>().ok())
            .next()
            .unwrap_or(0)
    };
    (total("Hits:"), total("Dropped:"))
}

/// What a hist file shows: every hit, those dropped, and the hit count of `pid` where the key is
/// `common_pid`.
pub fn hist_evidence(text: &str, pid: u32) -> Evidence {
    let (hits, dropped) = hist_totals(text);
    let workload = text
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("{ common_pid:")?;
            let (key, count) = rest.split_once('}')?;
            let n = count
                .trim()
                .strip_prefix("hitcount:")?
                .trim()
                .parse::<u64>()
                .ok()?;
            (key.trim().parse::<u32>().ok()? == pid).then_some(n)
        })
        .next();
    let keyed = text.contains("hist:keys=common_pid:") || text.contains("hist:keys=common_pid ");
    Evidence {
        workload: if keyed {
            Some(workload.unwrap_or(0))
        } else {
            None
        },
        all: Some(hits),
        lost: dropped,
        source: format!(
            "hist: {hits} hits, {dropped} dropped{}",
            workload.map_or(String::new(), |n| format!(", {n} at the workload's pid"))
        ),
    }
}

/// An event of `syscalls` enabled (or a hist trigger on it) in a private instance (removed on
/// drop).
pub struct FeatureEvent {
    instance: Instance,
    event: String,
    trigger: Option<String>,
}

/// What a [`FeatureEvent`] counted.
enum Counted {
    /// Nothing enabled (the control experiment).
    Nothing,
    /// The instance's ring buffer: every event written or overwritten.
    Buffer(EventStats),
    /// The hist file's text.
    Hist(String),
}

impl FeatureEvent {
    /// Sets up `syscalls:event` in a new instance named after the run, with `buffer_size_kb`
    /// per CPU (the kernel's default if `None`): a filter and enabled (recording), or a hist
    /// trigger (counting in the kernel). An empty `event` (the control experiment) sets up
    /// nothing more.
    pub fn start(
        event: &str,
        filter: Option<&str>,
        trigger: Option<&str>,
        buffer_size_kb: Option<u64>,
    ) -> Result<FeatureEvent> {
        let fs = Tracefs::mount_if_needed()?;
        let tag = rtrace_tracer::run_tag()?;
        let instance = Instance::create(&fs, &tag)?;
        for (file, value) in crate::instance_setup(buffer_size_kb, true) {
            instance.write(file, &value)?;
        }
        let f = FeatureEvent {
            instance,
            event: event.to_owned(),
            trigger: trigger.map(str::to_owned),
        };
        if event.is_empty() {
            return Ok(f);
        }
        if let Some(filter) = filter {
            f.instance
                .write(&format!("events/syscalls/{event}/filter"), filter)?;
        }
        match trigger {
            Some(t) => f
                .instance
                .write(&format!("events/syscalls/{event}/trigger"), t)?,
            None => f.instance.set_enabled("syscalls", event, true)?,
        }
        Ok(f)
    }

    /// Stops, counts (the buffer's events written, or the hist's text), removes the instance.
    fn stop(mut self) -> Result<Counted> {
        self.instance.write("tracing_on", "0")?;
        let counted = if self.event.is_empty() {
            Counted::Nothing
        } else if let Some(t) = self.trigger.take() {
            let file = format!("events/syscalls/{}/", self.event);
            let text = std::fs::read_to_string(self.instance.path(&format!("{file}hist")))
                .context("cannot read the hist trigger's table")?;
            self.instance
                .write(&format!("{file}trigger"), &format!("!{t}"))?;
            Counted::Hist(text)
        } else {
            Counted::Buffer(account(&self.instance.stats()?))
        };
        self.instance.remove()?;
        Ok(counted)
    }
}

impl Attachment for FeatureEvent {
    /// The events written to the buffer (kept + overwritten), or the hist's hits (kept +
    /// dropped); fails for the control experiment, which enables nothing to count.
    fn finish(self: Box<Self>) -> Result<EventStats> {
        match self.stop()? {
            Counted::Nothing => bail!("nothing is enabled for the control experiment: it counts nothing (read its evidence instead)"),
            Counted::Buffer(st) => Ok(st),
            Counted::Hist(text) => {
                let (hits, dropped) = hist_totals(&text);
                Ok(EventStats {
                    recorded: hits.saturating_sub(dropped),
                    lost: dropped,
                    overwritten: 0,
                })
            }
        }
    }

    fn evidence(self: Box<Self>, pid: u32, _comm: &str) -> Result<Evidence> {
        Ok(match self.stop()? {
            Counted::Nothing => Evidence {
                source: "nothing enabled (control)".into(),
                ..Evidence::default()
            },
            Counted::Buffer(stats) => {
                let all = stats.recorded + stats.lost;
                Evidence {
                    workload: None,
                    all: Some(all),
                    lost: 0,
                    source: format!(
                        "{all} events written to the instance ({} kept, {} overwritten; every process)",
                        stats.recorded, stats.lost
                    ),
                }
            }
            Counted::Hist(text) => hist_evidence(&text, pid),
        })
    }
}

impl Drop for FeatureEvent {
    fn drop(&mut self) {
        // A hist trigger keeps the instance busy: remove it before the instance goes.
        if let Some(t) = &self.trigger {
            let _ = self.instance.write(
                &format!("events/syscalls/{}/trigger", self.event),
                &format!("!{t}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HIST: &str = "# event histogram\n#\n# trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n{ common_pid:        950 } hitcount:          3\n{ common_pid:       4242 } hitcount:      20000\n\nTotals:\n    Hits: 20003\n    Entries: 2\n    Dropped: 0\n";

    #[test]
    fn hist_files_give_hits_and_the_workloads_key() {
        let e = hist_evidence(HIST, 4242);
        assert_eq!((e.workload, e.all, e.lost), (Some(20000), Some(20003), 0));
        let e = hist_evidence(HIST, 7);
        assert_eq!(e.workload, Some(0));
        let other = HIST.replace("keys=common_pid:", "keys=count.log2:");
        assert_eq!(hist_evidence(&other, 4242).workload, None);
        assert_eq!(
            hist_totals(&HIST.replace("Dropped: 0", "Dropped: 3")),
            (20003, 3)
        );
    }

    /// A tracefs-like directory with or without hist files and kprobe_events.
    fn fake_fs(hist: bool, kprobes: bool) -> (tempfile::TempDir, Tracefs) {
        let dir = tempfile::tempdir().unwrap();
        let ev = dir.path().join("events/syscalls/sys_enter_read");
        std::fs::create_dir_all(&ev).unwrap();
        if hist {
            std::fs::write(ev.join("hist"), "").unwrap();
        }
        if kprobes {
            std::fs::write(dir.path().join("kprobe_events"), "").unwrap();
        }
        let fs = Tracefs::at(dir.path());
        (dir, fs)
    }

    #[test]
    fn programs_become_events_hist_triggers_or_the_ordinary_backend() {
        let libc = Path::new("/lib/libc.so.6");
        let (_d, fs) = fake_fs(false, false);
        let plan = |p| plan(p, false, libc, 0x1234, &fs);
        let filter = plan(ReadProgram::Feature(Feature::Filter));
        assert_eq!(
            describe(&filter, ReadProgram::Feature(Feature::Filter)),
            "syscalls:sys_enter_read with filter 'count > 0'"
        );
        assert!(matches!(
            plan(ReadProgram::Feature(Feature::SingleKey)),
            FtracePlan::Unavailable(w) if w.contains("CONFIG_HIST_TRIGGERS")
        ));
        assert!(matches!(
            plan(ReadProgram::Feature(Feature::PerEvent)),
            FtracePlan::Inexpressible(w) if w.contains("printf")
        ));
        assert!(matches!(
            plan(ReadProgram::Feature(Feature::Kprobe)),
            FtracePlan::Unavailable(w) if w.contains("no kprobe_events")
        ));
        let up = plan(ReadProgram::Feature(Feature::Uretprobe));
        assert!(matches!(
            &up,
            FtracePlan::Ordinary(Hook::Uprobe {
                ret: true,
                offset: 0x1234,
                ..
            })
        ));
        assert_eq!(
            describe(&up, ReadProgram::Feature(Feature::Uretprobe)),
            "r: event on libc read"
        );
        let acct = ReadProgram::Account(ReadHook::Exit);
        assert_eq!(
            describe(&plan(acct), acct),
            "syscalls:sys_exit_read enabled in an instance, kept to the workload's threads"
        );
        assert!(matches!(
            plan(ReadProgram::Account(ReadHook::Kprobe)),
            FtracePlan::Unavailable(_)
        ));
        let (_d, fs) = fake_fs(true, true);
        let map = ReadProgram::Feature(Feature::Map);
        assert_eq!(
            describe(&super::plan(map, false, libc, 1, &fs), map),
            "syscalls:sys_enter_read trigger 'hist:keys=common_type'"
        );
        assert!(matches!(
            super::plan(ReadProgram::Feature(Feature::Kprobe), false, libc, 1, &fs),
            FtracePlan::Unavailable(w) if w.contains("not driven")
        ));
        // Asked to hook vfs_read: not driven.
        assert!(matches!(
            super::plan(map, true, libc, 1, &fs),
            FtracePlan::Unavailable(w) if w.contains("not driven")
        ));
    }
}
