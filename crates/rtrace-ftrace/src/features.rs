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

/// What ftrace does for an experiment here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FtracePlan {
    /// `syscalls:EVENT` (with a filter) enabled in an instance; an empty event enables nothing
    /// (the control experiment).
    Event {
        event: &'static str,
        filter: Option<&'static str>,
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
    let event = |event, filter| FtracePlan::Event { event, filter };
    match feature {
        Feature::Control => event("", None),
        Feature::Kprobe | Feature::Kretprobe => FtracePlan::Unavailable(
            "kprobes are unavailable on this kernel (no kprobe_events in tracefs)".into(),
        ),
        Feature::TracepointEntry => event("sys_enter_read", None),
        Feature::TracepointReturn => event("sys_exit_read", None),
        Feature::Uprobe => FtracePlan::Uprobe { ret: false },
        Feature::Uretprobe => FtracePlan::Uprobe { ret: true },
        Feature::Filter => event("sys_enter_read", Some("count > 0")),
        Feature::UserStack | Feature::Multiple => FtracePlan::Inexpressible(
            "hist triggers key kernel stacks only (no user stack)".into(),
        ),
        Feature::PerEvent => FtracePlan::Inexpressible(
            "ftrace has no printf: its per-event output is the ring-buffer record of 04".into(),
        ),
        _ if !hist => FtracePlan::Unavailable(
            "this kernel has no hist triggers (CONFIG_HIST_TRIGGERS is off: no events/*/hist file); the QEMU guests' Debian kernels have them".into(),
        ),
        _ => FtracePlan::Unavailable(
            "hist-trigger experiments run as a functional check in the QEMU guests".into(),
        ),
    }
}

/// An event of `syscalls` enabled in a private instance (removed on drop).
pub struct FeatureEvent {
    instance: Instance,
    enabled: bool,
}

impl FeatureEvent {
    /// Enables `syscalls:event` (with `filter`) in a new instance named after the run. An empty
    /// `event` (the control experiment) enables nothing.
    pub fn start(event: &str, filter: Option<&str>) -> Result<FeatureEvent> {
        let fs = Tracefs::mount_if_needed()?;
        let tag = rtrace_tracer::run_tag()?;
        let instance = Instance::create(&fs, &tag)?;
        instance.write("options/overwrite", "1")?;
        if !event.is_empty() {
            if let Some(f) = filter {
                instance.write(&format!("events/syscalls/{event}/filter"), f)?;
            }
            instance.set_enabled("syscalls", event, true)?;
        }
        Ok(FeatureEvent {
            instance,
            enabled: !event.is_empty(),
        })
    }

    /// Stops, counts every event written (kept or overwritten), removes the instance.
    pub fn finish(mut self) -> Result<Evidence> {
        self.instance.write("tracing_on", "0")?;
        let stats = account(&self.instance.stats()?);
        self.instance.remove()?;
        if !self.enabled {
            return Ok(Evidence {
                source: "nothing enabled (control)".into(),
                ..Evidence::default()
            });
        }
        let all = stats.recorded + stats.lost;
        Ok(Evidence {
            workload: None,
            all: Some(all),
            lost: 0,
            source: format!(
                "{all} events written to the instance ({} kept, {} overwritten; every process)",
                stats.recorded, stats.lost
            ),
        })
    }
}
