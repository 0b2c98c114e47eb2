//! The CPUs of a run: the measured CPU and the harness CPUs, chosen among the CPUs that are
//! online and that this process may use (its affinity mask, which a cgroup cpuset or `taskset`
//! restricts), and never a CPU that another live run measures on: a measuring run holds
//! `cpu-N.lock` in the run directory (`rtrace_tracer::owner::try_lock`) while it measures on
//! CPU N.

use crate::options::OptionsError;
use anyhow::{bail, Result};
use rtrace_tracer::owner::{self, NamedLock};

/// Measured CPU and the CPUs left to the harness.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cpus {
    pub measured: usize,
    pub harness: Vec<usize>,
    /// `--cpu`, if given (then the measured CPU is not moved to a free one).
    pub requested: Option<usize>,
}

impl Cpus {
    /// The measured CPU (`requested`, else the last usable one that leaves a harness CPU) and
    /// the harness CPUs (every other usable CPU but the measured CPU's SMT siblings, which share
    /// its core; only when nothing else is left do they serve, and the SMT warning says so),
    /// avoiding the CPUs in `busy` (measured by other live runs, with a description of the run).
    pub fn choose(
        requested: Option<usize>,
        usable: &[usize],
        busy: &[(usize, String)],
        siblings: impl Fn(usize) -> Vec<usize>,
    ) -> Result<Cpus, OptionsError> {
        let is_busy = |c: usize| busy.iter().any(|(b, _)| *b == c);
        let free: Vec<usize> = usable.iter().copied().filter(|&c| !is_busy(c)).collect();
        let harness_of = |m: usize| -> Vec<usize> {
            let others: Vec<usize> = free.iter().copied().filter(|&c| c != m).collect();
            let core = siblings(m);
            let apart: Vec<usize> = others
                .iter()
                .copied()
                .filter(|c| !core.contains(c))
                .collect();
            if apart.is_empty() {
                others
            } else {
                apart
            }
        };
        let no_room = |m: usize| match busy.first() {
            Some((_, holder)) => OptionsError::NoFreeCpu {
                busy: list(&busy.iter().map(|(c, _)| *c).collect::<Vec<_>>()),
                holder: holder.clone(),
            },
            None => OptionsError::NoHarnessCpu {
                cpu: m,
                usable: list(usable),
            },
        };
        let measured = match requested {
            Some(c) if !usable.contains(&c) => {
                return Err(OptionsError::CpuNotUsable {
                    cpu: c,
                    usable: list(usable),
                    last: usable.last().copied().unwrap_or(0),
                })
            }
            Some(c) => {
                if let Some((_, holder)) = busy.iter().find(|(b, _)| *b == c) {
                    return Err(OptionsError::CpuBusy {
                        cpu: c,
                        holder: holder.clone(),
                    });
                }
                c
            }
            None => match free.iter().rev().find(|&&m| !harness_of(m).is_empty()) {
                Some(&m) => m,
                None => return Err(no_room(usable.last().copied().unwrap_or(0))),
            },
        };
        let harness = harness_of(measured);
        if harness.is_empty() {
            return Err(no_room(measured));
        }
        Ok(Cpus {
            measured,
            harness,
            requested,
        })
    }

    /// CPUs of `n` loop threads: the measured CPU, then one harness CPU per further thread
    /// (from the last, so CPU 0 and its housekeeping come last).
    pub fn loop_cpus(&self, n: usize) -> Vec<usize> {
        std::iter::once(self.measured)
            .chain(self.harness.iter().rev().copied())
            .take(n)
            .collect()
    }

    /// Takes the measured CPU for this run: chooses again among the CPUs no other live run
    /// measures on (the measured CPU moves if `--cpu` was not given) and locks it. Hold the lock
    /// for the whole run.
    pub fn claim(&self) -> Result<(Cpus, NamedLock)> {
        let usable = usable();
        // Another run may take a CPU between our look and our lock: look again.
        for _ in 0..5 {
            let mut busy = Vec::new();
            for &c in &usable {
                if let Err(holder) = owner::try_lock(&cpu_lock(c))? {
                    busy.push((c, holder));
                }
            }
            let cpus = Cpus::choose(self.requested, &usable, &busy, smt_siblings)?;
            if let Ok(lock) = owner::try_lock(&cpu_lock(cpus.measured))? {
                return Ok((cpus, lock));
            }
        }
        bail!("other runs keep taking the free CPUs: wait for them to end")
    }
}

/// The CPUs that share `cpu`'s core (`topology/thread_siblings_list`, `cpu` itself included);
/// empty when the kernel does not say.
pub fn smt_siblings(cpu: usize) -> Vec<usize> {
    std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    ))
    .ok()
    .and_then(|s| parse_list(s.trim()))
    .unwrap_or_default()
}

fn cpu_lock(cpu: usize) -> String {
    format!("cpu-{cpu}")
}

static AT_START: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();

/// [`usable`] as it was when `main` started, before the harness pinned itself: where a program
/// that runs on every CPU (`app`'s) goes.
pub fn usable_at_start() -> &'static [usize] {
    AT_START.get_or_init(usable)
}

/// CPUs that are online and in this process's affinity mask (cpuset), ascending.
pub fn usable() -> Vec<usize> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_list(&s));
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok();
    let count = nix::sched::CpuSet::count();
    (0..count)
        .filter(|&c| online.as_ref().is_none_or(|o| o.contains(&c)))
        .filter(|&c| {
            allowed
                .as_ref()
                .is_none_or(|a| a.is_set(c).unwrap_or(false))
        })
        .collect()
}

pub use rtrace_tracer::{cpu_list as list, parse_cpu_list as parse_list};

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(
        req: Option<usize>,
        usable: &[usize],
        busy: &[usize],
    ) -> Result<(usize, Vec<usize>), OptionsError> {
        let busy: Vec<(usize, String)> = busy.iter().map(|&c| (c, format!("run on {c}"))).collect();
        Cpus::choose(req, usable, &busy, |_| Vec::new()).map(|c| (c.measured, c.harness))
    }

    #[test]
    fn the_harness_keeps_off_the_measured_cpu_s_smt_sibling() {
        // CPUs 1 and 3 share a core: measuring 3, the harness is 0 and 2, not 1.
        let core = |c: usize| match c {
            1 | 3 => vec![1, 3],
            c => vec![c],
        };
        let cpus = Cpus::choose(None, &[0, 1, 2, 3], &[], core).unwrap();
        assert_eq!((cpus.measured, cpus.harness), (3, vec![0, 2]));
        // Only the sibling is left: it serves (the SMT warning says so).
        let cpus = Cpus::choose(Some(3), &[1, 3], &[], core).unwrap();
        assert_eq!(cpus.harness, vec![1]);
        // This machine's own topology: the harness never holds a sibling of the measured CPU
        // unless nothing else is left.
        let here = Cpus::choose(None, &usable(), &[], smt_siblings);
        if let Ok(c) = here {
            let core = smt_siblings(c.measured);
            if c.harness.iter().any(|h| core.contains(h)) {
                assert!(usable()
                    .iter()
                    .all(|u| *u == c.measured || core.contains(u)));
            }
        }
    }

    #[test]
    fn the_last_usable_cpu_is_measured_the_others_are_the_harness() {
        assert_eq!(pick(None, &[0, 1], &[]), Ok((1, vec![0])));
        assert_eq!(pick(Some(0), &[0, 1, 2, 3], &[]), Ok((0, vec![1, 2, 3])));
        // CPU 2 offline, or outside the cpuset: never chosen, never the harness.
        assert_eq!(pick(None, &[0, 1, 3], &[]), Ok((3, vec![0, 1])));
        assert_eq!(pick(None, &[2, 3], &[]), Ok((3, vec![2])));
    }

    #[test]
    fn unusable_cpus_are_refused_with_the_fix() {
        let e = pick(Some(2), &[0, 1, 3], &[]).unwrap_err().to_string();
        for fix in ["CPU 2", "0-1,3", "--cpu 3"] {
            assert!(e.contains(fix), "{e}");
        }
        let e = pick(None, &[0], &[]).unwrap_err().to_string();
        assert!(e.contains("no CPU for the harness"), "{e}");
        assert!(pick(Some(0), &[0], &[]).is_err());
    }

    #[test]
    fn cpus_of_other_live_runs_are_avoided() {
        // Not given --cpu: measure on the next free CPU, keep the harness off the busy one.
        assert_eq!(pick(None, &[0, 1, 2, 3], &[3]), Ok((2, vec![0, 1])));
        // Given --cpu: refuse a busy one.
        let e = pick(Some(3), &[0, 1, 2, 3], &[3]).unwrap_err().to_string();
        assert!(e.contains("another live run"), "{e}");
        assert!(e.contains("run on 3"), "{e}");
        // Two CPUs, one busy: no pair left.
        let e = pick(None, &[0, 1], &[1]).unwrap_err().to_string();
        assert!(e.contains("another live run"), "{e}");
        let e = pick(Some(0), &[0, 1], &[1]).unwrap_err().to_string();
        assert!(e.contains("another live run"), "{e}");
    }

    #[test]
    fn this_machine_has_usable_cpus() {
        assert!(!usable().is_empty());
    }
}
