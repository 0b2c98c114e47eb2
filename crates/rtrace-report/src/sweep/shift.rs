//! How far each configuration moves the wake-up latency against `none`, per source (median and
//! mean, 95% interval over rounds), beside the per-hit cost that `usdt` measured for the same
//! tracer and mode when the report holds a usdt result. The user-space tracepoint fires inside
//! the measured window, so its shift is about one hit's cost, usually more: after a sleep the
//! probe's path (trap, tracer code, buffers) is cold, in the hot `usdt` loop it is not.

use crate::doc::{columns, Cell, Column, Table};
use crate::format::us;
use rtrace_measure::interval::Estimate;
use rtrace_measure::sweep::{
    paired_shift, shift, Configuration, LatencyStat, Source, Space, SweepResult, SweepRun,
};
use rtrace_measure::usdt::{Case, HookKind, UsdtResult};
use rtrace_tracer::Instrumentation;

/// What the table shows, for its caption.
pub const NOTE: &str = "Latency shift against the `none` runs right before and after each configuration's run in the same round (95% Student-t interval over the rounds' differences); with `--probe-at alternate`, also against the same run's own wake-ups without the tracepoint (every other one: paired 2 periods apart, whatever state the machine is in; a tracer's background work, its consumer and buffers, weighs on both halves and is left out of that column), beside the extra ns per hit that `usdt` measured for the same tracer, mode and hook (cyclictest's rows: the uretprobe's, or LTTng's tracepoint; case-1 mean minus case-0 mean, its interval over its rounds); the built-in loop's user-space tracepoint and cyclictest's uretprobe (or LTTng's preloaded wrapper) fire inside the measured window, so a shift of about one hit's cost is expected, more because the path is cold after each sleep. A shift whose interval spans zero is not resolved at this precision: it gets no ratio (`unresolved`)";

/// One configuration's shift, and the per-hit cost it is compared with.
#[derive(Debug, Clone)]
pub struct Shift {
    pub run: SweepRun,
    pub p50: Option<Estimate>,
    pub mean: Option<Estimate>,
    /// `--probe-at alternate`: the p50 minus the same run's wake-ups without the tracepoint.
    pub paired: Option<Estimate>,
    /// `usdt`'s extra ns per hit for this configuration's tracer and mode (user space only).
    pub per_hit: Option<Estimate>,
}

impl Shift {
    /// p50 shift ÷ per-hit cost.
    pub fn ratio(&self) -> Option<f64> {
        over(self.p50?, self.per_hit?)
    }

    /// Paired p50 shift ÷ per-hit cost.
    pub fn paired_ratio(&self) -> Option<f64> {
        over(self.paired?, self.per_hit?)
    }
}

/// No ratio of a shift that is not resolved: its interval spans zero.
fn over(shift: Estimate, per_hit: Estimate) -> Option<f64> {
    (per_hit.estimate > 0.0 && resolved(&shift)).then(|| shift.estimate / per_hit.estimate)
}

/// The shift's 95% interval does not span zero (one without an interval, a single round,
/// counts as resolved).
pub fn resolved(shift: &Estimate) -> bool {
    !shift.contains(0.0)
}

/// `+0.85 (0.38–1.31) µs`, or `not resolved at this precision (±0.72 µs)` when the interval
/// spans zero.
pub fn us_shift(shift: &Estimate) -> String {
    match (resolved(shift), shift.low, shift.high) {
        (false, Some(l), Some(h)) => {
            format!("not resolved at this precision (±{} µs)", us((h - l) / 2.0))
        }
        _ => format!("{} µs", us_interval(shift)),
    }
}

/// The hook that fires in `config`'s runs from `source`: the built-in loop's is the
/// configuration's own; cyclictest's cross-check puts a uretprobe on libc's `clock_nanosleep`
/// for the uprobe-based tracers (LTTng's preloaded wrapper fires the same tracepoint).
pub(crate) fn fired_hook(config: Configuration, source: Source) -> Option<HookKind> {
    match (source, config.instrumentation()) {
        (Source::Cyclictest, Instrumentation::Usdt) => Some(HookKind::Uretprobe),
        _ => config.hook_kind(),
    }
}

/// `usdt`'s per-hit cost on the hook that fires in `config`'s runs from `source` (USDT probe,
/// uprobe, uretprobe: see [`fired_hook`]) for its tracer in the mode the sweep used, when both
/// ran with the same recording mode (`stream`, `overwrite`).
pub fn per_hit(
    sweep: &SweepResult,
    usdt: &UsdtResult,
    config: Configuration,
    source: Source,
) -> Option<Estimate> {
    if config.space() != Space::User
        || sweep.config.run.tracer_options["record"] != usdt.config.run.tracer_options["record"]
    {
        return None;
    }
    let mode = sweep.config.run.mode(config.tracer());
    let hook = fired_hook(config, source);
    let run = usdt.runs.iter().find(|c| {
        c.case == Case::Traced
            && Some(c.hook_kind) == hook
            && c.tracer == config.tracer()
            && (mode.is_none() || usdt.run_mode(c) == mode)
    })?;
    rtrace_measure::probe_cost::per_hit(usdt, run)
}

/// Every traced (configuration, source) of `r` against `none` of the same source.
pub fn shifts(r: &SweepResult, usdt: Option<&UsdtResult>) -> Vec<Shift> {
    r.runs
        .iter()
        .filter(|x| x.config != Configuration::None)
        .filter_map(|x| {
            let none = r.run(Configuration::None, x.source)?;
            Some(Shift {
                run: x.clone(),
                p50: shift(x, none, LatencyStat::P50),
                mean: shift(x, none, LatencyStat::Mean),
                paired: paired_shift(x, LatencyStat::P50),
                per_hit: usdt.and_then(|u| per_hit(r, u, x.config, x.source)),
            })
        })
        .collect()
}

/// `+1.23 (1.10–1.36)` or `+0.58 (−1.37 to 2.52)` in µs, or `+1.23` without an interval.
pub fn us_interval(e: &Estimate) -> String {
    let sign = if e.estimate >= 0.0 { "+" } else { "−" };
    let mut s = format!("{sign}{}", us(e.estimate.abs()));
    if let (Some(l), Some(h)) = (e.low, e.high) {
        // "−1.37–2.52" reads as a range of two negatives: spell it out then.
        let to = if l < 0.0 { " to " } else { "–" };
        s.push_str(&format!(" ({}{to}{})", us(l), us(h)).replace('-', "−"));
    }
    s
}

/// The shifts as a table, in µs; `None` without a `none` run.
pub fn table(r: &SweepResult, usdt: Option<&UsdtResult>) -> Option<Table> {
    let cell = |e: Option<Estimate>| {
        Cell::or_missing(e, |e| {
            Cell::estimate(crate::doc::interval(&e), 1000.0, us_interval(&e))
        })
    };
    // A shift whose interval spans zero has no ratio: say so rather than leave it blank.
    let ratio = |x: Option<f64>, shift: Option<Estimate>, per_hit: Option<Estimate>| match x {
        None if per_hit.is_some() && shift.is_some_and(|e| !resolved(&e)) => {
            Cell::text("unresolved")
        }
        x => Cell::or_missing(x, |x| Cell::num(x, format!("{x:.2}"))),
    };
    let rows: Vec<Vec<Cell>> = shifts(r, usdt)
        .into_iter()
        .map(|s| {
            vec![
                Cell::text(s.run.config.to_string()),
                Cell::text(s.run.source.to_string()),
                cell(s.p50),
                cell(s.mean),
                cell(s.paired),
                Cell::or_missing(s.per_hit, |e| {
                    Cell::estimate(
                        crate::doc::interval(&e),
                        1000.0,
                        us_interval(&e).trim_start_matches('+').into(),
                    )
                }),
                ratio(s.ratio(), s.p50, s.per_hit),
                ratio(s.paired_ratio(), s.paired, s.per_hit),
            ]
        })
        .collect();
    let mut cols = columns(&["configuration", "source"]);
    cols.extend(
        [
            "p50 − none",
            "mean − none",
            "p50 − own untraced wake-ups",
            "usdt per-hit",
        ]
        .map(|n| Column::new(n).shown_unit("µs")),
    );
    cols.extend(columns(&["p50 shift ÷ per-hit", "paired ÷ per-hit"]));
    (!rows.is_empty()).then(|| Table::new("shift", 2, cols).rows(rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use rtrace_measure::probe_cost::per_hit;
    use rtrace_tracer::TracerKind;
    use Configuration::{UretprobeEbpf, UsdtFtrace};
    use TracerKind::{Ebpf, Ftrace};

    #[test]
    fn a_shift_whose_interval_spans_zero_is_not_resolved_and_has_no_ratio() {
        let e = |low, high| Estimate {
            estimate: 500.0,
            low: Some(low),
            high: Some(high),
            rounds: 3,
            confidence: 0.95,
        };
        let per_hit = e(400.0, 600.0);
        assert_eq!(
            us_shift(&e(-300.0, 1300.0)),
            "not resolved at this precision (±0.80 µs)"
        );
        assert_eq!(over(e(-300.0, 1300.0), per_hit), None);
        assert_eq!(us_shift(&e(300.0, 700.0)), "+0.50 (0.30–0.70) µs");
        assert_eq!(over(e(300.0, 700.0), per_hit), Some(1.0));
    }

    #[test]
    fn shifts_pair_rounds_and_carry_an_interval() {
        let r = fixtures::sweep("PREEMPT_RT", 1);
        let s = shifts(&r, None);
        assert!(!s.is_empty());
        for x in &s {
            let none = r.run(Configuration::None, x.run.source).unwrap();
            let p50 = x.p50.unwrap();
            // The fixture's rounds sit ±50 ns around the pooled p50 in both runs: the paired
            // differences are the pooled difference exactly.
            assert!((p50.estimate - (x.run.latency.p50_ns - none.latency.p50_ns)).abs() < 1e-6);
            assert_eq!(p50.rounds, 3);
            assert!(p50.low.unwrap() < p50.estimate && p50.estimate < p50.high.unwrap());
            assert!(x.per_hit.is_none(), "no usdt result given");
        }
        let t = table(&r, None).unwrap();
        assert!(t.rows.iter().all(|row| row.len() == t.columns.len()));
        let p50 = s[0].p50.unwrap();
        let us = |x: f64| x / 1e3;
        let (estimate, low, high) = (us(p50.estimate), p50.low.map(us), p50.high.map(us));
        let want = crate::doc::Value::Interval {
            estimate,
            low,
            high,
        };
        assert_eq!(t.rows[0][2].value, want, "µs at full precision");
    }

    #[test]
    fn per_hit_comes_from_the_same_tracer_and_mode() {
        let mut r = fixtures::sweep("PREEMPT_RT", 1);
        let mut u = fixtures::usdt();
        u.config.run.tracer_options = r.config.run.tracer_options.clone();
        let expected = per_hit(&u, &u.runs[1]).unwrap(); // ftrace case 1
        let s = shifts(&r, Some(&u));
        let ftrace = s.iter().find(|x| x.run.config == UsdtFtrace).unwrap();
        assert_eq!(ftrace.per_hit, Some(expected));
        assert!(ftrace.ratio().is_some());
        // cyclictest's row of the same configuration fires a uretprobe: its per-hit cost is the
        // uretprobe's, not the USDT probe's. A mode-carrying tracer on another hook: its variant
        // names both ("record, uretprobe").
        let more = [
            (UsdtFtrace, Source::Cyclictest, 13_000),
            (UretprobeEbpf, Source::Builtin, 12_500),
        ];
        r.runs
            .extend(more.map(|(c, src, ns)| fixtures::sweep_run(c, src, ns)));
        let runs = [
            (TracerKind::None, Case::Baseline, 15),
            (Ftrace, Case::Traced, 1_000),
        ];
        for (tracer, case, ns) in runs.into_iter().chain([(Ebpf, Case::Traced, 900)]) {
            let mut run = fixtures::case(tracer, case, ns, 0);
            run.hook_kind = HookKind::Uretprobe;
            run.variant = (tracer == Ebpf).then(|| "record, uretprobe".into());
            u.runs.push(run);
        }
        let n = u.runs.len();
        let (uretprobe, ebpf) = (
            per_hit(&u, &u.runs[n - 2]).unwrap(),
            per_hit(&u, &u.runs[n - 1]),
        );
        let s = shifts(&r, Some(&u));
        let row = |c, src| {
            s.iter()
                .find(|x| x.run.config == c && x.run.source == src)
                .unwrap()
        };
        assert_eq!(row(UsdtFtrace, Source::Cyclictest).per_hit, Some(uretprobe));
        assert!(uretprobe.estimate > expected.estimate + 300.0);
        assert!(ebpf.is_some() && row(UretprobeEbpf, Source::Builtin).per_hit == ebpf);
        // Another recording mode: not the same measurement, no per-hit cost.
        u.config.run.tracer_options["record"] = "overwrite".into();
        assert!(shifts(&r, Some(&u)).iter().all(|x| x.per_hit.is_none()));
    }
}
