//! Results to test with: a summary, sweep runs and a sweep.

use crate::sweep::{Configuration, Source, SweepConfig, SweepResult, SweepRun};
use crate::Summary;

/// Statistics `base` times min 1, p50 and mean 2, p99 5, p99.9 8, p99.99 9, max 10.
pub fn summary(base: f64) -> Summary {
    Summary {
        count: 100,
        min_ns: base,
        max_ns: base * 10.0,
        mean_ns: base * 2.0,
        stddev_ns: 1.0,
        p50_ns: base * 2.0,
        p99_ns: base * 5.0,
        p999_ns: base * 8.0,
        p9999_ns: base * 9.0,
    }
}

/// A run of `config` by `source` with `latency`, no rounds, nothing traced.
pub fn sweep_run(config: Configuration, source: Source, latency: Summary) -> SweepRun {
    SweepRun {
        config,
        source,
        tracer: config.tracer(),
        hook: None,
        sites: Vec::new(),
        program: "workload".into(),
        latency,
        histogram: String::new(),
        overflows: 0,
        loops: 100,
        overruns: Some(0),
        accounting: None,
        mlocked: Some(true),
        pm_qos_zero: Some(true),
        trace_data: None,
        wall_s: 1.0,
        rounds: Vec::new(),
        untraced: None,
    }
}

/// A sweep of `runs`, every `interval_us`, on CPU 1 at priority 99.
pub fn sweep(interval_us: u64, runs: Vec<SweepRun>) -> SweepResult {
    SweepResult {
        header: crate::Header {
            experiment: "cyclictest-sweep".into(),
            tool_version: "0".into(),
            started_unix: 0,
            environment: crate::Environment::collect(0),
        },
        config: SweepConfig {
            probe_at: None,
            configs: vec![],
            shuffle_seed: None,
            interval_us,
            loops: 100,
            run: crate::RunSettings {
                cpu: 1,
                harness_cpus: vec![0],
                priority: Some(99),
                ..Default::default()
            },
            main_cpu: 0,
            histogram_limit_us: 10_000,
            cyclictest: None,
            cyclictest_version: None,
        },
        runs,
        unavailable: vec![],
        failed: vec![],
        retried: vec![],
        warnings: vec![],
    }
}
