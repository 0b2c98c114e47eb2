//! A row's ratio to its reference and its flag. Two costs farther apart than [`BAND`] are
//! explained only by mechanisms measured in the same report ([`measured`]: a mode step, the
//! cold path, the hook): their sizes are taken from the difference and the rest, the residual,
//! is shown. What else differs and no result here measures (the probed site's class, a buffer,
//! how far apart a paced loop's hits came) is listed as `not measured` and never explains, and
//! a difference that would make the cheaper side the dearer stays in view as `contrary`. A cost
//! wholly below zero is shown as negative. A `usdt --spacing-us` row measures the cold path:
//! its flag says so.

use super::measured::{self, Measured, Span};
use super::pairs::Row;
use crate::cost::{wakes, work, Cost, Experiment, Spacing};
use crate::format::{int, int_plus, listed};
use rtrace_measure::interval::Estimate;
use std::cmp::Ordering;

/// Costs within this factor of each other agree.
pub const BAND: f64 = 1.25;

/// How a row's cost compares with its reference.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The row is the reference.
    Reference,
    /// The cost's 95% interval holds zero, or the reference's does not lie above it: no ratio
    /// at this precision.
    Unresolved,
    /// The cost's interval lies wholly below zero: the traced runs were faster.
    Negative(Estimate),
    /// Within [`BAND`].
    Agrees(f64),
    /// Beyond [`BAND`], but 1 lies within the range the two intervals give the ratio.
    Undecided { ratio: f64, low: f64, high: f64 },
    /// Beyond [`BAND`], and mechanisms measured in this report account for the difference.
    Explained { ratio: f64, why: Why },
    /// Beyond [`BAND`], and nothing measured accounts for it.
    Unexplained { ratio: f64, why: Why },
    /// A `usdt --spacing-us` cost against the hot loop: the cold path's measurement.
    Measures { ratio: f64, step: Span },
}

/// What differs between a row and its reference, as its flag says it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Why {
    /// Each measured mechanism with its size: `mode record vs aggregate: +80 ns measured
    /// (decompose)`.
    pub measured: Vec<String>,
    /// The cost minus the reference minus the measured sizes, and its share of the cost;
    /// `None` when nothing was measured.
    pub residual: Option<(Span, f64)>,
    /// What differs that no result here measures.
    pub not_measured: Vec<String>,
    /// What differs the other way: it would make the cheaper side the dearer.
    pub contrary: Vec<String>,
}

impl Verdict {
    /// The ratio shown, if any.
    pub fn ratio(&self) -> Option<f64> {
        match *self {
            Verdict::Reference => Some(1.0),
            Verdict::Unresolved | Verdict::Negative(_) => None,
            Verdict::Agrees(r)
            | Verdict::Undecided { ratio: r, .. }
            | Verdict::Explained { ratio: r, .. }
            | Verdict::Unexplained { ratio: r, .. }
            | Verdict::Measures { ratio: r, .. } => Some(r),
        }
    }

    /// The flag: `reference`, what differs (measured, with the residual; not measured;
    /// contrary), `unexplained — …`, `negative: …`; empty when the costs agree.
    pub fn flag(&self) -> String {
        match self {
            Verdict::Reference => "reference".into(),
            Verdict::Unresolved | Verdict::Agrees(_) => String::new(),
            Verdict::Negative(e) => {
                let by = match (e.low, e.high) {
                    (Some(l), Some(h)) => format!(" ({}–{})", int(-h), int(-l)),
                    _ => String::new(),
                };
                let ns = int(-e.estimate);
                format!("negative: traced ran faster than untraced by {ns} ns{by}")
            }
            Verdict::Measures { step, .. } => format!(
                "measures the cold path: {} ns over the hot loop ({} to {})",
                int_plus(step.estimate),
                int_plus(step.low),
                int_plus(step.high)
            ),
            Verdict::Undecided { low, high, .. } => {
                format!("not resolved (ratio {low:.2}–{high:.2})")
            }
            Verdict::Explained { why, .. } => why.parts().join(" — "),
            Verdict::Unexplained { why, .. } => {
                let mut parts = vec!["unexplained".to_owned()];
                parts.extend(why.parts());
                parts.join(" — ")
            }
        }
    }
}

impl Why {
    /// What differs between `c` and `r`, the dearer side being `dearer` (of `c` against `r`),
    /// and what is left of their difference once the measured mechanisms are taken from it.
    fn of(c: &Cost, r: &Cost, costs: &[Cost], dearer: Ordering) -> Why {
        let mut why = Why::default();
        let mut size: Option<Span> = None;
        for d in differences(c, r, costs) {
            match d.measured {
                Some(m) => {
                    let ns = int_plus(m.ns.estimate);
                    why.measured
                        .push(format!("{}: {ns} ns measured ({})", d.what, m.by));
                    size = Some(size.unwrap_or(Span::ZERO).plus(m.ns));
                }
                None if d.order == Some(dearer.reverse()) => why.contrary.push(d.what),
                None => why.not_measured.push(d.what),
            }
        }
        why.residual = size.map(|m| {
            let rest = Span::of(&c.ns).minus(Span::of(&r.ns)).minus(m);
            (rest, rest.estimate / c.ns.estimate)
        });
        why
    }

    /// Whether the measured mechanisms account for the difference: what is left of it, the
    /// residual, is within [`BAND`] − 1 of the cost (a residual too wide to tell is not
    /// accounted for).
    fn accounts(&self) -> bool {
        self.residual
            .is_some_and(|(_, share)| share.abs() <= BAND - 1.0 + 1e-9)
    }

    /// The flag's parts: measured with the residual, `not measured: …`, `contrary: …`.
    fn parts(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((rest, share)) = self.residual {
            let interval = match rest.low < rest.high {
                true => format!(
                    ", interval {} to {}",
                    int_plus(rest.low),
                    int_plus(rest.high)
                ),
                false => String::new(),
            };
            out.push(format!(
                "{}, residual {} ns ({:.0}% of the cost{interval})",
                self.measured.join("; "),
                int_plus(rest.estimate),
                share.abs() * 100.0
            ));
        }
        for (name, list) in [
            ("not measured", &self.not_measured),
            ("contrary", &self.contrary),
        ] {
            out.extend(listed(list.clone(), "; ", |l| format!("{name}: {l}")));
        }
        out
    }
}

/// Whether `e` lies above zero: its interval's low end, else its estimate.
fn above_zero(e: &Estimate) -> bool {
    Span::of(e).low > 0.0
}

/// `row`'s verdict; `costs`: every cost of the report, where the measured mechanisms are.
pub fn of(row: &Row, costs: &[Cost]) -> Verdict {
    if row.is_reference() {
        return Verdict::Reference;
    }
    let (c, r) = (row.cost, row.reference);
    if Span::of(&c.ns).high < 0.0 {
        return Verdict::Negative(c.ns);
    }
    if !above_zero(&c.ns) || !above_zero(&r.ns) {
        return Verdict::Unresolved;
    }
    let ratio = c.ns.estimate / r.ns.estimate;
    if c.experiment == Experiment::Usdt && c.spacing.apart() && !r.spacing.apart() {
        let step = Span::of(&c.ns).minus(Span::of(&r.ns));
        return Verdict::Measures { ratio, step };
    }
    if (1.0 / BAND..=BAND).contains(&ratio) {
        return Verdict::Agrees(ratio);
    }
    let (cost, reference) = (Span::of(&c.ns), Span::of(&r.ns));
    let (low, high) = (cost.low / reference.high, cost.high / reference.low);
    if (low..=high).contains(&1.0) {
        return Verdict::Undecided { ratio, low, high };
    }
    // Beyond the band, so not 1: the cost is the dearer (`Greater`) or the cheaper side.
    let why = Why::of(c, r, costs, ratio.total_cmp(&1.0));
    match why.accounts() {
        true => Verdict::Explained { ratio, why },
        false => Verdict::Unexplained { ratio, why },
    }
}

/// Said of two different sites whose class a result does not record.
pub const NOT_RECORDED: &str = "site not recorded";

/// One thing that differs between a cost and its reference.
struct Difference {
    what: String,
    /// How the cost's side compares with the reference's (more work, less); `None`: not ordered.
    order: Option<Ordering>,
    /// Its size, where a result of the report measured it.
    measured: Option<Measured>,
}

impl Difference {
    fn new(what: impl Into<String>, order: Option<Ordering>) -> Difference {
        Difference {
            what: what.into(),
            order,
            measured: None,
        }
    }
}

/// What differs between `c` and `r`, measured where `costs` hold the mechanism's size.
fn differences(c: &Cost, r: &Cost, costs: &[Cost]) -> Vec<Difference> {
    let mut out = Vec::new();
    if c.spacing != r.spacing {
        let order = c.spacing.apart().cmp(&r.spacing.apart());
        // Against a hot loop (the usual reference) the row's spacing says it all.
        let what = match r.spacing {
            Spacing::Hot => c.spacing.label(),
            _ => format!("{} vs {}", c.spacing.label(), r.spacing.label()),
        };
        out.push(Difference {
            measured: measured::cold_step(c, r, costs),
            ..Difference::new(what, (order != Ordering::Equal).then_some(order))
        });
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
        out.push(Difference {
            measured: measured::mode_step(c, r, costs),
            ..Difference::new(format!("mode {} vs {}", mode(c), mode(r)), order)
        });
    }
    // Two sites are the same only when both results name them alike.
    if c.probed() && r.probed() && (c.site != r.site || c.site.is_none()) {
        match (&c.class, &r.class) {
            (Some(a), Some(b)) if a.heavier(b) != Some(Ordering::Equal) => {
                let (x, y) = (a.mechanism.label(), b.mechanism.label());
                out.push(Difference::new(format!("site {x} vs {y}"), a.heavier(b)));
            }
            (Some(_), Some(_)) => {}
            _ => out.push(Difference::new(NOT_RECORDED, None)),
        }
    }
    let entry = |x: &Cost| x.class.as_ref().and_then(|k| k.function_entry);
    if let (Some(a), Some(b)) = (entry(c), entry(r)) {
        if a != b {
            let at = |e: bool| match e {
                true => "at a function entry",
                false => "inline",
            };
            let what = format!("site {} vs {}", at(a), at(b));
            out.push(Difference {
                measured: measured::site_step(c, r, costs),
                ..Difference::new(what, Some(a.cmp(&b)))
            });
        }
    }
    if c.return_only != r.return_only {
        let what = "only the return in the measured window (the entry trap fires before the sleep)";
        let order = match c.return_only {
            true => Ordering::Less,
            false => Ordering::Greater,
        };
        out.push(Difference::new(what, Some(order)));
    }
    for (name, a, b) in [
        ("buffer", &c.buffer, &r.buffer),
        ("record", &c.kept, &r.kept),
    ] {
        if let (Some(a), Some(b)) = (a, b) {
            if a != b {
                out.push(Difference::new(format!("{name} {a} vs {b}"), None));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consistency::tests::{cost, decomposed};
    use crate::cost::{Hook, EMPTY_ACTION};
    use crate::site::{Mechanism, SiteClass};
    use rtrace_measure::interval::mean_of;
    use rtrace_measure::usdt::HookKind;

    fn verdict(c: &Cost, r: &Cost) -> Verdict {
        measured_by(c, r, &[])
    }

    /// `c` against `r` in a report that also holds `costs`.
    fn measured_by(c: &Cost, r: &Cost, costs: &[Cost]) -> Verdict {
        of(
            &Row {
                cost: c,
                reference: r,
            },
            costs,
        )
    }

    fn cold(mut c: Cost) -> Cost {
        c.spacing = Spacing::AfterSleep {
            interval_us: 30,
            every: 1,
        };
        c
    }

    #[test]
    fn a_difference_without_a_direction_never_explains() {
        let mut usdt = cost(Experiment::Usdt, "record", 480.0);
        let mut npt = cost(Experiment::Npt, "record", 1300.0);
        (usdt.buffer, npt.buffer) = (Some("1 MiB".into()), Some("8 MiB".into()));
        let v = verdict(&npt, &usdt);
        assert!(matches!(v, Verdict::Unexplained { .. }), "{v:?}");
        assert_eq!(
            v.flag(),
            "unexplained — not measured: buffer 8 MiB vs 1 MiB"
        );
        // eBPF's aggregate and record lie on different paths: no direction either.
        let aggregate = cost(Experiment::Usdt, "aggregate", 380.0);
        let v = verdict(&cost(Experiment::Npt, "record", 900.0), &aggregate);
        assert_eq!(
            v.flag(),
            "unexplained — not measured: mode record vs aggregate"
        );
    }

    #[test]
    fn a_dearer_cold_path_not_measured_is_unexplained_and_a_hot_one_contrary() {
        let hot = cost(Experiment::Usdt, "record", 480.0);
        let mut cold = cold(cost(Experiment::Sweep, "record", 9300.0));
        cold.site = Some("clock_nanosleep".into());
        let v = verdict(&cold, &hot);
        assert!(matches!(v, Verdict::Unexplained { .. }), "{v:?}");
        assert_eq!(
            v.flag(),
            "unexplained — not measured: cold, 1 hit per 30 µs wake-up; site not recorded"
        );
        assert!((v.ratio().unwrap() - 9300.0 / 480.0).abs() < 1e-9);
        // The cheaper side's being cold points the wrong way, and says so.
        cold.ns = hot.ns;
        let dear = cost(Experiment::Usdt, "record", 13900.0);
        assert_eq!(
            verdict(&dear, &cold).flag(),
            "unexplained — not measured: site not recorded — contrary: hot loop vs cold, 1 hit per 30 µs wake-up"
        );
    }

    #[test]
    fn a_mode_that_does_less_is_contrary_and_a_recorded_site_class_is_not_measured() {
        let usdt = cost(Experiment::Usdt, "record", 480.0);
        let mut events = cost(Experiment::Events, EMPTY_ACTION, 13900.0);
        events.site = Some("libc:read".into());
        assert_eq!(
            verdict(&events, &usdt).flag(),
            "unexplained — not measured: site not recorded — contrary: mode empty action vs record"
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
        let v = verdict(&events, &usdt);
        assert!(matches!(v, Verdict::Unexplained { .. }), "{v:?}");
        assert!(v.flag().starts_with(
            "unexplained — not measured: site single-stepped (rip-relative) vs emulated push"
        ));
    }

    /// The same emulated class, one site at a function's entry: a recorded difference that
    /// explains only where usdt measured both hooks.
    #[test]
    fn a_function_entry_is_a_candidate_not_an_explanation() {
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
        usdt.hook = Hook::User(HookKind::Usdt);
        let entry = "site at a function entry vs inline";
        assert_eq!(
            verdict(&uprobe, &usdt).flag(),
            format!("unexplained — not measured: {entry}")
        );
        (usdt.ns, uprobe.ns) = (uprobe.ns, usdt.ns);
        assert_eq!(
            verdict(&uprobe, &usdt).flag(),
            format!("unexplained — contrary: {entry}")
        );
    }

    /// The sweep's uprobe row against usdt's hot USDT reference: the cold path (a spaced usdt
    /// run on the uprobe) and the hook (usdt's hot uprobe) measured, the rest the residual.
    #[test]
    fn the_cold_path_and_the_hook_measured_explain_a_sweep_row() {
        let function_entry = |mut c: Cost, e, hook| {
            c.class = Some(SiteClass {
                instruction: String::new(),
                mechanism: Mechanism::Emulated("push".into()),
                function_entry: Some(e),
            });
            c.hook = Hook::User(hook);
            c
        };
        let usdt = function_entry(
            cost(Experiment::Usdt, "record", 550.0),
            false,
            HookKind::Usdt,
        );
        let uprobe = function_entry(
            cost(Experiment::Usdt, "record", 630.0),
            true,
            HookKind::Uprobe,
        );
        let mut spaced = cold(uprobe.clone());
        (spaced.source, spaced.ns) = ("usdt spaced".into(), mean_of(&[1100.0], 0.0).unwrap());
        let sweep = function_entry(
            cold(cost(Experiment::Sweep, "record", 1150.0)),
            true,
            HookKind::Uprobe,
        );
        let costs = [usdt.clone(), uprobe.clone(), spaced.clone()];
        let v = measured_by(&sweep, &usdt, &costs);
        assert!(matches!(v, Verdict::Explained { .. }), "{v:?}");
        assert_eq!(
            v.flag(),
            "cold, 1 hit per 30 µs wake-up: +470 ns measured (usdt spaced, cold, 1 hit per 30 µs wake-up); site at a function entry vs inline: +80 ns measured (Usdt record, uprobe vs usdt hot), residual +50 ns (4% of the cost)"
        );
        // Without the spaced run the cold path is a label again, and on another site too.
        let v = measured_by(&sweep, &usdt, &costs[..2]);
        assert!(matches!(v, Verdict::Unexplained { .. }), "{v:?}");
        let mut elsewhere = sweep.clone();
        elsewhere.site = Some("clock_nanosleep".into());
        let v = measured_by(&elsewhere, &usdt, &costs);
        assert!(v.flag().contains("not measured: cold"), "{}", v.flag());
        // The spaced row itself is the measurement.
        let v = measured_by(&spaced, &uprobe, &costs);
        assert_eq!(
            v.flag(),
            "measures the cold path: +470 ns over the hot loop (+470 to +470)"
        );
    }

    #[test]
    fn a_mode_step_a_decomposition_measured_explains_with_its_residual() {
        let aggregate = cost(Experiment::Usdt, "aggregate", 400.0);
        let record = cost(Experiment::Npt, "record", 900.0);
        let steps = [decomposed("record", 880.0), decomposed("aggregate", 400.0)];
        let v = measured_by(&record, &aggregate, &steps);
        assert!(matches!(v, Verdict::Explained { .. }), "{v:?}");
        assert_eq!(
            v.flag(),
            "mode record vs aggregate: +480 ns measured (decompose), residual +20 ns (2% of the cost)"
        );
        // The same difference with a measured step far too small: half the cost is left.
        let small = [decomposed("record", 450.0), decomposed("aggregate", 400.0)];
        let v = measured_by(&record, &aggregate, &small);
        assert!(matches!(v, Verdict::Unexplained { .. }), "{v:?}");
        assert_eq!(
            v.flag(),
            "unexplained — mode record vs aggregate: +50 ns measured (decompose), residual +450 ns (50% of the cost)"
        );
    }

    #[test]
    fn a_residual_beyond_a_quarter_of_the_cost_is_unexplained_even_when_its_interval_holds_zero() {
        let with = |mut c: Cost, low, high| {
            (c.ns.low, c.ns.high) = (Some(low), Some(high));
            c
        };
        let aggregate = with(cost(Experiment::Usdt, "aggregate", 400.0), 390.0, 410.0);
        let record = with(cost(Experiment::Npt, "record", 900.0), 700.0, 1100.0);
        let steps = [
            with(decomposed("record", 500.0), 200.0, 800.0),
            with(decomposed("aggregate", 400.0), 395.0, 405.0),
        ];
        // Residual 400 ns, 44% of the cost, anywhere from −115 to 915 ns: not accounted for.
        let v = measured_by(&record, &aggregate, &steps);
        assert!(matches!(v, Verdict::Unexplained { .. }), "{v:?}");
        assert!(
            v.flag()
                .ends_with("residual +400 ns (44% of the cost, interval −115 to +915)"),
            "{}",
            v.flag()
        );
    }

    #[test]
    fn contrary_evidence_stays_in_an_explained_flag() {
        let aggregate = cold(cost(Experiment::Sweep, "aggregate", 400.0));
        let record = cost(Experiment::Npt, "record", 900.0);
        let steps = [decomposed("record", 880.0), decomposed("aggregate", 400.0)];
        let v = measured_by(&record, &aggregate, &steps);
        assert!(matches!(v, Verdict::Explained { .. }), "{v:?}");
        assert!(
            v.flag()
                .ends_with(" — contrary: hot loop vs cold, 1 hit per 30 µs wake-up"),
            "{}",
            v.flag()
        );
    }

    #[test]
    fn a_cost_below_zero_is_negative_and_one_around_zero_unresolved() {
        let usdt = cost(Experiment::Usdt, "record", 480.0);
        let mut sweep = cost(Experiment::Sweep, "record", -80.0);
        (sweep.ns.low, sweep.ns.high) = (Some(-120.0), Some(-40.0));
        let v = verdict(&sweep, &usdt);
        assert_eq!((v.clone(), v.ratio()), (Verdict::Negative(sweep.ns), None));
        assert_eq!(
            v.flag(),
            "negative: traced ran faster than untraced by 80 ns (40–120)"
        );
        let npt = cost(Experiment::Npt, "record", -50.0);
        assert_eq!(
            verdict(&npt, &usdt).flag(),
            "negative: traced ran faster than untraced by 50 ns"
        );
        sweep.ns.high = Some(10.0);
        assert_eq!(verdict(&sweep, &usdt), Verdict::Unresolved);
        // Nothing is a ratio of a reference that is not above zero.
        assert_eq!(verdict(&usdt, &npt), Verdict::Unresolved);
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
        // A mode that does more, not measured here, explains nothing.
        let wakeup = cost(Experiment::Npt, "record-wakeup", 9100.0);
        assert_eq!(
            verdict(&wakeup, &usdt).flag(),
            "unexplained — not measured: mode record-wakeup (wakes reader per event) vs record"
        );
    }
}
