//! Static and dynamic user-space hooks side by side (`usdt --hook usdt,uprobe,uretprobe`): each
//! tracer's per-hit cost on the USDT probe, a uprobe and a uretprobe, the uretprobe / uprobe
//! ratio, and the plain cost of the marker call the dynamic hooks attach to.

use crate::doc::{columns, Block, Cell, Column, Section, Table};
use crate::format::{listed, ns};
use rtrace_measure::usdt::{Case, HookCosts, HookKind, UsdtResult};

/// What the table shows.
pub const NOTE: &str = "Case-1 mean minus case-0 mean with the same loop body (the barrier for usdt and usdt-nop5, the marker call for uprobe/uretprobe); usdt-nop5 is a `nop; nop5` site that Linux >= 6.18 turns into a call instead of an int3 trap for tracers attaching to the nop5 (libbpf), not for those attaching at the note's address (ftrace, bpftrace)";

/// The per-hit cost by hook (the hooks measured): its heading, note, table and the marker
/// call's plain cost; nothing when `r` has only `usdt` rows.
pub fn push(s: &mut Section, r: &UsdtResult) {
    let costs = HookCosts::of(r);
    if costs.rows.is_empty() {
        return;
    }
    // Only the hooks measured, and the uretprobe / uprobe ratio only where both were.
    let hooks: Vec<HookKind> = HookKind::ALL
        .into_iter()
        .filter(|&h| costs.rows.iter().any(|row| row.cost(h).is_some()))
        .collect();
    let ratios = costs.rows.iter().any(|row| row.ret_ratio().is_some());
    let mut cols = columns(&["tracer"]);
    cols.extend(hooks.iter().map(|h| Column::new(h.to_string()).unit("ns")));
    if ratios {
        cols.extend(columns(&["uretprobe/uprobe", "by p50", "by min"]));
    }
    let rows =
        costs
            .rows
            .iter()
            .map(|row| {
                let mut cells = vec![Cell::text(row.tracer.label(row.mode.as_deref()))];
                cells.extend(hooks.iter().map(|&h| {
                    Cell::or_missing(row.cost(h), |c| Cell::num(c.mean_ns, ns(c.mean_ns)))
                }));
                let ratio = row.ret_ratio();
                let part = |f: fn(&rtrace_measure::usdt::HitCost) -> f64| {
                    Cell::or_missing(ratio.as_ref(), |x| Cell::num(f(x), format!("{:.2}", f(x))))
                };
                if ratios {
                    cells.extend([part(|x| x.mean_ns), part(|x| x.p50_ns), part(|x| x.min_ns)]);
                }
                cells
            })
            .collect();
    s.push(Block::Heading("Per-hit cost by hook (ns)".into()));
    s.push(Block::Note(format!("{NOTE}.")));
    s.push(Block::Table(Table::new("hooks", 1, cols).rows(rows)));
    s.blocks.extend(nop5_paths(r, &costs).map(Block::Paragraph));
    if let Some(call) = costs.call {
        s.push(Block::Paragraph(format!(
            "The plain marker call, nothing attached: {} ns above the barrier baseline by mean, {} ns by p50.",
            ns(call.mean_ns),
            ns(call.p50_ns)
        )));
    }
}

/// Whether each usdt-nop5 run's site was optimised (its processes' mappings), a bare system
/// call's cost, and what the optimised path saved against the int3 trap on `usdt`; `None`
/// without usdt-nop5 runs.
fn nop5_paths(r: &UsdtResult, costs: &HookCosts) -> Option<String> {
    let runs: Vec<String> = (r.runs.iter())
        .filter(|c| c.hook_kind == HookKind::UsdtNop5 && c.case == Case::Traced)
        .map(|c| {
            let label = c.tracer.label(c.mode());
            match c.trampoline_rounds() {
                Some((k, n)) if k == n => format!("{label} optimized ({k} of {n} rounds)"),
                Some((0, n)) => format!("{label} not optimized (0 of {n} rounds)"),
                Some((k, n)) => format!("{label} optimized in {k} of {n} rounds only"),
                None => format!("{label} not recorded"),
            }
        })
        .collect();
    let recorded = (r.runs.iter()).any(|c| c.trampoline_rounds().is_some());
    if runs.is_empty() || !recorded {
        return None;
    }
    let mut p = format!(
        "usdt-nop5 site, by the `[uprobes-trampoline]` mapping of each run's processes: {}.",
        runs.join("; ")
    );
    if let Some((syscall, n)) = r.syscall_ns() {
        p += &format!(
            " A bare system call (`getppid`) costs {} ns here (median of {n} rounds, empty timed interval subtracted): an optimized site enters the kernel that way instead of through the int3 trap",
            ns(syscall)
        );
        let saved: Vec<String> = (costs.rows.iter())
            .filter_map(|row| Some((row, row.usdt?, row.usdt_nop5?)))
            .map(|(row, trap, call)| {
                format!(
                    "{} {} ns on usdt-nop5 against {} ns on usdt",
                    row.tracer.label(row.mode.as_deref()),
                    ns(call.mean_ns),
                    ns(trap.mean_ns)
                )
            })
            .collect();
        p += &listed(saved, ", ", |l| format!(" ({l})")).unwrap_or_default();
        p += ".";
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_tracer::TracerKind::{Ftrace, Lttng};

    /// The fixture's runs again as uprobe and uretprobe rows (ftrace case 1 twice and 2.5 times
    /// as expensive), plus the call baselines; plain means only (no disturbed samples), lossy
    /// runs allowed.
    fn with_dynamic_rows() -> UsdtResult {
        let mut r = crate::fixtures::usdt();
        r.config.allow_loss = true;
        r.runs.iter_mut().for_each(|c| c.disturbed = None);
        let usdt_runs = r.runs.clone();
        for (kind, factor) in [(HookKind::Uprobe, 2.0), (HookKind::Uretprobe, 2.5)] {
            for c in usdt_runs.iter().filter(|c| c.tracer != Lttng) {
                let mut d = c.clone();
                (d.hook_kind, d.variant) = (kind, kind.variant(None));
                let s = &mut d.summary;
                (s.mean_ns, s.p50_ns, s.min_ns) = match c.case {
                    Case::Traced => {
                        let extra = (c.summary.mean_ns - 15.0) * factor;
                        (20.0 + extra, 20.0 + 100.0 * factor, 20.0 + 80.0 * factor)
                    }
                    _ => (20.0, 20.0, 10.0),
                };
                r.runs.push(d);
            }
        }
        r
    }

    fn blocks(r: &UsdtResult) -> Vec<Block> {
        let e = crate::result::Report::one(crate::AnyResult::from(r.clone()));
        let mut s = crate::doc::section(&e.entries[0], "", String::new(), Vec::new(), None);
        s.blocks.clear();
        push(&mut s, r);
        s.blocks
    }

    #[test]
    fn costs_ratio_and_call_are_shown_and_usdt_only_results_add_nothing() {
        assert!(blocks(&crate::fixtures::usdt()).is_empty());
        let r = with_dynamic_rows();
        let (base, usdt1) = (r.runs[0].summary.mean_ns, r.runs[1].summary.mean_ns);
        let costs = HookCosts::of(&r);
        assert_eq!(costs.call.unwrap().mean_ns, 20.0 - base);
        let ftrace = &costs.rows[0];
        assert_eq!((ftrace.tracer, ftrace.mode.as_deref()), (Ftrace, None));
        assert_eq!(ftrace.usdt.unwrap().mean_ns, usdt1 - base);
        let ratio = ftrace.ret_ratio().unwrap();
        assert!((ratio.mean_ns - 1.25).abs() < 1e-9 && (ratio.p50_ns - 1.25).abs() < 1e-9);
        assert!(ratio.min_ns > 1.0);
        let blocks = blocks(&r);
        let Some(Block::Table(t)) = blocks.iter().find(|b| matches!(b, Block::Table(_))) else {
            panic!("no table");
        };
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        let want = ["tracer", "usdt", "uprobe", "uretprobe", "uretprobe/uprobe"];
        assert_eq!(
            names,
            [&want[..], &["by p50", "by min"]].concat(),
            "no usdt-nop5 column"
        );
        assert_eq!(t.rows[0][4].shown, "1.25");
        let call =
            |b: &Block| matches!(b, Block::Paragraph(p) if p.starts_with("The plain marker call"));
        assert!(blocks.iter().any(call));
        // lttng has no dynamic rows: a dash, not a number.
        let lttng = t.rows.iter().find(|r| r[0].shown == "lttng").unwrap();
        assert_eq!(lttng[2].shown, "-");
    }
}
