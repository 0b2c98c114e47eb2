//! `rate`'s flags and their lowering into [`crate::rate::Options`].

use super::common::{tracers, CommonArgs, TracerArg, TracerArgs};
use crate::options::{check_nonzero, check_threads, OptionsError, Spec, Take, DEFAULT_BUFFER_KB};
use crate::rate::Options;
use clap::Args;
use rtrace_measure::rate::SearchPlan;
use rtrace_tracer::{RecordMode, TracerKind};

pub const SPEC: Spec = Spec {
    experiment: "rate",
    rounds: Take::Default(1),
    priority: None,
    record: Take::Default(RecordMode::Stream),
    buffer_size_kb: Take::Default(DEFAULT_BUFFER_KB),
    strace: false,
    add_ftrace: "add ftrace to --tracer",
};

/// Buffer sizes searched without `--buffer-sizes-kb` or `--buffer-size-kb`.
const DEFAULT_SIZES_KB: [u64; 2] = [256, 4096];

#[derive(Args, Debug)]
pub struct RateArgs {
    /// Tracers to search (comma separated; `all`: every tracer available here).
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub tracer: Vec<TracerArg>,
    /// Per-CPU buffer sizes to search at (KiB, comma separated), each its own search; default
    /// 256,4096, or the one size of --buffer-size-kb.
    #[arg(long, value_delimiter = ',', conflicts_with = "buffer_size_kb")]
    pub buffer_sizes_kb: Vec<u64>,
    /// How long the probe fires at each rate at least (ms).
    #[arg(long, default_value_t = 1000)]
    pub duration_ms: u64,
    /// Buffer-fulls of events each point fires at least, past --duration-ms (a steady state:
    /// a buffer that only absorbs a burst does not make a sustained rate); 0: the window alone.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub turnovers: u32,
    /// First rate of the climb (events/s); it doubles until events are lost (halves first
    /// while the start loses). Default: where a point's turnovers take a second, at least
    /// 10,000/s.
    #[arg(long)]
    pub start_rate: Option<f64>,
    /// Highest rate tried (events/s).
    #[arg(long, default_value_t = 50_000_000.0)]
    pub max_rate: f64,
    /// Bisection steps between the last lossless and the first lossy rate.
    #[arg(long, default_value_t = 5)]
    pub bisections: u32,
    /// How long the first point of every search floods (the probe fired as fast as the loop
    /// can) at least (ms): what its consumer records per second of it is its drain rate, the
    /// highest rate it sustains; 0: no flood point.
    #[arg(long, default_value_t = 5_000, value_name = "MS")]
    pub flood_ms: u64,
    /// Threads firing the probe, each on its own CPU (the measured CPU, then harness CPUs from
    /// the last), the rate split evenly between them: past one thread's ceiling, and onto the
    /// consumers' CPU.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// Our consumers' wait between drains (ms, comma separated), each its own search at every
    /// buffer size: whether the limit found moves with it (then our reader bounds it, not the
    /// tracer). Default: their own (ftrace's reader 5 ms after a pass that found data, 20 ms
    /// after one that found none; eBPF's 50 ms, at once again while the ring fills). Only
    /// ftrace and eBPF, whose readers are ours.
    #[arg(long, value_delimiter = ',', value_name = "MS")]
    pub poll_ms: Vec<u64>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
}

impl RateArgs {
    pub fn lower(self) -> Result<Options, OptionsError> {
        check_nonzero(self.duration_ms, "duration-ms")?;
        if self.buffer_sizes_kb.contains(&0) {
            return Err(OptionsError::Buffer);
        }
        let start_rate = self.start_rate.unwrap_or(10_000.0);
        if !(start_rate > 0.0 && self.max_rate >= start_rate) {
            return Err(OptionsError::Other(
                "--start-rate must be positive and at most --max-rate".into(),
            ));
        }
        let one_size = self.common.buffer.buffer_size_kb;
        let tracers = tracers(&self.tracer);
        let common = self.common.lower(&SPEC, self.tracer_args, &tracers)?;
        if common.tracer.record == RecordMode::Overwrite {
            // A flight recorder overwrites instead of losing: no rate is its lossless limit.
            return Err(OptionsError::Other(
                "rate searches the highest rate a tracer records without losing an event, which a flight recorder (--record overwrite) never does: leave --record out (stream)".into(),
            ));
        }
        if tracers.is_empty() {
            return Err(OptionsError::Other(
                "--tracer names no tracer: pick ftrace, ebpf, lttng, bpftrace or all".into(),
            ));
        }
        check_threads(&common.cpus, self.threads)?;
        if self.poll_ms.contains(&0) {
            return Err(OptionsError::Zero { what: "poll-ms" });
        }
        if let Some(t) = tracers.iter().find(|t| {
            !self.poll_ms.is_empty() && !matches!(t, TracerKind::Ftrace | TracerKind::Ebpf)
        }) {
            return Err(OptionsError::Other(format!(
                "--poll-ms sets the wait of our own readers, and {t} is read by its own tool: pass --tracer ftrace,ebpf"
            )));
        }
        Ok(Options {
            buffer_sizes_kb: match (one_size, self.buffer_sizes_kb.is_empty()) {
                (Some(kb), _) => vec![kb],
                (None, true) => DEFAULT_SIZES_KB.to_vec(),
                (None, false) => crate::options::unique(self.buffer_sizes_kb),
            },
            polls_ms: match self.poll_ms.is_empty() {
                true => vec![None],
                false => crate::options::unique(self.poll_ms)
                    .into_iter()
                    .map(Some)
                    .collect(),
            },
            common,
            tracers,
            duration_ms: self.duration_ms,
            turnovers: self.turnovers,
            start_given: self.start_rate.is_some(),
            plan: SearchPlan {
                start_hz: start_rate,
                max_hz: self.max_rate,
                bisections: self.bisections,
                flood_ms: self.flood_ms,
                ..SearchPlan::default()
            },
            threads: self.threads,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::flags::{tests::parse, Command};
    use crate::options::OptionsError;

    fn rate(args: &[&str]) -> Result<crate::rate::Options, OptionsError> {
        match parse(&[&["rate"], args].concat()).unwrap() {
            Command::Rate(a) => a.lower(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn buffer_size_kb_is_the_one_size_searched() {
        assert_eq!(rate(&[]).unwrap().buffer_sizes_kb, [256, 4096]);
        let o = rate(&["--buffer-size-kb", "256"]).unwrap();
        assert_eq!(o.buffer_sizes_kb, [256]);
        assert_eq!(o.common.tracer.buffer_size_kb, Some(256));
        let sizes = rate(&["--buffer-sizes-kb", "16,32,16"])
            .unwrap()
            .buffer_sizes_kb;
        assert_eq!(sizes, [16, 32]);
        assert!(parse(&["rate", "--buffer-sizes-kb", "16", "--buffer-size-kb", "8"]).is_err());
        let zero = rate(&["--buffer-sizes-kb", "0"]).unwrap_err();
        assert_eq!(zero, OptionsError::Buffer);
        assert!(rate(&["-t", "none"]).is_err(), "no tracer to search");
        let e = rate(&["--record", "overwrite"]).unwrap_err().to_string();
        assert!(e.contains("leave --record out"), "{e}");
        assert!(rate(&["--record", "stream"]).is_ok());
        // Our readers' poll periods, each a search of its own; refused for the others.
        assert_eq!(rate(&[]).unwrap().polls_ms, [None]);
        let o = rate(&["-t", "ftrace,ebpf", "--poll-ms", "50,5,50"]).unwrap();
        assert_eq!(o.polls_ms, [Some(50), Some(5)]);
        let e = rate(&["-t", "lttng", "--poll-ms", "5"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("pass --tracer ftrace,ebpf"), "{e}");
        assert!(rate(&["-t", "ftrace", "--poll-ms", "0"]).is_err());
        assert_eq!(rate(&["--rounds", "2"]).unwrap().common.rounds, 2);
    }
}
