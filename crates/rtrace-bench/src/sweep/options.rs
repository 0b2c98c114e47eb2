//! `cyclictest-sweep` command line (mirroring the thesis' cyclictest command) and its typed,
//! validated options. Every rejection is one line naming the fix; nothing on the machine has been
//! touched when it happens.

use crate::cli::{KeepTracesArg, TracerArgs};
use crate::cpus::Cpus;
use crate::options::{default_out, default_workload_dir, OptionsError, TracerOptions};
use clap::{Args, ValueEnum};
use rtrace_measure::sweep::{Configuration, Space};
use rtrace_measure::usdt::HookKind;
use rtrace_protocol::ProbeAt;
use std::path::PathBuf;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigArg {
    /// No tracer.
    None,
    UsdtFtrace,
    UsdtEbpf,
    UsdtBpftrace,
    UsdtLttng,
    UprobeFtrace,
    UprobeEbpf,
    UprobeBpftrace,
    UretprobeFtrace,
    UretprobeEbpf,
    UretprobeBpftrace,
    KernelFtrace,
    KernelEbpf,
    KernelLttng,
    /// Every usdt-* configuration.
    Usdt,
    /// Every uprobe-* and uretprobe-* configuration (the marker function's entry or return).
    Dynamic,
    /// Every kernel-* configuration.
    Kernel,
    /// Every configuration (those unavailable here are reported with the reason).
    All,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeAtArg {
    Window,
    After,
    Alternate,
}

impl From<ProbeAtArg> for ProbeAt {
    fn from(a: ProbeAtArg) -> ProbeAt {
        match a {
            ProbeAtArg::Window => ProbeAt::Window,
            ProbeAtArg::After => ProbeAt::After,
            ProbeAtArg::Alternate => ProbeAt::Alternate,
        }
    }
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Period of the measuring thread in µs (cyclictest --interval; the thesis used 30).
    #[arg(long, value_name = "US", default_value_t = 30)]
    pub interval_us: u64,
    /// Wake-ups per configuration (cyclictest --loops; the thesis used 10,000,000).
    #[arg(long, short = 'l', default_value_t = 100_000)]
    pub loops: u64,
    /// CPU of the measuring thread (cyclictest --affinity; default: the last CPU).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// CPU of the main thread (cyclictest --mainaffinity; default: the first other CPU).
    #[arg(long)]
    pub main_cpu: Option<usize>,
    /// SCHED_FIFO priority of the measuring thread (cyclictest --priority).
    #[arg(long, default_value_t = 99)]
    pub priority: i32,
    /// Configurations to run, comma separated (none, usdt-ftrace, usdt-ebpf, usdt-bpftrace,
    /// usdt-lttng, uprobe-ftrace, uprobe-ebpf, uprobe-bpftrace, uretprobe-ftrace,
    /// uretprobe-ebpf, uretprobe-bpftrace, kernel-ftrace, kernel-ebpf, kernel-lttng; groups:
    /// usdt, dynamic, kernel, all).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub configs: Vec<ConfigArg>,
    /// Where the built-in loop fires its user-space tracepoint: `window`, between the wake-up
    /// and the clock reading, so its cost is part of the latency (the thesis' modified
    /// cyclictest); `after`, once the latency is taken (its cost is never measured);
    /// `alternate`, as `window` on every other wake-up, the others kept apart, so that each
    /// run's shift is paired within the run (a VM whose latency state changes from second to
    /// second moves both halves alike).
    #[arg(long, value_enum, default_value = "window")]
    pub probe_at: ProbeAtArg,
    /// Repeat every configuration this often, each round separate processes, alternating the
    /// order (A B C, C B A, ...) so that a drift of the machine weighs on every configuration
    /// alike; the loops are split across rounds, each configuration pools its rounds, and the
    /// latency shifts against `none` get 95% intervals over the rounds (one round: none).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Run the configurations in a random order (cancels drift); the seed is saved.
    #[arg(long)]
    pub shuffle: bool,
    /// Seed of --shuffle (default: from the clock), to repeat an order.
    #[arg(long, requires = "shuffle")]
    pub seed: Option<u64>,
    /// Histogram bound in µs: samples above it count as overflows (cyclictest --histogram). Up
    /// to 1000 µs cyclictest uses 1-ns buckets (--nsecs), above that 1-µs buckets: it keeps at
    /// most 1,000,000 buckets (so the thesis' `--nsecs --histogram=10000000` tracked 1000 µs).
    #[arg(long, value_name = "US", default_value_t = 1000)]
    pub histogram_us: u64,
    /// The rt-tests cyclictest of the cross-check (default: `cyclictest` on PATH).
    #[arg(long, value_name = "PATH", conflicts_with = "no_cyclictest")]
    pub cyclictest: Option<PathBuf>,
    /// Skip the cross-check with rt-tests' cyclictest.
    #[arg(long)]
    pub no_cyclictest: bool,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
    /// Which runs keep their trace data once its events are counted (its size is always in
    /// the result and the report).
    #[arg(long, value_enum, default_value = "none")]
    pub keep_traces: KeepTracesArg,
    /// Write the JSON result here too.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for results, raw cyclictest files and trace data
    /// (default: results/cyclictest-sweep-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Directory holding the workload binaries (default: next to rtrace-bench).
    #[arg(long, value_name = "DIR")]
    pub workload_dir: Option<PathBuf>,
}

/// cyclictest's HIST_MAX: it silently caps `--histogram` at this many buckets.
pub const MAX_BUCKETS: u64 = 1_000_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SweepOptionsError {
    #[error(transparent)]
    Cpus(#[from] OptionsError),
    #[error("--interval-us {0} is out of range: use 1..=1000000")]
    Interval(u64),
    #[error("--loops must be at least 1")]
    Loops,
    #[error("--rounds {rounds} is out of range: use 1..={loops} (at least one loop per round)")]
    Rounds { rounds: u32, loops: u64 },
    #[error("--priority {0} is not a SCHED_FIFO priority: use 1..99")]
    Priority(i32),
    #[error("--histogram-us {0} is out of range: use 1..=1000000 (cyclictest keeps at most 1,000,000 buckets)")]
    Histogram(u64),
    #[error("--main-cpu {cpu} is not usable here: this process may use CPUs {usable}")]
    MainCpuNotUsable { cpu: usize, usable: String },
    #[error("--main-cpu {0} is the measured CPU: give the main thread another CPU")]
    SameCpu(usize),
}

/// Whether and which cyclictest runs as cross-check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CyclictestChoice {
    Off,
    /// `cyclictest` on PATH.
    OnPath,
    At(PathBuf),
}

#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// In run order (shuffled with `shuffle_seed` if set).
    pub configs: Vec<Configuration>,
    pub shuffle_seed: Option<u64>,
    pub interval_us: u64,
    /// Wake-ups per configuration, split across `rounds`.
    pub loops: u64,
    pub rounds: u32,
    pub cpus: Cpus,
    pub main_cpu: usize,
    /// `--main-cpu`, if given.
    pub main_cpu_requested: Option<usize>,
    pub priority: i32,
    pub histogram_us: u64,
    /// Where the built-in loop's user-space tracepoint fires.
    pub probe_at: ProbeAt,
    /// `--keep-traces`.
    pub keep_traces: rtrace_measure::trace_data::KeepTraces,
    pub cyclictest: CyclictestChoice,
    pub tracer: TracerOptions,
    pub json: Option<PathBuf>,
    pub out: PathBuf,
    /// Whether `--out` gave `out` (else it is the default, created exclusively).
    pub out_given: bool,
    pub workload_dir: PathBuf,
}

/// The configurations asked for, deduplicated, in the canonical order.
fn configurations(args: &[ConfigArg]) -> Vec<Configuration> {
    let mut out: Vec<Configuration> = Configuration::ALL
        .into_iter()
        .filter(|c| {
            args.iter().any(|a| match a {
                ConfigArg::All => true,
                ConfigArg::Usdt => c.hook_kind() == Some(HookKind::Usdt),
                ConfigArg::Dynamic => {
                    matches!(c.hook_kind(), Some(HookKind::Uprobe | HookKind::Uretprobe))
                }
                ConfigArg::Kernel => c.space() == Space::Kernel,
                one => single(*one) == Some(*c),
            })
        })
        .collect();
    out.dedup();
    out
}

fn single(a: ConfigArg) -> Option<Configuration> {
    Some(match a {
        ConfigArg::None => Configuration::None,
        ConfigArg::UsdtFtrace => Configuration::UsdtFtrace,
        ConfigArg::UsdtEbpf => Configuration::UsdtEbpf,
        ConfigArg::UsdtBpftrace => Configuration::UsdtBpftrace,
        ConfigArg::UsdtLttng => Configuration::UsdtLttng,
        ConfigArg::UprobeFtrace => Configuration::UprobeFtrace,
        ConfigArg::UprobeEbpf => Configuration::UprobeEbpf,
        ConfigArg::UprobeBpftrace => Configuration::UprobeBpftrace,
        ConfigArg::UretprobeFtrace => Configuration::UretprobeFtrace,
        ConfigArg::UretprobeEbpf => Configuration::UretprobeEbpf,
        ConfigArg::UretprobeBpftrace => Configuration::UretprobeBpftrace,
        ConfigArg::KernelFtrace => Configuration::KernelFtrace,
        ConfigArg::KernelEbpf => Configuration::KernelEbpf,
        ConfigArg::KernelLttng => Configuration::KernelLttng,
        ConfigArg::Usdt | ConfigArg::Dynamic | ConfigArg::Kernel | ConfigArg::All => return None,
    })
}

/// Fisher–Yates with SplitMix64: the same seed always gives the same order.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

impl SweepOptions {
    pub fn from_args(a: SweepArgs, usable: &[usize]) -> Result<SweepOptions, SweepOptionsError> {
        if !(1..=1_000_000).contains(&a.interval_us) {
            return Err(SweepOptionsError::Interval(a.interval_us));
        }
        if a.loops == 0 {
            return Err(SweepOptionsError::Loops);
        }
        if a.rounds == 0 || u64::from(a.rounds) > a.loops {
            return Err(SweepOptionsError::Rounds {
                rounds: a.rounds,
                loops: a.loops,
            });
        }
        if !(1..=99).contains(&a.priority) {
            return Err(SweepOptionsError::Priority(a.priority));
        }
        if !(1..=MAX_BUCKETS).contains(&a.histogram_us) {
            return Err(SweepOptionsError::Histogram(a.histogram_us));
        }
        let cpus = Cpus::choose(a.cpu, usable, &[], crate::cpus::smt_siblings)?;
        let main_cpu = main_cpu(a.main_cpu, &cpus, usable)?;
        let mut configs = configurations(&a.configs);
        let shuffle_seed = a.shuffle.then(|| {
            a.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            })
        });
        if let Some(seed) = shuffle_seed {
            shuffle(&mut configs, seed);
        }
        let cyclictest = match (a.no_cyclictest, a.cyclictest) {
            (true, _) => CyclictestChoice::Off,
            (false, Some(p)) => CyclictestChoice::At(p),
            (false, None) => CyclictestChoice::OnPath,
        };
        Ok(SweepOptions {
            configs,
            shuffle_seed,
            interval_us: a.interval_us,
            loops: a.loops,
            rounds: a.rounds,
            cpus,
            main_cpu,
            main_cpu_requested: a.main_cpu,
            priority: a.priority,
            histogram_us: a.histogram_us,
            probe_at: a.probe_at.into(),
            keep_traces: a.keep_traces.into(),
            cyclictest,
            tracer: a.tracer_args.into(),
            json: a.json,
            out_given: a.out.is_some(),
            out: a.out.unwrap_or_else(|| default_out("cyclictest-sweep")),
            workload_dir: a.workload_dir.unwrap_or_else(default_workload_dir),
        })
    }
}

impl TryFrom<SweepArgs> for SweepOptions {
    type Error = SweepOptionsError;

    fn try_from(a: SweepArgs) -> Result<Self, SweepOptionsError> {
        SweepOptions::from_args(a, &crate::cpus::usable())
    }
}

/// The CPU of cyclictest's main thread: `requested`, else the first harness CPU; never the
/// measured one.
pub fn main_cpu(
    requested: Option<usize>,
    cpus: &Cpus,
    usable: &[usize],
) -> Result<usize, SweepOptionsError> {
    let main = requested.unwrap_or(cpus.harness[0]);
    if !usable.contains(&main) {
        return Err(SweepOptionsError::MainCpuNotUsable {
            cpu: main,
            usable: crate::cpus::list(usable),
        });
    }
    if main == cpus.measured {
        return Err(SweepOptionsError::SameCpu(main));
    }
    Ok(main)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str], online: usize) -> Result<SweepOptions, SweepOptionsError> {
        let mut v = vec!["rtrace-bench", "cyclictest-sweep"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).unwrap().command {
            Command::CyclictestSweep(a) => {
                SweepOptions::from_args(a, &(0..online).collect::<Vec<_>>())
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults_mirror_the_thesis_command() {
        let o = parse(&[], 2).unwrap();
        assert_eq!(o.interval_us, 30);
        assert_eq!(o.loops, 100_000);
        assert_eq!(o.priority, 99);
        assert_eq!(o.histogram_us, 1000);
        assert_eq!((o.cpus.measured, o.main_cpu), (1, 0));
        assert_eq!(o.configs, Configuration::ALL.to_vec());
        assert_eq!(o.shuffle_seed, None);
        assert_eq!(o.cyclictest, CyclictestChoice::OnPath);
    }

    #[test]
    fn configs_are_selected_by_name_and_group_without_duplicates() {
        let o = parse(&["--configs", "kernel,none,kernel-ftrace"], 2).unwrap();
        assert_eq!(
            o.configs,
            vec![
                Configuration::None,
                Configuration::KernelFtrace,
                Configuration::KernelEbpf,
                Configuration::KernelLttng
            ]
        );
        let o = parse(&["--configs", "usdt-lttng", "--configs", "none"], 2).unwrap();
        assert_eq!(
            o.configs,
            vec![Configuration::None, Configuration::UsdtLttng]
        );
        let bad = vec![
            "rtrace-bench",
            "cyclictest-sweep",
            "--configs",
            "usdt-dtrace",
        ];
        assert!(Cli::try_parse_from(bad).is_err());
    }

    #[test]
    fn bad_values_name_the_fix() {
        let e = |args: &[&str]| parse(args, 4).unwrap_err();
        assert_eq!(e(&["--interval-us", "0"]), SweepOptionsError::Interval(0));
        assert_eq!(e(&["--loops", "0"]), SweepOptionsError::Loops);
        assert_eq!(e(&["--priority", "0"]), SweepOptionsError::Priority(0));
        assert_eq!(
            e(&["--histogram-us", "2000000"]),
            SweepOptionsError::Histogram(2_000_000)
        );
        assert_eq!(
            e(&["--cpu", "2", "--main-cpu", "2"]),
            SweepOptionsError::SameCpu(2)
        );
        assert_eq!(
            e(&["--main-cpu", "9"]),
            SweepOptionsError::MainCpuNotUsable {
                cpu: 9,
                usable: "0-3".into()
            }
        );
        assert!(e(&["--cpu", "7"]).to_string().contains("--cpu 3"));
        assert!(matches!(
            parse(&[], 1).unwrap_err(),
            SweepOptionsError::Cpus(OptionsError::NoHarnessCpu { cpu: 0, .. })
        ));
    }

    #[test]
    fn seed_needs_shuffle_and_cyclictest_can_be_chosen_or_skipped() {
        let v = ["rtrace-bench", "cyclictest-sweep", "--seed", "3"];
        assert!(Cli::try_parse_from(v).is_err(), "--seed without --shuffle");
        assert_eq!(
            parse(&["--no-cyclictest"], 2).unwrap().cyclictest,
            CyclictestChoice::Off
        );
        assert_eq!(
            parse(&["--cyclictest", "/opt/ct"], 2).unwrap().cyclictest,
            CyclictestChoice::At("/opt/ct".into())
        );
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let a = parse(&["--shuffle", "--seed", "42"], 2).unwrap();
        let b = parse(&["--shuffle", "--seed", "42"], 2).unwrap();
        assert_eq!(a.configs, b.configs, "same seed, same order");
        assert_eq!(a.shuffle_seed, Some(42));
        let mut sorted = a.configs.clone();
        sorted.sort();
        assert_eq!(sorted, Configuration::ALL.to_vec(), "a permutation");
        let orders: std::collections::HashSet<Vec<Configuration>> = (0..20)
            .map(|seed| {
                let mut c = Configuration::ALL.to_vec();
                shuffle(&mut c, seed);
                c
            })
            .collect();
        assert!(orders.len() > 10, "seeds give different orders");
    }
}
