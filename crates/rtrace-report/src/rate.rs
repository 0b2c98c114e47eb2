//! The rate experiment's section (`rtrace-bench rate`): per tracer and buffer size, the rate it
//! sustains and what bounds it (the consumer's drain rate measured by flooding, the loop, or the
//! buffer), the highest rate recorded without loss, its confirmation (three runs without a
//! loss) and the run at 1.5 times it (which must lose events), then every point measured.

use crate::doc::{columns, Block, Cell, Column, Section, Table};
use crate::format::listed;
use crate::result::{Entry, Report};
use rtrace_measure::rate::{Bound, Phase, RateResult, Search};

/// The lossless-rate search: rates and losses, no time per event.
impl crate::result::Reported for RateResult {
    fn section(&self, e: &Entry, _: &Report) -> Section {
        let r = self;
        let mut s = crate::doc::section(
            e,
            "sustained and lossless event rate",
            format!(
                "{} per run on {}; {}; {}.",
                window(r),
                on(r),
                e.kernel(),
                r.header.environment.cpu_model
            ),
            summary(r),
            Some(Block::Note(
                if r.searches.iter().any(|s| s.flood().is_some()) {
                    let flood = crate::format::duration_s(r.config.plan.flood_ms as f64 / 1e3);
                    format!("{}. {NOTE}.", FLOOD_NOTE.replace("{flood}", &flood))
                } else {
                    format!("{NOTE}.")
                },
            )),
        );
        s.push(Block::Table(table(r)));
        s.push(Block::Details {
            summary: "Every run".into(),
            blocks: vec![Block::Table(points(r))],
        });
        crate::doc::close(&mut s, e, &r.failed, &r.config);
        s
    }
}

/// `at least 200 ms and 10 buffer-fulls of events`, or `200 ms` (older files).
pub fn window(r: &RateResult) -> String {
    match r.config.turnovers {
        0 => format!("{} ms", r.config.duration_ms),
        n => format!(
            "at least {} ms and {n} buffer-fulls of events",
            r.config.duration_ms
        ),
    }
}

/// The loop's own limit, when it bound the search: `≥ 1.30 M/s (the loop's limit)`.
fn ceiling(hz: f64) -> String {
    format!("≥ {} (the loop's limit under this tracer)", rate(hz))
}

/// `1.25 M/s`, `310 k/s`.
pub fn rate(hz: f64) -> String {
    if hz >= 1e6 {
        format!("{:.2} M/s", hz / 1e6)
    } else if hz >= 1e3 {
        format!("{:.0} k/s", hz / 1e3)
    } else {
        format!("{hz:.0}/s")
    }
}

/// `ebpf (record)`, `ftrace, polled every 5 ms`.
pub fn label(s: &Search) -> String {
    let round = s
        .round
        .map_or(String::new(), |r| format!(", round {}", r + 1));
    let poll = s
        .poll_ms
        .map_or(String::new(), |ms| format!(", polled every {ms} ms"));
    format!("{}{poll}{round}", s.tracer.label(s.variant.as_deref()))
}

/// Limits this far apart moved with the poll period.
const MOVED: f64 = 1.25;

/// One tracer at one buffer size searched at several waits of our reader between drains
/// (`--poll-ms`).
struct PollMove {
    tracer: String,
    kb: u64,
    /// (wait in ms, lossless rate, capacity in events, at the loop's ceiling), longest first.
    at: Vec<(u64, f64, u64, bool)>,
    /// The lossless rate at the shortest wait over the one at the longest.
    moved: f64,
    /// The longest wait over the shortest.
    shorter: f64,
}

impl PollMove {
    /// The limit moved with the wait, measured (not at the loop's ceiling at the longest).
    fn bound_by_wait(&self) -> bool {
        !self.at[0].3 && self.moved >= MOVED
    }
}

/// Every tracer and buffer size `r` searched at two or more waits of our reader.
fn poll_moves(r: &RateResult) -> Vec<PollMove> {
    let mut keys: Vec<(String, u64)> = r
        .searches
        .iter()
        .filter(|s| s.poll_ms.is_some())
        .map(|s| (s.tracer.label(s.variant.as_deref()), s.buffer_size_kb))
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for (tracer, kb) in keys {
        let mut at: Vec<(u64, f64, u64, bool)> = r
            .searches
            .iter()
            .filter(|s| s.tracer.label(s.variant.as_deref()) == tracer && s.buffer_size_kb == kb)
            .filter_map(|s| Some((s.poll_ms?, s.max_lossless_hz?, s.capacity_events, s.ceiling)))
            .collect();
        if at.len() < 2 {
            continue;
        }
        at.sort_by_key(|&(ms, ..)| std::cmp::Reverse(ms));
        let (slow, fast) = (at[0], at[at.len() - 1]);
        out.push(PollMove {
            moved: fast.1 / slow.1,
            shorter: slow.0 as f64 / fast.0 as f64,
            tracer,
            kb,
            at,
        });
    }
    out
}

/// Per tracer and buffer size searched at several poll periods of our reader (`--poll-ms`):
/// whether the lossless rate moved with the period, beside the rate at which the buffer's
/// capacity fills in one period (what a reader polling that often can hold at most).
pub fn poll_sentences(r: &RateResult) -> Vec<String> {
    poll_moves(r)
        .into_iter()
        .map(|m| {
            let each: Vec<String> = m
                .at
                .iter()
                .map(|&(ms, hz, cap, ceiling)| {
                    // At the loop's ceiling the limit is higher still.
                    let at_least = if ceiling { "≥ " } else { "" };
                    format!(
                        "{at_least}{} polled every {ms} ms (its capacity per period: {})",
                        rate(hz),
                        rate(cap as f64 * 1e3 / ms as f64)
                    )
                })
                .collect();
            let fast_ceiling = m.at[m.at.len() - 1].3;
            let verdict = if m.at[0].3 {
                "the loop bound the search already at the longest period: the poll period cannot show here"
            } else if m.bound_by_wait() {
                // A ceiling on the fast side only makes the move larger.
                "it moved with the poll period: our reader's wait bounds it, not the tracer"
            } else if fast_ceiling {
                "the loop bound the search at the shorter period: how far it would move is hidden"
            } else if m.moved <= 1.0 / MOVED {
                "it fell with a shorter poll period: the reader's extra passes cost the tracer more than they drain"
            } else {
                "it did not move with the poll period: not our reader's wait"
            };
            format!(
                "{} at {} KiB, lossless rate by our reader's poll period: {}; ×{:.2} for a {:.0}× shorter period: {verdict}.",
                m.tracer,
                m.kb,
                each.join(", "),
                m.moved,
                m.shorter
            )
        })
        .collect()
}

/// The rate sustained: `930 k/s`, `≥ 6.10 M/s (the loop's limit under this tracer)`, or `-`
/// (files without a flood point).
fn sustained(s: &Search) -> Cell {
    match s.bound() {
        Some(Bound::Workload { hz }) => Cell::num(hz, ceiling(hz)),
        Some(b) => Cell::num(b.sustained_hz(), rate(b.sustained_hz())),
        None => Cell::missing(),
    }
}

/// What bounds `s` where its buffer seems to: our reader's wait where `r` measured that the
/// lossless rate moved with it (`--poll-ms`), with the size of the move; else the buffer.
fn buffer_words(s: &Search, r: &RateResult) -> String {
    let label = s.tracer.label(s.variant.as_deref());
    match poll_moves(r)
        .into_iter()
        .find(|m| m.tracer == label && m.kb == s.buffer_size_kb && m.bound_by_wait())
    {
        Some(m) => format!(
            "our reader's wait (the limit moved ×{:.2} with a {:.0}× shorter wait)",
            m.moved, m.shorter
        ),
        None => "the buffer".into(),
    }
}

/// What bounds it, in words.
fn bound(s: &Search, r: &RateResult) -> String {
    let held = |l: f64| crate::format::duration_s(s.capacity_events as f64 / l);
    match s.bound() {
        None => "-".into(),
        Some(Bound::Workload { .. }) => match s.flood().map(|f| f.lost_fraction()) {
            Some(l) if l > 0.0 => {
                let mut out = format!(
                    "the loop (its consumer kept up, {:.2}% lost in stalls)",
                    100.0 * l
                );
                if let (Some(_), Some(lossless)) = (buffer_share(s), s.max_lossless_hz) {
                    out.push_str(&format!(
                        "; lossless: {} (≤ {})",
                        buffer_words(s, r),
                        held(lossless)
                    ));
                }
                out
            }
            _ => "the loop (nothing lost)".into(),
        },
        Some(Bound::Consumer { .. }) => "the consumer (lossless near its drain)".into(),
        Some(Bound::Buffer { lossless_hz, .. }) => format!(
            "{} (≤ {} of events at the lossless rate)",
            buffer_words(s, r),
            held(lossless_hz)
        ),
    }
}

/// The lossless rate's share of the sustained one when the buffer bounds it: more than 10%
/// lower, after a flood that lost events (the consumer fell behind at times), and not where
/// the paced loop itself could fire no faster (a ceiling).
fn buffer_share(s: &Search) -> Option<f64> {
    let sustained = s.bound()?.sustained_hz();
    let lossless = s.max_lossless_hz?;
    (!s.ceiling
        && s.flood()?.events.lost > 0
        && lossless < rtrace_measure::rate::BUFFER_BOUND * sustained)
        .then(|| lossless / sustained)
}

/// What the flood point and the bound column show (results with a flood point).
const FLOOD_NOTE: &str = "A search first floods: the probe fired as fast as the loop can for at least {flood} and its buffer's turnovers; when that loses events, the events recorded per second of it are the consumer's drain rate (the consumer never waited: the buffer was full), the highest rate the tracer sustains (it counts the buffer's last contents, drained after the loop stopped: at most one capacity over the window); when it loses nothing (or under 5%: the consumer kept up but for a stall), the loop is the bound. Below the sustained rate, after a flood that lost events, the lossless rate is bound by the buffer when it is more than 10% lower: the consumer keeps up on average, but one stretch where it falls behind (a delay, a slower spell) outlasts what the buffer holds at higher rates (its capacity over the rate, an upper bound shown in the bound column), so the lossless rate depends on the buffer and on the window (a longer run meets a longer delay), the drain rate does not. Where the reader is ours (ftrace's stream reader, eBPF's ring reader) the delay is at least our reader's wait between drains: `rate --poll-ms` searches at several waits and says whether the limit moves with them";

/// What the table shows.
pub const NOTE: &str = "The workload fires its probe at a fixed rate (busy-waiting on the TSC) under each tracer and per-CPU buffer size, for the run's duration and on until the tracer's buffer turned over the times asked for (its capacity an upper bound: its bytes, with a reader's page or sub-buffer, over the smallest event, 16 bytes, LTTng's 12), so that a rate is one the tracer sustains, not a burst its buffer absorbed (Beamonte's rates are a steady state); the climb starts where that takes about a second (halving while the start loses events), the rate doubles until a run loses events, is bisected between the last lossless and the first lossy rate, then confirmed by three runs without a loss (a confirmation that loses events lowers the rate by 15% and starts again, up to 6 times) and runs at 1.5 times it, one of which (up to three) must lose events (near the limit a loss is chance both ways; when none loses, the search resumes above it, up to twice). Every run is accounted exactly (recorded + lost = hits). \"≥\": the loop could not fire faster under this tracer (a hit costs more than the period asked for), so the workload, not the tracer's buffer or consumer, bound the search.";

fn over_cell(s: &Search) -> String {
    let over = s.points.iter().rev().find(|p| p.phase == Phase::Over);
    // The runs at 1.5× after the last confirmation.
    let tries = s
        .points
        .iter()
        .rev()
        .take_while(|p| p.phase == Phase::Over)
        .count();
    match (s.over_lossy, over) {
        (Some(true), Some(p)) if tries > 1 => format!(
            "{:.2}% lost (run {tries} of up to {})",
            100.0 * p.lost_fraction(),
            rtrace_measure::rate::OVER_RUNS
        ),
        (Some(true), Some(p)) => format!("{:.2}% lost", 100.0 * p.lost_fraction()),
        (Some(false), Some(_)) => "0 lost (limit not crossed)".into(),
        _ => "- (loop ceiling)".into(),
    }
}

/// The summary table: a row per tracer and buffer size.
pub fn table(r: &RateResult) -> Table {
    // Files of older versions have no flood point: no sustained rate, no bound.
    let flooded = r.searches.iter().any(|s| s.flood().is_some());
    let rows = r
        .searches
        .iter()
        .map(|s| {
            let mut row = vec![
                Cell::text(label(s)),
                Cell::count_shown(s.buffer_size_kb, format!("{} KiB/CPU", s.buffer_size_kb)),
            ];
            if flooded {
                row.extend([sustained(s), Cell::text(bound(s, r))]);
            }
            row.extend([
                match s.max_lossless_hz {
                    Some(hz) if s.ceiling => Cell::num(hz, ceiling(hz)),
                    Some(hz) => Cell::num(hz, rate(hz)),
                    None => Cell::text(format!(
                        "< {} (lost down to the last rate tried)",
                        rate(
                            s.points
                                .iter()
                                .map(|p| p.rate_hz)
                                .fold(f64::INFINITY, f64::min)
                        )
                    )),
                },
                Cell::or_missing(s.max_lossless_hz, |_| {
                    Cell::text(if s.confirmed { "yes" } else { "NO" }).flag_if(!s.confirmed)
                }),
                Cell::text(over_cell(s)),
                Cell::text(steady(s)),
                Cell::count(s.points.len() as u64),
            ]);
            row
        })
        .collect();
    let mut cols = vec![Column::new("tracer"), Column::new("buffer").unit("KiB/CPU")];
    if flooded {
        cols.extend([
            Column::new("sustained rate").unit("events/s"),
            Column::new("bound"),
        ]);
    }
    cols.extend([
        Column::new("max lossless rate").unit("events/s"),
        Column::new("confirmed (3 runs, 0 lost)"),
        Column::new("at 1.5× that rate"),
        Column::new("confirmation runs"),
        Column::new("runs"),
    ]);
    Table::new("rates", 2, cols).rows(rows)
}

/// The confirmation runs' length: `0.27 s, 10.0 buffer-fulls` (the fewest of them).
fn steady(s: &Search) -> String {
    let confirms: Vec<_> = s
        .points
        .iter()
        .filter(|p| p.phase == Phase::Confirm)
        .collect();
    let Some(shortest) = confirms
        .iter()
        .min_by(|a, b| a.window_s().total_cmp(&b.window_s()))
    else {
        return "-".into();
    };
    let fulls = confirms
        .iter()
        .map(|p| p.events.hits as f64 / s.capacity_events.max(1) as f64)
        .fold(f64::INFINITY, f64::min);
    if s.capacity_events == 0 {
        return format!("{:.2} s", shortest.window_s());
    }
    format!("{:.2} s, {fulls:.1} buffer-fulls", shortest.window_s())
}

/// `CPU 1`, or `2 threads on CPUs 1, 0 (the rate split between them)`.
pub fn on(r: &RateResult) -> String {
    let cpus = &r.config.thread_cpus;
    if cpus.len() < 2 {
        return format!("CPU {}", r.config.run.cpu);
    }
    format!(
        "{} threads on CPUs {} (the rate split between them; CPUs other than {} are shared with the consumers)",
        cpus.len(),
        cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "),
        r.config.run.cpu
    )
}

/// The summary sentences.
pub fn summary(r: &RateResult) -> Vec<String> {
    let record = r.config.run.tracer_options["record"]
        .as_str()
        .unwrap_or("?");
    let mut out = Vec::new();
    let sustained: Vec<String> = r
        .searches
        .iter()
        .filter_map(|s| {
            let b = s.bound()?;
            let what = match b {
                Bound::Workload { hz } => ceiling(hz),
                b => format!("{} (its consumer's drain rate)", rate(b.sustained_hz())),
            };
            Some(format!("{} at {} KiB {what}", label(s), s.buffer_size_kb))
        })
        .collect();
    out.extend(listed(sustained, ", ", |l| {
        format!("Highest event rate sustained (flooded, {record}): {l}.")
    }));
    let list: Vec<String> = r
        .searches
        .iter()
        .filter_map(|s| {
            let hz = s.max_lossless_hz?;
            let by_buffer = buffer_share(s).map_or(String::new(), |share| {
                format!(
                    " (bound by {}: {:.0}% of the sustained rate)",
                    buffer_words(s, r),
                    100.0 * share
                )
            });
            Some(format!(
                "{} at {} KiB {}{by_buffer}",
                label(s),
                s.buffer_size_kb,
                if s.ceiling { ceiling(hz) } else { rate(hz) },
            ))
        })
        .collect();
    let window = window(r);
    out.extend(listed(list, ", ", |l| {
        format!("Highest event rate recorded without loss (runs of {window}, {record}): {l}.")
    }));
    out.extend(poll_sentences(r));
    out
}

/// Every point of every search: tracer, buffer, phase, rate asked, achieved, hits, recorded,
/// lost, lost %.
pub fn points(r: &RateResult) -> Table {
    let mut rows = Vec::new();
    for s in &r.searches {
        for p in &s.points {
            let lost = 100.0 * p.lost_fraction();
            rows.push(vec![
                Cell::text(label(s)),
                Cell::count_shown(s.buffer_size_kb, format!("{} KiB", s.buffer_size_kb)),
                Cell::text(format!("{:?}", p.phase).to_lowercase()),
                Cell::num(p.rate_hz, rate(p.rate_hz)),
                Cell::num(p.achieved_hz, rate(p.achieved_hz)),
                Cell::num(p.window_s(), format!("{:.2}", p.window_s())),
                Cell::count(p.events.hits),
                Cell::count(p.events.recorded),
                Cell::count(p.events.lost),
                Cell::num(lost, format!("{lost:.3}")),
            ]);
        }
    }
    let mut cols = vec![
        Column::new("tracer"),
        Column::new("buffer").unit("KiB/CPU"),
        Column::new("phase"),
        Column::new("asked").unit("events/s"),
        Column::new("achieved").unit("events/s"),
        Column::new("window").unit("s"),
    ];
    cols.extend(columns(&["hits", "recorded", "lost"]));
    cols.push(Column::new("lost").shown_unit("%"));
    Table::new("points", 3, cols).rows(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_measure::rate::{search, Point, RateSettings, SearchPlan};

    fn fixture() -> RateResult {
        let plan = SearchPlan::default();
        // The loop fires up to 900 k/s; the consumer drains 260 k/s, and runs above 250 k/s
        // lose events (a second's window).
        let f = search(&plan, |rate, phase| {
            let achieved = rate.min(900_000.0);
            let hits = achieved as u64;
            let lost = if rate > 250_000.0 {
                hits.saturating_sub(260_000)
            } else {
                0
            };
            Ok(Point {
                phase,
                rate_hz: rate,
                achieved_hz: achieved,
                late: 0,
                min_hits: 0,
                events: crate::fixtures::events(hits, lost),
            })
        })
        .unwrap();
        RateResult {
            header: rtrace_measure::Header {
                experiment: "rate".into(),
                tool_version: "0".into(),
                started_unix: 0,
                environment: rtrace_measure::Environment::collect(0),
            },
            config: RateSettings {
                duration_ms: 1000,
                turnovers: 10,
                run: rtrace_measure::RunSettings {
                    cpu: 1,
                    tracer_options: serde_json::json!({"record": "stream"}),
                    ..Default::default()
                },
                plan,
                thread_cpus: vec![1],
                buffer_sizes_kb: vec![256],
            },
            searches: vec![Search {
                tracer: rtrace_tracer::TracerKind::Ftrace,
                variant: None,
                buffer_size_kb: 256,
                poll_ms: None,
                buffer: "instance buffer_size_kb = 256 KiB per CPU".into(),
                capacity_events: 16_384,
                points: f.points,
                max_lossless_hz: f.max_lossless_hz,
                max_lossless_asked_hz: f.max_lossless_asked_hz,
                ceiling: f.ceiling,
                confirmed: f.confirmed,
                over_lossy: f.over_lossy,
                round: None,
            }],
            failed: Vec::new(),
        }
    }

    #[test]
    fn a_buffer_bound_is_our_readers_wait_only_where_that_was_measured() {
        let mut r = fixture();
        let base = r.searches[0].clone();
        assert_eq!(buffer_words(&base, &r), "the buffer");
        let at = |ms, hz| Search {
            poll_ms: Some(ms),
            max_lossless_hz: Some(hz),
            ..base.clone()
        };
        r.searches = vec![at(50, 100_000.0), at(5, 600_000.0)];
        assert_eq!(
            buffer_words(&r.searches[0], &r),
            "our reader's wait (the limit moved ×6.00 with a 10× shorter wait)"
        );
        r.searches = vec![at(50, 100_000.0), at(5, 104_000.0)];
        assert_eq!(buffer_words(&r.searches[0], &r), "the buffer");
    }

    #[test]
    fn a_limit_that_moves_with_our_readers_poll_is_said_to() {
        let mut r = fixture();
        let base = r.searches[0].clone();
        let at = |ms, hz| Search {
            poll_ms: Some(ms),
            max_lossless_hz: Some(hz),
            ..base.clone()
        };
        r.searches = vec![at(50, 100_000.0), at(5, 600_000.0)];
        let s = poll_sentences(&r);
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(
            s[0].starts_with("ftrace at 256 KiB, lossless rate by our reader's poll period: 100 k/s polled every 50 ms (its capacity per period: 328 k/s), 600 k/s polled every 5 ms"),
            "{}",
            s[0]
        );
        assert!(s[0].contains("×6.00 for a 10× shorter period: it moved with the poll period: our reader's wait bounds it"), "{}", s[0]);
        r.searches = vec![at(50, 100_000.0), at(5, 104_000.0)];
        assert!(poll_sentences(&r)[0].contains("did not move"));
        assert!(label(&r.searches[1]).ends_with(", polled every 5 ms"));
        // One period only: nothing to compare.
        r.searches.pop();
        assert!(poll_sentences(&r).is_empty());
    }

    #[test]
    fn the_table_says_the_limit_its_confirmation_and_the_loss_above_it() {
        let r = fixture();
        let rows = table(&r).rows;
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row[2].shown, "260 k/s", "the flood's drain rate");
        assert!(row[3].shown.starts_with("the consumer"), "{row:?}");
        assert_eq!(row[5].shown, "yes");
        assert!(
            row[6].shown.ends_with("% lost") && row[4].shown.ends_with("k/s"),
            "{row:?}"
        );
        let max = r.searches[0].max_lossless_hz.unwrap();
        assert_eq!(row[4].value, crate::doc::Value::Number(max));
        let summary = summary(&r);
        assert!(summary[0].contains("ftrace at 256 KiB 260 k/s (its consumer's drain rate)"));
        assert!(summary[1].contains("without loss") && summary[1].contains("ftrace at 256 KiB"));
        assert_eq!(points(&r).rows.len(), r.searches[0].points.len());
    }
}
