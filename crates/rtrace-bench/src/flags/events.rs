//! `events`' flags and their lowering into [`crate::events::Options`].

use super::common::{tracers, CommonArgs, TracerArg};
use crate::events::{parse_features, Options};
use crate::options::{check_nonzero, unique, OptionsError, Spec, Take, DEFAULT_BUFFER_KB};
use clap::{Args, ValueEnum};
use rtrace_measure::events::Workload;

pub const SPEC: Spec = Spec {
    experiment: "events",
    rounds: Take::Default(5),
    priority: None,
    record: Take::Refused(
        "each experiment runs its program as published: the one-liners keep maps or print, ftrace's events go to an overwriting instance buffer (Gregg's method)",
    ),
    buffer_size_kb: Take::Default(DEFAULT_BUFFER_KB),
    strace: true,
    add_ftrace: "add ftrace to --tracer",
};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    Loop,
    Dd,
}

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Tracers (comma separated): bpftrace (Gregg's one-liners), ebpf (our programs, same
    /// semantics), ftrace (events, filters, hist triggers), lttng (kernel tracer: needs
    /// lttng-modules), strace (`strace -f -o /dev/null -p PID`: 04 and 05 only, about 100 times
    /// a kernel tracer's cost: not in `all`); `all`: every other one, those that cannot run here
    /// listed with the reason.
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub tracer: Vec<TracerArg>,
    /// Experiments by Gregg's number (comma separated, ranges allowed: 1,4-7,15).
    #[arg(long, short, value_delimiter = ',', default_value = "1-18")]
    pub experiments: Vec<String>,
    /// 1-byte reads per run (the events of each experiment; Gregg's dd made 10,000,000).
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    pub reads: u64,
    /// What makes the reads (comma separated): `loop`, our pinned loop of read(2) calls timed
    /// on the TSC (the tighter number); `dd`, Gregg's `dd if=/dev/zero of=/dev/null bs=1`
    /// timed from its start to its exit (his and Piotrowski's workload).
    #[arg(
        long,
        short,
        value_enum,
        value_delimiter = ',',
        default_value = "loop,dd"
    )]
    pub workload: Vec<WorkloadArg>,
    #[command(flatten)]
    pub common: CommonArgs,
}

impl EventsArgs {
    pub fn lower(self) -> Result<Options, OptionsError> {
        check_nonzero(self.reads, "reads")?;
        let tracers = tracers(&self.tracer);
        if tracers.is_empty() {
            return Err(OptionsError::Other("--tracer none measures nothing here: name a tracer, e.g. --tracer bpftrace,ebpf (the untraced runs are always made)".into()));
        }
        let common = self.common.lower(&SPEC, Default::default(), &tracers)?;
        Ok(Options {
            common,
            tracers,
            features: parse_features(&self.experiments)
                .map_err(|e| OptionsError::Other(e.to_string()))?,
            workloads: unique(self.workload.iter().map(|w| match w {
                WorkloadArg::Loop => Workload::Loop,
                WorkloadArg::Dd => Workload::Dd,
            })),
            reads: self.reads,
        })
    }
}
