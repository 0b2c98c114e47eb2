//! Result model of the per-probe microbenchmark (`rtrace-bench usdt`).

use crate::{Environment, Events, Summary};
use rtrace_tracer::TracerKind;
use serde::{Deserialize, Serialize};

/// The thesis' four cases (§3.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
pub enum Case {
    /// Not instrumented, no tracer: the loop body is a compiler barrier.
    Baseline = 0,
    /// Instrumented and traced: every execution is recorded.
    Traced = 1,
    /// Tracer active on a probe that never fires; body as case 0.
    Dormant = 2,
    /// Instrumented, tracer inactive.
    Instrumented = 3,
}

impl Case {
    pub const ALL: [Case; 4] = [
        Case::Baseline,
        Case::Traced,
        Case::Dormant,
        Case::Instrumented,
    ];

    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn describe(self) -> &'static str {
        match self {
            Case::Baseline => "baseline: no instrumentation, no tracer",
            Case::Traced => "instrumented, tracer recording every hit",
            Case::Dormant => "tracer active on a probe that never fires",
            Case::Instrumented => "instrumented, tracer inactive",
        }
    }
}

impl From<Case> for u8 {
    fn from(c: Case) -> u8 {
        c as u8
    }
}

impl TryFrom<u8> for Case {
    type Error = String;
    fn try_from(n: u8) -> Result<Case, String> {
        Case::ALL
            .into_iter()
            .find(|c| c.number() == n)
            .ok_or_else(|| format!("no case {n}: cases are 0, 1, 2, 3"))
    }
}

/// The whole result file of `rtrace-bench usdt`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsdtResult {
    /// `"usdt"`.
    pub experiment: String,
    /// rtrace-bench version that wrote the file.
    pub tool_version: String,
    /// Seconds since the Unix epoch at start.
    pub started_unix: u64,
    pub environment: Environment,
    pub config: UsdtConfig,
    /// One entry per (tracer, case) measured, in run order.
    pub runs: Vec<CaseResult>,
    /// What makes these numbers less trustworthy, each with what to do
    /// (`rtrace_measure::warnings::usdt`); absent in files of older versions.
    #[serde(default)]
    pub warnings: Vec<crate::Warning>,
}

/// How the microbenchmark was run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsdtConfig {
    pub tracers: Vec<TracerKind>,
    pub cases: Vec<Case>,
    pub iterations: u64,
    pub warmup: u64,
    /// Measured CPU.
    pub cpu: usize,
    /// CPUs the harness and consumers were confined to.
    pub harness_cpus: Vec<usize>,
    pub priority: Option<i32>,
    /// Per-CPU buffer size handed to the tracers (KiB), if set.
    pub buffer_size_kb: Option<u64>,
    /// Backend options as given (`record`, `ebpf_mode`, ...).
    pub tracer_options: serde_json::Value,
}

/// One (tracer, case) measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    /// The tracer of this column (`none` for case 0).
    pub tracer: TracerKind,
    pub case: Case,
    /// Backend mode that differs between runs of the same tracer (e.g. `record`, `aggregate`).
    pub variant: Option<String>,
    /// Workload binary run.
    pub workload: String,
    /// What the tracer was attached to (`rtrace:event`), if anything.
    pub hook: Option<String>,
    /// Per-call duration summary (ns).
    pub summary: Summary,
    /// Per-call durations (ns): hdrhistogram V2+deflate, base64; reload with
    /// `rtrace_protocol::decode_histogram`.
    pub histogram: String,
    /// Cost of an empty timed interval (ns): the timer's own overhead.
    pub timer_overhead: Summary,
    /// Event accounting; `None` when no tracer was attached.
    pub events: Option<Events>,
    pub tsc_hz: f64,
    /// Peak RSS of the workload (KiB).
    pub workload_max_rss_kb: u64,
    pub mlocked: bool,
    /// Wall time of the case including attach/detach (s).
    pub wall_s: f64,
}
