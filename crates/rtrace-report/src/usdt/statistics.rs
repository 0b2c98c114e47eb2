//! How a usdt result's numbers were made, said where they are shown: the ratio definition, the
//! interval method (or why there is no interval), the disturbed-sample rule, the runs left out
//! of ratios; and how far each dormant case is from its case 0.

use crate::ratios::usdt_method;
use rtrace_measure::disturbed;
use rtrace_measure::interval::Estimate;
use rtrace_measure::probe_cost::{dormant, lossy_notes};
use rtrace_measure::usdt::UsdtResult;

/// How each call is timed, and what the counter resolves.
fn timing(r: &UsdtResult) -> String {
    let mut line = "timing: each call between `lfence; rdtsc` and `rdtscp`, no fence after the first read (the thesis' `getticks()`, Intel's method): a fence there would make each instruction of the body wait out the pipeline".to_owned();
    match r.runs.iter().find_map(|c| c.tsc_step_ns) {
        Some(step) if step >= 1.0 => line.push_str(&format!(
            "; the TSC advances in steps of {step:.1} ns here: min and percentiles are multiples of it, means and interpolated medians resolve below it"
        )),
        Some(step) => line.push_str(&format!("; the TSC resolves {step:.2} ns here")),
        None => {}
    }
    line
}

/// One line per fact about the method.
pub fn method(r: &UsdtResult) -> Vec<String> {
    let mut out = vec![format!("ratios: {}; × case 0: a run's mean without disturbed samples over case 0's (plain means stay in the tables)", usdt_method(r))];
    out.push(timing(r));
    let (disturbed, samples) = r.runs.iter().fold((0, 0), |(d, n), c| {
        (d + c.disturbed.map_or(0, |x| x.count), n + c.summary.count)
    });
    out.push(format!(
        "disturbed samples: {}; {disturbed} of {samples} samples here; \"mean w/o dist.\" leaves them out, \"mean\" keeps every sample (the thesis' statistic)",
        disturbed::RULE
    ));
    if dormant(r).iter().any(|d| d.net_median.is_some()) {
        out.push(DORMANT_METHOD.to_owned());
    }
    let run = &r.config.run;
    let per_tracer = |m: &std::collections::BTreeMap<String, String>| {
        let entries: Vec<String> = m.iter().map(|(t, v)| format!("{t}: {v}")).collect();
        entries.join("; ")
    };
    if !run.buffers.is_empty() {
        let size = match run.buffer_size_kb {
            Some(kb) => format!("--buffer-size-kb {kb}, the same per-CPU size for every tracer"),
            None => "each tracer's default".into(),
        };
        let buffers = per_tracer(&run.buffers);
        out.push(format!("trace buffers ({size}): {buffers}"));
    }
    let traced: Vec<(String, rtrace_measure::trace_data::TraceData)> = r
        .runs
        .iter()
        .filter_map(|c| Some((rtrace_measure::probe_cost::label(c), c.trace_data?)))
        .collect();
    out.extend(crate::format::trace_data_line(&traced, run.keep_traces));
    if !run.unequal.is_empty() {
        let unequal = per_tracer(&run.unequal);
        out.push(format!("not equal between tracers: {unequal}"));
    }
    out.extend(lossy_notes(r));
    out
}

/// `+0.12 ns (-0.30 – +0.55)`, or without interval.
fn difference(e: Option<Estimate>) -> String {
    let Some(e) = e else {
        return "-".into();
    };
    match (e.low, e.high) {
        (Some(l), Some(h)) => format!("{:+.2} ns ({l:+.2} – {h:+.2})", e.estimate),
        _ => format!("{:+.2} ns", e.estimate),
    }
}

/// One line per dormant run (case 2 or 3): its distance from case 0, net of each process's
/// empty timed interval where the rounds carry it (by median and by mean without disturbed
/// samples, medians over rounds with order-statistic intervals), then the pooled medians and
/// the plain means' ratio.
pub fn dormant_lines(r: &UsdtResult) -> Vec<String> {
    dormant(r)
        .iter()
        .map(|d| {
            let (what, median, mean) = match (d.net_median, d.net_mean) {
                (Some(m), Some(x)) => (" net of each process's empty interval", Some(m), Some(x)),
                _ => ("", d.median, d.mean),
            };
            format!(
                "{} − case 0{what}: median {}, mean w/o dist. {}; pooled p50 {:.0} vs {:.0} ns; mean w/o dist. {:.3}× case 0",
                d.run,
                difference(median),
                difference(mean),
                d.p50_ns.0,
                d.p50_ns.1,
                d.mean_ratio
            )
        })
        .collect()
}

/// How the dormant lines are made, for the method list.
pub const DORMANT_METHOD: &str = "dormant cases: per round, the run's statistic minus its own process's empty timed interval, minus the same for case 0 (a VM can switch between speed states that move every interval by a few ns for seconds at a time, as one did here before; the net difference takes such a state out), median over rounds with a distribution-free interval (order statistics, ≥95% from 6 rounds)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, assert_has};

    #[test]
    fn the_method_is_named_with_its_rule_and_the_lossy_run_and_dormant_runs_with_an_interval() {
        let text: String = method(&fixtures::usdt())
            .iter()
            .map(|l| format!("- {l}\n"))
            .collect();
        assert_has(
            &text,
            &[
                "- ratios: extra ns per hit",
                "Student-t interval over rounds",
                "10 × its run's median",
                "dormant cases: per round",
                "- timing: each call between `lfence; rdtsc` and `rdtscp`",
                "steps of 10.0 ns here",
                "- not equal between tracers: lttng: a session daemon found running",
                "- trace buffers (--buffer-size-kb 4096, the same per-CPU size for every tracer): ftrace: instance buffer_size_kb = 4096 KiB per CPU; lttng: 4 sub-buffers",
                "ftrace case 1 dropped 5000 of 20000 events",
            ],
        );
        let lines = dormant_lines(&fixtures::usdt());
        assert_eq!(lines.len(), 4, "{lines:?}");
        let net = "ftrace case 2 − case 0 net of each process's empty interval: median ";
        assert!(lines[0].starts_with(net), "{lines:?}");
        assert_has(&lines[0], &[" ns (", "× case 0"]);
    }
}
