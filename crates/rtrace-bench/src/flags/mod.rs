//! The command line: clap's syntax and its lowering into typed options. Raw flags never leave
//! this module (ripgrep's `flags/` shape): every command is lowered once into its experiment's
//! or tool's own options, and the rest of the program sees only those.

pub mod common;
mod events;
mod npt;
mod rate;
mod sweep;
pub mod usdt;

use crate::options::OptionsError;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Parses the command line (clap exits with its message on a parse error), lowers it and runs
/// it: its exit code.
pub fn run() -> anyhow::Result<i32> {
    Cli::parse().command.run()
}

#[derive(Parser, Debug)]
#[command(name = "rtrace-bench", version, about = "Measure the observer effect of Linux tracers on real-time workloads", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Per-probe microbenchmark (thesis §3.3, Table 3.1): cases 0-3 per tracer.
    Usdt(usdt::UsdtArgs),
    /// Run any command with one USDT probe, uprobe or uretprobe traced; report hits recorded and
    /// lost.
    Count(CountArgs),
    /// List the USDT probes of an ELF binary or shared library (or, with --symbols, its
    /// functions: uprobe/uretprobe targets).
    Probes(ProbesArgs),
    /// Wake-up latency under each tracer, cyclictest's method (thesis §3.4, Figs 3.3-3.4), with
    /// rt-tests' cyclictest as cross-check.
    #[command(name = "cyclictest-sweep")]
    CyclictestSweep(sweep::SweepArgs),
    /// The highest event rate each tracer records without loss, per buffer size (Beamonte):
    /// climb, bisect, confirm 3 times, and lose events in one of up to 3 runs at 1.5 times
    /// that rate.
    Rate(rate::RateArgs),
    /// Beamonte's Non-Preempt Test: gaps of a tight TSC loop on the measured CPU with no tracer
    /// and with each tracer consuming the loop's event stream.
    Npt(npt::NptArgs),
    /// Gregg's per-event cost benchmark (BPF Performance Tools ch. 18, as rerun by Piotrowski
    /// 2024): a pinned loop of 1-byte reads traced by each experiment's program (bpftrace's
    /// published one-liners, our eBPF equivalents, ftrace events), per-event cost per experiment
    /// and tracer beside the published bpftrace 0.17 numbers.
    Events(events::EventsArgs),
    /// What tracing costs a real program (Piotrowski's Benchmark 2): a kernel build, pgbench or
    /// your command after `--`, timed untraced and under tracing scripts; the slowdown predicted
    /// from the per-event costs first, then measured.
    App(crate::app::AppArgs),
    /// Overlay two cyclictest-sweep results (e.g. PREEMPT vs PREEMPT_RT): per-percentile
    /// differences; or two usdt results: ratios of extra ns per hit.
    Compare(CompareArgs),
    /// Regenerate a report (HTML, Markdown, CSV, SVG figures) from result files.
    Report(ReportArgs),
    /// Internal: wait for a byte on fd 3, then exec the command (used by `count`).
    #[command(hide = true, name = "__hold-exec")]
    HoldExec(HoldExecArgs),
}

#[derive(Args, Debug)]
pub struct CountArgs {
    /// Tracer to count with.
    #[arg(long, short, value_enum, default_value_t = common::TracerArg::Ftrace)]
    pub tracer: common::TracerArg,
    /// The probe: PROVIDER:NAME (USDT), uprobe:FUNCTION (function entry) or
    /// uretprobe:FUNCTION (function return).
    #[arg(long, short)]
    pub probe: String,
    /// ELF file holding the probe or function (default: the command itself), e.g. a shared
    /// library such as /lib/x86_64-linux-gnu/libc.so.6.
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
    #[command(flatten)]
    pub buffer: common::BufferArgs,
    #[command(flatten)]
    pub tracer_args: common::TracerArgs,
    /// The number of times the command fires the probe, if you know it (the ground truth):
    /// any other count of events (recorded + lost) is an error. Without it, `count` reports
    /// what the tracer saw and checks nothing.
    #[arg(long, value_name = "N")]
    pub expect: Option<u64>,
    /// Write the counts as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory for trace data (default: a temporary directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ProbesArgs {
    /// ELF executable or shared library.
    pub binary: PathBuf,
    /// List function symbols matching this glob (uprobe/uretprobe targets) instead of USDT probes.
    #[arg(long, value_name = "PATTERN")]
    pub symbols: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The reference result (`cyclictest-sweep.json` or `usdt.json`).
    pub a: PathBuf,
    /// The result compared against A (same experiment).
    pub b: PathBuf,
    /// Write the comparison as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result files (`usdt.json`, `cyclictest-sweep.json`, ...) or directories holding them
    /// (searched with their subdirectories: a run directory, a fleet's folder per machine); two
    /// sweeps from different kernels also get the PREEMPT vs PREEMPT_RT overlay (thesis Fig
    /// 3.5); results of several machines get a fleet section (`--machine` names a machine).
    #[arg(required = true, value_name = "RESULT.json|DIR")]
    pub results: Vec<PathBuf>,
    /// Report directory (default: results/report-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// What the job that made the results left out (with the command that measures it); the
    /// summary ends with these lines. Repeatable.
    #[arg(long, value_name = "TEXT")]
    pub left_out: Vec<String>,
}

#[derive(Args, Debug)]
pub struct HoldExecArgs {
    /// `KEY=VALUE` set for the command only (e.g. LD_PRELOAD, which must not load into us).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

impl Command {
    /// Checks and types the command's options (nothing on the machine changes until they
    /// pass), then runs it: its exit code.
    pub fn run(self) -> anyhow::Result<i32> {
        match self {
            Command::Usdt(a) => crate::usdt::run(a.lower()?),
            Command::CyclictestSweep(a) => crate::sweep::run(a.lower(&crate::cpus::usable())?),
            Command::Rate(a) => crate::rate::run(a.lower()?),
            Command::Npt(a) => crate::npt::run(a.lower()?),
            Command::Events(a) => crate::events::run(a.lower()?),
            Command::App(a) => crate::app::run(a.lower()?),
            Command::Count(a) => crate::count::run(a.lower()?),
            Command::Probes(a) => crate::probes::run(&a.binary, a.symbols.as_deref(), a.json),
            Command::Compare(a) => crate::compare::run(&a.a, &a.b, a.json.as_deref()),
            Command::Report(a) => crate::report::run(&a.results, a.out.as_deref(), a.left_out),
            Command::HoldExec(a) => crate::hold::run(&a.env, &a.command),
        }
    }
}

impl CountArgs {
    fn lower(self) -> Result<crate::count::Options, OptionsError> {
        let tracer = common::tracer_kind(self.tracer).ok_or(OptionsError::CountAll)?;
        let tracer_opts = common::count_tracer(self.buffer, self.tracer_args, tracer)?;
        Ok(crate::count::Options {
            tracer,
            probe: crate::count::parse_probe(&self.probe)?,
            binary: self.binary,
            tracer_opts,
            expect: self.expect,
            json: self.json,
            out: self.out,
            command: self.command,
        })
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// `rtrace-bench ARGS...`, parsed.
    pub fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("rtrace-bench").chain(args.iter().copied()))
            .map(|c| c.command)
    }

    /// `rtrace-bench usdt ARGS...`, lowered.
    pub fn usdt(args: &[&str]) -> Result<crate::usdt::Options, OptionsError> {
        match parse(&[&["usdt"], args].concat()).unwrap() {
            Command::Usdt(a) => a.lower(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn unknown_values_are_refused_by_the_syntax() {
        for bad in [
            &["usdt", "--tracer", "dtrace"][..],
            &["usdt", "--hook", "kprobe"],
            &["cyclictest-sweep", "--configs", "usdt-dtrace"],
            &["cyclictest-sweep", "--seed", "3"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_option_an_experiment_does_not_take_is_refused_with_the_reason() {
        let e = match parse(&["events", "--record", "stream"]).unwrap() {
            Command::Events(a) => a.lower().err().unwrap().to_string(),
            _ => unreachable!(),
        };
        assert!(e.starts_with("`events` does not take --record: "), "{e}");
        let e = match parse(&["usdt", "--buffer-size-kb", "0"]).unwrap() {
            Command::Usdt(a) => a.lower().err().unwrap().to_string(),
            _ => unreachable!(),
        };
        assert!(e.contains("--buffer-size-kb 256"), "{e}");
    }

    /// Each experiment's (and `count`'s) lowering error for `args`, `None` when it lowered.
    fn lowering_error(args: &[&str]) -> Option<String> {
        let e = match parse(args).unwrap() {
            Command::Usdt(a) => a.lower().err().map(|e| e.to_string()),
            Command::CyclictestSweep(a) => a.lower(&[0, 1]).err().map(|e| e.to_string()),
            Command::Rate(a) => a.lower().err().map(|e| e.to_string()),
            Command::Npt(a) => a.lower().err().map(|e| e.to_string()),
            Command::Events(a) => a.lower().err().map(|e| e.to_string()),
            Command::Count(a) => a.lower().err().map(|e| e.to_string()),
            c => unreachable!("{c:?}"),
        };
        e
    }

    #[test]
    fn every_experiment_takes_a_machine_name_and_refuses_a_bad_one() {
        for x in ["usdt", "cyclictest-sweep", "rate", "npt", "events"] {
            assert_eq!(lowering_error(&[x, "--machine", "lab-rt.1_a"]), None, "{x}");
            for bad in ["", "lab a", "a/b", &"x".repeat(65)] {
                let e = lowering_error(&[x, "--machine", bad]).unwrap_or_default();
                assert!(e.contains("--machine lab-rt-1"), "{x} {bad:?}: {e}");
            }
        }
        let o = usdt(&["--machine", "lab-a"]).unwrap();
        assert_eq!(o.common.machine.as_deref(), Some("lab-a"));
    }

    #[test]
    fn only_an_experiment_whose_spec_takes_strace_accepts_it() {
        for args in [
            &["usdt", "--tracer", "strace"][..],
            &["rate", "--tracer", "strace"],
            &["npt", "--tracer", "strace"],
            &["count", "-t", "strace", "-p", "a:b", "--", "true"],
        ] {
            let e = lowering_error(args).unwrap_or_default();
            assert!(e.contains("strace sees system calls only"), "{args:?}: {e}");
        }
        assert_eq!(lowering_error(&["events", "--tracer", "strace"]), None);
    }

    #[test]
    fn every_command_refuses_a_clock_no_ftrace_run_would_use() {
        let clock = ["--ftrace-clock", "global"];
        for (args, fix) in [
            (
                &["usdt", "--tracer", "ebpf,lttng"][..],
                "add ftrace to --tracer",
            ),
            (&["cyclictest-sweep", "--configs", "usdt-ebpf"], "--configs"),
            (&["rate", "--tracer", "ebpf"], "add ftrace to --tracer"),
            (&["npt", "--tracer", "bpftrace"], "add ftrace to --tracer"),
            (&["events", "--tracer", "ebpf"], "add ftrace to --tracer"),
            (
                &["count", "-t", "ebpf", "-p", "a:b"],
                "pass --tracer ftrace",
            ),
        ] {
            let mut all = args.to_vec();
            all.extend(clock);
            if args[0] == "count" {
                all.extend(["--", "true"]);
            }
            let e = lowering_error(&all).unwrap_or_else(|| panic!("{all:?} lowered"));
            assert!(e.contains("traces with no ftrace here"), "{all:?}: {e}");
            assert!(
                e.contains(fix) && e.ends_with("or drop --ftrace-clock"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_clock_reaches_the_tracer_options() {
        let buffer = common::BufferArgs {
            ftrace_clock: Some("counter".into()),
            ..common::BufferArgs::default()
        };
        let tracer = rtrace_tracer::TracerKind::Ftrace;
        let o = common::count_tracer(buffer, common::TracerArgs::default(), tracer).unwrap();
        assert_eq!(o.ftrace_clock.as_deref(), Some("counter"));
        assert_eq!(o.json()["ftrace_clock"], "counter");
        let b = crate::tracers::buffers(&[rtrace_tracer::TracerKind::Ftrace], &o).unwrap();
        assert!(b["ftrace"].ends_with(", trace_clock counter"), "{b:?}");
    }

    #[test]
    fn count_probe_and_tracer() {
        let lower = |args: &[&str]| match parse(args).unwrap() {
            Command::Count(a) => a.lower(),
            _ => unreachable!(),
        };
        let o = lower(&["count", "-p", "uprobe:getpid", "--", "true"]).unwrap();
        assert_eq!(o.tracer, rtrace_tracer::TracerKind::Ftrace);
        assert_eq!(o.probe.to_string(), "uprobe:getpid");
        assert_eq!(o.tracer_opts.buffer_size_kb, Some(4096));
        let e = lower(&["count", "-t", "all", "-p", "a:b", "--", "true"]).unwrap_err();
        assert_eq!(e, OptionsError::CountAll);
    }
}
