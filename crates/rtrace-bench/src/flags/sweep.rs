//! `cyclictest-sweep`'s flags (mirroring the thesis' cyclictest command) and their lowering into
//! [`crate::sweep::Options`].

use super::common::{CommonArgs, TracerArgs};
use crate::options::{check_nonzero, check_rounds, Spec, Take, DEFAULT_BUFFER_KB};
use crate::sweep::cyclictest::MAX_BUCKETS;
use crate::sweep::{main_cpu, shuffle, CyclictestChoice, Options, SweepOptionsError};
use clap::{Args, ValueEnum};
use rtrace_measure::sweep::{Configuration, Space};
use rtrace_measure::usdt::HookKind;
use rtrace_protocol::ProbeAt;
use rtrace_tracer::{RecordMode, TracerKind};
use std::path::PathBuf;

pub const SPEC: Spec = Spec {
    experiment: "cyclictest-sweep",
    // Measured (#31): 3 rounds left most intervals spanning zero; 10 rounds resolve ftrace's,
    // eBPF's and LTTng's paired shifts to ±0.1–0.3 µs, but bpftrace's rounds (its reader woken
    // per event) spread by 3–6 µs as the machine's state changes over minutes, ±2.4–4.2 µs in
    // 10 rounds; 20 rounds of 5,000 wake-ups halve that for ~4 minutes more.
    rounds: Take::Default(20),
    // cyclictest's --priority, as the thesis ran it.
    priority: Some(99),
    record: Take::Default(RecordMode::Stream),
    buffer_size_kb: Take::Default(DEFAULT_BUFFER_KB),
    strace: false,
    add_ftrace: "add an ftrace configuration to --configs (e.g. usdt-ftrace)",
};

/// The groups `--configs` takes beside each configuration's name.
const GROUPS: [(&str, &str); 4] = [
    ("usdt", "every usdt-* configuration"),
    (
        "dynamic",
        "every uprobe-* and uretprobe-* configuration (the marker function's entry or return)",
    ),
    ("kernel", "every kernel-* configuration"),
    (
        "all",
        "every configuration (those unavailable here are reported with the reason)",
    ),
];

/// `--configs`' values: every configuration's name, then the groups.
fn config_values() -> clap::builder::PossibleValuesParser {
    let names = Configuration::ALL.map(|c| clap::builder::PossibleValue::new(c.name()));
    let groups = GROUPS.map(|(g, help)| clap::builder::PossibleValue::new(g).help(help));
    clap::builder::PossibleValuesParser::new(names.into_iter().chain(groups))
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
    /// CPU of the main thread (cyclictest --mainaffinity; default: the first other CPU).
    #[arg(long)]
    pub main_cpu: Option<usize>,
    /// Configurations to run, comma separated: names, or the groups usdt, dynamic, kernel, all.
    #[arg(long, value_delimiter = ',', default_value = "all", value_parser = config_values())]
    pub configs: Vec<String>,
    /// Where the built-in loop fires its user-space tracepoint: `window`, between the wake-up
    /// and the clock reading, so its cost is part of the latency (the thesis' modified
    /// cyclictest); `after`, once the latency is taken (its cost is never measured);
    /// `alternate`, as `window` on every other wake-up, the others kept apart, so that each
    /// run's shift is paired within the run (a VM whose latency state changes from second to
    /// second moves both halves alike). Default `alternate`: it gives both shifts, against
    /// `none` and paired within the run.
    #[arg(long, value_enum, default_value = "alternate")]
    pub probe_at: ProbeAtArg,
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
    pub common: CommonArgs,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
}

/// The configurations asked for, deduplicated, in the canonical order.
fn configurations(args: &[String]) -> Vec<Configuration> {
    Configuration::ALL
        .into_iter()
        .filter(|c| {
            args.iter().any(|a| match a.as_str() {
                "all" => true,
                "usdt" => c.hook_kind() == Some(HookKind::Usdt),
                "dynamic" => matches!(c.hook_kind(), Some(HookKind::Uprobe | HookKind::Uretprobe)),
                "kernel" => c.space() == Space::Kernel,
                one => one == c.name(),
            })
        })
        .collect()
}

impl SweepArgs {
    /// Checks and types the options; `usable`: the CPUs this process may use.
    pub fn lower(self, usable: &[usize]) -> Result<Options, SweepOptionsError> {
        if !(1..=1_000_000).contains(&self.interval_us) {
            return Err(SweepOptionsError::Interval(self.interval_us));
        }
        check_nonzero(self.loops, "loops")?;
        if !(1..=MAX_BUCKETS).contains(&self.histogram_us) {
            return Err(SweepOptionsError::Histogram(self.histogram_us));
        }
        let mut configs = configurations(&self.configs);
        let tracers: Vec<TracerKind> = configs.iter().map(|c| c.tracer()).collect();
        let common = self
            .common
            .lower_on(&SPEC, self.tracer_args, &tracers, usable)?;
        check_rounds(common.rounds, "loops", self.loops)?;
        let main_cpu = main_cpu(self.main_cpu, &common.cpus, usable)?;
        let shuffle_seed = self.shuffle.then(|| {
            self.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            })
        });
        if let Some(seed) = shuffle_seed {
            shuffle(&mut configs, seed);
        }
        let cyclictest = match (self.no_cyclictest, self.cyclictest) {
            (true, _) => CyclictestChoice::Off,
            (false, Some(p)) => CyclictestChoice::At(p),
            (false, None) => CyclictestChoice::OnPath,
        };
        Ok(Options {
            common,
            configs,
            shuffle_seed,
            interval_us: self.interval_us,
            loops: self.loops,
            main_cpu,
            main_cpu_requested: self.main_cpu,
            histogram_us: self.histogram_us,
            probe_at: self.probe_at.into(),
            cyclictest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::Command;
    use crate::options::OptionsError;
    use Configuration::{KernelEbpf, KernelFtrace, KernelLttng, KernelPerf, UsdtLttng};
    use CyclictestChoice::{At, Off, OnPath};
    use SweepOptionsError::{Common, Histogram, Interval, MainCpuNotUsable, SameCpu};

    fn parse(args: &[&str], online: usize) -> Result<Options, SweepOptionsError> {
        match crate::flags::tests::parse(&[&["cyclictest-sweep"], args].concat()).unwrap() {
            Command::CyclictestSweep(a) => a.lower(&(0..online).collect::<Vec<_>>()),
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults_mirror_the_thesis_command() {
        let o = parse(&[], 2).unwrap();
        assert_eq!(
            (o.interval_us, o.loops, o.histogram_us),
            (30, 100_000, 1000)
        );
        assert_eq!((o.common.priority, o.common.rounds), (Some(99), 20));
        assert_eq!(o.probe_at, ProbeAt::Alternate);
        assert_eq!((o.common.cpus.measured, o.main_cpu), (1, 0));
        assert_eq!(o.configs, Configuration::ALL.to_vec());
        assert_eq!(o.shuffle_seed, None);
        assert_eq!(o.cyclictest, OnPath);
    }

    #[test]
    fn configs_are_selected_by_name_and_group_without_duplicates() {
        let o = parse(&["--configs", "kernel,none,kernel-ftrace"], 2).unwrap();
        let want = [
            Configuration::None,
            KernelFtrace,
            KernelEbpf,
            KernelLttng,
            KernelPerf,
        ];
        assert_eq!(o.configs, want);
        let o = parse(&["--configs", "usdt-lttng", "--configs", "none"], 2).unwrap();
        assert_eq!(o.configs, vec![Configuration::None, UsdtLttng]);
    }

    #[test]
    fn bad_values_name_the_fix() {
        let e = |args: &[&str]| parse(args, 4).unwrap_err();
        assert_eq!(e(&["--interval-us", "0"]), Interval(0));
        let zero = OptionsError::Zero { what: "loops" }.into();
        assert_eq!(e(&["--loops", "0"]), zero);
        assert_eq!(e(&["--priority", "0"]), OptionsError::Priority(0).into());
        let rounds = e(&["--rounds", "5", "--loops", "4"]).to_string();
        assert!(rounds.contains("pass --rounds 1..4"), "{rounds}");
        assert_eq!(e(&["--histogram-us", "2000000"]), Histogram(2_000_000));
        assert_eq!(e(&["--cpu", "2", "--main-cpu", "2"]), SameCpu(2));
        let usable = "0-3".into();
        assert_eq!(e(&["--main-cpu", "9"]), MainCpuNotUsable { cpu: 9, usable });
        assert!(e(&["--cpu", "7"]).to_string().contains("--cpu 3"));
        assert!(matches!(
            parse(&[], 1).unwrap_err(),
            Common(OptionsError::NoHarnessCpu { cpu: 0, .. })
        ));
    }

    #[test]
    fn seed_needs_shuffle_and_cyclictest_can_be_chosen_or_skipped() {
        assert_eq!(parse(&["--no-cyclictest"], 2).unwrap().cyclictest, Off);
        let at = parse(&["--cyclictest", "/opt/ct"], 2).unwrap();
        assert_eq!(at.cyclictest, At("/opt/ct".into()));
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
