//! The `events` suite with ftrace ([`Hook::Read`]): what Gregg's experiments become in tracefs.
//! The syscall tracepoints (04, 05) and the filter (08, an event filter on `count`) are enabled
//! in a private instance in overwrite mode with the target's `buffer_size_kb`, on every process
//! as the one-liners are; the instance's per-CPU stats count every event written or
//! overwritten. The aggregations (09-17) are hist triggers, which need CONFIG_HIST_TRIGGERS.
//! Uprobes (06, 07) and the accounting programs (the syscall's tracepoint or libc's `read`,
//! kept to the workload's threads) go through the ordinary backend.

use anyhow::{bail, Context, Result};
use rtrace_tracer::features::{Evidence, Feature, Read, ReadHook, ReadProgram, Unsupported};
use rtrace_tracer::{Attachment, EventStats, Hook};

use crate::instance::Instance;
use crate::stats::account;
use crate::tracefs::Tracefs;

/// What ftrace does for a program here (else why not). Everything but the uprobes hooks the
/// `read` syscall's tracepoints (ftrace's kprobe events are not driven by this suite).
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
}

/// Why ftrace does not run a program on `vfs_read`.
const KPROBES_NOT_DRIVEN: &str = "ftrace kprobe events are not driven by this suite";

/// The plan of `read`'s program, or why ftrace does not run it here.
pub fn plan(read: &Read, fs: &Tracefs) -> Result<FtracePlan, Unsupported> {
    use Unsupported::{Inexpressible, Unavailable};
    let ordinary = |h| {
        let hook = read
            .ordinary(h)
            .ok_or(Unavailable(KPROBES_NOT_DRIVEN.into()))?;
        Ok(FtracePlan::Ordinary(hook))
    };
    let feature = match read.program {
        ReadProgram::Account(h) => return ordinary(h),
        ReadProgram::Feature(f) => f,
    };
    if read.kprobes && !read.program.needs_kprobes() && feature.number() >= 8 {
        return Err(Unavailable(format!(
            "{KPROBES_NOT_DRIVEN}: its programs hook the read syscall's tracepoints"
        )));
    }
    let event = |event, filter| {
        Ok(FtracePlan::Event {
            event,
            filter,
            trigger: None,
        })
    };
    let hist = fs.path("events/syscalls/sys_enter_read/hist").exists();
    let trigger = |t| {
        if !hist {
            return Err(Unavailable(
                "this kernel has no hist triggers (CONFIG_HIST_TRIGGERS is off: no events/*/hist file); the QEMU guests' Debian kernels have them".into(),
            ));
        }
        Ok(FtracePlan::Event {
            event: "sys_enter_read",
            filter: None,
            trigger: Some(t),
        })
    };
    match feature {
        Feature::Control => event("", None),
        Feature::Kprobe | Feature::Kretprobe if !fs.path("kprobe_events").exists() => Err(
            Unavailable("kprobes are unavailable on this kernel (no kprobe_events in tracefs)".into()),
        ),
        Feature::Kprobe | Feature::Kretprobe => Err(Unavailable(format!(
            "{KPROBES_NOT_DRIVEN} (eBPF runs 02 and 03 here)"
        ))),
        Feature::TracepointEntry => event("sys_enter_read", None),
        Feature::TracepointReturn => event("sys_exit_read", None),
        Feature::Uprobe => ordinary(ReadHook::Uprobe),
        Feature::Uretprobe => ordinary(ReadHook::Uretprobe),
        Feature::Filter => event("sys_enter_read", Some("count > 0")),
        Feature::Map => trigger("hist:keys=common_type"),
        Feature::SingleKey => trigger("hist:keys=common_pid"),
        Feature::StringKey | Feature::TwoKeys => Err(Inexpressible(
            "hist triggers key by pid; `.execname` only prints the comm beside it".into(),
        )),
        Feature::KernelStack => trigger("hist:keys=stacktrace"),
        Feature::Histogram => trigger("hist:keys=count.log2"),
        Feature::UserStack | Feature::Multiple => Err(Inexpressible(
            "hist triggers key kernel stacks only (no user stack)".into(),
        )),
        Feature::Timing => Err(Unavailable(
            "ftrace times enter -> exit with a synthetic event (global tracefs state), which this suite does not create".into(),
        )),
        Feature::PerEvent => Err(Inexpressible(
            "ftrace has no printf: its per-event output is the ring-buffer record of 04".into(),
        )),
    }
}

/// The plan as the report's "program" column shows it (or why there is none).
pub fn describe(read: &Read, fs: &Tracefs) -> String {
    let kept = match read.program {
        ReadProgram::Account(_) => ", kept to the workload's threads",
        ReadProgram::Feature(_) => "",
    };
    match plan(read, fs) {
        Err(why) => why.to_string(),
        Ok(FtracePlan::Event { event: "", .. }) => "an instance with nothing enabled".to_owned(),
        Ok(FtracePlan::Event {
            event,
            filter,
            trigger,
        }) => match (filter, trigger) {
            (_, Some(t)) => format!("syscalls:{event} trigger '{t}'"),
            (Some(f), _) => format!("syscalls:{event} with filter '{f}'"),
            _ => format!("syscalls:{event} enabled in an instance"),
        },
        Ok(FtracePlan::Ordinary(Hook::Uprobe { ret, .. })) => {
            format!("{} event on libc read{kept}", if ret { "r:" } else { "p:" })
        }
        Ok(FtracePlan::Ordinary(h)) => format!("{} enabled in an instance{kept}", h.label()),
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
        workload: keyed.then(|| workload.unwrap_or(0)),
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
    /// per CPU (the kernel's default if `None`) and trace clock `clock` (the instance's default
    /// if `None`): a filter and enabled (recording), or a hist
    /// trigger (counting in the kernel). An empty `event` (the control experiment) sets up
    /// nothing more.
    pub fn start(
        event: &str,
        filter: Option<&str>,
        trigger: Option<&str>,
        buffer_size_kb: Option<u64>,
        clock: Option<&str>,
    ) -> Result<FeatureEvent> {
        let fs = Tracefs::mount_if_needed()?;
        let tag = rtrace_tracer::run_tag()?;
        let instance = Instance::create(&fs, &tag)?;
        instance.configure(&crate::instance_setup(clock, buffer_size_kb, true))?;
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
                Ok(EventStats::new(hits.saturating_sub(dropped), dropped))
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
        let dropped = HIST.replace("Dropped: 0", "Dropped: 3");
        assert_eq!(hist_totals(&dropped), (20003, 3));
    }

    #[test]
    fn programs_become_events_hist_triggers_or_the_ordinary_backend() {
        // A tracefs-like directory, with or without hist files and kprobe_events.
        let dir = tempfile::tempdir().unwrap();
        let fs = Tracefs::at(dir.path());
        let ev = dir.path().join("events/syscalls/sys_enter_read");
        std::fs::create_dir_all(&ev).unwrap();
        let read = |program, kprobes| Read {
            program,
            libc: "/lib/libc.so.6".into(),
            read_offset: 0x1234,
            kprobes,
        };
        let f = |f| describe(&read(ReadProgram::Feature(f), false), &fs);
        let acct = |h| describe(&read(ReadProgram::Account(h), false), &fs);
        for (feature, want) in [
            (Feature::Control, "an instance with nothing enabled"),
            (
                Feature::Filter,
                "syscalls:sys_enter_read with filter 'count > 0'",
            ),
            (
                Feature::TracepointReturn,
                "syscalls:sys_exit_read enabled in an instance",
            ),
            (Feature::Uretprobe, "r: event on libc read"),
        ] {
            assert_eq!(f(feature), want);
        }
        assert!(f(Feature::SingleKey).contains("CONFIG_HIST_TRIGGERS"));
        assert!(f(Feature::Kprobe).contains("no kprobe_events"));
        let exit = "syscalls:sys_exit_read enabled in an instance, kept to the workload's threads";
        assert_eq!(acct(ReadHook::Exit), exit);
        let uretprobe = plan(&read(ReadProgram::Feature(Feature::Uretprobe), false), &fs);
        assert!(matches!(
            uretprobe,
            Ok(FtracePlan::Ordinary(Hook::Uprobe {
                ret: true,
                offset: 0x1234,
                ..
            }))
        ));
        let plan = |p, kprobes| plan(&read(p, kprobes), &fs).unwrap_err();
        let per_event = plan(ReadProgram::Feature(Feature::PerEvent), false);
        assert!(matches!(per_event, Unsupported::Inexpressible(w) if w.contains("printf")));
        let kprobe = plan(ReadProgram::Account(ReadHook::Kprobe), false);
        assert!(matches!(kprobe, Unsupported::Unavailable(w) if w.contains("not driven")));
        std::fs::write(ev.join("hist"), "").unwrap();
        std::fs::write(dir.path().join("kprobe_events"), "").unwrap();
        let map = "syscalls:sys_enter_read trigger 'hist:keys=common_type'";
        assert_eq!(f(Feature::Map), map);
        assert!(f(Feature::Kprobe).contains("not driven"));
        // Asked to hook vfs_read: not driven.
        let map = plan(ReadProgram::Feature(Feature::Map), true);
        assert!(matches!(map, Unsupported::Unavailable(w) if w.contains("not driven")));
    }
}
