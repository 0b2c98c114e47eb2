//! The terminal report: Table 3.1's layout (min, max, mean, stddev per tracer and case) with
//! percentiles, the ratio to case 0, and event accounting.

use crate::table::Table;
use rtrace_measure::usdt::{Case, UsdtResult};

fn ns(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

pub fn usdt(r: &UsdtResult) -> String {
    let e = &r.environment;
    let mut out = format!(
        "usdt microbenchmark: {} iterations per case on CPU {} — kernel {} ({}), {}\n\n",
        r.config.iterations, r.config.cpu, e.kernel_release, e.preemption, e.cpu_model
    );
    let base = r
        .runs
        .iter()
        .find(|c| c.case == Case::Baseline)
        .map(|c| c.summary.mean_ns);
    let mut t = Table::new(
        &[
            "tracer", "case", "min", "max", "mean", "stddev", "p50", "p99", "p99.9", "x case0",
            "hits", "recorded", "lost",
        ],
        2,
    );
    for c in &r.runs {
        let s = &c.summary;
        let ev = |f: fn(&rtrace_measure::Events) -> u64| {
            c.events.as_ref().map_or("-".into(), |e| f(e).to_string())
        };
        t.row(vec![
            c.tracer.to_string() + c.variant.as_deref().map_or("", |v| v),
            c.case.number().to_string(),
            ns(s.min_ns),
            ns(s.max_ns),
            ns(s.mean_ns),
            ns(s.stddev_ns),
            ns(s.p50_ns),
            ns(s.p99_ns),
            ns(s.p999_ns),
            base.map_or("-".into(), |b| format!("{:.2}", s.mean_ns / b)),
            ev(|e| e.hits),
            ev(|e| e.recorded),
            ev(|e| e.lost),
        ]);
    }
    out.push_str("per-call duration in ns\n");
    out.push_str(&t.render());
    if let Some(first) = r.runs.first() {
        out.push_str(&format!(
            "\ntimer overhead (empty interval): mean {} ns, min {} ns; TSC {:.3} GHz\n",
            ns(first.timer_overhead.mean_ns),
            ns(first.timer_overhead.min_ns),
            first.tsc_hz / 1e9
        ));
    }
    out
}
