//! Static and dynamic user-space hooks side by side (`usdt --hook usdt,uprobe,uretprobe`): each
//! tracer's per-hit cost on the USDT probe, a uprobe and a uretprobe, the uretprobe / uprobe
//! ratio, and the plain cost of the marker call the dynamic hooks attach to.

use crate::format::{ns, tracer_label};
use crate::table::Table;
use rtrace_measure::usdt::{HookCosts, HookKind, UsdtResult};

/// The per-hit cost table; empty when `r` has only `usdt` rows.
pub fn text(r: &UsdtResult) -> String {
    let costs = HookCosts::of(r);
    if costs.rows.is_empty() {
        return String::new();
    }
    let mut t = Table::new(
        &[
            "tracer",
            "usdt",
            "usdt-nop5",
            "uprobe",
            "uretprobe",
            "uretprobe/uprobe",
            "by p50",
            "by min",
        ],
        1,
    );
    for row in &costs.rows {
        let cell = |h: HookKind| row.cost(h).map_or("-".into(), |c| ns(c.mean_ns));
        let ratio = row.ret_ratio();
        t.row(vec![
            tracer_label(row.tracer, row.mode.as_deref()),
            cell(HookKind::Usdt),
            cell(HookKind::UsdtNop5),
            cell(HookKind::Uprobe),
            cell(HookKind::Uretprobe),
            ratio.map_or("-".into(), |x| format!("{:.2}", x.mean_ns)),
            ratio.map_or("-".into(), |x| format!("{:.2}", x.p50_ns)),
            ratio.map_or("-".into(), |x| format!("{:.2}", x.min_ns)),
        ]);
    }
    let mut out = String::from(
        "\nper-hit cost by hook in ns: case-1 mean minus case-0 mean with the same loop body (the barrier for usdt and usdt-nop5, the marker call for uprobe/uretprobe); usdt-nop5 is a `nop; nop5` site that Linux >= 6.18 turns into a call instead of an int3 trap for tracers attaching to the nop5 (libbpf), not for those attaching at the note's address (ftrace, bpftrace)\n",
    );
    out.push_str(&t.render());
    if let Some(call) = costs.call {
        out.push_str(&format!(
            "plain marker call, nothing attached: {} ns above the barrier baseline by mean, {} ns by p50\n",
            ns(call.mean_ns),
            ns(call.p50_ns)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_measure::usdt::Case;
    use rtrace_tracer::TracerKind;

    /// The fixture's runs again as uprobe and uretprobe rows (ftrace case 1 twice and 2.5 times
    /// as expensive), plus the call baselines; plain means only (no disturbed samples), lossy
    /// runs allowed.
    fn with_dynamic_rows() -> UsdtResult {
        let mut r = crate::fixtures::usdt();
        r.config.allow_loss = true;
        for c in &mut r.runs {
            c.disturbed = None;
        }
        let usdt_runs = r.runs.clone();
        for (kind, factor) in [(HookKind::Uprobe, 2.0), (HookKind::Uretprobe, 2.5)] {
            for c in &usdt_runs {
                if c.tracer == TracerKind::Lttng {
                    continue;
                }
                let mut d = c.clone();
                d.hook_kind = kind;
                d.variant = kind.variant(None);
                if c.case == Case::Traced {
                    d.summary.mean_ns = 20.0 + (c.summary.mean_ns - 15.0) * factor;
                    d.summary.p50_ns = 20.0 + 100.0 * factor;
                    d.summary.min_ns = 20.0 + 80.0 * factor;
                } else {
                    d.summary.mean_ns = 20.0;
                    d.summary.p50_ns = 20.0;
                    d.summary.min_ns = 10.0;
                }
                r.runs.push(d);
            }
        }
        r
    }

    #[test]
    fn usdt_only_results_add_nothing() {
        assert_eq!(text(&crate::fixtures::usdt()), "");
    }

    #[test]
    fn costs_ratio_and_call_are_shown() {
        let r = with_dynamic_rows();
        let base = r.runs[0].summary.mean_ns;
        let usdt1 = r
            .runs
            .iter()
            .find(|c| c.tracer == TracerKind::Ftrace && c.case == Case::Traced)
            .unwrap()
            .summary
            .mean_ns;
        let costs = HookCosts::of(&r);
        assert_eq!(costs.call.unwrap().mean_ns, 20.0 - base);
        let ftrace = &costs.rows[0];
        assert_eq!(ftrace.tracer, TracerKind::Ftrace);
        assert_eq!(ftrace.mode, None);
        assert_eq!(ftrace.usdt.unwrap().mean_ns, usdt1 - base);
        let ratio = ftrace.ret_ratio().unwrap();
        assert!((ratio.mean_ns - 1.25).abs() < 1e-9);
        assert!((ratio.p50_ns - 1.25).abs() < 1e-9);
        assert!(ratio.min_ns > 1.0);
        let text = text(&r);
        assert!(text.contains("uretprobe/uprobe"), "{text}");
        assert!(text.contains("1.25"), "{text}");
        assert!(text.contains("plain marker call"), "{text}");
        // lttng has no dynamic rows: a dash, not a number.
        let lttng = text.lines().find(|l| l.starts_with("lttng")).unwrap();
        assert!(lttng.contains('-'), "{lttng}");
    }
}
