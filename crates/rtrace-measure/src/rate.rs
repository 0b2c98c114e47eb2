//! Result model and search of `rtrace-bench rate` (Beamonte & Dagenais, seeds 001/002): the
//! highest rate at which a tracer records every event of a probe fired at a steady rate, per
//! tracer and buffer size. The search first floods: the probe fired as fast as the loop can,
//! whose recorded events over its window are the consumer's drain rate when it loses events
//! (the sustained rate's bound), or show that the loop itself is the bound when it does not.
//! It then climbs geometrically until the first loss (or, losing at its start rate, descends
//! until a rate holds), bisects between the last lossless and the first lossy rate, then
//! confirms: three runs at the rate found without a loss, and one of up to three at 1.5 times it
//! with losses. Every point is accounted exactly (`recorded + lost ==
//! hits`): a loss is a counted loss, never a guess. Each point lasts until the tracer's buffer
//! turned over several times (`Point::min_hits`): a rate the buffer only absorbed for a moment
//! is not a rate the tracer sustains (Beamonte's Table 4 is a steady state).

use crate::Events;
use serde::{Deserialize, Serialize};

/// Why a point was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The probe fired as fast as the loop can (`SearchPlan::max_hz`), first.
    Flood,
    Climb,
    Bisect,
    Confirm,
    Over,
}

/// One run at one rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub phase: Phase,
    /// Rate asked for (events/s).
    pub rate_hz: f64,
    /// Rate the loop fired at.
    pub achieved_hz: f64,
    /// Firings that began more than one period late.
    pub late: u64,
    /// Firings each thread made at least, past the window (the buffer's capacity times the
    /// turnovers asked for); 0 in files of older versions.
    #[serde(default)]
    pub min_hits: u64,
    pub events: Events,
}

impl Point {
    /// How long the probe fired (s).
    pub fn window_s(&self) -> f64 {
        self.events.hits as f64 / self.achieved_hz.max(1e-9)
    }
}

impl Point {
    /// Events recorded per second of the window, when the run lost events: the consumer's
    /// drain rate (the buffer was full, so the consumer never waited). It counts the buffer's
    /// last contents too, drained after the loop stopped: at most a capacity over the window.
    pub fn drain_hz(&self) -> Option<f64> {
        (self.events.lost > 0).then(|| self.events.recorded as f64 / self.window_s())
    }

    pub fn lost_fraction(&self) -> f64 {
        self.events.lost as f64 / self.events.hits.max(1) as f64
    }

    /// The loop could not fire at the rate asked for (more than 10% short).
    pub fn short(&self) -> bool {
        self.achieved_hz < 0.9 * self.rate_hz
    }
}

impl crate::pool::Accounted for Point {
    /// Every hit recorded or reported lost.
    fn accounting(&self) -> Result<(), String> {
        self.events.check_exact().map_err(|e| e.to_string())
    }
}

/// How the search proceeds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SearchPlan {
    pub start_hz: f64,
    pub max_hz: f64,
    /// Climb factor between rates.
    pub factor: f64,
    /// Bisection steps between the last lossless and the first lossy rate.
    pub bisections: u32,
    /// Runs at the rate found, each without a loss.
    pub confirmations: u32,
    /// The rate found times this must lose events.
    pub over: f64,
    /// Times the start rate is divided by `factor` when it loses events (0 in older files).
    #[serde(default)]
    pub descents: u32,
    /// A flood point first (`Phase::Flood`) firing at least this long (ms): the consumer's
    /// drain rate measured directly; 0: none (and in older files).
    #[serde(default)]
    pub flood_ms: u64,
}

impl Default for SearchPlan {
    fn default() -> Self {
        SearchPlan {
            start_hz: 10_000.0,
            max_hz: 50_000_000.0,
            factor: 2.0,
            bisections: 5,
            confirmations: 3,
            over: 1.5,
            descents: 6,
            flood_ms: 5_000,
        }
    }
}

/// One tracer and buffer size searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub tracer: rtrace_tracer::TracerKind,
    /// Backend mode (`record`, `tracepoint`), if the tracer has several.
    pub variant: Option<String>,
    /// Per-CPU buffer size asked for (KiB) and what the backend made of it.
    pub buffer_size_kb: u64,
    /// `rate --poll-ms`: our consumer's wait between drains (ms); absent: its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_ms: Option<u64>,
    pub buffer: String,
    /// Events its buffer holds at most (an upper bound: bytes / the smallest event), whose
    /// turnovers every point fired (0 in files of older versions).
    #[serde(default)]
    pub capacity_events: u64,
    /// Every run, in order.
    pub points: Vec<Point>,
    /// Highest rate at which every run lost nothing, as the loop fired it (the slowest of the
    /// lossless runs at the rate asked for, which the paced loop may miss by a few percent);
    /// `None`: it lost events at the start rate already.
    pub max_lossless_hz: Option<f64>,
    /// The rate asked for of those runs (absent in files of older versions, whose
    /// `max_lossless_hz` is the rate asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lossless_asked_hz: Option<f64>,
    /// The loop could not fire faster (it never lost events up to its own limit, or `max_hz`):
    /// `max_lossless_hz` is then a lower bound.
    pub ceiling: bool,
    /// Every confirmation run lost nothing.
    pub confirmed: bool,
    /// One of the runs at `over` × the rate found (up to [`OVER_RUNS`]) lost events.
    pub over_lossy: Option<bool>,
    /// The round of this search (0-based) when `--rounds` repeated every search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
}

/// What bounds the rate a tracer sustains, from a search's flood point and the rate it found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Flooded, the tracer lost nothing, or less than [`KEPT_UP`] of the events (its consumer
    /// kept up with the loop but for a stall the buffer did not absorb): the loop fires no
    /// faster under it (a hit costs more than the period); the tracer sustains at least `hz`.
    Workload { hz: f64 },
    /// Flooded, the consumer recorded `drain_hz`: no rate above it is sustained, and the
    /// search held close to it (within [`BUFFER_BOUND`]).
    Consumer { drain_hz: f64 },
    /// The consumer drains `drain_hz`, but the search held only up to `lossless_hz` (not the
    /// paced loop's own ceiling): a delay of
    /// the consumer outlasts what the buffer absorbs at higher rates (its capacity over the
    /// rate), so the buffer, not the consumer's throughput, bounds the lossless rate.
    Buffer { drain_hz: f64, lossless_hz: f64 },
}

/// A lossless rate below this fraction of the consumer's drain rate is bound by the buffer.
pub const BUFFER_BOUND: f64 = 0.9;

/// Flooded, a tracer that recorded this share of the events at least kept up with the loop:
/// what it lost went in its consumer's stalls, not for want of throughput.
pub const KEPT_UP: f64 = 0.95;

impl Search {
    /// The flood point (searches of older versions have none).
    pub fn flood(&self) -> Option<&Point> {
        self.points.first().filter(|p| p.phase == Phase::Flood)
    }

    /// What bounds the tracer here; `None` without a flood point (older files) or when nothing
    /// was found.
    pub fn bound(&self) -> Option<Bound> {
        let flood = self.flood()?;
        let kept_up = flood.events.recorded as f64 >= KEPT_UP * flood.events.hits as f64;
        match flood.drain_hz() {
            Some(drain_hz) if kept_up => Some(Bound::Workload {
                hz: drain_hz.max(self.max_lossless_hz.unwrap_or(0.0)),
            }),
            None => Some(Bound::Workload {
                hz: flood.achieved_hz.max(self.max_lossless_hz.unwrap_or(0.0)),
            }),
            Some(drain_hz) => match self.max_lossless_hz {
                Some(l) if !self.ceiling && l < BUFFER_BOUND * drain_hz => Some(Bound::Buffer {
                    drain_hz,
                    lossless_hz: l,
                }),
                _ => Some(Bound::Consumer { drain_hz }),
            },
        }
    }
}

impl Bound {
    /// The highest rate sustained: the consumer's drain rate, or the loop's own limit (a lower
    /// bound).
    pub fn sustained_hz(&self) -> f64 {
        match *self {
            Bound::Workload { hz } => hz,
            Bound::Consumer { drain_hz } | Bound::Buffer { drain_hz, .. } => drain_hz,
        }
    }
}

/// Times a failed confirmation lowers the rate and confirms again.
pub const RETRIES: u32 = 6;
/// Runs at `over` × the rate found, of which one must lose events (the search stops at the
/// first that does).
pub const OVER_RUNS: u32 = 3;
/// What a failed confirmation multiplies the rate by.
pub const RETRY_STEP: f64 = 0.85;

/// What a search found (see the fields of [`Search`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub points: Vec<Point>,
    /// As fired (see [`Search::max_lossless_hz`]).
    pub max_lossless_hz: Option<f64>,
    /// As asked for.
    pub max_lossless_asked_hz: Option<f64>,
    pub ceiling: bool,
    pub confirmed: bool,
    pub over_lossy: Option<bool>,
}

/// Times a search whose run at `over` × the rate found lost nothing starts again above it: a
/// loss during the climb or the bisection was chance, the limit is higher.
pub const RESUMES: u32 = 2;

/// The rate the loop fired at when asked for `asked`: the slowest of the lossless runs at that
/// rate (`asked` if none ran there).
fn fired_hz(points: &[Point], asked: f64) -> f64 {
    points
        .iter()
        .filter(|p| p.rate_hz == asked && p.events.lost == 0)
        .map(|p| p.achieved_hz)
        .reduce(f64::min)
        .unwrap_or(asked)
}

/// What a search does after the points it measured so far: measure at a rate in a phase, or
/// end with what it found.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Measure(f64, Phase),
    Done(Found),
}

/// The point a replayed search asks for beyond those it was given.
#[derive(Debug, thiserror::Error)]
#[error("the search needs a run at {0} events/s ({1:?})")]
struct Needs(f64, Phase);

/// The step after `points` (every point of this search so far, in order): [`search`] replayed
/// over them, so that each of its runs can be a separate entry of the harness's plan.
pub fn next(plan: &SearchPlan, points: &[Point]) -> anyhow::Result<Next> {
    let mut given = points.iter();
    let replayed = search(plan, |rate, phase| {
        match given.next() {
        Some(p) if p.rate_hz == rate && p.phase == phase => Ok(p.clone()),
        Some(p) => anyhow::bail!(
            "the search replays differently: it asks for {rate} events/s ({phase:?}) where {} ({:?}) was measured",
            p.rate_hz,
            p.phase
        ),
        None => Err(Needs(rate, phase).into()),
    }
    });
    match replayed {
        Ok(found) => Ok(Next::Done(found)),
        Err(e) => match e.downcast_ref::<Needs>() {
            Some(&Needs(rate, phase)) => Ok(Next::Measure(rate, phase)),
            None => Err(e),
        },
    }
}

/// The search itself, over `measure(rate, phase)`.
pub fn search(
    plan: &SearchPlan,
    mut measure: impl FnMut(f64, Phase) -> anyhow::Result<Point>,
) -> anyhow::Result<Found> {
    let mut points = Vec::new();
    let mut start = plan.start_hz;
    if plan.flood_ms > 0 {
        let p = measure(plan.max_hz, Phase::Flood)?;
        // Losing while flooded, the consumer drains this fast: a climb starting above it
        // would only lose.
        if let Some(drain) = p.drain_hz() {
            start = start.min(drain / plan.factor);
        }
        points.push(p);
    }
    // The last rate confirmed whose run at `over` × it lost nothing.
    let mut held: Option<f64> = None;
    let done = |points: Vec<Point>, max: Option<f64>, ceiling, confirmed, over_lossy| Found {
        max_lossless_hz: max.map(|asked| fired_hz(&points, asked)),
        max_lossless_asked_hz: max,
        points,
        ceiling,
        confirmed,
        over_lossy,
    };
    for resume in 0..=RESUMES {
        let (found, ceiling, confirmed) = limit(plan, start, held, &mut measure, &mut points)?;
        let found = match (found, held) {
            (None, None) => return Ok(done(points, None, false, false, None)),
            // Resumed, and nothing above the rate that held holds: that rate stands.
            (Some(f), Some(h)) if !ceiling && (!confirmed || f <= h) => {
                return Ok(done(points, Some(h), false, true, Some(false)))
            }
            (None, Some(h)) => return Ok(done(points, Some(h), false, true, Some(false))),
            (Some(f), _) => f,
        };
        if ceiling {
            return Ok(done(points, Some(found), true, confirmed, None));
        }
        // Near the limit a loss is chance both ways: as three runs must hold at the rate found,
        // one of up to three at `over` × it must lose.
        let (mut lossy, mut short) = (false, false);
        for _ in 0..OVER_RUNS {
            let p = measure(found * plan.over, Phase::Over)?;
            (lossy, short) = (p.events.lost > 0, p.short());
            points.push(p);
            // Unconfirmed, the search ends with this run whatever it shows.
            if lossy || short || !confirmed {
                break;
            }
        }
        if lossy || !confirmed || resume == RESUMES {
            return Ok(done(points, Some(found), false, confirmed, Some(lossy)));
        }
        if short {
            // The loop cannot fire at `over` × the rate: the limit is above what it can test.
            return Ok(done(points, Some(found), true, confirmed, None));
        }
        held = Some(found);
        start = found * plan.over;
    }
    unreachable!("the last resume returns")
}

/// One climb from `start`, bisection and confirmation: the rate found (`None`: it lost events at
/// `start`), whether it is the loop's ceiling, whether three runs held.
fn limit(
    plan: &SearchPlan,
    start: f64,
    held: Option<f64>,
    measure: &mut impl FnMut(f64, Phase) -> anyhow::Result<Point>,
    points: &mut Vec<Point>,
) -> anyhow::Result<(Option<f64>, bool, bool)> {
    let mut lower: Option<f64> = None;
    let mut upper: Option<f64> = None;
    let mut ceiling = false;
    let mut r = start;
    let mut descents = if held.is_none() { plan.descents } else { 0 };
    loop {
        let p = measure(r, Phase::Climb)?;
        let (lost, short, achieved) = (p.events.lost > 0, p.short(), p.achieved_hz);
        points.push(p);
        if lost {
            upper = Some(r);
            // Lossy at the start: descend until a rate holds, then bisect up to the loss.
            if lower.is_none() && descents > 0 {
                descents -= 1;
                r /= plan.factor;
                continue;
            }
            break;
        }
        if short {
            // Lossless as fast as the loop fires: a lower bound of the tracer's limit.
            ceiling = true;
            lower = Some(achieved);
            break;
        }
        lower = Some(r);
        if upper.is_some() {
            break; // descended to a rate that holds
        }
        if r * plan.factor > plan.max_hz {
            ceiling = true;
            break;
        }
        r *= plan.factor;
    }
    // Resumed above a rate that held: the bisection may go down to it.
    let Some(mut l) = lower.or(held) else {
        return Ok((None, false, false));
    };
    if let Some(mut u) = upper {
        for _ in 0..plan.bisections {
            let mid = (l * u).sqrt();
            let p = measure(mid, Phase::Bisect)?;
            let (lost, short, achieved) = (p.events.lost > 0, p.short(), p.achieved_hz);
            points.push(p);
            if lost {
                u = mid;
            } else if short {
                // Lossless as fast as the loop fires: no rate above it can be asked for.
                ceiling = true;
                l = achieved;
                break;
            } else {
                l = mid;
            }
        }
    }
    // A confirmation that loses events moves the rate found down by `RETRY_STEP` and confirms
    // again, at most `RETRIES` times: the rate reported is one that held. Near the limit, loss
    // is a matter of chance (a consumer delayed once in a run), so the step is wide.
    let mut found = l;
    let mut confirmed = false;
    for attempt in 0..=RETRIES {
        if attempt > 0 {
            found *= RETRY_STEP;
        }
        confirmed = true;
        for _ in 0..plan.confirmations {
            let p = measure(found, Phase::Confirm)?;
            let lost = p.events.lost > 0;
            points.push(p);
            if lost {
                confirmed = false;
                break;
            }
        }
        if confirmed {
            break;
        }
    }
    Ok((Some(found), ceiling, confirmed))
}

/// The result file of `rtrace-bench rate`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RateResult {
    /// `experiment`, `tool_version`, `started_unix`, `environment`.
    #[serde(flatten)]
    pub header: crate::Header,
    pub config: RateSettings,
    pub searches: Vec<Search>,
    /// Tracers or buffer sizes that could not run, with the reason.
    pub failed: Vec<String>,
}

/// How the rate experiment was run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RateSettings {
    pub duration_ms: u64,
    /// Buffer-fulls every point fired at least (0: older versions, the window alone).
    #[serde(default)]
    pub turnovers: u32,
    /// CPUs, priority, rounds, buffers (of the first size searched), record mode, trace data,
    /// backend options.
    #[serde(flatten)]
    pub run: crate::settings::RunSettings,
    pub plan: SearchPlan,
    /// CPUs of the firing threads (`--threads`), the measured CPU first; files of older
    /// versions: one thread on `cpu`.
    #[serde(default)]
    pub thread_cpus: Vec<usize>,
    pub buffer_sizes_kb: Vec<u64>,
}

/// `experiment` of a rate result file.
pub const EXPERIMENT: &str = "rate";

crate::result_model!(RateResult);

#[cfg(test)]
mod tests {
    use super::*;
    use Phase::{Climb, Confirm, Flood, Over};

    /// A tracer that loses events above `limit` Hz and a loop that cannot fire above `cap`.
    fn fake(limit: f64, cap: f64) -> impl FnMut(f64, Phase) -> anyhow::Result<Point> {
        move |rate, phase| {
            let achieved = rate.min(cap);
            let hits = achieved as u64;
            // A second's window: above its limit, the tracer records `limit` events of it.
            let lost = if achieved > limit {
                hits - limit as u64
            } else {
                0
            };
            Ok(point(phase, rate, achieved, lost))
        }
    }

    /// A second's run at `rate` that fired at `achieved` and lost `lost`.
    fn point(phase: Phase, rate: f64, achieved: f64, lost: u64) -> Point {
        let hits = achieved as u64;
        Point {
            phase,
            rate_hz: rate,
            achieved_hz: achieved,
            late: 0,
            min_hits: 0,
            events: Events::of(hits, hits - lost, lost),
        }
    }

    /// A search of `fake(300_000.0, 1e9)` whose first point for which `when` holds is
    /// changed by `change`.
    fn search_once(when: impl Fn(f64, Phase) -> bool, change: fn(&mut Events)) -> Found {
        let (mut once, mut inner) = (true, fake(300_000.0, 1e9));
        let f = search(&SearchPlan::default(), |rate, phase| {
            let mut p = inner(rate, phase)?;
            if once && when(rate, phase) {
                once = false;
                change(&mut p.events);
            }
            Ok(p)
        });
        f.unwrap()
    }

    fn lose_one(e: &mut Events) {
        e.lost = 1;
        e.recorded -= 1;
    }

    #[test]
    fn a_search_replayed_step_by_step_ends_where_the_whole_search_does() {
        let plan = SearchPlan::default();
        let whole = search(&plan, fake(300_000.0, 1e9)).unwrap();
        let mut measure = fake(300_000.0, 1e9);
        let mut points = Vec::new();
        let stepped = loop {
            match next(&plan, &points).unwrap() {
                Next::Measure(rate, phase) => points.push(measure(rate, phase).unwrap()),
                Next::Done(found) => break found,
            }
        };
        assert_eq!(stepped, whole);
        let mut wrong = points.clone();
        wrong[0].rate_hz *= 2.0;
        assert!(
            next(&plan, &wrong).is_err(),
            "a point the search did not ask for"
        );
    }

    #[test]
    fn finds_the_limit_and_confirms_it() {
        let plan = SearchPlan::default();
        let Found {
            points,
            max_lossless_hz: found,
            max_lossless_asked_hz: asked,
            ceiling,
            confirmed,
            over_lossy: over,
        } = search(&plan, fake(300_000.0, 1e9)).unwrap();
        assert_eq!(found, asked, "the fake loop fires at the rate asked");
        let found = found.unwrap();
        assert!(!ceiling && confirmed && over == Some(true));
        // Bisection between 160 k and 320 k, five steps: within 320/160^(1/32) of the limit.
        assert!(found <= 300_000.0 && found > 300_000.0 / 1.03, "{found}");
        let phases: Vec<Phase> = points.iter().map(|p| p.phase).collect();
        assert_eq!(phases.iter().filter(|&&p| p == Confirm).count(), 3);
        assert_eq!(phases.last(), Some(&Over));
    }

    #[test]
    fn a_loop_that_cannot_go_faster_is_a_ceiling_not_a_limit() {
        let Found {
            max_lossless_hz: found,
            ceiling,
            confirmed,
            over_lossy: over,
            ..
        } = search(&SearchPlan::default(), fake(1e12, 500_000.0)).unwrap();
        assert!(ceiling && confirmed && over.is_none());
        assert!(found.unwrap() >= 500_000.0, "{found:?}");
    }

    #[test]
    fn a_confirmation_that_loses_lowers_the_rate_until_three_runs_hold() {
        // Loses at 300 k/s and above, and once more at the first confirmation rate.
        let f = search_once(|_, phase| phase == Confirm, lose_one);
        assert!(f.confirmed);
        let confirms: Vec<&Point> = f.points.iter().filter(|p| p.phase == Confirm).collect();
        assert_eq!(confirms.len(), 1 + 3, "one failed, then three that held");
        assert!(confirms[1].rate_hz < confirms[0].rate_hz);
        assert_eq!(f.max_lossless_hz, Some(confirms[1].rate_hz));
    }

    #[test]
    fn a_chance_loss_below_the_limit_resumes_the_search_above_it() {
        // The limit is 300 k/s, but the run at 160 k/s loses once (a delayed consumer): the
        // first search settles near 80-160 k, its run at 1.5 times holds, so it resumes.
        let f = search_once(|rate, _| rate == 160_000.0, lose_one);
        assert!(f.confirmed && f.over_lossy == Some(true), "{f:?}");
        let found = f.max_lossless_hz.unwrap();
        assert!(found <= 300_000.0 && found > 250_000.0, "{found}");
        let overs = f.points.iter().filter(|p| p.phase == Over).count();
        assert_eq!(
            overs,
            OVER_RUNS as usize + 1,
            "the first search's three over-runs held, the resumed one's first lost"
        );
    }

    #[test]
    fn an_over_run_that_holds_by_chance_is_tried_again() {
        // Above the limit, the first run at 1.5 times the rate found happens to lose nothing.
        let f = search_once(
            |_, phase| phase == Over,
            |e| {
                e.recorded += e.lost;
                e.lost = 0;
            },
        );
        assert!(f.confirmed && f.over_lossy == Some(true), "{f:?}");
        let phases: Vec<Phase> = f.points.iter().map(|p| p.phase).collect();
        assert_eq!(&phases[phases.len() - 3..], [Confirm, Over, Over]);
        let climbs = f.points.iter().filter(|p| p.phase == Climb).count();
        assert_eq!(climbs, 6, "no resume");
    }

    #[test]
    fn losing_at_the_start_rate_finds_nothing_without_descents() {
        // Without the flood point, which would start the climb below the drain rate.
        let descending = SearchPlan {
            flood_ms: 0,
            ..SearchPlan::default()
        };
        let plan = SearchPlan {
            descents: 0,
            ..descending
        };
        let f = search(&plan, fake(1_000.0, 1e9)).unwrap();
        assert_eq!((f.max_lossless_hz, f.points.len()), (None, 1));
        // Descending 6 times from 10,000/s reaches 156/s: 1,000/s is found from below.
        let f = search(&descending, fake(1_000.0, 1e9)).unwrap();
        let found = f.max_lossless_hz.unwrap();
        assert!(found <= 1_000.0 && found > 1_000.0 / 1.03, "{found}");
        let climbs: Vec<f64> = f
            .points
            .iter()
            .filter(|p| p.phase == Climb)
            .map(|p| p.rate_hz)
            .collect();
        assert_eq!(climbs, [10_000.0, 5_000.0, 2_500.0, 1_250.0, 625.0]);
        assert!(f.confirmed && f.over_lossy == Some(true));
        // Lossy even at the last descent: nothing found.
        let f = search(&descending, fake(100.0, 1e9)).unwrap();
        assert_eq!((f.max_lossless_hz, f.points.len()), (None, 7));
    }

    fn searched(found: Found) -> Search {
        Search {
            tracer: rtrace_tracer::TracerKind::Ftrace,
            variant: None,
            buffer_size_kb: 256,
            poll_ms: None,
            buffer: String::new(),
            capacity_events: 16_384,
            points: found.points,
            max_lossless_hz: found.max_lossless_hz,
            max_lossless_asked_hz: found.max_lossless_asked_hz,
            ceiling: found.ceiling,
            confirmed: found.confirmed,
            over_lossy: found.over_lossy,
            round: None,
        }
    }

    #[test]
    fn the_rate_reported_is_the_rate_fired() {
        // A loop that fires 8% below the rate asked.
        let slow = |rate: f64, phase| Ok(point(phase, rate, 0.92 * rate, 0));
        let plan = SearchPlan {
            max_hz: 100_000.0,
            flood_ms: 0,
            ..SearchPlan::default()
        };
        let f = search(&plan, slow).unwrap();
        let (fired, asked) = (f.max_lossless_hz.unwrap(), f.max_lossless_asked_hz.unwrap());
        assert!((fired - 0.92 * asked).abs() < 1.0, "{fired} vs {asked}");
        assert_eq!(fired_hz(&[], 5.0), 5.0);
    }

    #[test]
    fn the_flood_point_measures_the_drain_rate_and_starts_the_climb_below_it() {
        let f = search(&SearchPlan::default(), fake(1_000.0, 1e9)).unwrap();
        assert_eq!(f.points[0].phase, Flood);
        assert_eq!(f.points[0].drain_hz(), Some(1_000.0));
        assert_eq!(f.points[1].rate_hz, 500.0, "the climb starts at half of it");
        let found = f.max_lossless_hz.unwrap();
        assert!(found <= 1_000.0 && found > 1_000.0 / 1.03, "{found}");
        let s = searched(f);
        assert_eq!(s.bound(), Some(Bound::Consumer { drain_hz: 1_000.0 }));
        assert_eq!(s.bound().unwrap().sustained_hz(), 1_000.0);
    }

    #[test]
    fn a_lossless_rate_well_below_the_drain_rate_is_bound_by_the_buffer() {
        // Drains 300 k/s, but a confirmation loses (a delayed consumer) until 15 % lower twice.
        let mut inner = fake(300_000.0, 1e9);
        let mut fails = 2;
        let f = search(&SearchPlan::default(), |rate, phase| {
            let mut p = inner(rate, phase)?;
            if phase == Confirm && fails > 0 {
                fails -= 1;
                lose_one(&mut p.events);
            }
            Ok(p)
        })
        .unwrap();
        let l = f.max_lossless_hz.unwrap();
        assert_eq!(
            searched(f).bound(),
            Some(Bound::Buffer {
                drain_hz: 300_000.0,
                lossless_hz: l
            })
        );
    }

    #[test]
    fn a_consumer_that_kept_up_but_for_a_stall_leaves_the_loop_the_bound() {
        // The loop fires 500 k/s; the consumer records 97 % of a flood (it stalled once).
        let f = search(&SearchPlan::default(), |rate, phase| {
            let achieved = rate.min(500_000.0);
            let lost = if phase == Flood {
                achieved as u64 * 3 / 100
            } else {
                0
            };
            Ok(point(phase, rate, achieved, lost))
        })
        .unwrap();
        let s = searched(f);
        assert_eq!(s.bound(), Some(Bound::Workload { hz: 500_000.0 }));
    }

    #[test]
    fn a_bisection_past_the_loops_limit_reports_what_the_loop_fired() {
        // The loop fires 600 k/s at most; asked for 1 M/s or more it loses events (a burst of
        // late firings): the climb's lossy point and the bisection's first are both short.
        let plan = SearchPlan {
            flood_ms: 0,
            ..SearchPlan::default()
        };
        let f = search(&plan, |rate, phase| {
            let achieved = rate.min(600_000.0);
            let lost = if rate >= 1_000_000.0 { 1 } else { 0 };
            Ok(point(phase, rate, achieved, lost))
        })
        .unwrap();
        assert!(f.ceiling && f.confirmed, "{f:?}");
        assert_eq!(
            f.max_lossless_hz,
            Some(600_000.0),
            "what the loop fired, not asked"
        );
    }

    #[test]
    fn a_flood_without_loss_makes_the_loop_the_bound() {
        let s = searched(search(&SearchPlan::default(), fake(1e12, 500_000.0)).unwrap());
        assert_eq!(s.flood().unwrap().drain_hz(), None);
        assert_eq!(s.bound(), Some(Bound::Workload { hz: 500_000.0 }));
    }
}
