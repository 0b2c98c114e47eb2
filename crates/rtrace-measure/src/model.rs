//! Event accounting shared by every experiment: a check, not just a number.

use rtrace_tracer::EventStats;
use serde::{Deserialize, Serialize};

/// Events of one traced run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Events {
    /// Tracepoint executions counted by the workload itself (ground truth).
    pub hits: u64,
    /// Events the tracer kept.
    pub recorded: u64,
    /// Events the tracer reports as lost (overwritten, dropped, discarded).
    pub lost: u64,
    /// Of `lost`, events written and later overwritten (a flight recorder's overrun): paid in
    /// full. Absent in files of older versions.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overwritten: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The tracer's accounting disagrees with the ground truth.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccountingError {
    #[error("event accounting broken: recorded {recorded} + lost {lost} = {} but the workload hit the probe {hits} times (the tracer missed events without reporting them)", recorded + lost)]
    Mismatch { hits: u64, recorded: u64, lost: u64 },
    #[error("tracer recorded {recorded} events from a probe that never fired")]
    Phantom { recorded: u64 },
    #[error("event accounting broken: recorded {recorded} + lost {lost} = {} but the workload made at least {hits} calls (the tracer missed events without reporting them)", recorded + lost)]
    Short { hits: u64, recorded: u64, lost: u64 },
}

impl std::ops::Add for Events {
    type Output = Events;
    fn add(self, b: Events) -> Events {
        Events {
            hits: self.hits + b.hits,
            recorded: self.recorded + b.recorded,
            lost: self.lost + b.lost,
            overwritten: self.overwritten + b.overwritten,
        }
    }
}

impl Events {
    /// `hits` hits, `recorded` recorded, `lost` dropped (tests' shorthand).
    #[cfg(test)]
    pub fn of(hits: u64, recorded: u64, lost: u64) -> Events {
        Events {
            hits,
            recorded,
            lost,
            overwritten: 0,
        }
    }

    pub fn new(hits: u64, stats: EventStats) -> Events {
        Events {
            hits,
            recorded: stats.recorded,
            lost: stats.lost,
            overwritten: stats.overwritten,
        }
    }

    /// Events lost without being written (dropped or discarded): a run with any took the
    /// cheaper drop path for them, so its cost reads too low.
    pub fn dropped(&self) -> u64 {
        self.lost.saturating_sub(self.overwritten)
    }

    /// Every hit was either recorded or reported lost.
    pub fn check_exact(&self) -> Result<(), AccountingError> {
        if self.recorded + self.lost == self.hits {
            Ok(())
        } else {
            Err(AccountingError::Mismatch {
                hits: self.hits,
                recorded: self.recorded,
                lost: self.lost,
            })
        }
    }

    /// At least `hits` events were recorded or reported lost (kernel events the traced process
    /// may also cause outside the measured loop).
    pub fn check_at_least(&self) -> Result<(), AccountingError> {
        if self.recorded + self.lost >= self.hits {
            Ok(())
        } else {
            Err(AccountingError::Short {
                hits: self.hits,
                recorded: self.recorded,
                lost: self.lost,
            })
        }
    }

    /// Nothing was recorded (the traced probe never fired).
    pub fn check_none(&self) -> Result<(), AccountingError> {
        if self.recorded == 0 && self.lost == 0 {
            Ok(())
        } else {
            Err(AccountingError::Phantom {
                recorded: self.recorded + self.lost,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use Events as E;
    fn ev(hits: u64, recorded: u64, lost: u64) -> Events {
        E::of(hits, recorded, lost)
    }

    #[test]
    fn exact_accounting() {
        assert!(ev(10, 7, 3).check_exact().is_ok());
        assert!(ev(10, 7, 2).check_exact().is_err());
        assert!(ev(10, 0, 0).check_exact().is_err(), "silent tracer fails");
    }

    #[test]
    fn at_least_accounting() {
        assert!(ev(10, 12, 0).check_at_least().is_ok());
        assert!(ev(10, 7, 3).check_at_least().is_ok());
        assert!(ev(10, 7, 2).check_at_least().is_err());
    }

    #[test]
    fn nothing_recorded() {
        assert!(ev(0, 0, 0).check_none().is_ok());
        assert!(ev(0, 1, 0).check_none().is_err());
    }
}
