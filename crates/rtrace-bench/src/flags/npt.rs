//! `npt`'s flags and their lowering into [`crate::npt::Options`].

use super::common::{CommonArgs, TracerArg, TracerArgs};
use crate::npt::Options;
use crate::options::{check_nonzero, OptionsError, Spec, Take, DEFAULT_BUFFER_KB};
use clap::Args;
use rtrace_tracer::{RecordMode, TracerKind};

pub const SPEC: Spec = Spec {
    experiment: "npt",
    rounds: Take::Default(1),
    priority: None,
    record: Take::Default(RecordMode::Stream),
    buffer_size_kb: Take::Default(DEFAULT_BUFFER_KB),
    strace: false,
    add_ftrace: "add ftrace to --tracer",
};

#[derive(Args, Debug)]
pub struct NptArgs {
    /// Tracers that consume the loop's events, each in its own run after the run with no tracer
    /// (comma separated; `all`: every tracer available here).
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub tracer: Vec<TracerArg>,
    /// How long each run's loop spins (ms).
    #[arg(long, default_value_t = 5000)]
    pub duration_ms: u64,
    /// Cap the probe at this many firings per second (more than 0); by default it fires in
    /// every iteration at the loop's full speed, as Beamonte ran npt.
    #[arg(long, value_name = "HZ")]
    pub event_rate: Option<f64>,
    /// LTTng also records these kernel events (comma separated, e.g.
    /// `sched_switch,irq_handler_entry,irq_handler_exit,irq_softirq_entry,irq_softirq_exit,timer_hrtimer_expire_entry`:
    /// LTTng's names)
    /// in a kernel channel of the same session, as Beamonte traced user space and the kernel
    /// together: what the kernel did on the measured CPU at the largest gaps. Needs lttng in
    /// --tracer, stream mode, root and the lttng-modules kernel modules.
    #[arg(long, value_name = "EVENTS", value_delimiter = ',')]
    pub lttng_kernel: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
}

impl NptArgs {
    pub fn lower(self) -> Result<Options, OptionsError> {
        check_nonzero(self.duration_ms, "duration-ms")?;
        if self
            .event_rate
            .is_some_and(|hz| !(hz.is_finite() && hz > 0.0))
        {
            // 0 would measure a loop with no probe: npt's subject is the probe.
            return Err(OptionsError::Other(
                "--event-rate must be a positive rate, e.g. --event-rate 10000 (leave it out: every iteration)"
                    .into(),
            ));
        }
        // The run without a tracer is the baseline of every other: always first.
        let mut tracers = vec![TracerKind::None];
        tracers.extend(super::common::tracers(&self.tracer));
        let mut common = self.common.lower(&SPEC, self.tracer_args, &tracers)?;
        check_lttng_kernel(&self.lttng_kernel, &tracers, common.tracer.record, || {
            rtrace_tracer::require_root("LTTng kernel tracing")?;
            rtrace_lttng::kernel_modules_available()
        })?;
        common.tracer.lttng_kernel = self.lttng_kernel;
        Ok(Options {
            common,
            tracers,
            duration_ms: self.duration_ms,
            event_rate_hz: self.event_rate,
        })
    }
}

/// `--lttng-kernel EVENTS`, refused before anything runs where it cannot work: no LTTng run to
/// add the kernel channel to, overwrite mode (the kernel channel is streamed), odd event names,
/// or no LTTng kernel tracing here (`modules`: root and the lttng-modules kernel modules).
fn check_lttng_kernel(
    events: &[String],
    tracers: &[TracerKind],
    record: RecordMode,
    modules: impl FnOnce() -> anyhow::Result<()>,
) -> Result<(), OptionsError> {
    if events.is_empty() {
        return Ok(());
    }
    let refuse = |why: String| Err(OptionsError::Other(format!("--lttng-kernel: {why}")));
    if !tracers.contains(&TracerKind::Lttng) {
        return refuse("it adds a kernel channel to LTTng's session, and LTTng is not among the tracers: add lttng to --tracer".into());
    }
    if record == RecordMode::Overwrite {
        return refuse(
            "the kernel channel is recorded in stream mode only: drop --record overwrite".into(),
        );
    }
    if let Err(e) = rtrace_lttng::kernel::validate_events(events) {
        return refuse(format!("{e:#}"));
    }
    match modules() {
        Ok(()) => Ok(()),
        Err(e) => refuse(format!("{e:#}; or run npt without --lttng-kernel")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lttng_kernel_is_refused_up_front_where_it_cannot_work() {
        let ev = |s: &str| s.split(',').map(str::to_owned).collect::<Vec<_>>();
        let lttng = [TracerKind::None, TracerKind::Lttng];
        let fine = || Ok(());
        let (stream, overwrite) = (RecordMode::Stream, RecordMode::Overwrite);
        assert!(check_lttng_kernel(&[], &[TracerKind::None], stream, || unreachable!()).is_ok());
        assert!(
            check_lttng_kernel(&ev("sched_switch,irq_handler_entry"), &lttng, stream, fine).is_ok()
        );
        let msg = |r: Result<(), OptionsError>| r.unwrap_err().to_string();
        let no_lttng = msg(check_lttng_kernel(
            &ev("sched_switch"),
            &[TracerKind::None, TracerKind::Ftrace],
            stream,
            fine,
        ));
        assert!(no_lttng.contains("add lttng to --tracer"), "{no_lttng}");
        let ow = msg(check_lttng_kernel(
            &ev("sched_switch"),
            &lttng,
            overwrite,
            fine,
        ));
        assert!(ow.contains("stream mode"), "{ow}");
        let odd = msg(check_lttng_kernel(
            &ev("sched_switch;x"),
            &lttng,
            stream,
            fine,
        ));
        assert!(odd.contains("sched_switch;x"), "{odd}");
        let no_modules = msg(check_lttng_kernel(
            &ev("sched_switch"),
            &lttng,
            stream,
            || {
                anyhow::bail!("LTTng kernel tracing unavailable: the lttng-modules kernel modules are not loaded")
            },
        ));
        assert!(
            no_modules.starts_with("--lttng-kernel: LTTng kernel tracing unavailable"),
            "{no_modules}"
        );
        assert!(!no_modules.contains('\n'), "one line: {no_modules}");
    }

    #[test]
    fn an_event_rate_of_zero_or_less_is_refused() {
        for rate in ["0", "0.0", "NaN", "inf"] {
            let args = ["npt", "--tracer", "ftrace", "--event-rate", rate];
            let Ok(crate::flags::Command::Npt(a)) = crate::flags::tests::parse(&args) else {
                panic!("npt's flags do not parse");
            };
            let err = a.lower().unwrap_err().to_string();
            assert!(
                err.starts_with("--event-rate must be a positive rate"),
                "{rate}: {err}"
            );
        }
    }

    #[test]
    fn lttng_kernel_without_lttng_is_refused_when_lowered() {
        let args = [
            "npt",
            "--tracer",
            "ftrace",
            "--lttng-kernel",
            "sched_switch",
        ];
        let Ok(crate::flags::Command::Npt(a)) = crate::flags::tests::parse(&args) else {
            panic!("npt's flags do not parse");
        };
        let err = a.lower().unwrap_err().to_string();
        assert!(err.contains("add lttng to --tracer"), "{err}");
    }
}
