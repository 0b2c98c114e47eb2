//! Warnings about a result, computed from the result model alone: anything that makes the numbers
//! less trustworthy than the thesis' setup (§3.3.2). Never silent: every exporter shows them, and
//! each message says what to do about it.

use crate::{Environment, Events, Summary};
use serde::{Deserialize, Serialize};

/// Iterations per case (usdt) and loops per configuration (sweep) of the thesis (§3.3.3, §3.4.1).
pub const THESIS_ITERATIONS: u64 = 10_000_000;
/// `max / p99.99` above this: a few samples far out in the tail (interrupts, SMIs, migrations).
pub const MAX_OVER_P9999: f64 = 10.0;
/// Clocksources the kernel falls back to when it judged the TSC unstable.
const FALLBACK_CLOCKSOURCES: [&str; 3] = ["hpet", "acpi_pm", "jiffies"];

/// What a warning is about (stable names for scripts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarningKind {
    /// The measured CPU is not in `isolcpus` / `nohz_full`.
    NotIsolated,
    /// Simultaneous multithreading is on.
    Smt,
    /// The cpufreq governor is not `performance`.
    Governor,
    /// Turbo boost is on.
    Turbo,
    /// The TSC is not invariant or the kernel stopped using it.
    UnstableTsc,
    /// Measured in a virtual machine (KVM or similar).
    Virtualized,
    /// Measured in an emulated (TCG) guest: timing is emulation noise.
    Emulated,
    /// A run's maximum is far above its p99.99.
    Outliers,
    /// A tracer reported lost events.
    EventsLost,
    /// A tracer's accounting disagrees with the ground truth.
    AccountingFailed,
    /// Samples above cyclictest's histogram limit (its tail is clipped).
    Overflows,
    /// Periods of the cyclic loop overran (a wake-up came after the next period began).
    Overruns,
    /// The workload's memory was not locked: page faults can land in the timed interval.
    NotLocked,
    /// Fewer iterations than the thesis: the tail percentiles are less certain.
    FewIterations,
    /// A configuration started but failed.
    RunFailed,
    /// The invocation's first timed run differs from the later rounds of the same run.
    FirstRun,
}

/// One warning: what was seen and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub kind: WarningKind,
    /// The run it concerns (`ftrace case 1`, `usdt-ftrace/builtin`); `None`: the whole result.
    pub scope: Option<String>,
    /// What was seen, then what to do about it: one line, with counts.
    pub message: String,
    /// The runs and values behind the message, one per entry (folded in the HTML report).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl Warning {
    pub(crate) fn new(kind: WarningKind, message: String) -> Warning {
        Warning {
            kind,
            scope: None,
            message,
            details: Vec::new(),
        }
    }

    pub(crate) fn about(kind: WarningKind, scope: &str, message: String) -> Warning {
        Warning {
            scope: Some(scope.to_owned()),
            ..Warning::new(kind, message)
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.scope {
            Some(s) => write!(f, "{s}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A kernel CPU list such as `1-3,5`; a malformed one (`none`) holds no CPU.
pub fn cpu_list(s: &str) -> Vec<usize> {
    rtrace_tracer::parse_cpu_list(s).unwrap_or_default()
}

/// The machine's settings that disturb a measurement on `cpu`.
pub fn environment(e: &Environment, cpu: usize) -> Vec<Warning> {
    use WarningKind::*;
    let mut w = Vec::new();
    let isolated = cpu_list(&e.isolated_cpus).contains(&cpu);
    let nohz = cpu_list(&e.nohz_full).contains(&cpu);
    if !isolated || !nohz {
        let missing: Vec<String> = [(!isolated, "isolcpus"), (!nohz, "nohz_full")]
            .into_iter()
            .filter(|(m, _)| *m)
            .map(|(_, p)| format!("{p}={cpu}"))
            .collect();
        w.push(Warning::new(NotIsolated, format!(
            "measured CPU {cpu} is not isolated ({} missing): other tasks and the scheduler tick can run on it; boot with `{}` on the kernel command line",
            missing.join(", "), missing.join(" ")
        )));
    }
    if e.smt_active == Some(true) {
        w.push(Warning::new(Smt, "SMT (hyperthreading) is on: the sibling thread shares the measured core; turn it off with `echo off > /sys/devices/system/cpu/smt/control` or in the firmware".into()));
    }
    if let Some(g) = e.governor.as_deref().filter(|g| *g != "performance") {
        w.push(Warning::new(Governor, format!(
            "cpufreq governor is `{g}`, not `performance`: the clock changes during the run; set it with `for g in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do echo performance > $g; done`"
        )));
    }
    if e.turbo == Some(true) {
        w.push(Warning::new(Turbo, "turbo boost is on: the clock depends on temperature and load; turn it off with `echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo` (or `echo 0 > /sys/devices/system/cpu/cpufreq/boost`)".into()));
    }
    if !e.tsc_invariant {
        w.push(Warning::new(UnstableTsc, "the TSC is not invariant (constant_tsc/nonstop_tsc missing): TSC durations drift with frequency and idle states; measure on a CPU with an invariant TSC".into()));
    } else if FALLBACK_CLOCKSOURCES.contains(&e.clocksource.as_str()) {
        w.push(Warning::new(UnstableTsc, format!(
            "the kernel clocksource is `{}`, not `tsc`: the kernel judged the TSC unstable; check `dmesg | grep -i tsc` and measure on a machine where the TSC is stable",
            e.clocksource
        )));
    }
    if e.emulated {
        w.push(Warning::new(Emulated, "measured in an emulated (TCG) guest: the latencies are emulation noise and prove function only; measure on real hardware for timing".into()));
    } else if e.virtualized {
        w.push(Warning::new(Virtualized, "measured in a virtual machine: hypervisor exits and steal time add latency; compare only with runs on the same VM, or measure on real hardware".into()));
    }
    w
}

/// Tail outliers: runs whose maximum is far above their p99.99, named in one warning.
/// `unit` is how the result shows durations: (ns per unit, name), e.g. `(1000.0, "µs")`.
pub fn outliers<'a>(
    runs: impl IntoIterator<Item = (String, &'a Summary)>,
    (per, unit): (f64, &str),
) -> Option<Warning> {
    let runs: Vec<(String, &Summary)> = runs.into_iter().collect();
    let hit: Vec<&(String, &Summary)> = runs
        .iter()
        .filter(|(_, s)| s.p9999_ns > 0.0 && s.max_ns / s.p9999_ns > MAX_OVER_P9999)
        .collect();
    let show = |(name, s): &(String, &Summary)| {
        format!(
            "{name}: max {:.0} {unit}, p99.99 {:.0} {unit}",
            s.max_ns / per,
            s.p9999_ns / per
        )
    };
    let worst = hit
        .iter()
        .max_by(|a, b| (a.1.max_ns / a.1.p9999_ns).total_cmp(&(b.1.max_ns / b.1.p9999_ns)))?;
    Some(Warning {
        details: hit.iter().map(|r| show(r)).collect(),
        ..Warning::new(WarningKind::Outliers, format!(
            "in {} of {} runs the maximum is more than {MAX_OVER_P9999:.0}× p99.99 (most: {}): a few samples were disturbed (interrupt, SMI, migration); isolate the CPU, run with --priority 99 on a quiet system, and read the percentiles rather than the max",
            hit.len(),
            runs.len(),
            show(worst)
        ))
    })
}

/// Events a tracer reported lost.
pub fn lost(scope: &str, ev: &Events) -> Option<Warning> {
    let total = ev.recorded + ev.lost;
    let share = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
    (ev.lost > 0).then(|| {
        let text = if ev.dropped() == 0 {
            format!(
                "{} of {} events ({:.1}%) were overwritten by later ones (a flight recorder keeps the last): every call paid for writing its event, but the trace is incomplete; keep every event with --record stream or a larger --buffer-size-kb",
                ev.lost, total, share(ev.lost)
            )
        } else {
            format!(
                "{} of {} events ({:.1}%) were lost ({} dropped, {} overwritten): the trace is incomplete, and a dropped event costs less than a recorded one; keep every event with --record stream or a larger --buffer-size-kb",
                ev.lost, total, share(ev.lost), ev.dropped(), ev.overwritten
            )
        };
        Warning::about(WarningKind::EventsLost, scope, text)
    })
}

pub(crate) fn not_locked(scope: &str) -> Warning {
    Warning::about(WarningKind::NotLocked, scope, "memory was not locked (mlockall failed): page faults can land in the timed interval; run as root or raise `ulimit -l`".into())
}

/// Fewer samples than the thesis took.
pub fn iterations(what: &str, n: u64, flag: &str) -> Option<Warning> {
    (n < THESIS_ITERATIONS).then(|| {
        Warning::new(WarningKind::FewIterations, format!(
            "{n} {what} per run, the thesis used {THESIS_ITERATIONS}: rare events (p99.99, max) are less certain; pass `{flag} {THESIS_ITERATIONS}` for the thesis' numbers"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usdt::{first_round_outside, first_run, CaseResult, RoundSummary};
    use WarningKind::FirstRun;

    fn quiet_machine() -> Environment {
        Environment {
            kernel_release: "6.12.11-rt".into(),
            kernel_version: "#1 SMP PREEMPT_RT".into(),
            preemption: "PREEMPT_RT".into(),
            cmdline: "isolcpus=3 nohz_full=3".into(),
            isolated_cpus: "3".into(),
            nohz_full: "2-3".into(),
            cpu_model: "Intel(R) Core(TM) i7-1065G7".into(),
            online_cpus: 4,
            smt_active: Some(false),
            governor: Some("performance".into()),
            turbo: Some(false),
            clocksource: "tsc".into(),
            tsc_invariant: true,
            tsc_hz: Some(1.5e9),
            tsc_step_ns: None,
            virtualized: false,
            emulated: false,
            ..Default::default()
        }
    }

    fn kinds(w: &[Warning]) -> Vec<WarningKind> {
        w.iter().map(|w| w.kind).collect()
    }

    fn round(median: f64) -> RoundSummary {
        let s = Summary {
            count: 1000,
            min_ns: median - 2.0,
            max_ns: median * 3.0,
            mean_ns: median + 0.5,
            stddev_ns: 1.0,
            p50_ns: median.floor(),
            p99_ns: median + 5.0,
            p999_ns: median + 8.0,
            p9999_ns: median + 9.0,
        };
        RoundSummary {
            summary: s,
            median_ns: Some(median),
            disturbed: None,
            timer_overhead: None,
            timer_median_ns: None,
            seq: None,
            uprobes_trampoline: None,
            syscall_ns: None,
        }
    }

    #[test]
    fn a_first_run_outside_the_later_rounds_is_named() {
        // The issue's pattern: the first run 25 ns, the later rounds 21.
        let mut rounds: Vec<RoundSummary> = [25.6, 21.7, 21.6, 21.8, 21.7].map(round).to_vec();
        let (stat, value, low, high) = first_round_outside(&rounds, 0).unwrap();
        assert_eq!(stat, "mean without disturbed samples");
        assert_eq!((value, low, high), (26.1, 22.1, 22.3));
        // A VM that switches between two speeds puts later rounds on both sides: no warning.
        rounds[3] = round(25.8);
        assert!(first_round_outside(&rounds, 0).is_none());
        // Within 5% of the range is not a bias.
        let close: Vec<RoundSummary> = [22.5, 21.7, 21.6, 21.8].map(round).to_vec();
        assert!(first_round_outside(&close, 0).is_none());
        assert!(
            first_round_outside(&close[..2], 0).is_none(),
            "too few rounds"
        );
    }

    #[test]
    fn the_first_run_is_found_by_its_sequence_number() {
        let mut rounds: Vec<RoundSummary> = [21.7, 21.6, 30.0, 21.8].map(round).to_vec();
        for (i, r) in rounds.iter_mut().enumerate() {
            r.seq = Some(10 * i as u64 + 7);
        }
        rounds[2].seq = Some(0);
        let run: CaseResult = serde_json::from_value(serde_json::json!({
            "tracer": "ftrace", "case": 2, "variant": null, "workload": "w", "hook": null,
            "summary": rounds[0].summary, "histogram": "", "timer_overhead": rounds[0].summary,
            "events": null, "tsc_hz": 1e9, "workload_max_rss_kb": 1, "mlocked": true,
            "wall_s": 1.0, "rounds": rounds,
        }))
        .unwrap();
        let w = first_run(std::slice::from_ref(&run)).unwrap();
        assert_eq!(w.kind, FirstRun);
        assert_eq!(w.scope.as_deref(), Some("ftrace case 2"));
        assert!(
            w.message.contains("30.50 ns, outside 22.10–22.30 ns"),
            "{w}"
        );
        let mut quiet = run.clone();
        quiet.rounds[2] = round(21.7);
        quiet.rounds[2].seq = Some(0);
        assert!(first_run(&[quiet]).is_none());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("1-3,5"), vec![1, 2, 3, 5]);
        assert_eq!(cpu_list(""), Vec::<usize>::new());
        assert_eq!(cpu_list("7, x"), Vec::<usize>::new());
    }

    #[test]
    fn the_thesis_setup_raises_nothing() {
        assert!(environment(&quiet_machine(), 3).is_empty());
    }

    #[test]
    fn every_disturbance_is_named_with_its_fix() {
        let mut e = quiet_machine();
        e.smt_active = Some(true);
        e.governor = Some("powersave".into());
        e.turbo = Some(true);
        e.clocksource = "hpet".into();
        e.virtualized = true;
        let w = environment(&e, 1);
        use WarningKind::*;
        let want = [NotIsolated, Smt, Governor, Turbo, UnstableTsc, Virtualized];
        assert_eq!(kinds(&w), want);
        assert!(w[0].message.contains("isolcpus=1 nohz_full=1"), "{}", w[0]);
        assert!(w[2].message.contains("echo performance"), "{}", w[2]);
        e.emulated = true;
        assert!(kinds(&environment(&e, 3)).contains(&Emulated));
        assert!(!kinds(&environment(&e, 3)).contains(&Virtualized));
    }

    #[test]
    fn outliers_lost_events_and_short_runs() {
        let s = Summary {
            count: 100,
            min_ns: 13.0,
            max_ns: 58_365.0,
            mean_ns: 607.0,
            stddev_ns: 889.0,
            p50_ns: 590.0,
            p99_ns: 900.0,
            p999_ns: 2_000.0,
            p9999_ns: 5_000.0,
        };
        let calm = Summary {
            max_ns: 6_000.0,
            ..s
        };
        let ns = (1.0, "ns");
        let w = outliers(
            [("none case 0".into(), &calm), ("ftrace case 1".into(), &s)],
            ns,
        );
        let w = w.unwrap();
        assert!(
            w.message
                .contains("in 1 of 2 runs the maximum is more than 10× p99.99 (most: ftrace case 1: max 58365 ns, p99.99 5000 ns)"),
            "{w}"
        );
        assert_eq!(w.details, ["ftrace case 1: max 58365 ns, p99.99 5000 ns"]);
        assert!(outliers([("x".to_owned(), &calm)], ns).is_none());
        let us = outliers([("none/builtin".to_owned(), &s)], (1000.0, "µs")).unwrap();
        assert!(us.message.contains("max 58 µs, p99.99 5 µs"), "{us}");
        let ev = Events::of(1000, 250, 750);
        let w = lost("ftrace case 1", &ev).unwrap();
        assert!(w.message.contains("750 of 1000 events (75.0%)"), "{w}");
        assert!(w.to_string().starts_with("ftrace case 1: "));
        assert!(lost("x", &Events { lost: 0, ..ev }).is_none());
        assert!(iterations("iterations", 200_000, "-n").is_some());
        assert!(iterations("iterations", THESIS_ITERATIONS, "-n").is_none());
    }

    #[test]
    fn warnings_round_trip_through_serde() {
        let w: Vec<Warning> =
            serde_json::from_str(r#"[{"kind":"not-isolated","scope":null,"message":"m"}]"#)
                .unwrap();
        assert_eq!(w[0].kind, WarningKind::NotIsolated);
    }
}
