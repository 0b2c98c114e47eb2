//! The mechanisms a report measures, the only ones that can explain why two costs differ: the
//! step between two modes of one tracer on one hook, where a `usdt --decompose` of the same
//! report measured both; the cold path, where a `usdt --spacing-us` measured the tracer, hook
//! and mode with hits apart beside a hot loop; the site, where plain `usdt` measured the
//! tracer and mode on both hooks. Every size is a difference of ns per hit with the widest
//! interval its two sides allow.

use crate::cost::{Cost, Experiment, Hook, Spacing};
use rtrace_measure::interval::Estimate;

/// ns per hit with an interval; a side without one counts as its estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

impl Span {
    pub fn of(e: &Estimate) -> Span {
        Span {
            estimate: e.estimate,
            low: e.low.unwrap_or(e.estimate),
            high: e.high.unwrap_or(e.estimate),
        }
    }

    /// `self − other`, from `self`'s low minus `other`'s high to the other way round.
    pub fn minus(self, other: Span) -> Span {
        Span {
            estimate: self.estimate - other.estimate,
            low: self.low - other.high,
            high: self.high - other.low,
        }
    }

    pub fn plus(self, other: Span) -> Span {
        Span {
            estimate: self.estimate + other.estimate,
            low: self.low + other.low,
            high: self.high + other.high,
        }
    }

    pub const ZERO: Span = Span {
        estimate: 0.0,
        low: 0.0,
        high: 0.0,
    };
}

/// A mechanism's size, measured in this report.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The source that measured it: `decompose`, `decompose [usdt-2]`.
    pub by: String,
    pub ns: Span,
}

/// What `c`'s mode costs more than `r`'s on their tracer and hook: a decomposition's step of
/// `c`'s mode minus its step of `r`'s, both from the same result; `None` where no
/// decomposition measured both.
pub fn mode_step(c: &Cost, r: &Cost, costs: &[Cost]) -> Option<Measured> {
    if (c.tracer, c.hook) != (r.tracer, r.hook) {
        return None;
    }
    let steps = |mode| costs.iter().filter(move |x| is_step(x, c, mode));
    steps(&c.mode).find_map(|a| {
        let b = steps(&r.mode).find(|b| b.source == a.source)?;
        Some(Measured {
            by: a.source.clone(),
            ns: Span::of(&a.ns).minus(Span::of(&b.ns)),
        })
    })
}

/// What hits after a sleep cost more than back to back on `c`'s tracer, hook, site and mode: a
/// `usdt --spacing-us` cost minus plain `usdt`'s hot one; `None` unless `c`'s hits came after
/// sleeps and `r`'s back to back, or where no spaced `usdt` measured that site.
pub fn cold_step(c: &Cost, r: &Cost, costs: &[Cost]) -> Option<Measured> {
    if !matches!(c.spacing, Spacing::AfterSleep { .. }) || r.spacing != Spacing::Hot {
        return None;
    }
    let spaced = usdt_cost(costs, c, c.hook, |s| {
        matches!(s, Spacing::AfterSleep { .. })
    })?;
    let hot = usdt_cost(costs, c, c.hook, |s| s == Spacing::Hot)?;
    Some(Measured {
        by: format!("{}, {}", spaced.source, spaced.spacing.label()),
        ns: Span::of(&spaced.ns).minus(Span::of(&hot.ns)),
    })
}

/// What `c`'s hook costs more than `r`'s on their tracer and mode, both hot: plain `usdt`'s
/// two costs; `None` on one hook, or where `usdt` did not measure both.
pub fn site_step(c: &Cost, r: &Cost, costs: &[Cost]) -> Option<Measured> {
    if c.tracer != r.tracer || c.mode != r.mode || c.hook == r.hook {
        return None;
    }
    let hot = |s| s == Spacing::Hot;
    let (a, b) = (
        usdt_cost(costs, c, c.hook, hot)?,
        usdt_cost(costs, c, r.hook, hot)?,
    );
    Some(Measured {
        by: format!("{}, {} vs {} hot", a.source, a.hook.name(), b.hook.name()),
        ns: Span::of(&a.ns).minus(Span::of(&b.ns)),
    })
}

/// Plain `usdt`'s cost of `like`'s tracer and mode on `hook` (at `like`'s site, on its own hook)
/// with a spacing `spacing` takes.
fn usdt_cost<'a>(
    costs: &'a [Cost],
    like: &Cost,
    hook: Hook,
    spacing: impl Fn(Spacing) -> bool,
) -> Option<&'a Cost> {
    costs.iter().find(|x| {
        x.experiment == Experiment::Usdt
            && (x.tracer, x.hook) == (like.tracer, hook)
            && (hook != like.hook || x.site == like.site)
            && x.mode == like.mode
            && spacing(x.spacing)
    })
}

/// Whether `x` is a decomposition's step of `mode` on `like`'s tracer and hook.
fn is_step(x: &Cost, like: &Cost, mode: &Option<String>) -> bool {
    x.experiment == Experiment::Decompose
        && (x.tracer, x.hook) == (like.tracer, like.hook)
        && mode.is_some()
        && x.mode == *mode
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consistency::tests::{cost, decomposed};
    use crate::cost::Experiment::Usdt;
    use crate::format::int_plus;

    #[test]
    fn a_difference_s_interval_is_the_widest_its_sides_allow() {
        let span = |estimate, low, high| Span {
            estimate,
            low,
            high,
        };
        let d = span(460.0, 450.0, 470.0).minus(span(380.0, 377.0, 383.0));
        assert_eq!(d, span(80.0, 67.0, 93.0));
        assert_eq!(
            (int_plus(80.0), int_plus(-35.2), int_plus(0.3)),
            ("+80".into(), "−35".into(), "0".into())
        );
    }

    #[test]
    fn only_a_decomposition_that_measured_both_modes_on_the_hook_gives_a_step() {
        let row = cost(Usdt, "record", 460.0);
        let reference = cost(Usdt, "aggregate", 380.0);
        let measured = [decomposed("record", 455.0), decomposed("aggregate", 375.0)];
        let step = mode_step(&row, &reference, &measured).expect("both measured");
        assert_eq!((step.by.as_str(), step.ns.estimate), ("decompose", 80.0));
        assert!(mode_step(&row, &reference, &measured[..1]).is_none());
        let mut elsewhere = measured.clone();
        elsewhere[1].source = "decompose [usdt-3]".into();
        assert!(mode_step(&row, &reference, &elsewhere).is_none());
        let plain = [cost(Usdt, "record", 455.0), cost(Usdt, "aggregate", 375.0)];
        assert!(mode_step(&row, &reference, &plain).is_none());
    }
}
