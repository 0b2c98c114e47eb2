//! Result model of `rtrace-bench events`: Gregg's per-event cost benchmark (BPF Performance
//! Tools, ch. 18, rerun by Piotrowski 2024, seed 004) across tracers. Per experiment and tracer,
//! the workload's `read` loop is timed in every round next to a run with no tracer; the
//! per-event cost of a round is (traced time - untraced time) / reads, with a t interval over
//! rounds, and Gregg's statistic (fastest traced run - fastest untraced run) / reads beside it.

use crate::interval::{mean_of, ratio_of, Estimate};

use rtrace_tracer::features::{Evidence, Feature};
use rtrace_tracer::TracerKind;
use serde::{Deserialize, Serialize};

/// What makes the reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Our pinned loop of 1-byte `read(2)` calls from /dev/zero, timed on the TSC.
    #[default]
    Loop,
    /// Gregg's `dd if=/dev/zero of=/dev/null bs=1 count=N`, pinned, timed from its start to its
    /// exit (each block a read and a write).
    Dd,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Loop => "read loop",
            Workload::Dd => "dd",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventsSettings {
    /// 1-byte reads per run (the events of each experiment).
    pub reads: u64,
    /// CPUs, priority, rounds, buffers, trace data.
    #[serde(flatten)]
    pub run: crate::settings::RunSettings,
    /// Whether the kernel has kprobes (else 8-17 hook the `read` syscall's tracepoints).
    pub kprobes: bool,
    /// The libc whose `read` experiments 6 and 7 hook.
    pub libc: String,
    /// The instruction at `read`'s entry, where experiments 6 and 7 place their uprobe,
    /// classified by how the kernel runs it; absent in files of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_site: Option<rtrace_sdt::ProbeSite>,
    #[serde(default = "loop_only")]
    pub workloads: Vec<Workload>,
}

fn loop_only() -> Vec<Workload> {
    vec![Workload::Loop]
}

/// One run of one experiment under one tracer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FeatureRun {
    #[serde(default)]
    pub workload: Workload,
    pub round: u32,
    pub elapsed_ns: u64,
    pub reads: u64,
    pub evidence: Evidence,
}

/// An experiment under one tracer: measured, or why not.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    #[serde(default)]
    pub workload: Workload,
    pub feature: Feature,
    pub tracer: TracerKind,
    /// Where it hooks here.
    pub hook: String,
    /// The program: the bpftrace one-liner, our BPF program's name, the ftrace event and filter.
    pub program: String,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "detail")]
pub enum Outcome {
    Measured(Vec<FeatureRun>),
    /// The tracer has the feature but this machine lacks the mechanism (e.g. kprobes).
    Unavailable(String),
    /// The tracer cannot express the experiment.
    Inexpressible(String),
    /// It should have run and failed.
    Failed(String),
}

/// The hook-level accounting check of one tracer: its ordinary backend, kept to the workload's
/// process, must see exactly the workload's reads on the hook (experiments whose action is empty
/// print nothing to check).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HookCheck {
    #[serde(default)]
    pub workload: Workload,
    pub tracer: TracerKind,
    pub hook: String,
    pub reads: u64,
    /// Events of the process on the hook outside its copy loop (dd: the dynamic loader's reads
    /// of its libraries), measured by the same tracer on a run that copies nothing; 0 for the
    /// read loop, which makes none.
    #[serde(default)]
    pub startup: u64,
    pub recorded: u64,
    pub lost: u64,
}

impl HookCheck {
    /// Every read accounted: recorded, or known lost (ftrace's overwrite mode overwrites the
    /// oldest events of a full buffer and counts them).
    pub fn exact(&self) -> bool {
        self.recorded + self.lost == self.reads + self.startup
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventsResult {
    /// `experiment`, `tool_version`, `started_unix`, `environment`.
    #[serde(flatten)]
    pub header: crate::Header,
    pub config: EventsSettings,
    /// The loop with no tracer: two runs per round, at its start and at its end.
    pub baseline: Vec<FeatureRun>,
    pub cells: Vec<Cell>,
    pub hook_checks: Vec<HookCheck>,
    pub failed: Vec<String>,
    /// Runs that failed once and were run again (the reason each first failed).
    #[serde(default)]
    pub retried: Vec<String>,
    /// Tracers rtrace-bench checked but cannot run here (SystemTap), with the reason measured
    /// on this machine; absent in files of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<UnavailableTracer>,
}

/// A tracer that could not run on the machine of a result, and why (checked when it ran).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnavailableTracer {
    /// Its name and, where installed, version (`systemtap 4.8`).
    pub tracer: String,
    pub why: String,
}

/// A cell's per-event cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Mean over rounds of (traced - untraced of the same round) / reads, with its interval.
    pub per_event_ns: Estimate,
    /// Gregg's statistic: (fastest traced - fastest untraced) / reads.
    pub fastest_ns: f64,
    /// Mean traced time / mean untraced time - 1 (Piotrowski's Table V), in percent.
    pub slowdown_pct: f64,
}

impl EventsResult {
    pub fn cell(&self, w: Workload, feature: Feature, tracer: TracerKind) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.workload == w && c.feature == feature && c.tracer == tracer)
    }

    /// The workloads of the result, in the order they were asked for.
    pub fn workloads(&self) -> Vec<Workload> {
        let mut w: Vec<Workload> = Vec::new();
        for c in &self.cells {
            if !w.contains(&c.workload) {
                w.push(c.workload);
            }
        }
        w
    }

    /// The untraced time of `round`: the mean of its runs (one at its start, one at its end).
    fn baseline_of(&self, w: Workload, round: u32) -> Option<f64> {
        let runs: Vec<f64> = self
            .baseline
            .iter()
            .filter(|b| b.workload == w && b.round == round)
            .map(|b| b.elapsed_ns as f64)
            .collect();
        (!runs.is_empty()).then(|| runs.iter().sum::<f64>() / runs.len() as f64)
    }

    /// Per-round per-event costs of a measured cell, paired with the same round's baseline.
    pub fn per_round_ns(&self, runs: &[FeatureRun]) -> Vec<f64> {
        runs.iter()
            .filter_map(|r| {
                let b = self.baseline_of(r.workload, r.round)?;
                Some((r.elapsed_ns as f64 - b) / r.reads.max(1) as f64)
            })
            .collect()
    }

    pub fn cost(&self, cell: &Cell) -> Option<Cost> {
        let Outcome::Measured(runs) = &cell.outcome else {
            return None;
        };
        let xs = self.per_round_ns(runs);
        let per_event_ns = mean_of(&xs, 0.0)?;
        let reads = runs.first()?.reads.max(1) as f64;
        let base: Vec<&FeatureRun> = self
            .baseline
            .iter()
            .filter(|b| b.workload == cell.workload)
            .collect();
        let fastest = runs.iter().map(|r| r.elapsed_ns).min()? as f64;
        let fastest_base = base.iter().map(|r| r.elapsed_ns).min()? as f64;
        let mean = |v: &mut dyn Iterator<Item = u64>| {
            let (n, sum) = v.fold((0u64, 0f64), |(n, s), x| (n + 1, s + x as f64));
            sum / n.max(1) as f64
        };
        Some(Cost {
            per_event_ns,
            fastest_ns: (fastest - fastest_base) / reads,
            slowdown_pct: (mean(&mut runs.iter().map(|r| r.elapsed_ns))
                / mean(&mut base.iter().map(|r| r.elapsed_ns))
                - 1.0)
                * 100.0,
        })
    }

    /// Mean untraced time per read (ns) of a workload.
    pub fn baseline_per_read_ns(&self, w: Workload) -> Option<f64> {
        let base = self.baseline.iter().filter(|b| b.workload == w);
        let reads: u64 = base.clone().map(|b| b.reads).sum();
        let ns: u64 = base.map(|b| b.elapsed_ns).sum();
        (reads > 0).then(|| ns as f64 / reads as f64)
    }

    /// `a`'s per-event cost over `b`'s for one experiment (e.g. our eBPF over bpftrace's
    /// one-liner): geometric mean of per-round ratios with its interval; `None` unless both
    /// were measured and every round's costs are positive.
    pub fn ratio(
        &self,
        w: Workload,
        feature: Feature,
        a: TracerKind,
        b: TracerKind,
    ) -> Option<Estimate> {
        let runs = |t| match &self.cell(w, feature, t)?.outcome {
            Outcome::Measured(r) => Some(self.per_round_ns(r)),
            _ => None,
        };
        let (xa, xb) = (runs(a)?, runs(b)?);
        if xa.len() != xb.len() || xa.is_empty() {
            return None;
        }
        let ratios: Vec<f64> = xa.iter().zip(&xb).map(|(x, y)| x / y).collect();
        if xa.iter().chain(&xb).any(|&v| v <= 0.0) {
            return None;
        }
        ratio_of(&ratios, 0.0)
    }
}

/// Piotrowski's bpftrace 0.17 results (seed 004, the second of its Benchmark 1 tables: Linux
/// 5.4.0-139 on an Intel Xeon Gold 6226R, dd of 10,000,000 1-byte blocks, fastest of 10 runs;
/// the table is bpftrace's, not DTrace's: its kprobe is the "still under 80 ns" and its uprobes
/// the slower ones of the text). (runtime s, per-event ns) by experiment number.
pub const PIOTROWSKI_BPFTRACE: [(u8, f64, u64); 18] = [
    (1, 5.97243, 0),
    (2, 6.75364, 78),
    (3, 8.13894, 217),
    (4, 6.95894, 99),
    (5, 6.92440, 95),
    (6, 19.14660, 1317),
    (7, 25.74360, 1977),
    (8, 7.24849, 128),
    (9, 7.91737, 194),
    (10, 8.09561, 212),
    (11, 8.27808, 231),
    (12, 8.31670, 234),
    (13, 9.41422, 344),
    (14, 12.64800, 668),
    (15, 8.35566, 238),
    (16, 12.48160, 651),
    (17, 14.53060, 856),
    (18, 14.67190, 870),
];

/// Where the reference numbers come from, for reports.
pub const PIOTROWSKI_SOURCE: &str = "Piotrowski 2024 (seed 004), bpftrace 0.17.0 on Linux 5.4.0-139, Intel Xeon Gold 6226R; dd of 10,000,000 1-byte blocks, fastest of 10 runs; Gregg's own table (Linux 4.15, i7-8650U) is an image the seed's text does not carry";

/// Piotrowski's untraced dd per 1-byte block (ns): control runtime / 10,000,000 blocks.
pub fn piotrowski_control_ns_per_block() -> f64 {
    PIOTROWSKI_BPFTRACE[0].1 * 1e9 / 10_000_000.0
}

/// The reference (per-event ns, slowdown % against its control) of an experiment.
pub fn piotrowski(feature: Feature) -> Option<(u64, f64)> {
    let control = PIOTROWSKI_BPFTRACE[0].1;
    PIOTROWSKI_BPFTRACE
        .iter()
        .find(|r| r.0 == feature.number())
        .map(|r| (r.2, (r.1 / control - 1.0) * 100.0))
}

/// `experiment` of an events result file.
pub const EXPERIMENT: &str = "events";

crate::result_model!(EventsResult);

#[cfg(test)]
mod tests {
    use super::*;
    use Feature::{Control, Map, TracepointEntry};
    use TracerKind::{Bpftrace, Ebpf, Ftrace};
    use Workload::Loop;

    fn run(round: u32, elapsed_ns: u64) -> FeatureRun {
        FeatureRun {
            workload: Loop,
            round,
            elapsed_ns,
            reads: 1000,
            evidence: Evidence::default(),
        }
    }

    fn result(cells: Vec<Cell>) -> EventsResult {
        EventsResult {
            header: crate::Header {
                experiment: "events".into(),
                tool_version: "0".into(),
                started_unix: 0,
                environment: crate::Environment::collect(0),
            },
            config: EventsSettings {
                reads: 1000,
                run: crate::RunSettings {
                    cpu: 1,
                    rounds: 3,
                    ..Default::default()
                },
                kprobes: false,
                libc: "/lib/libc.so.6".into(),
                read_site: None,
                workloads: vec![Loop],
            },
            baseline: vec![run(0, 300_000), run(1, 310_000), run(2, 290_000)],
            cells,
            hook_checks: Vec::new(),
            failed: Vec::new(),
            retried: Vec::new(),
            unavailable: Vec::new(),
        }
    }

    fn cell(tracer: TracerKind, extra: [u64; 3]) -> Cell {
        Cell {
            workload: Loop,
            feature: Map,
            tracer,
            hook: String::new(),
            program: String::new(),
            outcome: Outcome::Measured(
                [300_000, 310_000, 290_000]
                    .iter()
                    .zip(extra)
                    .enumerate()
                    .map(|(i, (b, e))| run(i as u32, b + e))
                    .collect(),
            ),
        }
    }

    #[test]
    fn settings_of_older_files_load_without_buffers() {
        let old = r#"{"reads": 1000, "rounds": 2, "cpu": 1, "priority": null, "kprobes": false,
            "libc": "/lib/libc.so.6", "workloads": ["loop"]}"#;
        let s: EventsSettings = serde_json::from_str(old).unwrap();
        assert!(s.run.buffer_size_kb.is_none() && s.run.buffers.is_empty() && s.run.rounds == 2);
    }

    #[test]
    fn per_event_cost_is_paired_by_round() {
        let r = result(vec![cell(Bpftrace, [100_000; 3]), cell(Ebpf, [50_000; 3])]);
        let c = r.cost(&r.cells[0]).unwrap();
        assert!((c.per_event_ns.estimate - 100.0).abs() < 1e-9);
        // Gregg: fastest traced (390,000) - fastest untraced (290,000), over 1000 reads.
        assert!((c.fastest_ns - 100.0).abs() < 1e-9);
        assert!((c.slowdown_pct - 100.0 / 3.0).abs() < 1e-6);
        // The ratio of two tracers.
        let e = r.ratio(Loop, Map, Ebpf, Bpftrace).unwrap();
        assert!((e.estimate - 0.5).abs() < 1e-9);
        assert!(r.ratio(Loop, Map, Ebpf, Ftrace).is_none());
    }

    #[test]
    fn reference_slowdown_is_against_its_control() {
        let (ns, pct) = piotrowski(TracepointEntry).unwrap();
        assert_eq!(ns, 99);
        assert!((pct - (6.95894 / 5.97243 - 1.0) * 100.0).abs() < 1e-9);
        assert_eq!(piotrowski(Control).unwrap().0, 0);
    }
}
