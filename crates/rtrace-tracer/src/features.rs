//! The experiments of Gregg's per-event cost benchmark (BPF Performance Tools, ch. 18; rerun by
//! Piotrowski 2024, seed 004), in their published numbering, the programs a backend runs for
//! them ([`ReadProgram`], traced as [`crate::Hook::Read`]), why a backend cannot run one
//! ([`Unsupported`]), and the evidence a tracer's run of one returns. Backends map each
//! experiment to their own program.

use serde::{Deserialize, Serialize};

/// Why a backend cannot run a program here, returned by [`crate::Tracer::check`] inside
/// `anyhow` (find it with `downcast_ref::<Unsupported>()`): the report lists the two apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    /// The tracer has the mechanism but this machine lacks it (no kprobes, no hist triggers, no
    /// LTTng kernel modules).
    #[error("{0}")]
    Unavailable(String),
    /// The tracer cannot express the program (ftrace has no printf, LTTng no in-kernel maps).
    #[error("{0}")]
    Inexpressible(String),
}

/// Why the BPF tracers do not run experiments 2 and 3 (or account `vfs_read`) here.
pub const NO_KPROBES: &str = "kprobes are unavailable on this kernel (no kprobe_events in tracefs): the QEMU guests run it as a functional check";

/// One experiment: the tracer feature whose per-event cost it measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    Control,
    Kprobe,
    Kretprobe,
    TracepointEntry,
    TracepointReturn,
    Uprobe,
    Uretprobe,
    Filter,
    Map,
    SingleKey,
    StringKey,
    TwoKeys,
    KernelStack,
    UserStack,
    Histogram,
    Timing,
    Multiple,
    PerEvent,
}

impl Feature {
    pub const ALL: [Feature; 18] = [
        Feature::Control,
        Feature::Kprobe,
        Feature::Kretprobe,
        Feature::TracepointEntry,
        Feature::TracepointReturn,
        Feature::Uprobe,
        Feature::Uretprobe,
        Feature::Filter,
        Feature::Map,
        Feature::SingleKey,
        Feature::StringKey,
        Feature::TwoKeys,
        Feature::KernelStack,
        Feature::UserStack,
        Feature::Histogram,
        Feature::Timing,
        Feature::Multiple,
        Feature::PerEvent,
    ];

    /// Gregg's and Piotrowski's experiment number (1..=18).
    pub fn number(self) -> u8 {
        Feature::ALL
            .iter()
            .position(|&f| f == self)
            .expect("listed") as u8
            + 1
    }

    pub fn from_number(n: u8) -> Option<Feature> {
        Feature::ALL.get(usize::from(n).checked_sub(1)?).copied()
    }

    /// The experiment's name as in Piotrowski's tables ("Tracepoint Entry").
    pub fn title(self) -> &'static str {
        match self {
            Feature::Control => "Control",
            Feature::Kprobe => "Kprobe",
            Feature::Kretprobe => "Kretprobe",
            Feature::TracepointEntry => "Tracepoint Entry",
            Feature::TracepointReturn => "Tracepoint Return",
            Feature::Uprobe => "Uprobe",
            Feature::Uretprobe => "Uretprobe",
            Feature::Filter => "Filter",
            Feature::Map => "Map",
            Feature::SingleKey => "Single Key",
            Feature::StringKey => "String Key",
            Feature::TwoKeys => "Two Keys",
            Feature::KernelStack => "Kernel Stack",
            Feature::UserStack => "User Stack",
            Feature::Histogram => "Histogram",
            Feature::Timing => "Timing",
            Feature::Multiple => "Multiple",
            Feature::PerEvent => "Per Event",
        }
    }

    /// Whether the experiment needs kprobes (2, 3: `kprobe:vfs_read` and its return).
    pub fn needs_kprobes(self) -> bool {
        matches!(self, Feature::Kprobe | Feature::Kretprobe)
    }

    /// Where Gregg's one-liner hooks (8-18 hook `kprobe:vfs_read`; 16 also its return).
    pub fn published_hook(self) -> &'static str {
        match self {
            Feature::Control => "BEGIN",
            Feature::Kprobe => "kprobe:vfs_read",
            Feature::Kretprobe => "kretprobe:vfs_read",
            Feature::TracepointEntry => "tracepoint:syscalls:sys_enter_read",
            Feature::TracepointReturn => "tracepoint:syscalls:sys_exit_read",
            Feature::Timing => "kprobe:vfs_read + kretprobe:vfs_read",
            Feature::Uprobe => "uprobe:libc:read",
            Feature::Uretprobe => "uretprobe:libc:read",
            _ => "kprobe:vfs_read",
        }
    }

    /// Where the experiment hooks on a kernel without kprobes: 8-18 move from `vfs_read` to the
    /// `read` syscall's tracepoints (vfs_read's arg2 is the syscall's `count`).
    pub fn hook_without_kprobes(self) -> &'static str {
        match self {
            Feature::Timing => "tracepoint:syscalls:sys_enter_read + sys_exit_read",
            f if f.number() >= 8 => "tracepoint:syscalls:sys_enter_read",
            f => f.published_hook(),
        }
    }
}

/// A hook of the suite on a kernel without kprobes: where the accounting runs check that a
/// tracer sees exactly the workload's reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadHook {
    /// `syscalls:sys_enter_read`.
    Enter,
    /// `syscalls:sys_exit_read`.
    Exit,
    /// libc's `read`, entry.
    Uprobe,
    /// libc's `read`, return.
    Uretprobe,
    /// `vfs_read`, entry (a kernel with kprobes).
    Kprobe,
    /// `vfs_read`, return.
    Kretprobe,
}

impl ReadHook {
    pub fn label(self) -> &'static str {
        match self {
            ReadHook::Enter => "tracepoint:syscalls:sys_enter_read",
            ReadHook::Exit => "tracepoint:syscalls:sys_exit_read",
            ReadHook::Uprobe => "uprobe:libc:read",
            ReadHook::Uretprobe => "uretprobe:libc:read",
            ReadHook::Kprobe => "kprobe:vfs_read",
            ReadHook::Kretprobe => "kretprobe:vfs_read",
        }
    }

    /// The hooks an experiment's programs use (`kprobes`: whether the kernel has them; else
    /// 8-18 use the syscall's tracepoints).
    pub fn of(feature: Feature, kprobes: bool) -> &'static [ReadHook] {
        match feature {
            Feature::Control => &[],
            Feature::Kprobe => &[ReadHook::Kprobe],
            Feature::Kretprobe => &[ReadHook::Kretprobe],
            Feature::TracepointEntry => &[ReadHook::Enter],
            Feature::TracepointReturn => &[ReadHook::Exit],
            Feature::Uprobe => &[ReadHook::Uprobe],
            Feature::Uretprobe => &[ReadHook::Uretprobe],
            Feature::Timing if kprobes => &[ReadHook::Kprobe, ReadHook::Kretprobe],
            Feature::Timing => &[ReadHook::Enter, ReadHook::Exit],
            _ if kprobes => &[ReadHook::Kprobe],
            _ => &[ReadHook::Enter],
        }
    }
}

/// A program of the events suite, as a backend runs it on [`crate::Hook::Read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadProgram {
    /// Experiment `f`'s program, tracing every process as Gregg's one-liners do.
    Feature(Feature),
    /// The accounting program: the events of one hook counted for the workload's process only
    /// (`Target::pid`), which must equal its reads.
    Account(ReadHook),
}

impl ReadProgram {
    /// Where the program hooks. `kprobes`: whether it hooks `vfs_read` with kprobes where
    /// Gregg's one-liner does (else 8-18 hook the `read` syscall's tracepoints).
    pub fn site(self, kprobes: bool) -> &'static str {
        match self {
            ReadProgram::Feature(f) if kprobes => f.published_hook(),
            ReadProgram::Feature(f) => f.hook_without_kprobes(),
            ReadProgram::Account(h) => h.label(),
        }
    }

    /// The hooks its events come from (see [`ReadProgram::site`] for `kprobes`).
    pub fn hooks(self, kprobes: bool) -> Vec<ReadHook> {
        match self {
            ReadProgram::Feature(f) => ReadHook::of(f, kprobes).to_vec(),
            ReadProgram::Account(h) => vec![h],
        }
    }

    /// Whether it hooks `vfs_read` with kprobes (experiments 2 and 3, or an accounting program
    /// on `vfs_read`): a kernel without kprobes cannot run it.
    pub fn needs_kprobes(self) -> bool {
        match self {
            ReadProgram::Feature(f) => f.needs_kprobes(),
            ReadProgram::Account(h) => matches!(h, ReadHook::Kprobe | ReadHook::Kretprobe),
        }
    }
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02} {}", self.number(), self.title())
    }
}

/// A backend's ordinary attachment running a program of the suite on the hook it maps it to:
/// its evidence is every event it wrote (of every process), or, for an accounting program
/// (`account`), the workload's: the attachment kept to its process.
pub struct Ordinary {
    pub inner: Box<dyn crate::Attachment>,
    /// The accounting program's hook, if it is one.
    pub account: Option<ReadHook>,
}

impl crate::Attachment for Ordinary {
    fn finish(self: Box<Self>) -> anyhow::Result<crate::EventStats> {
        self.inner.finish()
    }

    fn evidence(self: Box<Self>, _pid: u32, _comm: &str) -> anyhow::Result<Evidence> {
        let st = self.inner.finish()?;
        Ok(match self.account {
            Some(h) => Evidence::of_the_workload(st, h.label()),
            None => Evidence::of_every_process(st),
        })
    }
}

/// What a tracer's run of one experiment shows of its events: checked against the workload's
/// own count of `read` calls by the harness.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The workload's events in the tracer's output, where the output tells processes apart
    /// (keyed by pid or comm, or one record per event with its pid): must equal the workload's
    /// count when nothing was lost.
    pub workload: Option<u64>,
    /// Events of every process in the output, where it does not tell them apart: at least the
    /// workload's count (the rest are other processes' reads during the run).
    pub all: Option<u64>,
    /// Events the tracer knows it dropped.
    pub lost: u64,
    /// One line on what was read, e.g. `@[pid]: 1000000 for the workload's pid`.
    pub source: String,
}

impl Evidence {
    /// Every event a run wrote, of every process (its kept and lost events): at least the
    /// workload's reads.
    pub fn of_every_process(st: crate::EventStats) -> Evidence {
        Evidence {
            all: Some(st.recorded + st.lost),
            source: format!(
                "{} events written ({} kept, {} lost or overwritten; every process)",
                st.recorded + st.lost,
                st.recorded,
                st.lost
            ),
            ..Evidence::default()
        }
    }

    /// The workload's events counted by an accounting program that kept to its process.
    pub fn of_the_workload(st: crate::EventStats, what: &str) -> Evidence {
        Evidence {
            workload: Some(st.recorded),
            lost: st.lost,
            source: format!(
                "{what}: {} events of the workload ({} lost)",
                st.recorded, st.lost
            ),
            ..Evidence::default()
        }
    }

    /// Checks the evidence against `reads`, the workload's own count.
    pub fn check(&self, reads: u64) -> Result<(), String> {
        if let Some(w) = self.workload {
            if w > reads || w + self.lost < reads {
                return Err(format!(
                    "{}: the workload's events are {w} (+{} lost), its reads {reads}",
                    self.source, self.lost
                ));
            }
        }
        if let Some(a) = self.all {
            if a + self.lost < reads {
                return Err(format!(
                    "{}: {a} events (+{} lost) of every process, fewer than the workload's {reads} reads",
                    self.source, self.lost
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_the_published_order() {
        assert_eq!(Feature::Control.number(), 1);
        assert_eq!(Feature::Filter.number(), 8);
        assert_eq!(Feature::PerEvent.number(), 18);
        for f in Feature::ALL {
            assert_eq!(Feature::from_number(f.number()), Some(f));
        }
        assert_eq!(Feature::from_number(0), None);
        assert_eq!(Feature::from_number(19), None);
    }

    #[test]
    fn kprobe_experiments_move_to_the_syscall_tracepoint() {
        assert_eq!(
            Feature::SingleKey.hook_without_kprobes(),
            "tracepoint:syscalls:sys_enter_read"
        );
        assert_eq!(Feature::Uprobe.hook_without_kprobes(), "uprobe:libc:read");
        assert!(Feature::Kprobe.needs_kprobes() && !Feature::Filter.needs_kprobes());
        assert_eq!(ReadHook::of(Feature::Histogram, false), &[ReadHook::Enter]);
        assert_eq!(ReadHook::of(Feature::Histogram, true), &[ReadHook::Kprobe]);
        assert_eq!(
            ReadHook::of(Feature::Timing, true),
            &[ReadHook::Kprobe, ReadHook::Kretprobe]
        );
    }

    #[test]
    fn programs_hook_where_the_kernel_lets_them() {
        let p = ReadProgram::Feature(Feature::Histogram);
        assert_eq!(p.site(true), "kprobe:vfs_read");
        assert_eq!(p.site(false), "tracepoint:syscalls:sys_enter_read");
        assert_eq!(p.hooks(false), vec![ReadHook::Enter]);
        let a = ReadProgram::Account(ReadHook::Uretprobe);
        assert_eq!(a.site(true), "uretprobe:libc:read");
        assert_eq!(a.hooks(true), vec![ReadHook::Uretprobe]);
        assert!(ReadProgram::Account(ReadHook::Kprobe).needs_kprobes());
        assert!(ReadProgram::Feature(Feature::Kretprobe).needs_kprobes());
        assert!(!ReadProgram::Feature(Feature::Filter).needs_kprobes());
    }

    #[test]
    fn unsupported_is_found_inside_anyhow_with_context() {
        let e = anyhow::Error::new(Unsupported::Inexpressible("no printf".into()))
            .context("experiment 18");
        assert_eq!(
            e.downcast_ref::<Unsupported>(),
            Some(&Unsupported::Inexpressible("no printf".into()))
        );
        assert_eq!(
            Unsupported::Unavailable("no kprobes".into()).to_string(),
            "no kprobes"
        );
    }

    #[test]
    fn evidence_is_checked_against_the_reads() {
        let exact = Evidence {
            workload: Some(100),
            ..Evidence::default()
        };
        assert!(exact.check(100).is_ok());
        assert!(exact.check(101).is_err());
        assert!(exact.check(99).is_err());
        let all = Evidence {
            all: Some(105),
            ..Evidence::default()
        };
        assert!(all.check(100).is_ok());
        assert!(all.check(106).is_err());
        let lossy = Evidence {
            workload: Some(90),
            lost: 10,
            ..Evidence::default()
        };
        assert!(lossy.check(100).is_ok());
        assert!(Evidence::default().check(100).is_ok());
    }
}
