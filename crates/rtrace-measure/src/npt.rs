//! Result model of `rtrace-bench npt` (Beamonte & Dagenais' Non-Preempt Test, seeds 001/002):
//! per tracer, the gaps between consecutive iterations of a tight TSC loop on the measured CPU
//! while the tracer consumes the loop's event stream, against the same loop with no tracer.

use crate::{Environment, Events, Summary};
use hdrhistogram::Histogram;
use rtrace_protocol::{decode_histogram, HistogramError, NptDone, NptGap, NPT_LARGEST};
use serde::{Deserialize, Serialize};

/// Gaps at or above this many ns count as interruptions in the report (a gap of the loop is
/// tens of ns; an interrupt or a context switch costs microseconds).
pub const INTERRUPTION_NS: u64 = 1_000;

/// One tracer's run (or the run with no tracer).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NptRun {
    pub tracer: rtrace_tracer::TracerKind,
    /// Backend mode (`record`, `tracepoint`), if the tracer has several.
    pub variant: Option<String>,
    /// What the tracer did with the events (its buffer, consumer).
    pub buffer: String,
    pub done: NptDone,
    /// `None` with no tracer: nothing records the events.
    pub events: Option<Events>,
    /// Gaps of iterations that did not fire the probe.
    pub quiet: Option<Summary>,
    /// Gaps of iterations that fired the probe (probe cost + interference).
    pub fired: Option<Summary>,
    /// Quiet gaps of at least [`INTERRUPTION_NS`].
    pub interruptions: u64,
    /// The tracer's buffer switches on the measured CPU, as its trace data shows them; `None`:
    /// no tracer, or one whose buffer has no sub-buffers (eBPF's ring buffer). Absent in files
    /// of older versions.
    #[serde(default)]
    pub switches: Option<Switches>,
    /// The largest gaps of firing iterations, largest first, each with the tracer's switch
    /// nearest to it where the trace data tells. Absent in files of older versions.
    #[serde(default)]
    pub largest: Vec<LargestGap>,
}

/// What a tracer calls a switch of its buffer and how many the run's trace data shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Switches {
    /// `LTTng sub-buffer switch`, `ftrace ring-buffer page switch`.
    pub what: String,
    /// Switches on the measured CPU during the run (rounds added).
    pub count: u64,
    /// Where their times come from.
    pub how: String,
}

/// One of the largest gaps of the firing iterations, and where it fell against the tracer's
/// buffer switches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LargestGap {
    #[serde(flatten)]
    pub gap: NptGap,
    /// Whether a switch happened within the gap (the probe that fired in it began a new
    /// sub-buffer or page); `None`: the trace data does not tell (no switches, the event was
    /// lost).
    pub switched: Option<bool>,
    /// ns from the last switch to the gap's end (LTTng: the packet's `timestamp_begin` against
    /// the gap's end in `CLOCK_MONOTONIC`; ftrace: the page's first event to the probe's own
    /// event, in the trace clock); negative when the switch reads after the gap's end (the
    /// clock conversion's error). `None`: no switch before it.
    pub since_switch_ns: Option<i64>,
}

/// How far a switch may read outside a gap and still count as within it (ns): the error of
/// converting the loop's TSC to `CLOCK_MONOTONIC` through two pairs sampled around the loop.
pub const SWITCH_SLACK_NS: u64 = 1_000;

/// `gaps` against switch times `switches` (`CLOCK_MONOTONIC` ns, any order).
pub fn near_switches(gaps: &[NptGap], switches: &[u64]) -> Vec<LargestGap> {
    let mut s = switches.to_vec();
    s.sort_unstable();
    gaps.iter()
        .map(|&gap| {
            // The last switch at or before the gap's end (with slack).
            let i = s.partition_point(|&t| t <= gap.end_mono_ns + SWITCH_SLACK_NS);
            let last = i.checked_sub(1).map(|i| s[i]);
            let start = gap.end_mono_ns.saturating_sub(gap.ns + SWITCH_SLACK_NS);
            LargestGap {
                gap,
                switched: (!s.is_empty()).then(|| last.is_some_and(|t| t >= start)),
                since_switch_ns: last.map(|t| gap.end_mono_ns as i64 - t as i64),
            }
        })
        .collect()
}

impl NptRun {
    pub fn new(
        tracer: rtrace_tracer::TracerKind,
        variant: Option<String>,
        buffer: String,
        done: NptDone,
        events: Option<Events>,
    ) -> Result<NptRun, HistogramError> {
        let quiet = decode_histogram(&done.quiet)?;
        let fired = decode_histogram(&done.fired)?;
        Ok(NptRun {
            tracer,
            variant,
            buffer,
            quiet: Summary::of(&quiet),
            fired: Summary::of(&fired),
            interruptions: above(&quiet, INTERRUPTION_NS),
            switches: None,
            largest: done
                .largest
                .iter()
                .map(|&gap| LargestGap {
                    gap,
                    switched: None,
                    since_switch_ns: None,
                })
                .collect(),
            done,
            events,
        })
    }

    /// The run with the tracer's switches and its largest gaps placed against them.
    pub fn with_switches(mut self, switches: Switches, largest: Vec<LargestGap>) -> NptRun {
        self.switches = Some(switches);
        self.largest = largest;
        self
    }

    /// `ebpf (record)`, `none`.
    pub fn label(&self) -> String {
        self.tracer.label(self.variant.as_deref())
    }
}

impl crate::pool::Accounted for NptRun {
    /// Every hit recorded or reported lost.
    fn accounting(&self) -> Result<(), String> {
        match &self.events {
            Some(e) => e.check_exact().map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

impl crate::Pool for NptRun {
    fn is_same_run(&self, other: &NptRun) -> bool {
        (self.tracer, &self.variant) == (other.tracer, &other.variant)
    }

    /// Adds the later round's loop: iterations, time, hits and both gap histograms; the
    /// summaries and interruptions are made again over every round.
    fn absorb(&mut self, round: NptRun) -> anyhow::Result<()> {
        let (d, quiet, fired);
        d = &mut self.done;
        d.hits += round.done.hits;
        d.iterations += round.done.iterations;
        d.elapsed_ns += round.done.elapsed_ns;
        (d.quiet, quiet) = crate::pool::histograms(&d.quiet, &round.done.quiet)?;
        (d.fired, fired) = crate::pool::histograms(&d.fired, &round.done.fired)?;
        self.events = crate::pool::sum(self.events, round.events);
        self.quiet = Summary::of(&quiet);
        self.fired = Summary::of(&fired);
        self.interruptions = above(&quiet, INTERRUPTION_NS);
        self.largest.extend(round.largest);
        self.largest.sort_by_key(|g| std::cmp::Reverse(g.gap.ns));
        self.largest.truncate(NPT_LARGEST);
        if let (Some(a), Some(b)) = (&mut self.switches, round.switches) {
            a.count += b.count;
        }
        Ok(())
    }
}

/// Samples of `h` at or above `ns`.
pub fn above(h: &Histogram<u64>, ns: u64) -> u64 {
    h.iter_recorded()
        .filter(|v| v.value_iterated_to() >= ns)
        .map(|v| v.count_at_value())
        .sum()
}

/// What `rtla osnoise` would add: its figure where the kernel has the osnoise tracer, else why
/// it is absent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Osnoise {
    /// `rtla osnoise top`'s output for the measured CPU, as printed.
    Measured(String),
    Absent(String),
}

/// `rtrace-bench npt`'s result file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NptResult {
    /// `"npt"`.
    pub experiment: String,
    pub tool_version: String,
    pub started_unix: u64,
    pub environment: Environment,
    pub config: NptSettings,
    pub runs: Vec<NptRun>,
    pub osnoise: Osnoise,
    /// Tracers that could not run, with the reason.
    pub failed: Vec<String>,
}

/// How the npt experiment was run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NptSettings {
    pub duration_ms: u64,
    /// Probe firings per second, capped (`--event-rate`); `None`: in every iteration, at the
    /// loop's full speed (Beamonte's npt).
    pub event_rate_hz: Option<f64>,
    /// CPUs, priority, rounds, buffers, record mode, trace data, backend options.
    #[serde(flatten)]
    pub run: crate::settings::RunSettings,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_protocol::{encode_histogram, new_histogram};

    #[test]
    fn counts_interruptions_among_quiet_gaps_only() {
        let mut quiet = new_histogram();
        for v in [20u64, 21, 25, 999, 1_000, 5_000, 80_000] {
            quiet.record(v).unwrap();
        }
        let mut fired = new_histogram();
        fired.record(50_000).unwrap();
        let done = NptDone {
            hits: 1,
            iterations: 8,
            elapsed_ns: 100_000,
            tsc_hz: 2e9,
            quiet: encode_histogram(&quiet).unwrap(),
            fired: encode_histogram(&fired).unwrap(),
            start_mono_ns: 0,
            end_mono_ns: 100_000,
            largest: Vec::new(),
        };
        let run = NptRun::new(
            rtrace_tracer::TracerKind::None,
            None,
            String::new(),
            done,
            None,
        )
        .unwrap();
        assert_eq!(run.interruptions, 3);
        assert_eq!(run.quiet.unwrap().count, 7);
        assert_eq!(run.fired.unwrap().count, 1);
        assert_eq!(run.label(), "none");
        let mut pooled = run.clone();
        crate::Pool::absorb(&mut pooled, run).unwrap();
        assert_eq!(pooled.interruptions, 6);
        assert_eq!(pooled.quiet.unwrap().count, 14);
        assert_eq!(pooled.done.iterations, 16);
    }

    #[test]
    fn places_gaps_against_the_switch_before_them() {
        let gap = |ns, end_mono_ns| NptGap {
            ns,
            end_mono_ns,
            hit: 0,
        };
        let gaps = [
            gap(50_000, 1_000_000),
            gap(10_000, 2_000_000),
            gap(5_000, 500),
        ];
        let placed = near_switches(&gaps, &[1_985_000, 990_000, 1_000_300]);
        // Switch 300 ns after the end: within the slack, in the gap, negative distance.
        assert_eq!(placed[0].switched, Some(true));
        assert_eq!(placed[0].since_switch_ns, Some(-300));
        // 15 µs before the end of a 10 µs gap: outside (beyond the slack).
        assert_eq!(placed[1].switched, Some(false));
        assert_eq!(placed[1].since_switch_ns, Some(15_000));
        // No switch before it.
        assert_eq!(placed[2].switched, Some(false));
        assert_eq!(placed[2].since_switch_ns, None);
        assert_eq!(near_switches(&gaps, &[])[0].switched, None);
    }
}
