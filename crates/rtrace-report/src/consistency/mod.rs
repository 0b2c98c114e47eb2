//! "Consistency: one hook, one cost": the same tracer on the same kind of hook, measured by
//! several experiments of one machine, side by side. Each source gives its per-hit costs
//! ([`sources`], the probed site's class through [`site`]), [`pairs`] sets each beside its
//! reference, [`verdict`] says how far apart the two are, what the results record that differs
//! between them, and whether a mechanism measured in the same report ([`measured`]) accounts
//! for it. Built when a report holds more than one experiment.

pub mod measured;
pub mod pairs;
pub mod sources;
pub mod verdict;

use crate::cost::{self, Cost};
use crate::doc::{columns, Block, Cell, Column, Section, Table};
use crate::format::{int, int_signed, listed};
use crate::result::{Entry, Report};
use pairs::Row;
use rtrace_measure::interval::Estimate;
use rtrace_tracer::TracerKind;
use verdict::Verdict;

/// How to read the tables.
pub const NOTE: &str = "The per-hit cost of one tracer on one kind of hook, from every experiment that measured it in the same mode (an experiment that measured the hook only in modes no other did, as events' empty programs, beside the hook's first row), and its ratio to the reference: plain `usdt`'s hot loop in the same mode, else the hook's first row. What each source measures: `usdt`, `usdt spaced`, `decompose`: case 1 minus case 0 by mean without disturbed samples; events 04–07: (traced − untraced time) / reads, per round; `npt`: the mean gap of the iterations that fired the probe minus the same with no tracer (rounds pooled: no interval); `sweep`: the median latency of the traced wake-ups minus the same runs' untraced ones (`--probe-at alternate`), else minus `none`'s; `cyclictest`: the median wake-up latency minus `none`'s (its uretprobe's entry trap fires before the sleep: only the return is in the window). A ratio beyond 0.80–1.25 whose range from the two intervals excludes 1 is explained only by mechanisms measured in this report, each a difference of two of its costs (its interval from theirs, low minus high and high minus low): a mode step, where a `usdt --decompose` measured both modes on the tracer and hook; the cold path, where a `usdt --spacing-us` (every hit after a sleep) measured the tracer, hook and mode beside the hot loop; the hook, where plain `usdt` measured the tracer and mode on both hooks. Their sizes are taken from the difference between the costs and the rest is shown as the residual with its share of the cost; the pair is explained when the residual is at most 25% of the cost, else `unexplained` (its residual shown, with its interval). A `usdt --spacing-us` row is itself the cold path's measurement and says so. What else the results record differs between the two and no result here measures (a paced loop's spacing, the probed site's class, the buffer, whether only a uretprobe's return lies in the window) is listed as `not measured` and explains nothing, and what differs the other way (would make the cheaper side the dearer) as `contrary`; a site whose class the result does not record says so. A cost whose interval lies wholly below 0 is shown as negative (the traced runs were faster), one whose interval holds 0 has no ratio (`unresolved`). Hook kinds are never mixed: a uretprobe (entry trap and return trampoline) faces uretprobes only. `rate` is not here: it records rates and losses, no time per event";

/// The consistency section of `report`: its entries measured on the first one's machine;
/// `None` unless they are more than one experiment.
pub fn section(report: &Report) -> Option<Section> {
    let first = report.entries.first()?;
    let (here, elsewhere): (Vec<&Entry>, Vec<&Entry>) =
        report.entries.iter().partition(|e| same_machine(e, first));
    if crate::format::unique(here.iter().map(|e| kind(e))).len() < 2 {
        return None;
    }
    let costs = costs(&here);
    let rows = pairs::rows(&costs);
    let verdicts: Vec<Verdict> = rows.iter().map(|r| verdict::of(r, &costs)).collect();
    let mut s = Section {
        id: "consistency".into(),
        title: "one hook, one cost".into(),
        source: None,
        subtitle: format!("{NOTE}."),
        summary: summary(&rows, &verdicts),
        blocks: Vec::new(),
        figures_at: None,
    };
    if !elsewhere.is_empty() {
        let ids: Vec<String> = elsewhere.iter().map(|e| format!("`{}`", e.id)).collect();
        s.push(Block::Note(format!(
            "Left out, measured on another machine than `{}` ({}): {}.",
            first.id,
            first.kernel(),
            ids.join(", ")
        )));
    }
    for tracer in TracerKind::ALL {
        let mine: Vec<(&Row, &Verdict)> = rows
            .iter()
            .zip(&verdicts)
            .filter(|(r, _)| r.cost.tracer == tracer)
            .collect();
        if !mine.is_empty() {
            s.table(tracer.to_string(), table(tracer, &mine));
        }
    }
    if rows.is_empty() {
        s.push(Block::Paragraph(
            "No tracer and kind of hook was measured by two of these experiments.".into(),
        ));
    }
    Some(s)
}

/// On the same machine: name, kernel and CPU model.
fn same_machine(a: &Entry, b: &Entry) -> bool {
    a.result.environment().machine_key() == b.result.environment().machine_key()
}

/// What experiment an entry is: `usdt` and `usdt --decompose` are two.
fn kind(e: &Entry) -> (&str, Option<cost::Experiment>) {
    (e.result.experiment(), e.result.model().cost_experiment())
}

/// Every entry's costs; a source several entries give is named after each entry.
fn costs(entries: &[&Entry]) -> Vec<Cost> {
    let each: Vec<Vec<Cost>> = entries.iter().map(|e| e.result.model().costs()).collect();
    let given_by = |source: &str| {
        each.iter()
            .filter(|costs| costs.iter().any(|c| c.source == source))
            .count()
    };
    let mut out = Vec::new();
    for (e, costs) in entries.iter().zip(&each) {
        out.extend(costs.iter().cloned().map(|mut c| {
            if given_by(&c.source) > 1 {
                c.source = format!("{} [{}]", c.source, e.id);
            }
            c
        }));
    }
    out
}

/// `480–486`, `−240 to 1530`, `−120 to −40` (ns); `None` without an interval.
pub fn interval(e: &Estimate) -> Option<String> {
    let (l, h) = (e.low?, e.high?);
    Some(match l < 0.0 {
        true => format!("{} to {}", int_signed(l), int_signed(h)),
        false => format!("{}–{}", int(l), int(h)),
    })
}

/// One tracer's rows.
fn table(tracer: TracerKind, rows: &[(&Row, &Verdict)]) -> Table {
    let mut cols = columns(&["hook", "mode"]);
    cols.extend([
        // These wrap in HTML: an instruction or a source may be long, and the flag must stay
        // in view.
        Column::new("source").text(),
        Column::new("site").text(),
        Column::new("site class").text(),
        Column::new("per hit").shown_unit("ns"),
        Column::new("95% interval").unit("ns"),
        Column::new("÷ reference"),
        Column::new("flag").text(),
    ]);
    let rows = rows
        .iter()
        .map(|(row, verdict)| {
            let c = row.cost;
            let class = match (&c.class, c.probed()) {
                (Some(k), _) => Cell::text(format!("{}: {}", k.mechanism.short(), k.instruction)),
                (None, true) => Cell::text("not recorded"),
                (None, false) => Cell::missing(),
            };
            let flag = verdict.flag();
            let flagged = matches!(verdict, Verdict::Unexplained { .. } | Verdict::Negative(_));
            vec![
                Cell::text(c.hook.name()),
                Cell::text(c.mode_label()),
                Cell::text(&c.source),
                Cell::text(c.site_label()),
                class,
                Cell::estimate(crate::doc::interval(&c.ns), 1.0, int_signed(c.ns.estimate)),
                Cell::or_missing(interval(&c.ns), Cell::text),
                match (verdict.ratio(), verdict) {
                    (Some(x), _) => Cell::num(x, format!("{x:.2}")),
                    (None, Verdict::Negative(_)) => Cell::missing(),
                    (None, _) => Cell::text("unresolved"),
                },
                match flag.is_empty() {
                    true => Cell::missing(),
                    false => Cell::text(flag).flag_if(flagged),
                },
            ]
        })
        .collect();
    Table::new(tracer.name(), 5, cols).rows(rows)
}

/// The report's sentence on the tables: how many costs agree with their reference, how many a
/// measured mechanism explains, and where the ones nothing measured explains were measured.
fn summary(rows: &[Row], verdicts: &[Verdict]) -> Vec<String> {
    let count = |f: fn(&Verdict) -> bool| verdicts.iter().filter(|v| f(v)).count();
    let compared = count(|v| *v != Verdict::Reference);
    if compared == 0 {
        return Vec::new();
    }
    // The unexplained ones by experiment and site: (where, ratios).
    let mut unexplained: Vec<((&str, &str), Vec<f64>)> = Vec::new();
    for (r, v) in rows.iter().zip(verdicts) {
        if let Verdict::Unexplained { ratio, .. } = v {
            let at = (r.cost.experiment.name(), r.cost.site_label());
            match unexplained.iter_mut().find(|(w, _)| *w == at) {
                Some((_, ratios)) => ratios.push(*ratio),
                None => unexplained.push((at, vec![*ratio])),
            }
        }
    }
    let n: usize = unexplained.iter().map(|(_, r)| r.len()).sum();
    let places: Vec<String> = unexplained
        .iter()
        .map(|((experiment, site), ratios)| {
            let (lo, hi) = ratios
                .iter()
                .fold((f64::INFINITY, 0.0_f64), |(l, h), &x| (l.min(x), h.max(x)));
            let range = match ratios.len() {
                1 => format!("{lo:.2}×"),
                _ => format!("{lo:.2}–{hi:.2}×"),
            };
            format!("{} in `{experiment}` on `{site}` ({range})", ratios.len())
        })
        .collect();
    let places = listed(places, ", ", |l| format!(": {l}")).unwrap_or_default();
    vec![format!(
        "One hook, one cost: {compared} per-hit costs beside another experiment's; {}{} within {band:.0}% of it, {} not resolved at their precision, {} negative (traced faster than untraced), {} apart by what a mechanism measured in this report accounts for (a residual of at most {band:.0}% of the cost), {n} unexplained by anything measured{places}.",
        match count(|v| matches!(v, Verdict::Measures { .. })) {
            0 => String::new(),
            m => format!("{m} measure the cold path (usdt --spacing-us), "),
        },
        count(|v| matches!(v, Verdict::Agrees(_))),
        count(|v| matches!(v, Verdict::Unresolved | Verdict::Undecided { .. })),
        count(|v| matches!(v, Verdict::Negative(_))),
        count(|v| matches!(v, Verdict::Explained { .. })),
        band = (verdict::BAND - 1.0) * 100.0,
    )]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cost::{Cost, Experiment, Hook, Spacing};
    use crate::fixtures;
    use crate::AnyResult;
    use rtrace_measure::interval::mean_of;
    use rtrace_measure::usdt::HookKind;
    use rtrace_tracer::TracerKind;

    /// eBPF's cost on the marker's uprobe in `mode`, hits back to back, no interval.
    pub(crate) fn cost(experiment: Experiment, mode: &str, ns: f64) -> Cost {
        Cost {
            experiment,
            source: format!("{experiment:?} {mode}"),
            tracer: TracerKind::Ebpf,
            hook: Hook::User(HookKind::Uprobe),
            mode: Some(mode.into()),
            site: Some("rtrace_marker_hit".into()),
            class: None,
            ns: mean_of(&[ns], 0.0).unwrap(),
            spacing: Spacing::Hot,
            buffer: None,
            kept: None,
            return_only: false,
        }
    }

    /// A step of a `usdt --decompose` in the same report: eBPF on the marker's uprobe in `mode`.
    pub(crate) fn decomposed(mode: &str, ns: f64) -> Cost {
        Cost {
            source: "decompose".into(),
            ..cost(Experiment::Decompose, mode, ns)
        }
    }

    #[test]
    fn the_summary_counts_each_verdict_and_a_negative_cost_shows_its_sign() {
        let reference = cost(Experiment::Usdt, "record", 480.0);
        let mut negative = cost(Experiment::Sweep, "record", -80.0);
        (negative.ns.low, negative.ns.high) = (Some(-120.0), Some(-40.0));
        let costs = [
            cost(Experiment::Npt, "record", 500.0),
            negative,
            cost(Experiment::Npt, "record-wakeup", 9100.0),
            cost(Experiment::Npt, "aggregate", 350.0),
            decomposed("record", 470.0),
            decomposed("aggregate", 380.0),
        ];
        let rows: Vec<Row> = std::iter::once(&reference)
            .chain(&costs[..4])
            .map(|c| Row {
                cost: c,
                reference: &reference,
            })
            .collect();
        let verdicts: Vec<Verdict> = rows.iter().map(|r| verdict::of(r, &costs)).collect();
        assert_eq!(
            summary(&rows, &verdicts),
            ["One hook, one cost: 4 per-hit costs beside another experiment's; 1 within 25% of it, 0 not resolved at their precision, 1 negative (traced faster than untraced), 1 apart by what a mechanism measured in this report accounts for (a residual of at most 25% of the cost), 1 unexplained by anything measured: 1 in `npt` on `rtrace_marker_hit` (18.96×)."]
        );
        assert_eq!(interval(&costs[1].ns).as_deref(), Some("−120 to −40"));
        let table = table(
            TracerKind::Ebpf,
            &rows.iter().zip(&verdicts).collect::<Vec<_>>(),
        );
        let row = &table.rows[2];
        assert_eq!((&*row[5].shown, &*row[7].shown), ("−80", "-"));
        assert!(row[8].flagged && row[8].shown.starts_with("negative: "));
    }

    #[test]
    fn one_experiment_has_none_and_another_machine_is_left_out_by_name() {
        assert!(section(&Report::one(AnyResult::from(fixtures::usdt()))).is_none());
        let mut u = fixtures::usdt();
        let s = fixtures::sweep("PREEMPT_RT", 1);
        u.config.run.tracer_options = s.config.run.tracer_options.clone();
        let mut other = s.clone();
        other.header.environment.kernel_release = "6.12.0-other".into();
        let report = Report::new([
            (None, AnyResult::from(u)),
            (None, AnyResult::from(s)),
            (None, AnyResult::from(other)),
        ]);
        let section = section(&report).expect("usdt and a sweep");
        let left_out = "Left out, measured on another machine than `usdt`";
        let note = |b: &Block| matches!(b, Block::Note(n) if n.starts_with(left_out) && n.contains("`cyclictest-sweep-2`"));
        assert!(section.blocks.iter().any(note), "{:?}", section.blocks);
        let tables: Vec<&Table> = section
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect();
        assert!(!tables.is_empty());
        for t in tables {
            assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
            // The sweep's row faces usdt's reference of the same tracer and hook.
            let sweep = t.rows.iter().find(|r| r[2].shown == "sweep").unwrap();
            let usdt = t.rows.iter().find(|r| r[2].shown == "usdt").unwrap();
            assert_eq!(
                (&*usdt[8].shown, &*sweep[0].shown),
                ("reference", &*usdt[0].shown)
            );
        }
        assert!(section.summary[0].starts_with("One hook, one cost: "));
    }
}
