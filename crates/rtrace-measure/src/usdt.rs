//! Result model of the per-probe microbenchmark (`rtrace-bench usdt`).

use crate::disturbed::{self, Disturbed};
use crate::warnings::{environment, iterations, lost, not_locked, outliers, Warning, WarningKind};
use crate::{Accounted, Events, Summary};
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

/// What the tracers of a set of rows attach to (`--hook`): static or dynamic user-space
/// instrumentation (thesis Table 4.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum HookKind {
    /// The USDT probe `rtrace:event` (for lttng, the LTTng-UST tracepoint): static
    /// instrumentation; the loop body of cases 0 and 2 is a compiler barrier.
    #[default]
    Usdt,
    /// The USDT probe `rtrace:event_nop5`, same loop as `Usdt` but its site is `nop; nop5`:
    /// kernels from 6.18 can optimise a uprobe on the `nop5` (a call instead of the int3 trap)
    /// and libbpf attaches there; tools attaching at the note's address still trap.
    #[serde(rename = "usdt-nop5")]
    UsdtNop5,
    /// The USDT probe `rtrace:event_stepped`, same loop as `Usdt` but its site is a RIP-relative
    /// `cmpb`, which x86 kernels single-step out of line (int3, then a debug trap) instead of
    /// emulating: the floor of a uprobe on most function entries (libc's `read` starts so).
    #[serde(rename = "usdt-stepped")]
    UsdtStepped,
    /// A uprobe on the entry of the marker function called every iteration; the body of every
    /// case is that call.
    Uprobe,
    /// A uretprobe on the marker function's return; bodies as for [`HookKind::Uprobe`].
    Uretprobe,
}

impl HookKind {
    pub const ALL: [HookKind; 5] = [
        HookKind::Usdt,
        HookKind::UsdtNop5,
        HookKind::UsdtStepped,
        HookKind::Uprobe,
        HookKind::Uretprobe,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookKind::Usdt => "usdt",
            HookKind::UsdtNop5 => "usdt-nop5",
            HookKind::UsdtStepped => "usdt-stepped",
            HookKind::Uprobe => "uprobe",
            HookKind::Uretprobe => "uretprobe",
        }
    }

    /// uprobe or uretprobe: the loop calls a function instead of firing a probe.
    pub fn is_dynamic(self) -> bool {
        matches!(self, HookKind::Uprobe | HookKind::Uretprobe)
    }

    /// The loop body of `case` under this hook kind: dynamic hooks call the marker function in
    /// every case (only what is attached differs); USDT kinds fire their probe in cases 1 and 3
    /// and run the barrier in cases 0 and 2.
    pub fn body(self, case: Case) -> rtrace_protocol::Body {
        use rtrace_protocol::Body;
        match (self, case) {
            (HookKind::Uprobe | HookKind::Uretprobe, _) => Body::Call,
            (_, Case::Baseline | Case::Dormant) => Body::Barrier,
            (HookKind::UsdtNop5, _) => Body::EventNop5,
            (HookKind::UsdtStepped, _) => Body::EventStepped,
            (HookKind::Usdt, _) => Body::Event,
        }
    }

    /// A run's `variant`: the backend mode, then the hook kind unless it is `usdt` (`record`,
    /// `uprobe`, `record, uretprobe`, `aggregate, usdt-nop5`); USDT runs keep the bare mode, as
    /// in files of older versions.
    pub fn variant(self, mode: Option<&str>) -> Option<String> {
        match (mode, self == HookKind::Usdt) {
            (m, true) => m.map(str::to_owned),
            (None, false) => Some(self.name().to_owned()),
            (Some(m), false) => Some(format!("{m}, {}", self.name())),
        }
    }

    /// The backend mode inside a `variant` made by [`HookKind::variant`].
    pub fn mode_of(self, variant: Option<&str>) -> Option<&str> {
        let v = variant?;
        if self == HookKind::Usdt {
            return Some(v);
        }
        if v == self.name() {
            return None;
        }
        Some(v.strip_suffix(&format!(", {}", self.name())).unwrap_or(v))
    }
}

impl std::fmt::Display for HookKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Per-hit cost: a case-1 statistic minus the same statistic of case 0 with the same loop body
/// (the barrier for USDT, the marker call for uprobe/uretprobe), in ns
/// (`crate::probe_cost::DEFINITION`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HitCost {
    /// By mean without disturbed samples.
    pub mean_ns: f64,
    /// By median: robust against the rare long samples a busy machine adds.
    pub p50_ns: f64,
    /// By minimum: the least perturbed sample (Gregg's and Piotrowski's "fastest run").
    pub min_ns: f64,
}

impl HitCost {
    fn between(traced: &CaseResult, base: &CaseResult) -> HitCost {
        HitCost {
            mean_ns: traced.steady_mean_ns() - base.steady_mean_ns(),
            p50_ns: traced.summary.p50_ns - base.summary.p50_ns,
            min_ns: traced.summary.min_ns - base.summary.min_ns,
        }
    }

    /// `self / other` statistic by statistic; `None` unless all of `other`'s are positive.
    pub fn ratio(&self, other: &HitCost) -> Option<HitCost> {
        (other.mean_ns > 0.0 && other.p50_ns > 0.0 && other.min_ns > 0.0).then(|| HitCost {
            mean_ns: self.mean_ns / other.mean_ns,
            p50_ns: self.p50_ns / other.p50_ns,
            min_ns: self.min_ns / other.min_ns,
        })
    }
}

/// Each tracer's per-hit cost under each hook kind, and the plain marker call's cost.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCosts {
    /// The marker call with nothing attached: case 0 with the call minus case 0 with the barrier.
    pub call: Option<HitCost>,
    /// One row per tracer and backend mode, in run order.
    pub rows: Vec<HookCostRow>,
}

/// One tracer (and mode) under each hook kind; `None` where that hook was not measured.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCostRow {
    pub tracer: TracerKind,
    /// Backend mode (`record`, `aggregate`), if the tracer has several.
    pub mode: Option<String>,
    pub usdt: Option<HitCost>,
    pub usdt_nop5: Option<HitCost>,
    pub usdt_stepped: Option<HitCost>,
    pub uprobe: Option<HitCost>,
    pub uretprobe: Option<HitCost>,
}

impl HookCostRow {
    /// uretprobe / uprobe per-hit cost (the literature has it above 1).
    pub fn ret_ratio(&self) -> Option<HitCost> {
        self.uretprobe?.ratio(&self.uprobe?)
    }

    pub fn cost(&self, hook: HookKind) -> Option<HitCost> {
        match hook {
            HookKind::Usdt => self.usdt,
            HookKind::UsdtNop5 => self.usdt_nop5,
            HookKind::UsdtStepped => self.usdt_stepped,
            HookKind::Uprobe => self.uprobe,
            HookKind::Uretprobe => self.uretprobe,
        }
    }
}

impl HookCosts {
    /// The costs in `r`; no rows when it has no uprobe/uretprobe runs (the usual table already
    /// says everything).
    pub fn of(r: &UsdtResult) -> HookCosts {
        let call = match (r.baseline(HookKind::Uprobe), r.baseline(HookKind::Usdt)) {
            (Some(call), Some(barrier)) => Some(HitCost::between(call, barrier)),
            _ => None,
        };
        let mut rows: Vec<HookCostRow> = Vec::new();
        if r.runs.iter().all(|c| c.hook_kind == HookKind::Usdt) {
            return HookCosts { call, rows };
        }
        for c in r.runs.iter().filter(|c| c.case == Case::Traced) {
            let mode = c.mode().map(str::to_owned);
            let cost = r
                .baseline(c.hook_kind)
                .filter(|_| r.in_ratios(c))
                .map(|b| HitCost::between(c, b));
            let i = match rows
                .iter()
                .position(|x| x.tracer == c.tracer && x.mode == mode)
            {
                Some(i) => i,
                None => {
                    rows.push(HookCostRow {
                        tracer: c.tracer,
                        mode,
                        usdt: None,
                        usdt_nop5: None,
                        usdt_stepped: None,
                        uprobe: None,
                        uretprobe: None,
                    });
                    rows.len() - 1
                }
            };
            let slot = match c.hook_kind {
                HookKind::Usdt => &mut rows[i].usdt,
                HookKind::UsdtNop5 => &mut rows[i].usdt_nop5,
                HookKind::UsdtStepped => &mut rows[i].usdt_stepped,
                HookKind::Uprobe => &mut rows[i].uprobe,
                HookKind::Uretprobe => &mut rows[i].uretprobe,
            };
            *slot = cost;
        }
        HookCosts { call, rows }
    }
}

/// The whole result file of `rtrace-bench usdt`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UsdtResult {
    /// `experiment`, `tool_version`, `started_unix`, `environment`.
    #[serde(flatten)]
    pub header: crate::Header,
    pub config: UsdtConfig,
    /// One entry per (tracer, case) measured, in run order.
    pub runs: Vec<CaseResult>,
    /// What makes these numbers less trustworthy, each with what to do
    /// (`rtrace_measure::usdt::warnings`); absent in files of older versions.
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
    /// CPUs, priority, rounds, buffers, record mode, trace data, backend options.
    #[serde(flatten)]
    pub run: crate::settings::RunSettings,
    /// Hook kinds measured (`--hook`), each its own set of rows; files of older versions: usdt.
    #[serde(default = "default_hooks")]
    pub hooks: Vec<HookKind>,
    /// Pauses of the loop that keep SCHED_FIFO under the kernel's real-time budget (see
    /// `rtrace_measure::pacing`); `None`: the loop never paused.
    #[serde(default)]
    pub pacing: Option<rtrace_protocol::Pacing>,
    /// `--allow-loss`: case-1 runs that lost events still enter ratios (otherwise they are
    /// marked and left out: the drop path is cheaper than recording).
    #[serde(default)]
    pub allow_loss: bool,
    /// `usdt --threads N`: the CPU of every loop thread, the measured CPU first; empty with one
    /// thread (and in files of older versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_cpus: Vec<usize>,
    /// `--steady-state` (Gebai): per traced column (`TracerKind::label` of its variant), the
    /// untimed warm-up of its case-1 runs, which fills its buffer before the timed loop. Other
    /// runs warm up `warmup` iterations. Absent without it (and in files of older versions).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub steady_state: std::collections::BTreeMap<String, SteadyState>,
    /// `--spacing-us`: the loop slept this long before every timed iteration (the probe's path
    /// goes cold between hits, as in the sweep); absent: back to back (and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spacing_us: Option<u64>,
}

/// One column's steady-state warm-up (`usdt --steady-state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SteadyState {
    /// An upper bound of the events its buffer holds: the bytes the backend allocates over the
    /// smallest event a tracer writes for the probe (`tracers::capacity_events`).
    pub capacity_events: u64,
    /// Untimed iterations each loop thread fired before timing: `warmup`, or enough that the
    /// threads together wrote `capacity_events` into their buffer (one per CPU; eBPF's one
    /// ring is shared by the threads). The accounting's hits include them.
    pub warmup: u64,
}

fn default_hooks() -> Vec<HookKind> {
    vec![HookKind::Usdt]
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
    /// What the tracer was attached to (`rtrace:event`, `uprobe:rtrace_marker_hit`), if anything.
    pub hook: Option<String>,
    /// The set of rows this run belongs to (`--hook`): static USDT, or uprobe/uretprobe on the
    /// marker function. Files of older versions are `usdt`.
    #[serde(default)]
    pub hook_kind: HookKind,
    /// The instructions the hook's uprobe replaced, classified by how the kernel runs them
    /// (emulated, single-stepped, nop5); empty without a uprobe (case 0, LTTng) and in files of
    /// older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<rtrace_sdt::ProbeSite>,
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
    /// Trace data the tracer wrote (all rounds), and how much of it is kept; `None` without a
    /// tracer or in files of older versions.
    #[serde(default)]
    pub trace_data: Option<crate::trace_data::TraceData>,
    /// The TSC's resolution (ns) as the workload measured it; absent in files of older
    /// versions.
    #[serde(default)]
    pub tsc_step_ns: Option<f64>,
    /// Peak RSS of the workload (KiB).
    pub workload_max_rss_kb: u64,
    pub mlocked: bool,
    /// Wall time of the case including attach/detach (s).
    pub wall_s: f64,
    /// Pauses the loop took to stay under the real-time budget (`UsdtConfig::pacing`).
    #[serde(default)]
    pub rests: u64,
    /// Samples an interrupt, preemption or VM exit landed in (`rtrace_measure::disturbed`), and
    /// the mean without them; `None` in files of older versions.
    #[serde(default)]
    pub disturbed: Option<Disturbed>,
    /// Each round's own statistics, in run order (one entry without `--rounds`; empty in files
    /// of older versions). `summary` pools them; every interval is made over them.
    #[serde(default)]
    pub rounds: Vec<RoundSummary>,
    /// The workload process's performance counters over all rounds (`usdt --decompose`);
    /// `None` otherwise and in files of older versions.
    #[serde(default)]
    pub counters: Option<crate::counters::Counts>,
    /// With several loop threads (`usdt --threads`): each thread's statistics, the measured
    /// CPU's first; `summary`, `histogram` and `rounds` pool every thread. Empty with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_thread: Vec<ThreadRun>,
}

/// One loop thread of a run with several (`usdt --threads`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRun {
    /// The CPU it ran on.
    pub cpu: usize,
    /// Per-call duration summary over its rounds (ns).
    pub summary: Summary,
    /// Its per-call durations (encoded histogram).
    pub histogram: String,
    /// Its statistics per round, in run order.
    pub rounds: Vec<RoundSummary>,
}

impl ThreadRun {
    /// Mean of each round without its disturbed samples (ns), as every per-hit cost is made:
    /// the sample of its interval.
    pub fn round_means(&self) -> Vec<f64> {
        self.rounds.iter().map(|r| r.steady_mean_ns()).collect()
    }
}

/// One round of a run: a separate workload process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundSummary {
    #[serde(flatten)]
    pub summary: Summary,
    /// Median interpolated within its 1-ns bucket (`disturbed::median`); absent in files of
    /// older versions.
    #[serde(default)]
    pub median_ns: Option<f64>,
    /// This round's disturbed samples, by its own median.
    #[serde(default)]
    pub disturbed: Option<Disturbed>,
    /// This round's timer overhead (an empty timed interval, measured in the same process just
    /// before the loop); absent in files of older versions.
    #[serde(default)]
    pub timer_overhead: Option<Summary>,
    /// Median of `timer_overhead` interpolated within its bucket.
    #[serde(default)]
    pub timer_median_ns: Option<f64>,
    /// When this round ran: its position among all timed runs of the invocation (0: first);
    /// absent in files of older versions.
    #[serde(default)]
    pub seq: Option<u64>,
    /// Whether the round's process mapped `[uprobes-trampoline]` after its loop (Linux >= 6.18
    /// optimised a uprobe on a 5-byte nop into a call); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uprobes_trampoline: Option<bool>,
    /// Median of bare system calls timed in the round's process after its loop, empty timed
    /// interval included (ns); absent in files of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall_ns: Option<f64>,
}

impl RoundSummary {
    /// The statistics of one round's histogram; `None` when empty.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Option<RoundSummary> {
        Some(RoundSummary {
            summary: Summary::of(h)?,
            median_ns: disturbed::median(h),
            disturbed: Disturbed::of(h),
            timer_overhead: None,
            timer_median_ns: None,
            seq: None,
            uprobes_trampoline: None,
            syscall_ns: None,
        })
    }

    /// The round's timer overhead and its interpolated median, measured in the same process
    /// just before the loop.
    pub fn with_timer(self, timer: &hdrhistogram::Histogram<u64>) -> RoundSummary {
        RoundSummary {
            timer_overhead: Summary::of(timer),
            timer_median_ns: disturbed::median(timer),
            ..self
        }
    }

    /// The process's own empty timed interval (interpolated median): this VM's speed state
    /// when the round ran. `None` in files of older versions.
    pub fn timer_ns(&self) -> Option<f64> {
        self.timer_median_ns
            .or_else(|| self.timer_overhead.map(|t| t.p50_ns))
    }

    /// Mean without disturbed samples (the plain mean in files of older versions).
    pub fn steady_mean_ns(&self) -> f64 {
        self.disturbed.map_or(self.summary.mean_ns, |d| d.mean_ns)
    }

    /// The interpolated median (the bucket's median in files of older versions).
    pub fn median_ns(&self) -> f64 {
        self.median_ns.unwrap_or(self.summary.p50_ns)
    }
}

impl UsdtResult {
    /// A bare system call (ns, each round's empty timed interval subtracted): the median over
    /// every round of every run that timed one, and how many did; `None` in files of older
    /// versions.
    pub fn syscall_ns(&self) -> Option<(f64, usize)> {
        let mut v: Vec<f64> = (self.runs.iter().flat_map(|c| &c.rounds))
            .filter_map(|r| Some(r.syscall_ns? - r.timer_ns().unwrap_or(0.0)))
            .collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        (n > 0).then(|| ((v[(n - 1) / 2] + v[n / 2]) / 2.0, n))
    }

    /// A run's backend mode: its variant's ([`CaseResult::mode`]), or for a run without one, the
    /// mode the tracer had in that invocation (ftrace: the recording mode; LTTng: the
    /// tracepoint).
    pub fn run_mode(&self, c: &CaseResult) -> Option<String> {
        if let Some(m) = c.mode() {
            return Some(m.to_owned());
        }
        match c.tracer {
            TracerKind::Ftrace | TracerKind::Perf => self.config.run.tracer_options["record"]
                .as_str()
                .map(str::to_owned),
            TracerKind::Lttng => Some("tracepoint".to_owned()),
            _ => None,
        }
    }
}

impl CaseResult {
    /// Of the rounds that know, how many mapped `[uprobes-trampoline]` after the loop (the
    /// kernel optimised the uprobe into a call): `(optimized, known)`; `None` when no round
    /// knows (files of older versions).
    pub fn trampoline_rounds(&self) -> Option<(usize, usize)> {
        let known: Vec<bool> = self
            .rounds
            .iter()
            .filter_map(|r| r.uprobes_trampoline)
            .collect();
        (!known.is_empty()).then(|| (known.iter().filter(|&&t| t).count(), known.len()))
    }

    /// The backend mode its variant names (`record` of `record, uretprobe`), if any.
    pub fn mode(&self) -> Option<&str> {
        self.hook_kind.mode_of(self.variant.as_deref())
    }

    /// Mean without disturbed samples (the plain mean in files of older versions).
    pub fn steady_mean_ns(&self) -> f64 {
        self.disturbed.map_or(self.summary.mean_ns, |d| d.mean_ns)
    }

    /// Events reported lost, if a tracer was attached.
    pub fn lost(&self) -> u64 {
        self.events.map_or(0, |e| e.lost)
    }

    /// A traced run that dropped events: the drop path is cheaper than recording, so its cost
    /// reads too low. Events a flight recorder overwrote were written first and do not count.
    pub fn is_lossy(&self) -> bool {
        self.case == Case::Traced && self.events.is_some_and(|e| e.dropped() > 0)
    }
}

impl crate::Pool for CaseResult {
    /// The same (tracer, case, variant, hook kind): another round of this run.
    fn is_same_run(&self, other: &CaseResult) -> bool {
        (self.tracer, self.case, &self.variant, self.hook_kind)
            == (other.tracer, other.case, &other.variant, other.hook_kind)
    }

    /// Pools a later round of the same run into this one: histograms and event counts add up,
    /// the round's summary is kept in `rounds`. The timer overhead stays the first round's.
    fn absorb(&mut self, round: CaseResult) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.is_same_run(&round),
            "cannot pool {} case {} with {} case {}",
            self.tracer,
            self.case.number(),
            round.tracer,
            round.case.number()
        );
        let pooled;
        (self.histogram, pooled) = crate::pool::histograms(&self.histogram, &round.histogram)?;
        self.summary = Summary::of(&pooled).unwrap_or(self.summary);
        self.disturbed = Disturbed::of(&pooled);
        self.events = crate::pool::sum(self.events, round.events);
        self.workload_max_rss_kb = self.workload_max_rss_kb.max(round.workload_max_rss_kb);
        self.mlocked &= round.mlocked;
        self.wall_s += round.wall_s;
        self.rests += round.rests;
        self.trace_data = crate::pool::sum(self.trace_data, round.trace_data);
        self.rounds.extend(round.rounds);
        anyhow::ensure!(
            self.per_thread.len() == round.per_thread.len(),
            "rounds of {} case {} ran different numbers of loop threads",
            self.tracer,
            self.case.number()
        );
        for (mine, theirs) in self.per_thread.iter_mut().zip(round.per_thread) {
            let pooled;
            (mine.histogram, pooled) = crate::pool::histograms(&mine.histogram, &theirs.histogram)?;
            mine.summary = Summary::of(&pooled).unwrap_or(mine.summary);
            mine.rounds.extend(theirs.rounds);
        }
        self.counters = crate::pool::merge(self.counters.take(), round.counters, |mut a, b| {
            a.add(&b);
            a
        });
        Ok(())
    }
}

impl crate::pool::Accounted for CaseResult {
    /// Case 1: every hit recorded or reported lost; other cases: nothing recorded.
    fn accounting(&self) -> Result<(), String> {
        let Some(ev) = &self.events else {
            return Ok(());
        };
        match self.case {
            Case::Traced => ev.check_exact(),
            _ => ev.check_none(),
        }
        .map_err(|e| e.to_string())
    }
}

/// `experiment` of a usdt result file (`usdt --decompose` too).
pub const EXPERIMENT: &str = "usdt";

crate::result_model!(UsdtResult, warnings);

/// `ftrace case 1`, `ebpf (record) case 1`.
pub fn label(c: &CaseResult) -> String {
    format!("{} case {}", column(c), c.case.number())
}

/// `ftrace`, `ebpf (record)`: the tracer and its variant.
pub fn column(c: &CaseResult) -> String {
    c.tracer.label(c.variant.as_deref())
}

/// Every warning about a usdt result.
pub fn warnings(r: &UsdtResult) -> Vec<Warning> {
    let mut w = environment(&r.header.environment, r.config.run.cpu);
    w.extend(iterations("iterations", r.config.iterations, "-n"));
    for run in &r.runs {
        let scope = label(run);
        if !run.mlocked {
            w.push(not_locked(&scope));
        }
        if let Some(ev) = &run.events {
            w.extend(lost(&scope, ev));
            if let Err(e) = run.accounting() {
                w.push(Warning::about(WarningKind::AccountingFailed, &scope, format!(
                    "{e}; the numbers of this run are not trustworthy: report it with the result file"
                )));
            }
        }
    }
    w.extend(outliers(
        r.runs.iter().map(|run| (label(run), &run.summary)),
        (1.0, "ns"),
    ));
    w.extend(first_run(&r.runs));
    w
}

/// How far outside the later rounds' range the first timed run may lie.
pub const FIRST_RUN_MARGIN: f64 = 0.05;

/// The invocation's first timed run (`rounds[].seq` 0) against the other rounds of the same
/// run: a start-of-invocation bias shows as a first round outside their whole range, by mean
/// without disturbed samples or by median, by more than [`FIRST_RUN_MARGIN`].
pub(crate) fn first_run(runs: &[CaseResult]) -> Option<Warning> {
    let (run, first) = runs.iter().find_map(|c| {
        let i = c.rounds.iter().position(|x| x.seq == Some(0))?;
        Some((c, i))
    })?;
    let (stat, value, low, high) = first_round_outside(&run.rounds, first)?;
    Some(Warning::about(WarningKind::FirstRun, &label(run), format!(
        "the first timed run of this invocation had a {stat} of {value:.2} ns, outside {low:.2}–{high:.2} ns of the later rounds: something at the start (a cold CPU, a daemon starting, the VM changing speed) weighed on it; run again and compare the rounds (`rounds[]` in the JSON)"
    )))
}

/// The statistic of round `first` that lies outside the other rounds' range by more than the
/// margin: (name, value, low, high); `None` with fewer than two other rounds.
pub(crate) fn first_round_outside(
    rounds: &[RoundSummary],
    first: usize,
) -> Option<(&'static str, f64, f64, f64)> {
    type Stat = (&'static str, fn(&RoundSummary) -> f64);
    let stats: [Stat; 2] = [
        (
            "mean without disturbed samples",
            RoundSummary::steady_mean_ns,
        ),
        ("median", RoundSummary::median_ns),
    ];
    let others: Vec<&RoundSummary> = rounds
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != first)
        .map(|(_, r)| r)
        .collect();
    if others.len() < 2 {
        return None;
    }
    stats.into_iter().find_map(|(name, f)| {
        let value = f(rounds.get(first)?);
        let low = others.iter().map(|r| f(r)).fold(f64::INFINITY, f64::min);
        let high = others
            .iter()
            .map(|r| f(r))
            .fold(f64::NEG_INFINITY, f64::max);
        let outside =
            value > high * (1.0 + FIRST_RUN_MARGIN) || value < low * (1.0 - FIRST_RUN_MARGIN);
        outside.then_some((name, value, low, high))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Accounted, Pool};
    use Case::{Baseline, Dormant, Instrumented, Traced};
    use HookKind::{Uprobe, Uretprobe, Usdt, UsdtNop5};

    #[test]
    fn variants_carry_the_mode_and_the_dynamic_hook() {
        assert_eq!(Usdt.variant(Some("record")).as_deref(), Some("record"));
        assert_eq!(Usdt.variant(None), None);
        let nop5 = UsdtNop5.variant(Some("aggregate"));
        assert_eq!(nop5.as_deref(), Some("aggregate, usdt-nop5"));
        assert_eq!(serde_json::to_string(&UsdtNop5).unwrap(), "\"usdt-nop5\"");
        assert_eq!(Uprobe.variant(None).as_deref(), Some("uprobe"));
        let v = Uretprobe.variant(Some("record"));
        assert_eq!(v.as_deref(), Some("record, uretprobe"));
        for h in HookKind::ALL {
            for m in [None, Some("record"), Some("aggregate")] {
                assert_eq!(h.mode_of(h.variant(m).as_deref()), m, "{h} {m:?}");
            }
        }
    }

    /// A traced run whose samples are `values` (ns), with `hits` hits all recorded.
    fn traced(values: &[u64], hits: u64) -> CaseResult {
        let mut h = rtrace_protocol::new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        let summary = Summary::of(&h).unwrap();
        CaseResult {
            tracer: TracerKind::Ebpf,
            case: Traced,
            variant: Some("aggregate".into()),
            workload: "workload".into(),
            hook: Some("rtrace:event".into()),
            hook_kind: Usdt,
            sites: Vec::new(),
            summary,
            histogram: rtrace_protocol::encode_histogram(&h).unwrap(),
            timer_overhead: summary,
            events: Some(Events::of(hits, hits, 0)),
            tsc_hz: 1e9,
            tsc_step_ns: None,
            trace_data: None,
            workload_max_rss_kb: 100,
            mlocked: true,
            wall_s: 1.0,
            rests: 1,
            disturbed: Disturbed::of(&h),
            rounds: vec![RoundSummary::of(&h).unwrap()],
            counters: None,
            per_thread: Vec::new(),
        }
    }

    #[test]
    fn bodies_follow_hook_kind_and_case() {
        use rtrace_protocol::Body;
        assert_eq!(Usdt.body(Traced), Body::Event);
        assert_eq!(UsdtNop5.body(Instrumented), Body::EventNop5);
        assert_eq!(UsdtNop5.body(Dormant), Body::Barrier);
        assert_eq!(Uretprobe.body(Baseline), Body::Call);
    }

    #[test]
    fn rounds_pool_histograms_and_events() {
        let mut pooled = traced(&[100, 100], 12);
        pooled.absorb(traced(&[400, 400], 7)).unwrap();
        let Events { hits, recorded, .. } = pooled.events.unwrap();
        let counts = (
            pooled.summary.count,
            hits,
            recorded,
            pooled.rests,
            pooled.rounds.len(),
        );
        assert_eq!((counts, pooled.wall_s), ((4, 19, 19, 2, 2), 2.0));
        assert!((pooled.summary.mean_ns - 250.0).abs() < 1.0);
        assert!((pooled.rounds[1].summary.mean_ns - 400.0).abs() < 1.0);
        let decoded = rtrace_protocol::decode_histogram(&pooled.histogram).unwrap();
        assert_eq!(decoded.len(), 4);
        // Only the same run pools.
        let mut other = traced(&[100], 1);
        other.case = Dormant;
        assert!(pooled.absorb(other).is_err());
    }

    #[test]
    fn accounting_follows_the_case() {
        let mut r = traced(&[100], 5);
        assert!(r.accounting().is_ok());
        r.events = Some(Events::of(5, 3, 0));
        assert!(r.accounting().unwrap_err().contains("missed events"));
        r.case = Dormant;
        r.events = Some(Events::of(0, 0, 0));
        assert!(r.accounting().is_ok());
        r.events = Some(Events::of(0, 1, 0));
        assert!(r.accounting().is_err());
        r.events = None;
        assert!(r.accounting().is_ok());
    }

    #[test]
    fn hook_kind_defaults_to_usdt_in_old_files() {
        #[derive(Deserialize)]
        struct Old {
            #[serde(default)]
            hook_kind: HookKind,
        }
        let old: Old = serde_json::from_str("{}").unwrap();
        assert_eq!(old.hook_kind, Usdt);
        assert_eq!(serde_json::to_string(&Uretprobe).unwrap(), "\"uretprobe\"");
    }
}
