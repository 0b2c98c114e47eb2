//! How the kernel executes a probed instruction: the class of a uprobe's site, from the
//! `ProbeSite` every result records under the uprobes it placed (`usdt` and sweep runs'
//! `sites`, events' `read_site`), and, for a `usdt-nop5` run, whether its processes mapped
//! `[uprobes-trampoline]` (the site optimised into a call). Nothing here guesses it from a
//! hook's name: a result that records none (older files, npt) says "site not recorded".

use rtrace_measure::events::{Cell, EventsResult};
use rtrace_measure::npt::{NptResult, NptRun};
use rtrace_measure::sweep::{SweepResult, SweepRun};
use rtrace_measure::usdt::{CaseResult, HookKind, UsdtResult};
use rtrace_tracer::features::Feature;
use std::cmp::Ordering;

/// A probed instruction and how the kernel runs it under a uprobe.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteClass {
    /// The instruction, disassembled (`push %rbp`, `mov 0x2f(%rip),%eax`).
    pub instruction: String,
    pub mechanism: Mechanism,
    /// Whether the site is a function's entry (a `ret` follows the trap), if recorded.
    pub function_entry: Option<bool>,
}

/// What the kernel does with the probed instruction.
#[derive(Debug, Clone, PartialEq)]
pub enum Mechanism {
    /// Emulated in the int3 handler (`nop`, `push`, `jmp`, `call`, `jcc`): one trap.
    Emulated(String),
    /// A `nop5` site: optimised into a call (no trap), or not (an emulated nop, one trap).
    Nop5 { optimized: bool },
    /// Copied out of line and single-stepped (the reason: `rip-relative`): a second trap.
    SingleStepped(String),
    /// No uprobe can be placed on it.
    Refused,
}

impl Mechanism {
    /// Traps per hit; `None` when refused.
    pub fn traps(&self) -> Option<u8> {
        match self {
            Mechanism::Nop5 { optimized: true } => Some(0),
            Mechanism::Nop5 { optimized: false } | Mechanism::Emulated(_) => Some(1),
            Mechanism::SingleStepped(_) => Some(2),
            Mechanism::Refused => None,
        }
    }

    /// `emulated`, `nop5 call`, `single-stepped`: the class without its detail, beside the
    /// instruction.
    pub fn short(&self) -> &'static str {
        match self {
            Mechanism::Emulated(_) => "emulated",
            Mechanism::Nop5 { optimized: true } => "nop5 call",
            Mechanism::Nop5 { optimized: false } => "nop5 int3",
            Mechanism::SingleStepped(_) => "single-stepped",
            Mechanism::Refused => "refused",
        }
    }

    /// `emulated push`, `nop5 (call)`, `single-stepped (rip-relative)`.
    pub fn label(&self) -> String {
        match self {
            Mechanism::Emulated(what) => format!("emulated {what}"),
            Mechanism::Nop5 { optimized: true } => "nop5 (call)".into(),
            Mechanism::Nop5 { optimized: false } => "nop5 (int3)".into(),
            Mechanism::SingleStepped(why) => format!("single-stepped ({why})"),
            Mechanism::Refused => "refused".into(),
        }
    }
}

impl SiteClass {
    /// Whether a hit on `self` costs more kernel work than one on `other` (more traps):
    /// `None` when the two are not ordered.
    pub fn heavier(&self, other: &SiteClass) -> Option<Ordering> {
        Some(self.mechanism.traps()?.cmp(&other.mechanism.traps()?))
    }
}

impl SiteClass {
    /// The class of a recorded site.
    fn of(site: &rtrace_sdt::ProbeSite) -> Option<SiteClass> {
        use rtrace_sdt::Mechanism as M;
        let mechanism = match &site.mechanism {
            M::Emulated { op } => Mechanism::Emulated(op.to_string()),
            M::Nop5 => Mechanism::Nop5 { optimized: false },
            M::SingleStepped { rip_relative: true } => {
                Mechanism::SingleStepped("rip-relative".into())
            }
            M::SingleStepped {
                rip_relative: false,
            } => Mechanism::SingleStepped("not emulated".into()),
            M::Refused { .. } => Mechanism::Refused,
            M::Unknown { .. } => return None,
        };
        Some(SiteClass {
            instruction: site.instruction.clone(),
            mechanism,
            function_entry: site.function_entry,
        })
    }
}

/// A `usdt` run's probed site: a `usdt-nop5` run whose every round mapped
/// `[uprobes-trampoline]` ran the nop5 as a call, whatever the note's first byte.
pub fn of_usdt(_r: &UsdtResult, run: &CaseResult) -> Option<SiteClass> {
    if run.hook_kind == HookKind::UsdtNop5 {
        if let Some((k, n)) = run.trampoline_rounds() {
            if k == n {
                return Some(SiteClass {
                    instruction: "nopl 0x0(%rax,%rax,1)".into(),
                    mechanism: Mechanism::Nop5 { optimized: true },
                    function_entry: run.sites.first().and_then(|s| s.function_entry),
                });
            }
        }
    }
    SiteClass::of(run.sites.first()?)
}

/// A sweep run's probed site (the built-in loop's probe, or cyclictest's `clock_nanosleep`).
pub fn of_sweep(_r: &SweepResult, run: &SweepRun) -> Option<SiteClass> {
    SiteClass::of(run.sites.first()?)
}

/// An events cell's probed site: libc's `read`, for the experiments that place a uprobe.
pub fn of_events(r: &EventsResult, cell: &Cell) -> Option<SiteClass> {
    let on_libc = matches!(cell.feature, Feature::Uprobe | Feature::Uretprobe);
    SiteClass::of(r.config.read_site.as_ref().filter(|_| on_libc)?)
}

/// An npt run's probed site: npt's result records none.
pub fn of_npt(_r: &NptResult, _run: &NptRun) -> Option<SiteClass> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_stepped_site_traps_twice_an_optimised_nop5_never() {
        let class = |mechanism| SiteClass {
            instruction: String::new(),
            mechanism,
            function_entry: None,
        };
        let stepped = class(Mechanism::SingleStepped("rip-relative".into()));
        let push = class(Mechanism::Emulated("push".into()));
        assert_eq!(stepped.heavier(&push), Some(Ordering::Greater));
        let call = class(Mechanism::Nop5 { optimized: true });
        assert_eq!(call.heavier(&push), Some(Ordering::Less));
        assert_eq!(class(Mechanism::Refused).heavier(&push), None);
        assert_eq!(stepped.mechanism.label(), "single-stepped (rip-relative)");
    }
}
