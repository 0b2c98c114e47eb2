//! `usdt --threads N`: each loop thread's per-hit cost (Gebai & Dagenais' scaling question: does
//! the cost per event stay flat when several threads on several CPUs trace at once?). Each
//! thread's extra ns per hit is its round means minus case 0's same thread, round by round, each
//! mean without its round's disturbed samples (as every per-hit cost of the report).

use crate::decompose::cell;
use crate::doc::{columns, Cell, Column, Table};
use crate::format::{listed, ns};
use rtrace_measure::interval;
use rtrace_measure::usdt::{Case, CaseResult, UsdtResult};
use rtrace_tracer::TracerKind;

/// What the loop threads were, in one sentence; `None` with one thread.
pub fn note(r: &UsdtResult) -> Option<String> {
    let cpus = &r.config.thread_cpus;
    if cpus.len() < 2 {
        return None;
    }
    let shared: Vec<String> = cpus
        .iter()
        .filter(|c| r.config.run.harness_cpus.contains(c))
        .map(|c| c.to_string())
        .collect();
    let shared = listed(shared, ", ", |l| {
        format!(". CPU {l} is also the harness's, where the tracers' consumers run: its thread shares the CPU with them")
    });
    Some(format!(
        "{} loop threads fired the probe at the same time, on CPUs {}, each running every iteration; the tables and figures pool every thread's samples, the per-thread table splits them (95% t interval over rounds){}",
        cpus.len(),
        cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "),
        shared.unwrap_or_default()
    ))
}

/// Case 0 of `c`'s hook kind.
fn baseline<'a>(r: &'a UsdtResult, c: &CaseResult) -> Option<&'a CaseResult> {
    r.runs.iter().find(|b| {
        b.case == Case::Baseline && b.tracer == TracerKind::None && b.hook_kind == c.hook_kind
    })
}

/// One row per loop thread of every traced run; `None` with one thread.
pub fn table(r: &UsdtResult) -> Option<Table> {
    let mut rows = Vec::new();
    for c in r.runs.iter().filter(|c| c.case == Case::Traced) {
        let base = baseline(r, c);
        for (i, t) in c.per_thread.iter().enumerate() {
            let extra = base
                .and_then(|b| b.per_thread.get(i))
                .and_then(|b| {
                    let diffs: Vec<f64> = t
                        .round_means()
                        .iter()
                        .zip(b.round_means())
                        .map(|(m, b)| m - b)
                        .collect();
                    interval::mean_of(&diffs, 0.0)
                })
                .map_or_else(Cell::missing, |e| {
                    Cell::estimate(crate::doc::interval(&e), 1.0, cell(&e))
                });
            let means = t.round_means();
            let mean = means.iter().sum::<f64>() / means.len().max(1) as f64;
            rows.push(vec![
                Cell::text(rtrace_measure::probe_cost::label(c)),
                Cell::text(format!("{} (CPU {})", i + 1, t.cpu)),
                Cell::num(mean, ns(mean)),
                extra,
            ]);
        }
    }
    let mut cols = columns(&["run", "thread"]);
    cols.push(Column::new("mean w/o dist.").shown_unit("ns"));
    cols.push(Column::new("extra ns per hit over case 0").unit("ns"));
    (!rows.is_empty()).then(|| Table::new("threads", 2, cols).rows(rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_measure::usdt::{RoundSummary, ThreadRun};
    use rtrace_measure::Summary;

    fn thread(cpu: usize, means: &[f64]) -> ThreadRun {
        let mut h = rtrace_protocol::new_histogram();
        h.record(100).unwrap();
        let s = Summary::of(&h).unwrap();
        ThreadRun {
            cpu,
            summary: Summary {
                mean_ns: means.iter().sum::<f64>() / means.len() as f64,
                ..s
            },
            histogram: rtrace_protocol::encode_histogram(&h).unwrap(),
            rounds: means
                .iter()
                .map(|&m| RoundSummary {
                    summary: Summary { mean_ns: m, ..s },
                    // No disturbed samples: the steady mean is the mean.
                    disturbed: None,
                    ..RoundSummary::of(&h).unwrap()
                })
                .collect(),
        }
    }

    #[test]
    fn each_thread_is_compared_with_the_same_thread_of_case_0() {
        let mut r = crate::fixtures::usdt();
        (r.config.thread_cpus, r.config.run.harness_cpus) = (vec![1, 0], vec![0]);
        for c in &mut r.runs {
            c.per_thread = match c.case {
                Case::Baseline => vec![thread(1, &[10.0, 12.0]), thread(0, &[20.0, 20.0])],
                _ => vec![thread(1, &[110.0, 112.0]), thread(0, &[320.0, 320.0])],
            };
        }
        let rows = table(&r).unwrap().rows;
        assert_eq!(rows[0][1].shown, "1 (CPU 1)");
        assert!(rows[0][3].shown.starts_with("100"), "{:?}", rows[0]);
        assert_eq!(rows[1][1].shown, "2 (CPU 0)");
        assert!(rows[1][3].shown.starts_with("300"), "{:?}", rows[1]);
        let note = note(&r).unwrap();
        crate::fixtures::assert_has(&note, &["2 loop threads", "CPU 0 is also the harness's"]);
        r.config.thread_cpus.clear();
        assert!(super::note(&r).is_none());
    }
}
