//! The answer first: a few sentences that every report (terminal, Markdown, HTML) opens with —
//! what a traced hit costs per tracer and hook, what dormant probes cost, how far each
//! configuration moves the wake-up latency, and the conditions that qualify those numbers. Each
//! section carries its own (`crate::doc::Section::summary`); rate, npt and events make theirs
//! in their modules.

use crate::format::{listed, mode_label, us};
use rtrace_measure::probe_cost::{dormant, per_hit};
use rtrace_measure::sweep::{Configuration, Source, SweepResult};
use rtrace_measure::usdt::{Case, HookKind, UsdtResult};

/// `575 ns (560–590)`, or `575 ns` without an interval.
pub(crate) fn ns_with_interval(e: &rtrace_measure::interval::Estimate) -> String {
    match (e.low, e.high) {
        (Some(l), Some(h)) => format!("{:.0} ns ({l:.0}–{h:.0})", e.estimate),
        _ => format!("{:.0} ns", e.estimate),
    }
}

/// The per-hit cost of every traced run of `hook`, cheapest first: (label, estimate, in
/// ratios).
pub fn hit_costs(
    r: &UsdtResult,
    hook: HookKind,
) -> Vec<(String, rtrace_measure::interval::Estimate, bool)> {
    let mut costs: Vec<_> = r
        .runs
        .iter()
        .filter(|c| c.case == Case::Traced && c.hook_kind == hook)
        .filter_map(|c| {
            let e = per_hit(r, c)?;
            Some((mode_label(c), e, r.in_ratios(c)))
        })
        .collect();
    costs.sort_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate));
    costs
}

/// The sentences of a usdt result.
pub fn usdt(r: &UsdtResult) -> Vec<String> {
    let mut out = Vec::new();
    for hook in HookKind::ALL {
        let list: Vec<String> = hit_costs(r, hook)
            .iter()
            .map(|(name, e, in_ratios)| {
                let lossy = if *in_ratios {
                    ""
                } else {
                    " [lossy: left out of ratios]"
                };
                format!("{name} {}{lossy}", ns_with_interval(e))
            })
            .collect();
        if !list.is_empty() {
            out.push(format!("{hook} hook: {}.", list.join(", ")));
        }
    }
    if !out.is_empty() {
        out.insert(0, "Extra ns per traced hit over case 0 (mean without disturbed samples, 95% interval over rounds), cheapest first:".into());
    }
    let d = dormant(r);
    let worst = d
        .iter()
        .filter_map(|x| Some((x, x.net_median.as_ref().or(x.median.as_ref())?)))
        .max_by(|a, b| a.1.estimate.abs().total_cmp(&b.1.estimate.abs()));
    if let Some((run, e)) = worst {
        out.push(format!(
            "Dormant probes (cases 2 and 3, {} runs) cost at most {:+.2} ns per call over case 0 by median ({}), means without disturbed samples {:.2}–{:.2}× case 0.",
            d.len(),
            e.estimate,
            run.run,
            d.iter().map(|x| x.mean_ratio).fold(f64::INFINITY, f64::min),
            d.iter().map(|x| x.mean_ratio).fold(f64::NEG_INFINITY, f64::max),
        ));
    }
    out
}

/// The sentences of a sweep: each configuration's median wake-up latency against no tracing
/// (with its interval over rounds), and, given `usdt` measured on the same machine, each
/// user-space shift over the per-hit cost of the same tracer.
pub fn sweep(r: &SweepResult, usdt: Option<&rtrace_measure::usdt::UsdtResult>) -> Vec<String> {
    let mut out = Vec::new();
    let shifts = crate::sweep::shift::shifts(r, usdt);
    for source in [Source::Builtin, Source::Cyclictest] {
        let Some(none) = r.run(Configuration::None, source) else {
            continue;
        };
        let mine: Vec<_> = shifts.iter().filter(|s| s.run.source == source).collect();
        let list: Vec<String> = mine
            .iter()
            .filter_map(|s| {
                Some(format!(
                    "{} {}",
                    s.run.config,
                    crate::sweep::shift::us_shift(s.p50.as_ref()?)
                ))
            })
            .collect();
        // Traced and untraced runs are separate processes: the machine's drift between them is
        // in these shifts, not in the paired ones.
        let paired_below = if mine.iter().any(|s| s.paired.is_some()) {
            " These compare separate runs, so the machine's drift between runs is in them; the paired line below compares wake-ups of the same runs."
        } else {
            ""
        };
        let none = us(none.latency.p50_ns);
        out.extend(listed(list, ", ", |l| {
            format!("Median wake-up latency against no tracing ({none} µs, {source}; 95% interval over rounds): {l}.{paired_below}")
        }));
        let ratios: Vec<String> = mine
            .iter()
            .filter_map(|s| {
                Some(format!(
                    "{} {:.2}× ({} µs per hit)",
                    s.run.config,
                    s.ratio()?,
                    us(s.per_hit?.estimate)
                ))
            })
            .collect();
        out.extend(listed(ratios, ", ", |l| {
            format!("Median shift ÷ the per-hit cost `usdt` measured for the same tracer and hook ({source}): {l}.")
        }));
        let paired: Vec<String> = mine
            .iter()
            .filter_map(|s| {
                let p = s.paired.as_ref()?;
                let over = s
                    .paired_ratio()
                    .map(|x| format!(", {x:.2}× the per-hit cost"))
                    .unwrap_or_default();
                Some(format!(
                    "{} {}{over}",
                    s.run.config,
                    crate::sweep::shift::us_shift(p)
                ))
            })
            .collect();
        out.extend(listed(paired, "; ", |l| {
            format!("Median latency of the wake-ups with the tracepoint against the same runs' wake-ups without it (--probe-at alternate, {source}): {l}.")
        }));
        let split: Vec<String> = (mine.iter())
            .filter_map(|s| {
                let t = rtrace_measure::sweep::two_states(&s.run)?;
                let side = |(k, shift, untraced): (usize, f64, f64)| {
                    format!(
                        "{k} rounds +{} µs (untraced wake-ups {} µs)",
                        us(shift),
                        us(untraced)
                    )
                };
                Some(format!(
                    "{} {} against {}",
                    s.run.config,
                    side(t.low),
                    side(t.high)
                ))
            })
            .collect();
        out.extend(listed(split, "; ", |l| {
            format!("Rounds in two states of the machine, their paired shifts apart by more than 4 standard deviations of either group (so the interval above spans both): {l}.")
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, assert_has};

    #[test]
    fn the_summary_numbers_are_the_results() {
        let r = fixtures::usdt();
        let lines = usdt(&r);
        let base = r.baseline(HookKind::Usdt).unwrap();
        for c in r.runs.iter().filter(|c| c.case == Case::Traced) {
            // Round by round, the run's mean without disturbed samples minus case 0's.
            let rounds = c.rounds.iter().zip(&base.rounds);
            let per_round: Vec<f64> = rounds
                .map(|(a, b)| a.steady_mean_ns() - b.steady_mean_ns())
                .collect();
            let want = per_round.iter().sum::<f64>() / per_round.len() as f64;
            let label = c.tracer.label(c.variant.as_deref());
            assert_has(&lines[1], &[&format!("{label} {want:.0} ns")]);
        }
        assert!(lines[1].starts_with("usdt hook: "), "{}", lines[1]);
        assert_has(&lines[1], &["[lossy: left out of ratios]"]);
        let dormant = "Dormant probes (cases 2 and 3, 4 runs)";
        assert!(lines.iter().any(|l| l.starts_with(dormant)), "{lines:?}");
        // The section's sentences close with the conditions its warnings name.
        let report = crate::Report::one(crate::AnyResult::from(r.clone()));
        let summary = &crate::document(&report).unwrap().sections[0].summary;
        assert_eq!(summary[..lines.len()], lines);
        assert!(
            summary.last().unwrap().starts_with("Conditions: "),
            "{summary:?}"
        );

        let s = fixtures::sweep("PREEMPT_RT", 1);
        let lines = sweep(&s, None);
        let none = s.run(Configuration::None, Source::Builtin).unwrap();
        let ftrace = s.run(Configuration::UsdtFtrace, Source::Builtin).unwrap();
        let d = ftrace.latency.p50_ns - none.latency.p50_ns;
        assert_has(&lines[0], &[&format!("usdt-ftrace +{} (", us(d))]);
        assert!(
            !lines.iter().any(|l| l.contains("per-hit")),
            "no usdt given"
        );
        let mut u = fixtures::usdt();
        u.config.run.tracer_options = s.config.run.tracer_options.clone();
        let lines = sweep(&s, Some(&u));
        let per_hit = lines
            .iter()
            .find(|l| l.starts_with("Median shift ÷ the per-hit cost"));
        assert_has(per_hit.expect("a per-hit sentence"), &["usdt-ftrace "]);
    }
}
