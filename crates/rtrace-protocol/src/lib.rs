//! What the harness and a workload say to each other.
//!
//! The harness starts a workload with one argument, a JSON [`WorkloadConfig`]. The workload pins
//! itself, locks its memory, prints one [`Message::Ready`] line on stdout, and waits for one "go"
//! byte on stdin (the harness attaches the tracer in between). At the end it prints one
//! [`Message::Done`] line. Histograms travel as base64 of hdrhistogram's V2+deflate encoding, so
//! result files can reload them exactly.

mod cyclic;
mod histogram;
mod npt;
mod rate;
mod reads;

pub use cyclic::{CyclicConfig, CyclicDone, Fire, ProbeAt};
pub use histogram::{decode_histogram, encode_histogram, new_histogram, HistogramError};
pub use npt::{
    NptConfig, NptDone, NptGap, NPT_LARGEST, NPT_SLOW_AFTER, NPT_SLOW_MAX, NPT_SLOW_MIN_NS,
};
pub use rate::{RateConfig, RateDone};
pub use reads::{ReadsConfig, ReadsDone};

use serde::{Deserialize, Serialize};

/// The loop body of the microbenchmark (thesis §3.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Body {
    /// Only a compiler barrier (`asm("" ::: "memory")`): cases 0 and 2.
    Barrier,
    /// Fires the `rtrace:event` tracepoint with the iteration number: cases 1 and 3.
    Event,
    /// Fires the USDT probe `rtrace:event_nop5` (a `nop; nop5` site, see the workload's
    /// `nop5.rs`) with the iteration number: cases 1 and 3 of the `usdt-nop5` hook kind.
    #[serde(rename = "event-nop5")]
    EventNop5,
    /// Fires the USDT probe `rtrace:event_stepped`, whose site is a RIP-relative `cmpb` that the
    /// kernel single-steps out of line (see the workload's `stepped.rs`): cases 1 and 3 of the
    /// `usdt-stepped` hook kind.
    #[serde(rename = "event-stepped")]
    EventStepped,
    /// Calls the exported, never-inlined function `rtrace_marker_hit(i)`: the attachment point
    /// of uprobe/uretprobe hooks (dynamic instrumentation).
    Call,
}

/// Exported marker functions of every workload binary (uprobe/uretprobe hooks).
pub const MARKER_HIT: &str = "rtrace_marker_hit";
/// Never called during a run: the attachment point of case 2 for uprobe hooks.
pub const MARKER_IDLE: &str = "rtrace_marker_idle";

/// What the workload runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum WorkloadConfig {
    /// The per-probe microbenchmark: time each loop body.
    Micro(MicroConfig),
    /// The cyclictest-style latency loop (thesis §3.4).
    Cyclic(CyclicConfig),
    /// The probe fired at a fixed rate (`rtrace-bench rate`).
    Rate(RateConfig),
    /// The Non-Preempt Test loop (`rtrace-bench npt`).
    Npt(NptConfig),
    /// The `read(2)` loop of `rtrace-bench events`.
    Reads(ReadsConfig),
}

/// The per-probe microbenchmark configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MicroConfig {
    pub body: Body,
    /// Timed and recorded iterations.
    pub iterations: u64,
    /// Iterations run before, not recorded (the body still runs: probe hits count).
    pub warmup: u64,
    /// CPU to pin the loop to.
    pub cpu: usize,
    /// SCHED_FIFO priority, if any.
    pub priority: Option<i32>,
    /// Iterations of the empty timed interval, to report the timer's own cost.
    pub timer_samples: u64,
    /// Pauses outside the timed interval that keep a SCHED_FIFO loop under the kernel's
    /// real-time budget; `None`: spin without pausing.
    #[serde(default)]
    pub pacing: Option<Pacing>,
    /// CPUs of further loop threads (`usdt --threads N`: N - 1 of them), each running the same
    /// loop on its own CPU at the same time as the first; empty: one thread.
    #[serde(default)]
    pub more_threads: Vec<usize>,
    /// `usdt --spacing-us`: sleep this long before every timed iteration (outside the timed
    /// interval), so that each hit finds the probe's path cold as the sweep's wake-ups do;
    /// `None`: back to back.
    #[serde(default)]
    pub spacing_us: Option<u64>,
}

/// Sleep `rest_ns` whenever the loop has spun for `burst_ns` since its last pause. A SCHED_FIFO
/// task that spins longer than `sched_rt_runtime_us` per `sched_rt_period_us` is stopped by the
/// kernel for the rest of the period (tens of ms): one such sample moves the mean of a million
/// by tens of ns, and only for the runs that happen to cross the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pacing {
    pub burst_ns: u64,
    pub rest_ns: u64,
}

/// The instrumentation a workload binary carries (LTTng-UST vs USDT) and its probe names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probes {
    /// Provider of both tracepoints (`rtrace`).
    pub provider: String,
    /// Fired in the loop (cases 1 and 3).
    pub event: String,
    /// Never fired during a run: the attachment point of case 2.
    pub idle: String,
}

/// One line on the workload's stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "lowercase")]
pub enum Message {
    Ready(Ready),
    Done(Done),
    /// The result of a [`WorkloadConfig::Cyclic`] run.
    #[serde(rename = "cyclic-done")]
    CyclicDone(CyclicDone),
    /// The result of a [`WorkloadConfig::Rate`] run.
    #[serde(rename = "rate-done")]
    RateDone(RateDone),
    /// The result of a [`WorkloadConfig::Npt`] run.
    #[serde(rename = "npt-done")]
    NptDone(NptDone),
    /// The result of a [`WorkloadConfig::Reads`] run.
    #[serde(rename = "reads-done")]
    ReadsDone(ReadsDone),
}

/// Printed once pinned and locked, before waiting for "go".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    pub pid: u32,
    /// CPU the loop thread is pinned to.
    pub cpu: usize,
    /// `"usdt"` or `"lttng-ust"`.
    pub instrumentation: String,
    pub probes: Probes,
    /// Whether mlockall(MCL_CURRENT|MCL_FUTURE) succeeded.
    pub mlocked: bool,
    /// SCHED_FIFO priority in effect, if any.
    pub priority: Option<i32>,
}

/// Printed once at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// Tracepoint executions, warm-up included: the ground truth for event accounting.
    pub hits: u64,
    /// Recorded samples (excludes warm-up).
    pub iterations: u64,
    pub warmup: u64,
    /// Calibrated TSC frequency used to convert ticks to ns.
    pub tsc_hz: f64,
    /// Smallest step of the TSC between two reads (ns): its resolution (10 ns on AMD Zen,
    /// whose counter advances at 100 MHz). Absent from older workloads.
    #[serde(default)]
    pub tsc_step_ns: Option<f64>,
    /// Per-iteration duration in ns (encoded histogram).
    pub histogram: String,
    /// Duration of an empty timed interval in ns (encoded histogram): the timer's own cost.
    pub timer_overhead: String,
    /// Peak resident set size of the workload (KiB, from getrusage).
    pub max_rss_kb: u64,
    /// Pauses taken (see [`Pacing`]).
    #[serde(default)]
    pub rests: u64,
    /// With several loop threads: each thread's per-iteration durations (encoded histogram),
    /// the first thread's first; `histogram` then holds every thread's samples. Empty with one
    /// thread.
    #[serde(default)]
    pub per_thread: Vec<String>,
    /// Whether the process mapped `[uprobes-trampoline]` after the loop: the kernel optimised a
    /// uprobe on a 5-byte nop into a call. `None` when unknown (older workloads too).
    #[serde(default)]
    pub uprobes_trampoline: Option<bool>,
    /// Median of bare system calls (`getppid`) timed after the loop as its bodies are, empty
    /// timed interval included (ns); absent from older workloads.
    #[serde(default)]
    pub syscall_ns: Option<f64>,
}

impl Message {
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("messages always serialize")
    }

    pub fn from_line(line: &str) -> Result<Message, serde_json::Error> {
        serde_json::from_str(line.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Body::Event;
    use WorkloadConfig::{Cyclic, Micro, Npt, Rate, Reads};

    /// Every configuration round-trips through JSON, tagged with its mode.
    #[test]
    fn configs_are_tagged_and_round_trip() {
        let pacing = Some(Pacing {
            burst_ns: 475_000_000,
            rest_ns: 150_000_000,
        });
        let configs = [
            Micro(MicroConfig {
                body: Event,
                iterations: 10,
                warmup: 1,
                cpu: 1,
                priority: None,
                timer_samples: 5,
                pacing,
                more_threads: vec![0],
                spacing_us: Some(30),
            }),
            Cyclic(CyclicConfig {
                interval_ns: 200_000,
                loops: 2_000,
                cpu: 1,
                main_cpu: Some(0),
                priority: 99,
                fire_event: true,
                probe_at: ProbeAt::After,
                fire: Fire::default(),
                histogram_limit_ns: 10_000_000,
            }),
            Rate(RateConfig {
                rate_hz: 1e5,
                duration_ns: 1_000_000_000,
                min_hits: 163_840,
                cpu: 1,
                priority: None,
                body: Event,
                more_threads: vec![0],
            }),
            Npt(NptConfig {
                duration_ns: 1_000_000_000,
                event_rate_hz: Some(1e4),
                cpu: 1,
                priority: Some(99),
                body: Event,
            }),
            Reads(ReadsConfig {
                reads: 1000,
                cpu: 1,
                priority: None,
            }),
        ];
        let modes = ["micro", "cyclic", "rate", "npt", "reads"];
        for (c, mode) in configs.iter().zip(modes) {
            let s = serde_json::to_string(c).unwrap();
            assert!(s.contains(&format!(r#""mode":"{mode}""#)), "{s}");
            let body = matches!(c, Micro(_) | Rate(_) | Npt(_));
            assert_eq!(s.contains(r#""body":"event""#), body, "{s}");
            assert_eq!(&serde_json::from_str::<WorkloadConfig>(&s).unwrap(), c);
        }
    }

    /// Every message round-trips through its line, tagged.
    #[test]
    fn messages_round_trip() {
        let probes = Probes {
            provider: "rtrace".into(),
            event: "event".into(),
            idle: "idle".into(),
        };
        let ready = Message::Ready(Ready {
            pid: 7,
            cpu: 1,
            instrumentation: "usdt".into(),
            probes,
            mlocked: true,
            priority: Some(99),
        });
        let cyclic_done = Message::CyclicDone(CyclicDone {
            loops: 3,
            hits: 3,
            sleeps: 3,
            overruns: 0,
            overflows: 1,
            histogram: "AAAA".into(),
            untraced: None,
            pm_qos_zero: true,
            max_rss_kb: 2048,
        });
        for (m, tag) in [(ready, "ready"), (cyclic_done, "cyclic-done")] {
            let line = m.to_line();
            assert!(line.contains(&format!(r#""msg":"{tag}""#)), "{line}");
            assert_eq!(Message::from_line(&line).unwrap(), m);
        }
    }
}
