//! Synthetic results, deterministic and shaped like real runs: the exporters' unit tests and
//! other crates' tests use them (nothing here is measured).

use hdrhistogram::Histogram;
use rtrace_measure::disturbed::Disturbed;
use rtrace_measure::sweep::{
    Accounting, Configuration, Source, SweepConfig, SweepResult, SweepRun,
};
use rtrace_measure::usdt::{Case, CaseResult, RoundSummary, UsdtConfig, UsdtResult};
use rtrace_measure::{Environment, Events, Summary};
use rtrace_protocol::{encode_histogram, new_histogram};
use rtrace_tracer::TracerKind::{self, Ftrace, Lttng};
use std::collections::BTreeMap;

/// `n` samples around `centre` with a long thin tail (deterministic).
pub fn samples(n: u64, centre: u64, spread: u64) -> Vec<u64> {
    seeded_samples(n, centre, spread, 0)
}

/// [`samples`] from another of the generator's streams (a different round).
fn seeded_samples(n: u64, centre: u64, spread: u64, seed: u64) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ centre ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (x >> 33) % (2 * spread + 1);
            let tail = if i % 997 == 0 { centre * 5 } else { 0 };
            centre - spread + u + tail
        })
        .collect()
}

/// `hits` events, `lost` of them lost.
pub fn events(hits: u64, lost: u64) -> Events {
    let (recorded, overwritten) = (hits - lost, 0);
    Events {
        hits,
        recorded,
        lost,
        overwritten,
    }
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn histogram(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = new_histogram();
    for v in values {
        h.record(v).unwrap();
    }
    h
}

/// `h`'s summary and encoding.
fn summarised(h: &Histogram<u64>) -> (Summary, String) {
    (Summary::of(h).unwrap(), encode_histogram(h).unwrap())
}

pub fn environment(preemption: &str) -> Environment {
    Environment {
        kernel_release: "6.1.0-test".into(),
        kernel_version: format!("#1 SMP {preemption}"),
        preemption: preemption.into(),
        cpu_model: "Test CPU".into(),
        online_cpus: 2,
        smt_active: Some(false),
        clocksource: "tsc".into(),
        tsc_invariant: true,
        tsc_hz: Some(2e9),
        tsc_step_ns: Some(10.0),
        virtualized: true,
        ..Default::default()
    }
}

/// Rounds of every fixture run.
pub const ROUNDS: u64 = 4;

/// A run of [`ROUNDS`] rounds of 5,000 samples each around `centre`.
pub fn case(tracer: TracerKind, case: Case, centre: u64, lost: u64) -> CaseResult {
    let mut pooled = new_histogram();
    let mut rounds = Vec::new();
    for round in 0..ROUNDS {
        let h = histogram(seeded_samples(5_000, centre, centre / 10, round));
        let timer = histogram(seeded_samples(1_000, 10, 1, round));
        rounds.push(RoundSummary::of(&h).unwrap().with_timer(&timer));
        pooled.add(&h).unwrap();
    }
    let (summary, encoded) = summarised(&pooled);
    let (timer_overhead, _) = summarised(&histogram(samples(100, 10, 1)));
    CaseResult {
        tracer,
        case,
        variant: None,
        workload: "workload".into(),
        hook: None,
        hook_kind: Default::default(),
        sites: Vec::new(),
        summary,
        histogram: encoded,
        timer_overhead,
        events: (tracer != TracerKind::None && case != Case::Instrumented)
            .then(|| events(if case == Case::Traced { 20_000 } else { 0 }, lost)),
        tsc_hz: 2e9,
        tsc_step_ns: Some(10.0),
        trace_data: None,
        workload_max_rss_kb: 2048,
        mlocked: true,
        wall_s: 0.1,
        rests: 0,
        disturbed: Disturbed::of(&pooled),
        rounds,
        counters: None,
        per_thread: Vec::new(),
    }
}

/// none case 0, ftrace and lttng cases 1-3; ftrace case 1 lost events.
pub fn usdt() -> UsdtResult {
    let mut runs = vec![case(TracerKind::None, Case::Baseline, 15, 0)];
    for (t, c1, lost) in [(Ftrace, 600, 5_000), (Lttng, 200, 0)] {
        runs.push(case(t, Case::Traced, c1, lost));
        runs.push(case(t, Case::Dormant, 16, 0));
        runs.push(case(t, Case::Instrumented, 16, 0));
    }
    UsdtResult {
        header: rtrace_measure::Header {
            experiment: "usdt".into(),
            tool_version: "0.1.0".into(),
            started_unix: 1_700_000_000,
            environment: environment("PREEMPT_DYNAMIC (full)"),
        },
        config: UsdtConfig {
            tracers: vec![Ftrace, Lttng],
            cases: Case::ALL.to_vec(),
            iterations: 20_000,
            warmup: 100,
            run: rtrace_measure::RunSettings {
                cpu: 1,
                harness_cpus: vec![0],
                priority: None,
                rounds: ROUNDS as u32,
                buffer_size_kb: Some(4096),
                tracer_options: serde_json::json!({"record": "overwrite"}),
                buffers: map(&[
                    ("ftrace", "instance buffer_size_kb = 4096 KiB per CPU"),
                    ("lttng", "4 sub-buffers × 1024 KiB = 4096 KiB per CPU"),
                ]),
                unequal: map(&[("lttng", "a session daemon found running")]),
                keep_traces: Some(rtrace_measure::trace_data::KeepTraces::None),
                ..Default::default()
            },
            hooks: vec![rtrace_measure::usdt::HookKind::Usdt],
            pacing: None,
            allow_loss: false,
            thread_cpus: Vec::new(),
            steady_state: Default::default(),
            spacing_us: None,
        },
        runs,
        warnings: Vec::new(),
    }
}

/// A run of `config` from `source` with latencies around `centre_ns`.
pub fn sweep_run(config: Configuration, source: Source, centre_ns: u64) -> SweepRun {
    let (latency, encoded) = summarised(&histogram(samples(5_000, centre_ns, centre_ns / 3)));
    SweepRun {
        config,
        source,
        tracer: config.tracer(),
        hook: None,
        sites: Vec::new(),
        program: "workload".into(),
        histogram: encoded,
        overflows: 0,
        loops: 5_000,
        overruns: Some(0),
        accounting: config
            .rule()
            .map(|rule| Accounting::judge(rule, events(5_000, 0))),
        mlocked: Some(true),
        pm_qos_zero: Some(true),
        trace_data: None,
        wall_s: 1.0,
        // Three rounds around the pooled statistics, 50 ns apart.
        rounds: (0..3u32)
            .map(|i| {
                let d = (f64::from(i) - 1.0) * 50.0;
                rtrace_measure::sweep::RoundLatency {
                    p50_ns: latency.p50_ns + d,
                    mean_ns: latency.mean_ns + d,
                    p99_ns: latency.p99_ns + d,
                    ..rtrace_measure::sweep::RoundLatency::of(i, None, &latency, 5_000 / 3)
                }
            })
            .collect(),
        latency,
        untraced: None,
    }
}

/// A sweep of none, two user-space and one kernel-space configuration; `slower` scales latency.
pub fn sweep(preemption: &str, slower: u64) -> SweepResult {
    let configs = [
        (Configuration::None, 9_000),
        (Configuration::UsdtFtrace, 12_000),
        (Configuration::UsdtLttng, 10_000),
        (Configuration::KernelFtrace, 9_500),
    ];
    let mut runs: Vec<SweepRun> = configs
        .iter()
        .map(|&(c, ns)| sweep_run(c, Source::Builtin, ns * slower))
        .collect();
    let cyclictest = sweep_run(Configuration::None, Source::Cyclictest, 9_200 * slower);
    runs.push(cyclictest);
    SweepResult {
        header: rtrace_measure::Header {
            experiment: "cyclictest-sweep".into(),
            tool_version: "0.1.0".into(),
            started_unix: 1_700_000_000,
            environment: environment(preemption),
        },
        config: SweepConfig {
            probe_at: Some(rtrace_protocol::ProbeAt::Window),
            configs: configs.iter().map(|c| c.0).collect(),
            shuffle_seed: None,
            interval_us: 200,
            loops: 5_000,
            run: rtrace_measure::RunSettings {
                cpu: 1,
                harness_cpus: vec![0],
                priority: Some(99),
                rounds: 3,
                tracer_options: serde_json::json!({
                    "record": "stream",
                    "bpf_modes": ["record"],
                    "lttng_event": ["tracepoint"],
                }),
                ..Default::default()
            },
            main_cpu: 0,
            histogram_limit_us: 10_000,
            cyclictest: None,
            cyclictest_version: None,
        },
        runs,
        unavailable: Vec::new(),
        failed: Vec::new(),
        retried: Vec::new(),
        warnings: Vec::new(),
    }
}

/// A report of the usdt fixture (from `a/usdt.json`) and sweeps on PREEMPT (twice as slow) and
/// PREEMPT_RT.
#[cfg(test)]
pub fn report() -> crate::Report {
    crate::Report::new([
        (Some("a/usdt.json".into()), usdt().into()),
        (None, sweep("PREEMPT", 2).into()),
        (None, sweep("PREEMPT_RT", 1).into()),
    ])
}

/// Panics unless `text` has every one of `needles`, showing `text`.
#[cfg(test)]
pub fn assert_has(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "no {n:?} in:\n{text}");
    }
}
