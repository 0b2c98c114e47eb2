//! The experiments of Gregg's per-event cost benchmark (BPF Performance Tools, ch. 18; rerun by
//! Piotrowski 2024, seed 004), in their published numbering, the programs a backend runs for
//! them ([`ReadProgram`], traced as [`crate::Hook::Read`]), why a backend cannot run one
//! ([`Unsupported`]), and the evidence a tracer's run of one returns. Backends map each
//! experiment to their own program.

use crate::{Attachment, EventStats, Hook, Target};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
        self as u8 + 1
    }

    pub fn from_number(n: u8) -> Option<Feature> {
        Feature::ALL.get(usize::from(n).checked_sub(1)?).copied()
    }

    /// The experiment's name as in Piotrowski's tables: its name here in words
    /// (`TracepointEntry`: "Tracepoint Entry").
    pub fn title(self) -> String {
        let mut title = String::new();
        for c in format!("{self:?}").chars() {
            if c.is_ascii_uppercase() && !title.is_empty() {
                title.push(' ');
            }
            title.push(c);
        }
        title
    }
}

/// A hook of the suite: where the accounting runs check that a tracer sees exactly the
/// workload's reads.
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
    /// The hooks its events come from. `kprobes`: whether it hooks `vfs_read` with kprobes
    /// where Gregg's one-liner does (8-18; 16 also its return), else the `read` syscall's
    /// tracepoints (vfs_read's arg2 is the syscall's `count`).
    pub fn hooks(self, kprobes: bool) -> Vec<ReadHook> {
        use ReadHook::*;
        let (entry, exit) = if kprobes {
            (Kprobe, Kretprobe)
        } else {
            (Enter, Exit)
        };
        match self {
            ReadProgram::Account(h) => vec![h],
            ReadProgram::Feature(f) => match f {
                Feature::Control => vec![],
                Feature::Kprobe => vec![Kprobe],
                Feature::Kretprobe => vec![Kretprobe],
                Feature::TracepointEntry => vec![Enter],
                Feature::TracepointReturn => vec![Exit],
                Feature::Uprobe => vec![Uprobe],
                Feature::Uretprobe => vec![Uretprobe],
                Feature::Timing => vec![entry, exit],
                _ => vec![entry],
            },
        }
    }

    /// Where the program hooks (see [`ReadProgram::hooks`] for `kprobes`).
    pub fn site(self, kprobes: bool) -> String {
        match self.hooks(kprobes)[..] {
            [] => "BEGIN".into(),
            [ReadHook::Enter, ReadHook::Exit] => {
                "tracepoint:syscalls:sys_enter_read + sys_exit_read".into()
            }
            ref hooks => hooks
                .iter()
                .map(|h| h.label())
                .collect::<Vec<_>>()
                .join(" + "),
        }
    }

    /// Whether it hooks `vfs_read` with kprobes (experiments 2 and 3, or an accounting program
    /// on `vfs_read`): a kernel without kprobes cannot run it.
    pub fn needs_kprobes(self) -> bool {
        self.hooks(false)
            .iter()
            .any(|h| matches!(h, ReadHook::Kprobe | ReadHook::Kretprobe))
    }

    /// The hook of an accounting program, which counts the events of one process: an error
    /// without `pid`.
    pub fn account(self, pid: Option<u32>) -> anyhow::Result<Option<ReadHook>> {
        match self {
            ReadProgram::Account(h) => {
                anyhow::ensure!(
                    pid.is_some(),
                    "the accounting program on {} counts one process: give the target's pid",
                    h.label()
                );
                Ok(Some(h))
            }
            ReadProgram::Feature(_) => Ok(None),
        }
    }
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02} {}", self.number(), self.title())
    }
}

/// What [`crate::Hook::Read`] runs: a program of the suite, and where it hooks.
#[derive(Debug, Clone)]
pub struct Read {
    pub program: ReadProgram,
    /// The libc whose `read` the uprobe experiments (6, 7) and accounting programs hook.
    pub libc: PathBuf,
    /// The file offset of `read` in `libc` (as found by `rtrace_sdt::function`).
    pub read_offset: u64,
    /// Whether the program hooks `vfs_read` with kprobes where Gregg's one-liner does: the
    /// kernel has kprobes and the backend drives them ([`crate::Tracer::drives_kprobes`]). Else
    /// experiments 8-18 hook the `read` syscall's tracepoints, and 2 and 3 cannot run.
    pub kprobes: bool,
}

impl Read {
    /// The hooks its events come from.
    pub fn hooks(&self) -> Vec<ReadHook> {
        self.program.hooks(self.kprobes)
    }

    /// Unavailable where the program hooks `vfs_read` with kprobes and there are none.
    pub fn check_kprobes(&self) -> Result<(), Unsupported> {
        if self.program.needs_kprobes() && !self.kprobes {
            return Err(Unsupported::Unavailable(NO_KPROBES.into()));
        }
        Ok(())
    }

    /// Whether the program hooks libc's `read`: its return (`Some(true)`) or entry.
    pub fn on_libc(&self) -> Option<bool> {
        match self.hooks()[..] {
            [ReadHook::Uprobe] => Some(false),
            [ReadHook::Uretprobe] => Some(true),
            _ => None,
        }
    }

    /// `hook` as an ordinary [`Hook`]: the syscall's tracepoint, or a uprobe on libc's `read`
    /// (`None` for `vfs_read`'s kprobes).
    pub fn ordinary(&self, hook: ReadHook) -> Option<Hook> {
        let syscall = |name: &str| Hook::KernelTracepoint {
            category: "syscalls".into(),
            name: name.into(),
        };
        let libc = |ret| Hook::Uprobe {
            binary: self.libc.clone(),
            function: "read".into(),
            offset: self.read_offset,
            ret,
        };
        match hook {
            ReadHook::Enter => Some(syscall("sys_enter_read")),
            ReadHook::Exit => Some(syscall("sys_exit_read")),
            ReadHook::Uprobe | ReadHook::Uretprobe => Some(libc(hook == ReadHook::Uretprobe)),
            ReadHook::Kprobe | ReadHook::Kretprobe => None,
        }
    }
}

/// A backend's ordinary attachment running a program of the suite on the hook it maps it to:
/// its evidence is every event it wrote (of every process), or, for an accounting program,
/// the workload's: the attachment kept to its process.
pub struct Ordinary {
    inner: Box<dyn Attachment>,
    /// The accounting program's hook, if it is one.
    account: Option<ReadHook>,
}

impl Ordinary {
    /// Runs `program` with the backend's `attach` on `hook` instead of `target`'s (kept to
    /// `target.pid`, which an accounting program needs).
    pub fn attach(
        program: ReadProgram,
        target: &Target,
        hook: Hook,
        attach: impl FnOnce(&Target) -> anyhow::Result<Box<dyn Attachment>>,
    ) -> anyhow::Result<Box<dyn Attachment>> {
        let account = program.account(target.pid)?;
        let inner = attach(&Target {
            hook,
            ..target.clone()
        })?;
        Ok(Box::new(Ordinary { inner, account }))
    }
}

impl Attachment for Ordinary {
    fn finish(self: Box<Self>) -> anyhow::Result<EventStats> {
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
    pub fn of_every_process(st: EventStats) -> Evidence {
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
    pub fn of_the_workload(st: EventStats, what: &str) -> Evidence {
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
    use Feature::{Control, Filter, Histogram, Kprobe, Kretprobe, PerEvent, SingleKey, Timing};

    #[test]
    fn numbers_follow_the_published_order() {
        assert_eq!([Control, Filter, PerEvent].map(Feature::number), [1, 8, 18]);
        for f in Feature::ALL {
            assert_eq!(Feature::from_number(f.number()), Some(f));
        }
        assert_eq!(Feature::from_number(0), None);
        assert_eq!(Feature::from_number(19), None);
        assert_eq!(Feature::TracepointEntry.to_string(), "04 Tracepoint Entry");
        assert_eq!(PerEvent.to_string(), "18 Per Event");
    }

    #[test]
    fn programs_hook_where_the_kernel_lets_them() {
        let p = ReadProgram::Feature;
        let a = ReadProgram::Account(ReadHook::Uretprobe);
        for (program, kprobes, site) in [
            (p(Histogram), true, "kprobe:vfs_read"),
            (p(SingleKey), false, "tracepoint:syscalls:sys_enter_read"),
            (p(Feature::Uprobe), false, "uprobe:libc:read"),
            (p(Control), true, "BEGIN"),
            (p(Timing), true, "kprobe:vfs_read + kretprobe:vfs_read"),
            (
                p(Timing),
                false,
                "tracepoint:syscalls:sys_enter_read + sys_exit_read",
            ),
            (a, true, "uretprobe:libc:read"),
        ] {
            assert_eq!(program.site(kprobes), site, "{program:?}");
        }
        assert_eq!(p(Histogram).hooks(false), [ReadHook::Enter]);
        assert_eq!(p(Histogram).hooks(true), [ReadHook::Kprobe]);
        assert_eq!(a.hooks(true), [ReadHook::Uretprobe]);
        assert!(ReadProgram::Account(ReadHook::Kprobe).needs_kprobes());
        assert!(p(Kretprobe).needs_kprobes() && !p(Filter).needs_kprobes());
        assert!(a.account(None).is_err());
        assert_eq!(a.account(Some(1)).unwrap(), Some(ReadHook::Uretprobe));
        assert_eq!(p(Filter).account(None).unwrap(), None);
    }

    #[test]
    fn reads_map_to_ordinary_hooks_and_need_kprobes_they_have() {
        let read = |f, kprobes| Read {
            program: ReadProgram::Feature(f),
            libc: "/lib/libc.so.6".into(),
            read_offset: 0x1234,
            kprobes,
        };
        let r = read(Feature::Uretprobe, false);
        assert_eq!(r.on_libc(), Some(true));
        assert!(matches!(
            r.ordinary(ReadHook::Uretprobe),
            Some(Hook::Uprobe { ret: true, offset: 0x1234, ref function, .. }) if function == "read"
        ));
        let exit = r.ordinary(ReadHook::Exit).unwrap();
        assert_eq!(exit.label(), "syscalls:sys_exit_read");
        assert!(r.ordinary(ReadHook::Kprobe).is_none());
        assert_eq!(read(Feature::Map, false).on_libc(), None);
        let unavailable = Unsupported::Unavailable(NO_KPROBES.into());
        assert_eq!(read(Kprobe, false).check_kprobes(), Err(unavailable));
        assert!(read(Kprobe, true).check_kprobes().is_ok());
    }

    #[test]
    fn unsupported_is_found_inside_anyhow_with_context() {
        let no_printf = Unsupported::Inexpressible("no printf".into());
        let e = anyhow::Error::new(no_printf.clone()).context("experiment 18");
        assert_eq!(e.downcast_ref::<Unsupported>(), Some(&no_printf));
        let no_kprobes = Unsupported::Unavailable("no kprobes".into());
        assert_eq!(no_kprobes.to_string(), "no kprobes");
    }

    #[test]
    fn evidence_is_checked_against_the_reads() {
        let ev = |workload, all, lost| Evidence {
            workload,
            all,
            lost,
            source: String::new(),
        };
        let ok = |e: &Evidence, reads: [u64; 3]| reads.map(|n| e.check(n).is_ok());
        assert_eq!(
            ok(&ev(Some(100), None, 0), [99, 100, 101]),
            [false, true, false]
        );
        assert_eq!(
            ok(&ev(None, Some(105), 0), [100, 105, 106]),
            [true, true, false]
        );
        assert!(ev(Some(90), None, 10).check(100).is_ok());
        assert!(Evidence::default().check(100).is_ok());
    }
}
