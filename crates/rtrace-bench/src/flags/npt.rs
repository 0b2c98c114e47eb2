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
    /// Cap the probe at this many firings per second (0: never fires); by default it fires in
    /// every iteration at the loop's full speed, as Beamonte ran npt.
    #[arg(long, value_name = "HZ")]
    pub event_rate: Option<f64>,
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
            .is_some_and(|hz| !(hz.is_finite() && hz >= 0.0))
        {
            return Err(OptionsError::Other(
                "--event-rate must be 0 (no events) or a positive rate, e.g. --event-rate 10000 (leave it out: every iteration)"
                    .into(),
            ));
        }
        // The run without a tracer is the baseline of every other: always first.
        let mut tracers = vec![TracerKind::None];
        tracers.extend(super::common::tracers(&self.tracer));
        let common = self.common.lower(&SPEC, self.tracer_args)?;
        let uses_ftrace = tracers.contains(&TracerKind::Ftrace);
        let fix = "add ftrace to --tracer";
        common
            .tracer
            .check_ftrace_clock(SPEC.experiment, uses_ftrace, fix)?;
        Ok(Options {
            common,
            tracers,
            duration_ms: self.duration_ms,
            event_rate_hz: self.event_rate,
        })
    }
}
