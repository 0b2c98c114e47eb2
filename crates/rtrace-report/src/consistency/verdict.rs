//! A row's ratio to its reference and its flag: what the two results record differs between
//! them (hit spacing, mode, the probed site's class, buffer), and whether that can explain the
//! more expensive side's cost. Nothing is guessed: a mechanism the results do not record is not
//! named, and a difference none of them explains is `unexplained`.

use super::cost::{wakes, work, Cost, Spacing};
use super::pairs::Row;
use rtrace_measure::interval::Estimate;
use std::cmp::Ordering;

/// Costs within this factor of each other agree.
pub const BAND: f64 = 1.25;

/// How a row's cost compares with its reference.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The row is the reference.
    Reference,
    /// The cost's (or the reference's) 95% interval spans zero: no ratio at this precision.
    Unresolved,
    /// Within [`BAND`].
    Agrees(f64),
    /// Beyond [`BAND`], but 1 lies within the range the two intervals give the ratio.
    Undecided { ratio: f64, low: f64, high: f64 },
    /// Beyond [`BAND`], and what differs between the two could make the dearer side dearer.
    Explained { ratio: f64, what: Vec<String> },
    /// Beyond [`BAND`], and nothing recorded explains it (what differs does not, or nothing).
    Unexplained { ratio: f64, what: Vec<String> },
}

impl Verdict {
    /// The ratio shown, if any.
    pub fn ratio(&self) -> Option<f64> {
        match *self {
            Verdict::Reference => Some(1.0),
            Verdict::Unresolved => None,
            Verdict::Agrees(r)
            | Verdict::Undecided { ratio: r, .. }
            | Verdict::Explained { ratio: r, .. }
            | Verdict::Unexplained { ratio: r, .. } => Some(r),
        }
    }

    /// The flag: `reference`, the mechanisms, `unexplained: …`; empty when the costs agree.
    pub fn flag(&self) -> String {
        match self {
            Verdict::Reference => "reference".into(),
            Verdict::Unresolved | Verdict::Agrees(_) => String::new(),
            Verdict::Undecided { low, high, .. } => {
                format!("not resolved (ratio {low:.2}–{high:.2})")
            }
            Verdict::Explained { what, .. } => what.join("; "),
            Verdict::Unexplained { what, .. } if what.is_empty() => "unexplained".into(),
            Verdict::Unexplained { what, .. } => format!("unexplained: {}", what.join("; ")),
        }
    }
}

/// Whether `e`'s 95% interval spans zero.
fn spans_zero(e: &Estimate) -> bool {
    e.contains(0.0) || e.estimate <= 0.0
}

/// `row`'s verdict.
pub fn of(row: &Row) -> Verdict {
    if row.is_reference() {
        return Verdict::Reference;
    }
    let (c, r) = (row.cost, row.reference);
    if spans_zero(&c.ns) || spans_zero(&r.ns) {
        return Verdict::Unresolved;
    }
    let ratio = c.ns.estimate / r.ns.estimate;
    if (1.0 / BAND..=BAND).contains(&ratio) {
        return Verdict::Agrees(ratio);
    }
    let (low, high) = (
        c.ns.low.unwrap_or(c.ns.estimate) / r.ns.high.unwrap_or(r.ns.estimate),
        c.ns.high.unwrap_or(c.ns.estimate) / r.ns.low.unwrap_or(r.ns.estimate),
    );
    if (low..=high).contains(&1.0) {
        return Verdict::Undecided { ratio, low, high };
    }
    let dearer = if ratio > 1.0 {
        Ordering::Greater
    } else {
        Ordering::Less
    };
    let (mut explains, mut other) = (Vec::new(), Vec::new());
    for (what, order) in differences(c, r) {
        // `order`: how the row's side compares with the reference's; `None`: not ordered.
        match order {
            Some(o) if o == dearer.reverse() => other.push(what),
            None if what == NOT_RECORDED => other.push(what),
            _ => explains.push(what),
        }
    }
    if explains.is_empty() {
        return Verdict::Unexplained { ratio, what: other };
    }
    explains.extend(other.into_iter().filter(|w| w == NOT_RECORDED));
    Verdict::Explained {
        ratio,
        what: explains,
    }
}

/// Said of two different sites whose class a result does not record.
pub const NOT_RECORDED: &str = "site not recorded";

/// What differs between `c` and `r`, each with how `c`'s side compares with `r`'s (more work,
/// less, `None`: not ordered).
fn differences(c: &Cost, r: &Cost) -> Vec<(String, Option<Ordering>)> {
    let mut out = Vec::new();
    if c.spacing != r.spacing {
        let order = c.spacing.apart().cmp(&r.spacing.apart());
        // Against a hot loop (the usual reference) the row's spacing says it all.
        let what = match r.spacing {
            Spacing::Hot => c.spacing.label(),
            _ => format!("{} vs {}", c.spacing.label(), r.spacing.label()),
        };
        out.push((what, (order != Ordering::Equal).then_some(order)));
    }
    if c.mode != r.mode {
        let order = match (&c.mode, &r.mode) {
            (Some(a), Some(b)) => work(c.tracer, a, b),
            _ => None,
        };
        let mode = |x: &Cost| match x.mode.as_deref() {
            Some(m) if wakes(x.tracer, m) => format!("{m} (wakes reader per event)"),
            _ => x.mode_label().to_owned(),
        };
        out.push((format!("mode {} vs {}", mode(c), mode(r)), order));
    }
    // Two sites are the same only when both results name them alike.
    if c.probed() && r.probed() && (c.site != r.site || c.site.is_none()) {
        match (&c.class, &r.class) {
            (Some(a), Some(b)) if a.heavier(b) != Some(Ordering::Equal) => {
                let (x, y) = (a.mechanism.label(), b.mechanism.label());
                out.push((format!("site {x} vs {y}"), a.heavier(b)));
            }
            (Some(_), Some(_)) => {}
            _ => out.push((NOT_RECORDED.into(), None)),
        }
    }
    let entry = |x: &Cost| x.class.as_ref().and_then(|k| k.function_entry);
    if let (Some(a), Some(b)) = (entry(c), entry(r)) {
        if a != b {
            let at = |e: bool| {
                if e {
                    "at a function entry (its ret follows the trap)"
                } else {
                    "inline"
                }
            };
            out.push((format!("site {} vs {}", at(a), at(b)), Some(a.cmp(&b))));
        }
    }
    if c.return_only != r.return_only {
        let what = "only the return in the measured window (the entry trap fires before the sleep)";
        let order = if c.return_only {
            Ordering::Less
        } else {
            Ordering::Greater
        };
        out.push((what.into(), Some(order)));
    }
    for (name, a, b) in [
        ("buffer", &c.buffer, &r.buffer),
        ("record", &c.kept, &r.kept),
    ] {
        if let (Some(a), Some(b)) = (a, b) {
            if a != b {
                out.push((format!("{name} {a} vs {b}"), None));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consistency::cost::{Experiment, EMPTY_ACTION};
    use crate::consistency::site::{Mechanism, SiteClass};
    use crate::consistency::tests::cost;

    fn verdict(c: &Cost, r: &Cost) -> Verdict {
        of(&Row {
            cost: c,
            reference: r,
        })
    }

    #[test]
    fn a_dearer_cold_path_explains_a_dearer_cost() {
        let hot = cost(Experiment::Usdt, "record", 480.0);
        let mut cold = cost(Experiment::Sweep, "record", 9300.0);
        cold.spacing = Spacing::AfterSleep {
            interval_us: 30,
            every: 1,
        };
        cold.site = Some("clock_nanosleep".into());
        let v = verdict(&cold, &hot);
        assert_eq!(v.flag(), "cold, 1 hit per 30 µs wake-up; site not recorded");
        assert!((v.ratio().unwrap() - 9300.0 / 480.0).abs() < 1e-9);
        // The dearer side's being cold explains the other's being cheaper; its being hot
        // explains nothing.
        assert!(matches!(verdict(&hot, &cold), Verdict::Explained { .. }));
        cold.ns = hot.ns;
        let dear = cost(Experiment::Usdt, "record", 13900.0);
        assert_eq!(
            verdict(&dear, &cold).flag(),
            "unexplained: hot loop vs cold, 1 hit per 30 µs wake-up; site not recorded"
        );
    }

    #[test]
    fn a_mode_that_does_less_explains_nothing_and_a_recorded_site_class_does() {
        let usdt = cost(Experiment::Usdt, "record", 480.0);
        let mut events = cost(Experiment::Events, EMPTY_ACTION, 13900.0);
        events.site = Some("libc:read".into());
        let v = verdict(&events, &usdt);
        assert!(matches!(v, Verdict::Unexplained { .. }), "{v:?}");
        assert_eq!(
            v.flag(),
            "unexplained: mode empty action vs record; site not recorded"
        );
        let class = |m| {
            Some(SiteClass {
                instruction: String::new(),
                mechanism: m,
                function_entry: None,
            })
        };
        events.class = class(Mechanism::SingleStepped("rip-relative".into()));
        let mut usdt = usdt;
        usdt.class = class(Mechanism::Emulated("push".into()));
        assert_eq!(
            verdict(&events, &usdt).flag(),
            "site single-stepped (rip-relative) vs emulated push"
        );
    }

    /// The same emulated class, one site at a function's entry: its `ret` after the trap is
    /// the recorded difference, and only the entry's side can be the dearer for it.
    #[test]
    fn a_function_entry_explains_a_dearer_cost_than_an_inline_site() {
        let class = |op: &str, entry| {
            Some(SiteClass {
                instruction: String::new(),
                mechanism: Mechanism::Emulated(op.into()),
                function_entry: Some(entry),
            })
        };
        let mut usdt = cost(Experiment::Usdt, "aggregate", 420.0);
        (usdt.site, usdt.class) = (Some("rtrace:event".into()), class("nop", false));
        let mut uprobe = cost(Experiment::Usdt, "aggregate", 709.0);
        (uprobe.site, uprobe.class) = (Some("rtrace_marker_hit".into()), class("push", true));
        assert_eq!(
            verdict(&uprobe, &usdt).flag(),
            "site at a function entry (its ret follows the trap) vs inline"
        );
        (usdt.ns, uprobe.ns) = (uprobe.ns, usdt.ns);
        assert!(matches!(
            verdict(&uprobe, &usdt),
            Verdict::Unexplained { .. }
        ));
    }

    #[test]
    fn close_costs_agree_and_wide_intervals_decide_nothing() {
        let usdt = cost(Experiment::Usdt, "record", 480.0);
        let v = verdict(&cost(Experiment::Npt, "record", 500.0), &usdt);
        assert_eq!((v.flag(), v.ratio().is_some()), (String::new(), true));
        let mut wide = cost(Experiment::Sweep, "record", 650.0);
        wide.ns.low = Some(-240.0);
        wide.ns.high = Some(1530.0);
        assert_eq!(verdict(&wide, &usdt), Verdict::Unresolved);
        (wide.ns.low, wide.ns.high) = (Some(220.0), Some(1050.0));
        assert!(verdict(&wide, &usdt)
            .flag()
            .starts_with("not resolved (ratio 0.46–2.19)"));
        let wakeup = cost(Experiment::Sweep, "record-wakeup", 9100.0);
        assert_eq!(
            verdict(&wakeup, &usdt).flag(),
            "mode record-wakeup (wakes reader per event) vs record"
        );
    }
}
