//! Result model of `rtrace-bench npt` (Beamonte & Dagenais' Non-Preempt Test, seeds 001/002):
//! per tracer, the gaps between consecutive iterations of a tight TSC loop on the measured CPU
//! while the tracer consumes the loop's event stream, against the same loop with no tracer.

use crate::{Events, Summary};
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
    /// What the iteration of each buffer switch cost the loop. Absent where the tracer has no
    /// switches to place, in capped runs and in files of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_switches: Option<AtSwitches>,
    /// What LTTng's kernel channel beside the UST event recorded (`--lttng-kernel`): apart from
    /// `events`, whose accounting is the UST event's alone. Absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelTrace>,
}

/// The kernel events LTTng recorded beside the loop's UST event, in a channel of their own
/// (every process, every CPU), and what they show at the largest gaps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelTrace {
    /// Events in the kernel trace, by name (rounds added).
    pub events: std::collections::BTreeMap<String, u64>,
    /// Events the kernel channel discarded (its own count in `lttng list`, not the UST
    /// channel's).
    pub discarded: u64,
    /// Packets the kernel channel lost.
    pub lost_packets: u64,
    /// The largest gaps (at most [`KERNEL_GAPS`], largest first), each with the kernel events
    /// on the measured CPU during it.
    pub at_largest: Vec<KernelAtGap>,
}

/// How many of the largest gaps are looked up in the kernel trace (one pass of babeltrace2
/// over the trace serves them all).
pub const KERNEL_GAPS: usize = 5;

/// One of the largest gaps and what the kernel trace shows on the measured CPU within it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelAtGap {
    /// The gap (ns) and its end (`CLOCK_MONOTONIC` ns, converted from the loop's TSC).
    pub ns: u64,
    pub end_mono_ns: u64,
    /// Kernel events on the measured CPU from the gap's start to its end, ± [`SWITCH_SLACK_NS`].
    pub events: u64,
    /// What they were, each cause once in order (`sched_switch to kworker/1:2 (tid 55), irq
    /// 11 virtio0`); `nothing` when no kernel event fell within the gap.
    pub what: String,
}

impl KernelTrace {
    /// Every kernel event recorded, all names.
    pub fn recorded(&self) -> u64 {
        self.events.values().sum()
    }

    fn absorb(&mut self, b: KernelTrace) {
        for (name, n) in b.events {
            *self.events.entry(name).or_insert(0) += n;
        }
        self.discarded += b.discarded;
        self.lost_packets += b.lost_packets;
        self.at_largest.extend(b.at_largest);
        self.at_largest.sort_by_key(|g| std::cmp::Reverse(g.ns));
        self.at_largest.truncate(KERNEL_GAPS);
    }
}

/// The firing iterations in which the tracer switched buffers (Beamonte's peaks "at the moment
/// the consumer wrote"), against the loop's slow gaps: a switch's iteration is looked up among
/// the gaps of at least `slow_ns`; one not found took less.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AtSwitches {
    /// Switches while the loop kept its slow gaps (rounds added).
    pub switches: u64,
    /// The slow threshold (ns; the largest of the rounds').
    pub slow_ns: u64,
    /// Gaps (ns) of the switches' iterations that were slow; the others were under `slow_ns`.
    pub slow_gaps_ns: Vec<u64>,
    /// Firing iterations, and of them slow, over the same stretch: the base rate a switch's
    /// share of slow gaps is compared with.
    pub firings: u64,
    pub slow_firings: u64,
    /// Slow gaps the loop could not keep (more than its limit): switches among them read as
    /// fast, so the share at switches is a lower bound when this is not 0.
    pub slow_dropped: u64,
}

impl AtSwitches {
    /// The switches' iterations given as `slow` (each the gap, if it was among the slow gaps),
    /// over the run `done`.
    pub fn of(done: &NptDone, slow: impl IntoIterator<Item = Option<u64>>) -> AtSwitches {
        let (mut switches, mut slow_gaps_ns) = (0, Vec::new());
        for g in slow {
            switches += 1;
            slow_gaps_ns.extend(g);
        }
        let after = done.hits.saturating_sub(rtrace_protocol::NPT_SLOW_AFTER);
        AtSwitches {
            switches,
            slow_ns: done.slow_ns,
            slow_gaps_ns,
            firings: after,
            slow_firings: done.slow.len() as u64 + done.slow_dropped,
            slow_dropped: done.slow_dropped,
        }
    }

    /// Share of the switches' iterations that were slow, and of all firing iterations.
    pub fn shares(&self) -> (f64, f64) {
        (
            self.slow_gaps_ns.len() as f64 / self.switches.max(1) as f64,
            self.slow_firings as f64 / self.firings.max(1) as f64,
        )
    }

    /// Median and largest slow gap at a switch (ns).
    pub fn median_max(&self) -> Option<(u64, u64)> {
        let mut v = self.slow_gaps_ns.clone();
        v.sort_unstable();
        Some((*v.get(v.len() / 2)?, *v.last()?))
    }

    fn absorb(&mut self, b: AtSwitches) {
        self.switches += b.switches;
        self.slow_ns = self.slow_ns.max(b.slow_ns);
        self.slow_gaps_ns.extend(b.slow_gaps_ns);
        self.firings += b.firings;
        self.slow_firings += b.slow_firings;
        self.slow_dropped += b.slow_dropped;
    }
}

/// The switches at times `switches` (`CLOCK_MONOTONIC` ns) against `done`'s slow gaps: each
/// switch while the loop kept them, with the slow gap it fell in (± [`SWITCH_SLACK_NS`]).
pub fn at_switch_times(done: &NptDone, switches: &[u64]) -> Option<AtSwitches> {
    if done.slow_ns == 0 {
        return None;
    }
    let gaps = &done.slow;
    let within = switches
        .iter()
        .filter(|&&t| t >= done.slow_from_mono_ns && t <= done.end_mono_ns)
        .map(|&t| {
            // The first slow gap ending at or after the switch (less the slack).
            let i = gaps.partition_point(|g| g.end_mono_ns + SWITCH_SLACK_NS < t);
            gaps.get(i)
                .filter(|g| g.end_mono_ns.saturating_sub(g.ns + SWITCH_SLACK_NS) <= t)
                .map(|g| g.ns)
        });
    Some(AtSwitches::of(done, within))
}

/// The switches made by hits `hits` (the probe whose event began a page) against `done`'s slow
/// gaps, by hit number: exact, no clock involved.
pub fn at_switch_hits(done: &NptDone, hits: &[u64]) -> Option<AtSwitches> {
    if done.slow_ns == 0 {
        return None;
    }
    let by_hit: std::collections::HashMap<u64, u64> =
        done.slow.iter().map(|g| (g.hit, g.ns)).collect();
    let within = hits
        .iter()
        .filter(|&&h| h >= rtrace_protocol::NPT_SLOW_AFTER && h < done.hits)
        .map(|h| by_hit.get(h).copied());
    Some(AtSwitches::of(done, within))
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
            at_switches: None,
            kernel: None,
        })
    }

    /// The run with the tracer's switches and its largest gaps placed against them.
    pub fn with_switches(
        mut self,
        switches: Switches,
        largest: Vec<LargestGap>,
        at_switches: Option<AtSwitches>,
    ) -> NptRun {
        self.switches = Some(switches);
        self.largest = largest;
        self.at_switches = at_switches;
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
        match (&mut self.at_switches, round.at_switches) {
            (Some(a), Some(b)) => a.absorb(b),
            (a @ None, b) => *a = b,
            _ => {}
        }
        match (&mut self.kernel, round.kernel) {
            (Some(a), Some(b)) => a.absorb(b),
            (a @ None, b) => *a = b,
            _ => {}
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
    /// `experiment`, `tool_version`, `started_unix`, `environment`.
    #[serde(flatten)]
    pub header: crate::Header,
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
    /// Kernel events LTTng recorded beside the loop's UST event (`--lttng-kernel`); empty:
    /// none. Absent in files of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lttng_kernel: Vec<String>,
    /// CPUs, priority, rounds, buffers, record mode, trace data, backend options.
    #[serde(flatten)]
    pub run: crate::settings::RunSettings,
}

/// `experiment` of an npt result file.
pub const EXPERIMENT: &str = "npt";

crate::result_model!(NptResult);

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
            slow: Vec::new(),
            slow_ns: 0,
            slow_from_mono_ns: 0,
            slow_dropped: 0,
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
    fn kernel_traces_pool_apart_from_the_events() {
        let at = |ns| KernelAtGap {
            ns,
            end_mono_ns: ns,
            events: 1,
            what: "irq 11".into(),
        };
        let mut a = KernelTrace {
            events: [("sched_switch".to_owned(), 3)].into(),
            discarded: 1,
            lost_packets: 0,
            at_largest: (1..=KERNEL_GAPS as u64).map(at).collect(),
        };
        let b = KernelTrace {
            events: [
                ("sched_switch".to_owned(), 2),
                ("irq_handler_entry".to_owned(), 4),
            ]
            .into(),
            discarded: 2,
            lost_packets: 0,
            at_largest: vec![at(100)],
        };
        a.absorb(b);
        assert_eq!((a.recorded(), a.discarded), (9, 3));
        assert_eq!(a.at_largest.len(), KERNEL_GAPS);
        assert_eq!(a.at_largest[0].ns, 100);
        assert_eq!(a.at_largest.last().unwrap().ns, 2);
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

    fn gap(ns: u64, end_mono_ns: u64, hit: u64) -> NptGap {
        NptGap {
            ns,
            end_mono_ns,
            hit,
        }
    }

    /// A run of 1,000,000 firings whose loop kept slow gaps (≥ 1 µs) from hit 65,536 on.
    fn slow_run(slow: Vec<NptGap>) -> NptDone {
        NptDone {
            hits: 1_000_000,
            iterations: 1_000_000,
            elapsed_ns: 1_000_000_000,
            tsc_hz: 2e9,
            quiet: String::new(),
            fired: String::new(),
            start_mono_ns: 0,
            end_mono_ns: 1_000_000_000,
            largest: Vec::new(),
            slow,
            slow_ns: 1_000,
            slow_from_mono_ns: 100_000_000,
            slow_dropped: 0,
        }
    }

    #[test]
    fn a_switch_is_found_in_the_slow_gap_it_fell_in_or_was_fast() {
        let done = slow_run(vec![
            gap(5_000, 200_000_000, 70_000),
            gap(2_000, 300_000_000, 80_000),
            gap(40_000, 400_000_000, 90_000),
        ]);
        // In the first gap; 1 µs after the second's end (slack); between gaps; before the loop
        // kept slow gaps (not counted); inside the third.
        let times = [
            199_997_000,
            300_000_900,
            350_000_000,
            50_000_000,
            399_970_000,
        ];
        let a = at_switch_times(&done, &times).unwrap();
        assert_eq!(a.switches, 4);
        assert_eq!(a.slow_gaps_ns, [5_000, 2_000, 40_000]);
        assert_eq!(a.median_max(), Some((5_000, 40_000)));
        let (at, all) = a.shares();
        assert!((at - 0.75).abs() < 1e-9 && all < 1e-5, "{at} {all}");
        // By hit number (ftrace): exact; hits before the threshold was set are left out.
        let b = at_switch_hits(&done, &[80_000, 80_001, 10]).unwrap();
        assert_eq!((b.switches, b.slow_gaps_ns.clone()), (2, vec![2_000]));
        // A capped run keeps no slow gaps: nothing to say.
        let capped = NptDone { slow_ns: 0, ..done };
        assert!(at_switch_times(&capped, &times).is_none());
    }
}
