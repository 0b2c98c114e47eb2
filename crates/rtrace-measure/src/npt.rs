//! Result model of `rtrace-bench npt` (Beamonte & Dagenais' Non-Preempt Test, seeds 001/002):
//! per tracer, the gaps between consecutive iterations of a tight TSC loop on the measured CPU
//! while the tracer consumes the loop's event stream, against the same loop with no tracer.

use crate::{Environment, Events, Summary};
use hdrhistogram::Histogram;
use rtrace_protocol::{decode_histogram, HistogramError, NptDone};
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
            done,
            events,
        })
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
    pub event_rate_hz: f64,
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
}
