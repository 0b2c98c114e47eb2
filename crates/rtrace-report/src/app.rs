//! `app`'s section: a real program's time untraced and under each tracer × script (Piotrowski's
//! Tables VI and VII), the slowdown with the tracer's exit beside it, and each cell's predicted
//! extra CPU time set beside the measured one.

use crate::figures::bars;
use crate::result::{Entry, Report};
use rtrace_doc::{Block, Cell, Column, Figure, Section, Table};
use rtrace_measure::app::{agreement, AppResult, Measured, Prediction, TOLERANCE};
use rtrace_measure::interval::Estimate;

impl crate::result::Reported for AppResult {
    fn section(&self, e: &Entry, _: &Report) -> Section {
        let r = self;
        let mut s = crate::doc::section(
            e,
            "what tracing costs a real program",
            format!(
                "{}; {} round(s) after {} warm-up run(s), untraced and traced in alternating order; {}; {}.",
                r.config.describe,
                r.config.run.rounds,
                r.config.warmup,
                e.kernel(),
                r.header.environment.cpu_model
            ),
            summary(r),
            Some(Block::Note(NOTE.into())),
        );
        s.push(Block::Table(slowdowns(r)));
        let p = predictions(r);
        if p.rows.is_empty() {
            s.push(Block::Note("Nothing predicted: the calibration loop fires system calls and context switches, not the program's USDT probes, and a prediction needs the hits counted and a tracer's cost per event under the same script.".into()));
        } else {
            s.push(Block::Table(p));
        }
        if let Some(t) = metrics(r) {
            s.push(Block::Table(t));
        }
        match figure(r) {
            Ok(Some(f)) => s.push(Block::Figure(f)),
            Ok(None) => {}
            Err(err) => s.push(Block::Note(format!("figure not drawn: {err:#}"))),
        }
        if !r.counts.is_empty() {
            s.push(Block::Details {
                summary: "Hits counted per script".into(),
                blocks: vec![Block::Table(counts(r))],
            });
        }
        if !r.not_run.is_empty() {
            s.push(Block::List(crate::doc::items(r.not_run.iter().map(|n| {
                format!("not run: {} × {}: {}", n.tracer, n.script, n.why)
            }))));
        }
        let failed: Vec<String> = r.failures.iter().map(|f| f.error.clone()).collect();
        crate::doc::close(&mut s, e, &failed, &r.config);
        s
    }
}

const NOTE: &str = "Each script traces every process, as Piotrowski's did (strace: the command's tree). Slowdown: traced ÷ untraced wall time of the same round, geometric mean over rounds with Student's t; \"with exit\" adds the time from the program's end until the tracer had delivered everything and stopped. Extra CPU: the machine's busy time (/proc/stat, every CPU) traced minus untraced in the same round; \"in the program\" is the part in the program's own CPU time (wait4), the rest is the tracer's consumers and everything else. Predicted: the script's hits in the program (one run under ftrace, counted per tracepoint) × the tracer's busy time per event under the same script on the calibration loop, made before the first traced run";

fn summary(r: &AppResult) -> Vec<String> {
    let mut out = Vec::new();
    let cells = r.cells();
    let held = cells
        .iter()
        .filter(|(t, s)| verdict(r, t, s).is_some_and(|v| v.1))
        .count();
    let predicted = cells
        .iter()
        .filter(|(t, s)| verdict(r, t, s).is_some())
        .count();
    if let Some(worst) = cells
        .iter()
        .filter_map(|(t, s)| Some((t, s, r.measured(t, s)?.slowdown.estimate)))
        .max_by(|a, b| a.2.total_cmp(&b.2))
    {
        out.push(format!(
            "{}: the largest slowdown is {} ({} under {}); the prediction held within {:.0} % in {held} of {predicted} cells.",
            r.config.workload,
            ratio(worst.2),
            worst.0,
            worst.1,
            TOLERANCE * 100.0
        ));
    }
    out
}

fn ratio(x: f64) -> String {
    format!("{:+.1} %", (x - 1.0) * 100.0)
}

fn est_cell(e: &Estimate, per: f64, show: impl Fn(f64) -> String) -> Cell {
    let shown = match (e.low, e.high) {
        (Some(l), Some(h)) => format!(
            "{} ({} to {})",
            show(e.estimate / per),
            show(l / per),
            show(h / per)
        ),
        _ => show(e.estimate / per),
    };
    Cell::estimate(crate::doc::interval(e), per, shown)
}

fn pct_cell(e: &Estimate) -> Cell {
    let p = |x: f64| (x - 1.0) * 100.0;
    let shown = match (e.low, e.high) {
        (Some(l), Some(h)) => format!("{:+.1} ({:+.1} to {:+.1})", p(e.estimate), p(l), p(h)),
        _ => format!("{:+.1}", p(e.estimate)),
    };
    Cell::estimate((p(e.estimate), e.low.map(p), e.high.map(p)), 1.0, shown)
        .flag_if(e.low.is_some_and(|l| l > 1.0))
}

/// Seconds with three significant digits at least (`12.3`, `0.0412`).
fn s(x: f64) -> String {
    let digits = match x.abs() {
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        a if a >= 0.1 => 3,
        _ => 4,
    };
    format!("{x:.digits$}")
}

/// Table VI/VII: wall time and slowdown per cell, with the exit.
fn slowdowns(r: &AppResult) -> Table {
    let mut t = Table::new(
        "app-slowdown",
        2,
        vec![
            Column::new("tracer").text(),
            Column::new("script").text(),
            Column::new("wall").unit("s"),
            Column::new("slowdown").unit("%"),
            Column::new("with exit").unit("%"),
            Column::new("attach").unit("s"),
            Column::new("exit").unit("s"),
            Column::new("events"),
            Column::new("lost"),
        ],
    )
    .titled(
        "Wall time and slowdown (Piotrowski's Tables VI and VII)".into(),
        Some("95 % intervals over rounds; a slowdown whose interval excludes 0 stands out.".into()),
    );
    if let Some(b) = r.baseline_wall() {
        t.rows.push(vec![
            Cell::text("none"),
            Cell::text("-"),
            est_cell(&b, 1e9, s),
            Cell::missing(),
            Cell::missing(),
            Cell::missing(),
            Cell::missing(),
            Cell::missing(),
            Cell::missing(),
        ]);
    }
    for (tracer, script) in r.cells() {
        let Some(m) = r.measured(&tracer, &script) else {
            continue;
        };
        t.rows.push(vec![
            Cell::text(tracer),
            Cell::text(script),
            est_cell(&m.traced_wall_ns, 1e9, s),
            pct_cell(&m.slowdown),
            Cell::or_missing(m.slowdown_with_exit.as_ref(), pct_cell),
            Cell::or_missing(m.attach_ns.as_ref(), |e| est_cell(e, 1e9, s)),
            Cell::or_missing(m.exit_ns.as_ref(), |e| est_cell(e, 1e9, s)),
            Cell::or_missing(
                m.events.as_ref(),
                |e| Cell::count(e.estimate.round() as u64),
            ),
            Cell::count(m.lost).flag_if(m.lost > 0),
        ]);
    }
    t
}

/// Whether the prediction of a cell held: (predicted/measured, within the tolerance).
fn verdict(r: &AppResult, tracer: &str, script: &str) -> Option<(f64, bool)> {
    let p = r.prediction(tracer, script)?;
    let m = r.measured(tracer, script)?;
    Some(agreement(p.extra_cpu_ns, &m.extra_cpu_ns))
}

/// What a cell's miss is made of, measured: the program's own CPU and the rest, each
/// predicted against measured.
fn mechanism(p: &Prediction, m: &Measured) -> String {
    let measured = m.extra_cpu_ns.estimate;
    if let Some(events) = m.events.as_ref().map(|e| e.estimate) {
        let why = if events > p.hits as f64 * (1.0 + TOLERANCE) {
            // More events than the program's hits: the tracer's own work is in its script.
            Some(format!(
                "the script caught {:.1} times the program's hits ({events:.0} events a run for {}): the tracer's own system calls are in it (its writes of what it recorded)",
                events / p.hits as f64,
                p.hits
            ))
        } else if events < p.hits as f64 * (1.0 - TOLERANCE) {
            // Fewer: the tracer sees part of what the count saw in every process.
            Some(format!(
                "the tracer saw {:.0} % of the hits counted in every process ({events:.0} events a run of {}): it follows the command's tree only (strace: not a server it talks to)",
                100.0 * events / p.hits as f64,
                p.hits
            ))
        } else {
            None
        };
        if let Some(why) = why {
            let explained = events * p.per_event_ns.estimate;
            return format!(
                "{why}; at the calibrated cost those events make {} s of the {} s measured, {} s left unexplained",
                s(explained / 1e9),
                s(measured / 1e9),
                s((measured - explained) / 1e9)
            );
        }
    }
    let ctx_p = p.extra_in_context_ns;
    let ctx_m = m.extra_in_context_ns.estimate;
    let rest_p = p.extra_cpu_ns - ctx_p;
    let rest_m = measured - ctx_m;
    let off = |p: f64, m: f64| (m - p).abs();
    let (part, pp, mm) = if off(ctx_p, ctx_m) >= off(rest_p, rest_m) {
        ("in the program's own CPU time", ctx_p, ctx_m)
    } else {
        (
            "outside the program (the tracer's consumers and the rest of the machine)",
            rest_p,
            rest_m,
        )
    };
    format!(
        "most of the difference is {part}: predicted {} s, measured {} s; {} s of the {} s difference is elsewhere; why the events cost otherwise there than on the calibration loop is not measured",
        s(pp / 1e9),
        s(mm / 1e9),
        s(((measured - p.extra_cpu_ns) - (mm - pp)) / 1e9),
        s((measured - p.extra_cpu_ns) / 1e9)
    )
}

fn predictions(r: &AppResult) -> Table {
    let mut t = Table::new(
        "app-prediction",
        2,
        vec![
            Column::new("tracer").text(),
            Column::new("script").text(),
            Column::new("hits"),
            Column::new("cost per event").unit("ns"),
            Column::new("predicted extra CPU").unit("s"),
            Column::new("measured extra CPU").unit("s"),
            Column::new("predicted ÷ measured"),
            Column::new("why apart").text(),
        ],
    )
    .titled(
        "Predicted and measured extra CPU time".into(),
        Some(format!(
            "Predicted before the traced runs; it holds within {:.0} %, or the column on the right says which part missed.",
            TOLERANCE * 100.0
        )),
    );
    for (tracer, script) in r.cells() {
        let (Some(p), Some(m)) = (r.prediction(&tracer, &script), r.measured(&tracer, &script))
        else {
            continue;
        };
        let (ratio, held) = agreement(p.extra_cpu_ns, &m.extra_cpu_ns);
        t.rows.push(vec![
            Cell::text(tracer),
            Cell::text(script),
            Cell::count(p.hits),
            est_cell(&p.per_event_ns, 1.0, |x| format!("{x:.0}")),
            Cell::num(p.extra_cpu_ns / 1e9, s(p.extra_cpu_ns / 1e9)),
            est_cell(&m.extra_cpu_ns, 1e9, s),
            Cell::num(ratio, format!("{ratio:.2}")).flag_if(!held),
            Cell::text(if held {
                "-".to_string()
            } else {
                mechanism(p, &m)
            }),
        ]);
    }
    t
}

/// What the program itself reported per cell (pgbench's tps and latency percentiles), and a
/// probe's hits against the program's own count where it gives one.
fn metrics(r: &AppResult) -> Option<Table> {
    let mut names: Vec<String> = Vec::new();
    for run in r.runs.iter().filter(|x| !x.warmup) {
        for (n, _) in &run.metrics {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    let truth = r.runs.iter().any(|x| x.ground_truth.is_some());
    let mut columns = vec![Column::new("tracer").text(), Column::new("script").text()];
    columns.extend(names.iter().map(|n| Column::new(n.as_str())));
    if truth {
        columns.push(Column::new("probe's events / its hits").text());
    }
    let mut t = Table::new("app-metrics", 2, columns).titled(
        format!("What {} reported", r.config.workload),
        Some("Means over rounds with 95 % intervals.".into()),
    );
    let mut cells = vec![("none".to_string(), None)];
    cells.extend(r.cells().into_iter().map(|(t, s)| (t, Some(s))));
    for (tracer, script) in cells {
        let runs: Vec<&rtrace_measure::app::AppRun> = r.timed(&tracer, script.as_deref()).collect();
        let mut row = vec![
            Cell::text(&tracer),
            Cell::text(script.as_deref().unwrap_or("-")),
        ];
        for n in &names {
            let xs: Vec<f64> = runs.iter().filter_map(|x| x.metric(n)).collect();
            let e = rtrace_measure::interval::mean_of(&xs, 0.0);
            row.push(Cell::or_missing(e.as_ref(), |e| {
                est_cell(e, 1.0, |x| match x.abs() {
                    a if a >= 100.0 || x.fract() == 0.0 => format!("{x:.0}"),
                    _ => format!("{x:.3}"),
                })
            }));
        }
        if truth {
            let exact: Vec<String> = runs
                .iter()
                .filter_map(|x| {
                    let (_, n) = x.ground_truth.as_ref()?;
                    Some(format!("{}/{n}", x.events_total()?))
                })
                .collect();
            row.push(Cell::text(if exact.is_empty() {
                "-".to_string()
            } else {
                exact.join(", ")
            }));
        }
        t.rows.push(row);
    }
    Some(t)
}

fn counts(r: &AppResult) -> Table {
    let mut t = Table::new(
        "app-counts",
        2,
        vec![
            Column::new("script").text(),
            Column::new("probe").text(),
            Column::new("hits"),
        ],
    );
    for c in &r.counts {
        t.rows.push(vec![
            Cell::text(&c.script),
            Cell::text("all"),
            Cell::count(c.hits),
        ]);
        for (probe, n) in c.top.iter().take(5) {
            t.rows
                .push(vec![Cell::text(""), Cell::text(probe), Cell::count(*n)]);
        }
    }
    t
}

/// Measured extra CPU time per cell (whiskers: 95 % intervals) with the prediction marked.
fn figure(r: &AppResult) -> anyhow::Result<Option<Figure>> {
    let mut categories = Vec::new();
    let mut measured = Vec::new();
    let mut predicted = Vec::new();
    let ms = |x: f64| x / 1e6;
    for (tracer, script) in r.cells() {
        let Some(m) = r.measured(&tracer, &script) else {
            continue;
        };
        categories.push(format!("{tracer}, {script}"));
        let e = m.extra_cpu_ns;
        measured.push(Some(Estimate {
            estimate: ms(e.estimate),
            low: e.low.map(ms),
            high: e.high.map(ms),
            ..e
        }));
        predicted.push(r.prediction(&tracer, &script).map(|p| ms(p.extra_cpu_ns)));
    }
    if categories.is_empty() {
        return Ok(None);
    }
    let title = format!(
        "Extra CPU time of {} by tracer and script",
        r.config.workload
    );
    let svg = bars::figure(
        &title,
        &categories,
        bars::Axes {
            x: "tracer, script",
            y: "extra CPU time, ms (log)",
        },
        &[bars::Bars {
            label: "measured (traced − untraced, same round)".into(),
            colour: crate::figures::style::colour(rtrace_tracer::TracerKind::Ftrace),
            values: measured,
        }],
        Some(&bars::Mark {
            label: "predicted before the traced runs".into(),
            values: predicted,
        }),
    )?;
    Ok(Some(Figure {
        file: "app-extra-cpu.svg".into(),
        title,
        caption: "The machine's extra busy time under each tracer and script, measured against the untraced run of the same round, and the prediction (black line) made from the hits and the calibration loop.".into(),
        svg,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_measure::app::{AppConfig, AppRun, ScriptConfig, ScriptCount, EXPERIMENT};
    use rtrace_measure::{Header, RunSettings};
    use rtrace_tracer::EventStats;

    fn run(
        tracer: &str,
        script: Option<&str>,
        round: u32,
        wall_s: f64,
        cpu_s: f64,
        machine_s: f64,
    ) -> AppRun {
        let ns = |s: f64| (s * 1e9) as u64;
        AppRun {
            tracer: tracer.into(),
            script: script.map(Into::into),
            round,
            warmup: false,
            wall_ns: ns(wall_s),
            cpu_ns: ns(cpu_s),
            machine_cpu_ns: ns(machine_s),
            attach_ns: script.map(|_| 50_000_000),
            exit_ns: script.map(|_| 100_000_000),
            exit_machine_cpu_ns: None,
            events: script.map(|_| EventStats::new(1_000_000, 0)),
            by_probe: Vec::new(),
            metrics: Vec::new(),
            ground_truth: None,
        }
    }

    /// A kbuild of 10 s: ftrace costs 1 s of CPU, as predicted; perf 2 s, predicted 1 s,
    /// most of it outside the build.
    fn result() -> AppResult {
        let mut runs = Vec::new();
        for round in 0..3 {
            let jitter = f64::from(round) * 0.01;
            runs.push(run("none", None, round, 10.0 + jitter, 19.0, 19.5 + jitter));
            runs.push(run(
                "ftrace",
                Some("syscalls"),
                round,
                10.5 + jitter,
                19.7,
                20.5 + jitter,
            ));
            runs.push(run(
                "perf",
                Some("syscalls"),
                round,
                11.0 + jitter,
                19.6,
                21.5 + jitter,
            ));
        }
        let mut calibration = vec![
            run("none", None, 0, 1.0, 0.5, 1.0),
            run("none", None, 1, 1.0, 0.5, 1.0),
        ];
        for (t, per) in [("ftrace", 1.0), ("perf", 1.0)] {
            for i in 0..2 {
                let mut r = run(
                    t,
                    Some("syscalls"),
                    i,
                    1.5,
                    0.5 + 0.7 * per,
                    1.0 + per + 0.01 * f64::from(i),
                );
                r.events = Some(EventStats::new(1_000_000, 0));
                calibration.push(r);
            }
        }
        let mut r = AppResult {
            header: Header::new(EXPERIMENT),
            config: AppConfig {
                run: RunSettings {
                    rounds: 3,
                    ..RunSettings::default()
                },
                workload: "kbuild".into(),
                describe: "a kernel build".into(),
                command: vec!["make".into()],
                calibration_command: vec!["perf".into()],
                scripts: vec![ScriptConfig {
                    name: "syscalls".into(),
                    patterns: vec!["syscalls:*".into()],
                    tracepoints: 700,
                }],
                warmup: 1,
                calibration_runs: 2,
            },
            counts: vec![ScriptCount {
                script: "syscalls".into(),
                hits: 1_000_000,
                top: vec![("syscalls:sys_enter_read".into(), 300_000)],
                wall_ns: 10_000_000_000,
            }],
            calibration,
            predictions: Vec::new(),
            runs,
            not_run: Vec::new(),
            failures: Vec::new(),
        };
        for t in ["ftrace", "perf"] {
            let p = rtrace_measure::app::predict(&r.calibration, t, "syscalls", 1_000_000, 1.95);
            r.predictions.push(p.unwrap());
        }
        r
    }

    #[test]
    fn a_prediction_that_holds_is_plain_and_a_miss_names_its_part() {
        let r = result();
        let t = predictions(&r);
        assert_eq!(t.rows.len(), 2);
        let ftrace = &t.rows[0];
        assert_eq!(ftrace[6].shown, "1.00", "{ftrace:?}");
        assert!(!ftrace[6].flagged);
        assert_eq!(ftrace[7].shown, "-");
        let perf = &t.rows[1];
        assert_eq!(perf[6].shown, "0.50", "{perf:?}");
        assert!(perf[6].flagged);
        assert!(
            perf[7].shown.contains("outside the program"),
            "{}",
            perf[7].shown
        );
        let w = slowdowns(&r);
        assert_eq!(w.rows.len(), 3, "the untraced row, then a row per cell");
        assert!(w.rows[1][3].shown.starts_with("+5.0"), "{:?}", w.rows[1][3]);
        assert!(w.rows[1][3].flagged, "a resolved slowdown stands out");
        assert!(
            summary(&r)[0].contains("held within 25 % in 1 of 2 cells"),
            "{:?}",
            summary(&r)
        );
        let f = figure(&r).unwrap().unwrap();
        assert!(f.svg.contains("<svg"));
    }
}
