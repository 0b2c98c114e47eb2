//! The `events` suite with ftrace: what Gregg's experiments become in tracefs. The syscall
//! tracepoints (04, 05) and the filter (08, an event filter on `count`) are enabled in a private
//! instance in overwrite mode, on every process as the one-liners are; the instance's per-CPU
//! stats count every event written or overwritten. The aggregations (09-17) are hist triggers,
//! which need CONFIG_HIST_TRIGGERS. Uprobes (06, 07) go through the ordinary backend.

use anyhow::Result;
use rtrace_tracer::features::{Evidence, Feature};

use crate::instance::Instance;
use crate::stats::account;
use crate::tracefs::Tracefs;

/// What ftrace does for an experiment here. Everything but the uprobes hooks the `read`
/// syscall's tracepoints (ftrace's kprobe events are not driven by this suite).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FtracePlan {
    /// `syscalls:EVENT` (with a filter, or with a hist trigger instead of recording) in an
    /// instance; an empty event enables nothing (the control experiment).
    Event {
        event: &'static str,
        filter: Option<&'static str>,
        trigger: Option<&'static str>,
    },
    /// A uprobe event on libc's `read`, through the ordinary backend.
    Uprobe { ret: bool },
    /// This machine lacks the mechanism.
    Unavailable(String),
    /// ftrace cannot express the experiment.
    Inexpressible(String),
}

pub fn plan(feature: Feature, fs: &Tracefs) -> FtracePlan {
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
        Feature::Kprobe | Feature::Kretprobe => FtracePlan::Unavailable(
            "ftrace kprobe events are not driven by this suite (eBPF runs 02 and 03 here)".into(),
        ),
        Feature::TracepointEntry => event("sys_enter_read", None),
        Feature::TracepointReturn => event("sys_exit_read", None),
        Feature::Uprobe => FtracePlan::Uprobe { ret: false },
        Feature::Uretprobe => FtracePlan::Uprobe { ret: true },
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

/// What a hist file shows: every hit (`Totals: Hits`), those dropped (`Dropped`: the table was
/// full), and the hit count of `pid` where the key is `common_pid`.
pub fn hist_evidence(text: &str, pid: u32) -> Evidence {
    let total = |name: &str| {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(name))
            .filter_map(|v| v.trim().parse::<u64>().ok())
            .next()
    };
    let hits = total("Hits:").unwrap_or(0);
    let dropped = total("Dropped:").unwrap_or(0);
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

impl FeatureEvent {
    /// Sets up `syscalls:event` in a new instance named after the run: a filter and enabled
    /// (recording), or a hist trigger (counting in the kernel). An empty `event` (the control
    /// experiment) sets up nothing.
    pub fn start(event: &str, filter: Option<&str>, trigger: Option<&str>) -> Result<FeatureEvent> {
        let fs = Tracefs::mount_if_needed()?;
        let tag = rtrace_tracer::run_tag()?;
        let instance = Instance::create(&fs, &tag)?;
        instance.write("options/overwrite", "1")?;
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

    /// Stops, counts (the buffer's events written, or the hist's hits), removes the instance.
    pub fn finish(mut self, pid: u32) -> Result<Evidence> {
        self.instance.write("tracing_on", "0")?;
        let ev = if self.event.is_empty() {
            Evidence {
                source: "nothing enabled (control)".into(),
                ..Evidence::default()
            }
        } else if let Some(t) = &self.trigger {
            let file = format!("events/syscalls/{}/", self.event);
            let text = std::fs::read_to_string(self.instance.path(&format!("{file}hist")))?;
            self.instance
                .write(&format!("{file}trigger"), &format!("!{t}"))?;
            hist_evidence(&text, pid)
        } else {
            let stats = account(&self.instance.stats()?);
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
        };
        self.instance.remove()?;
        Ok(ev)
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
    }
}
