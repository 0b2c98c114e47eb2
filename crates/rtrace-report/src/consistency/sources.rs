//! The per-hit costs each kind of result holds: `usdt` and `usdt --decompose` (every traced run
//! that enters ratios), events 04–07 (per event, each workload), the sweep (each traced
//! configuration's median latency shift against `none`), npt (the mean gap of the iterations
//! that fired the probe minus the same with no tracer). `rate` records rates and losses, no time
//! per event: it has none.

use crate::cost::{writes, Cost, Experiment, Hook, Spacing, EMPTY_ACTION};
use crate::site;
use crate::sweep::shift;
use rtrace_measure::decompose::is_decomposition;
use rtrace_measure::events::{EventsResult, Workload};
use rtrace_measure::interval::mean_of;
use rtrace_measure::npt::NptResult;
use rtrace_measure::probe_cost::per_hit;
use rtrace_measure::settings::RunSettings;
use rtrace_measure::sweep::{Source, Space, SweepResult};
use rtrace_measure::usdt::{Case, HookKind, UsdtResult};
use rtrace_tracer::features::Feature;
use rtrace_tracer::TracerKind;

/// The site npt's runs fire: they record no hook, and every version of `rtrace-bench npt`
/// attached its tracers to the loop's USDT probe (LTTng: the tracepoint of that name).
const NPT_SITE: (HookKind, &str) = (HookKind::Usdt, "rtrace:event");

/// `uprobe:libc:read` → `libc:read`, `syscalls:sys_exit_clock_nanosleep` →
/// `sys_exit_clock_nanosleep`: the hook column says the kind.
fn site_name(hook: &str) -> String {
    let site = ["uprobe:", "uretprobe:", "tracepoint:"]
        .iter()
        .find_map(|kind| hook.strip_prefix(kind))
        .unwrap_or(hook);
    site.strip_prefix("syscalls:").unwrap_or(site).to_owned()
}

impl Cost {
    /// With the buffer and LTTng's recording mode of `run`, where the cost's mode writes.
    fn under(mut self, run: &RunSettings) -> Cost {
        if writes(self.tracer, self.mode.as_deref()) {
            self.buffer = run.buffers.get(self.tracer.name()).cloned();
            if self.tracer == TracerKind::Lttng {
                self.kept = run.tracer_options["record"].as_str().map(str::to_owned);
            }
        }
        self
    }
}

pub(crate) fn usdt(r: &UsdtResult) -> Vec<Cost> {
    let (experiment, source) = match (is_decomposition(r), r.config.spacing_us) {
        (true, _) => (Experiment::Decompose, "decompose"),
        (false, Some(_)) => (Experiment::Usdt, "usdt spaced"),
        (false, None) => (Experiment::Usdt, "usdt"),
    };
    // Sleeps before every hit: each finds the path cold, as after the sweep's wake-ups.
    let spacing = match r.config.spacing_us {
        Some(interval_us) => Spacing::AfterSleep {
            interval_us,
            every: 1,
        },
        None => Spacing::Hot,
    };
    let traced = r.runs.iter().filter(|c| c.case == Case::Traced);
    traced
        .filter(|c| r.in_ratios(c))
        .filter_map(|c| {
            let cost = Cost {
                experiment,
                source: source.into(),
                tracer: c.tracer,
                hook: Hook::User(c.hook_kind),
                mode: r.run_mode(c),
                site: c.hook.as_deref().map(site_name),
                class: site::of_usdt(r, c),
                ns: per_hit(r, c)?,
                spacing,
                buffer: None,
                kept: None,
                return_only: false,
            };
            Some(cost.under(&r.config.run))
        })
        .collect()
}

pub(crate) fn sweep(r: &SweepResult) -> Vec<Cost> {
    let alternate = r.config.probe_at == Some(rtrace_protocol::ProbeAt::Alternate);
    let mut shifts = shift::shifts(r, None);
    shifts.sort_by_key(|s| s.run.source);
    shifts
        .into_iter()
        .filter_map(|s| {
            let run = &s.run;
            let hook = match run.config.space() {
                Space::Kernel => Hook::Kernel,
                Space::User => Hook::User(shift::fired_hook(run.config, run.source)?),
                Space::None => return None,
            };
            let source = match run.source {
                Source::Builtin => "sweep".into(),
                Source::Cyclictest => format!("cyclictest ({})", run.config),
            };
            let cost = Cost {
                experiment: Experiment::Sweep,
                source,
                tracer: run.tracer,
                hook,
                mode: r.config.run.mode(run.tracer),
                site: run.hook.as_deref().map(site_name),
                class: site::of_sweep(r, run),
                // Paired within the run where it was measured (`--probe-at alternate`): the
                // tracer's background work weighs on both halves and is left out.
                ns: s.paired.or(s.p50)?,
                // The built-in loop's user-space probe fires on every other wake-up when
                // alternating; cyclictest's hooks and the kernel tracepoint on every one.
                spacing: Spacing::AfterSleep {
                    interval_us: r.config.interval_us,
                    every: if alternate
                        && run.source == Source::Builtin
                        && run.config.space() == Space::User
                    {
                        2
                    } else {
                        1
                    },
                },
                buffer: None,
                kept: None,
                return_only: run.source == Source::Cyclictest
                    && hook == Hook::User(HookKind::Uretprobe),
            };
            Some(cost.under(&r.config.run))
        })
        .collect()
}

/// The hook of events' experiments 04–07, the ones that measure a hook alone.
fn events_hook(f: Feature) -> Option<Hook> {
    match f {
        Feature::TracepointEntry | Feature::TracepointReturn => Some(Hook::Kernel),
        Feature::Uprobe => Some(Hook::User(HookKind::Uprobe)),
        Feature::Uretprobe => Some(Hook::User(HookKind::Uretprobe)),
        _ => None,
    }
}

pub(crate) fn events(r: &EventsResult) -> Vec<Cost> {
    r.cells
        .iter()
        .filter_map(|cell| {
            let mode = match cell.tracer {
                TracerKind::Ebpf | TracerKind::Bpftrace => Some(EMPTY_ACTION.to_owned()),
                t => r.config.run.mode(t),
            };
            let workload = match cell.workload {
                Workload::Loop => "loop",
                Workload::Dd => "dd",
            };
            let cost = Cost {
                experiment: Experiment::Events,
                source: format!("events {:02} {workload}", cell.feature.number()),
                tracer: cell.tracer,
                hook: events_hook(cell.feature)?,
                mode,
                site: Some(site_name(&cell.hook)),
                class: site::of_events(r, cell),
                ns: r.cost(cell)?.per_event_ns,
                spacing: Spacing::Hot,
                buffer: None,
                kept: None,
                return_only: false,
            };
            Some(cost.under(&r.config.run))
        })
        .collect()
}

/// Each tracer's mean gap of the iterations that fired the probe minus the same with no tracer
/// (the same loop and probe site): one value, its rounds pooled.
pub(crate) fn npt(r: &NptResult) -> Vec<Cost> {
    let untraced = r.runs.iter().find(|x| x.tracer == TracerKind::None);
    let Some(none) = untraced.and_then(|x| x.fired) else {
        return Vec::new();
    };
    let (hook, site) = NPT_SITE;
    r.runs
        .iter()
        .filter(|x| x.tracer != TracerKind::None)
        .filter_map(|x| {
            let cost = Cost {
                experiment: Experiment::Npt,
                source: "npt".into(),
                tracer: x.tracer,
                hook: Hook::User(hook),
                mode: x.variant.clone().or_else(|| r.config.run.mode(x.tracer)),
                site: Some(site.into()),
                class: site::of_npt(r, x),
                ns: mean_of(&[x.fired?.mean_ns - none.mean_ns], 0.0)?,
                spacing: match r.config.event_rate_hz {
                    Some(hz) => Spacing::Paced { hz },
                    None => Spacing::Hot,
                },
                buffer: None,
                kept: None,
                return_only: false,
            };
            Some(cost.under(&r.config.run))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_lose_the_kind_the_hook_column_says() {
        assert_eq!(site_name("uprobe:libc:read"), "libc:read");
        assert_eq!(
            site_name("uretprobe:rtrace_marker_hit"),
            "rtrace_marker_hit"
        );
        let kernel = "tracepoint:syscalls:sys_enter_read";
        assert_eq!(site_name(kernel), "sys_enter_read");
        assert_eq!(site_name("rtrace:event"), "rtrace:event");
    }

    #[test]
    fn ftrace_and_perf_runs_carry_the_record_mode() {
        use rtrace_measure::usdt::Case;
        let mut r = crate::fixtures::usdt();
        for t in [TracerKind::Ftrace, TracerKind::Perf] {
            r.runs.retain(|c| c.tracer != t);
            r.runs.push(crate::fixtures::case(t, Case::Traced, 600, 0));
        }
        let modes: Vec<(TracerKind, Option<String>)> =
            usdt(&r).into_iter().map(|c| (c.tracer, c.mode)).collect();
        let overwrite = Some("overwrite".to_owned());
        for t in [TracerKind::Ftrace, TracerKind::Perf] {
            assert!(modes.contains(&(t, overwrite.clone())), "{modes:?}");
        }
    }
}
