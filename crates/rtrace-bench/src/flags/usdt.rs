//! `usdt`'s flags and their lowering into [`crate::usdt::Options`].

use super::common::{tracer_choice, CommonArgs, TracerArg, TracerArgs};
use crate::options::{
    check_nonzero, check_rounds, check_threads, BpfMode, OptionsError, Spec, Take,
    DEFAULT_BUFFER_KB,
};
use crate::usdt::Options;
use clap::{Args, ValueEnum};
use rtrace_measure::usdt::{Case, HookKind};
use rtrace_tracer::{RecordMode, TracerKind};

/// Rounds of `usdt` without `--rounds`: enough for a t interval over rounds whose width means
/// something (t(9) = 2.26 against 1.96 for infinitely many); at most the iterations.
pub const DEFAULT_ROUNDS: u32 = 10;

pub const SPEC: Spec = Spec {
    experiment: "usdt",
    rounds: Take::Default(DEFAULT_ROUNDS),
    priority: None,
    record: Take::Default(RecordMode::Stream),
    buffer_size_kb: Take::Default(DEFAULT_BUFFER_KB),
    strace: false,
    add_ftrace: "add ftrace to --tracer",
};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaseArg {
    #[value(name = "0")]
    C0,
    #[value(name = "1")]
    C1,
    #[value(name = "2")]
    C2,
    #[value(name = "3")]
    C3,
    All,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookArg {
    /// The USDT probe `rtrace:event` (LTTng-UST's tracepoint for lttng): static instrumentation.
    Usdt,
    /// The USDT probe `rtrace:event_nop5`: its site is `nop; nop5`, which Linux >= 6.18 can
    /// optimise into a call (no int3 trap) for tracers that attach to the `nop5`, as libbpf does.
    UsdtNop5,
    /// The USDT probe `rtrace:event_stepped`: its site is a RIP-relative `cmpb`, which the
    /// kernel single-steps out of line (two traps), as on most function entries.
    UsdtStepped,
    /// A uprobe on the entry of the exported marker function the loop calls.
    Uprobe,
    /// A uretprobe on the return of that function.
    Uretprobe,
}

#[derive(Args, Debug)]
pub struct UsdtArgs {
    /// Tracers to compare (comma separated or repeated).
    #[arg(
        long,
        short,
        value_enum,
        value_delimiter = ',',
        default_value = "ftrace"
    )]
    pub tracer: Vec<TracerArg>,
    /// Cases to run (comma separated): 0 baseline, 1 traced, 2 dormant tracer, 3 instrumented only.
    #[arg(long, short, value_enum, value_delimiter = ',', default_value = "all")]
    pub case: Vec<CaseArg>,
    /// Hooks the tracers attach to (comma separated; each is its own set of rows): static USDT,
    /// or dynamic uprobe / uretprobe on a function the loop calls (every case's body is then
    /// that call; the barrier baseline is kept so the plain call cost shows).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "usdt")]
    pub hook: Vec<HookArg>,
    /// Timed iterations per case (the thesis used 10,000,000), split across the rounds.
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    pub iterations: u64,
    /// Untimed warm-up iterations per case and round (the probe still fires and is accounted).
    #[arg(long, default_value_t = 10_000)]
    pub warmup: u64,
    /// Keep case-1 runs that dropped events in the ratios (by default they are marked and left
    /// out: dropping an event is cheaper than recording it; events a flight recorder
    /// overwrote were written first and do not count).
    #[arg(long)]
    pub allow_loss: bool,
    /// Decompose each tracer's per-hit cost into steps that add one mechanism at a time, on the
    /// usdt and usdt-nop5 sites (the report's staircase): every available tracer, eBPF
    /// floor/count/aggregate/record/record-wakeup, ftrace off/overwrite/stream, LTTng case 3,
    /// tracepoint and tracef, bpftrace aggregate and record.
    #[arg(
        long,
        conflicts_with_all = ["tracer", "case", "hook", "bpf_mode", "ftrace_mode", "lttng_event"]
    )]
    pub decompose: bool,
    /// Loop threads firing the probe at the same time, each on its own CPU (the measured CPU,
    /// then harness CPUs from the last): per-hit cost under concurrency, shared buffers against
    /// per-CPU ones. A thread on a harness CPU shares it with the harness and the consumers.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// Gebai's steady state: every case-1 run fires the probe untimed until its tracer's buffer
    /// has been written through at least once (its capacity an upper bound: the buffer's
    /// bytes over the smallest event, 16 bytes, 12 for LTTng) before the timed loop; those
    /// hits are accounted too. Needs --record overwrite (a flight recorder: the timed events
    /// overwrite older ones) and modes that write a buffer; eBPF and bpftrace always stream
    /// to a consumer, so their ring is written through once without overwriting.
    #[arg(long, conflicts_with = "decompose")]
    pub steady_state: bool,
    /// Sleep this many µs before every timed iteration (outside the timed interval): each hit
    /// finds the probe's path cold, as the sweep's hits after a wake-up do (pass its
    /// --interval-us); the consistency section takes the step from the hot loop as the cold
    /// path's measured cost. Warm-up iterations stay back to back.
    #[arg(long, value_name = "US", conflicts_with_all = ["decompose", "steady_state"])]
    pub spacing_us: Option<u64>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub tracer_args: TracerArgs,
}

impl UsdtArgs {
    pub fn lower(self) -> Result<Options, OptionsError> {
        check_nonzero(self.iterations, "iterations")?;
        if let Some(us) = self.spacing_us {
            check_nonzero(us, "spacing-us")?;
        }
        let rounds_given = self.common.rounds.is_some();
        let kinds = tracer_choice(&self.tracer).kinds().0;
        let mut common = self.common.lower(&SPEC, self.tracer_args, &kinds)?;
        if !rounds_given {
            common.rounds = common
                .rounds
                .min(self.iterations.min(u64::from(u32::MAX)) as u32);
        }
        check_rounds(common.rounds, "iterations", self.iterations)?;
        check_threads(&common.cpus, self.threads)?;
        let mut o = Options {
            common,
            tracers: tracer_choice(&self.tracer),
            cases: cases(&self.case),
            hooks: hooks(&self.hook),
            iterations: self.iterations,
            warmup: self.warmup,
            allow_loss: self.allow_loss,
            decompose: false,
            threads: self.threads,
            steady_state: self.steady_state,
            spacing_us: self.spacing_us,
        };
        if o.steady_state {
            check_steady_state(&o)?;
        }
        if self.decompose {
            crate::decompose::apply(&mut o);
        }
        Ok(o)
    }
}

/// `--steady-state` has a buffer to fill: a flight recorder (`--record overwrite`), a tracer,
/// a mode that writes a buffer, and a traced case.
fn check_steady_state(o: &Options) -> Result<(), OptionsError> {
    use rtrace_ftrace::FtraceMode;
    let t = &o.common.tracer;
    let refuse = |why: String| Err(OptionsError::Other(format!("--steady-state: {why}")));
    if t.record != RecordMode::Overwrite {
        return refuse("it fills a flight recorder's buffer before timing, and with --record stream a consumer empties it as the loop fills it: pass --record overwrite".into());
    }
    let (kinds, _) = o.tracers.kinds();
    if kinds.iter().all(|&k| k == TracerKind::None) {
        return refuse("--tracer none has no buffer to fill: name a tracer".into());
    }
    if !o.cases.contains(&Case::Traced) {
        return refuse("only case 1 writes the buffer: add --case 1".into());
    }
    let bpf = kinds
        .iter()
        .any(|k| matches!(k, TracerKind::Ebpf | TracerKind::Bpftrace));
    if let Some(m) = t
        .bpf_modes
        .iter()
        .find(|m| !matches!(m, BpfMode::Record | BpfMode::RecordWakeup))
        .filter(|_| bpf)
    {
        return refuse(format!(
            "--bpf-mode {} writes no buffer: use --bpf-mode record",
            crate::options::bpf_mode_name(*m)
        ));
    }
    if kinds.contains(&TracerKind::Ftrace) {
        if let Some(m) = t.ftrace_modes.iter().find(|m| **m != FtraceMode::Overwrite) {
            return refuse(format!(
                "--ftrace-mode {} is not a flight recorder: use --ftrace-mode overwrite",
                m.name()
            ));
        }
    }
    Ok(())
}

fn cases(args: &[CaseArg]) -> Vec<Case> {
    let mut cases: Vec<Case> = if args.contains(&CaseArg::All) {
        Case::ALL.to_vec()
    } else {
        args.iter()
            .map(|c| match c {
                CaseArg::C0 => Case::Baseline,
                CaseArg::C1 => Case::Traced,
                CaseArg::C2 => Case::Dormant,
                CaseArg::C3 | CaseArg::All => Case::Instrumented,
            })
            .collect()
    };
    cases.sort();
    cases.dedup();
    cases
}

fn hooks(args: &[HookArg]) -> Vec<HookKind> {
    let mut hooks: Vec<HookKind> = args
        .iter()
        .map(|h| match h {
            HookArg::Usdt => HookKind::Usdt,
            HookArg::UsdtNop5 => HookKind::UsdtNop5,
            HookArg::UsdtStepped => HookKind::UsdtStepped,
            HookArg::Uprobe => HookKind::Uprobe,
            HookArg::Uretprobe => HookKind::Uretprobe,
        })
        .collect();
    hooks.sort();
    hooks.dedup();
    if hooks.is_empty() {
        hooks.push(HookKind::Usdt);
    }
    hooks
}

#[cfg(test)]
mod tests {
    use crate::flags::tests::usdt;
    use crate::options::{BpfMode, OptionsError, TracerChoice, DEFAULT_BUFFER_KB};
    use rtrace_measure::usdt::{Case, HookKind};
    use rtrace_tracer::TracerKind;
    use BpfMode::{Aggregate, Record, RecordWakeup};
    use Case::{Instrumented, Traced};
    use HookKind::{Usdt, UsdtNop5};
    use TracerKind::{Ebpf, Ftrace};

    #[test]
    fn out_of_range_cpu_message_names_the_fix() {
        let e = usdt(&["--cpu", "4096"]).unwrap_err().to_string();
        assert!(e.contains("CPU 4096 is not usable"), "{e}");
        assert!(e.contains("--cpu "), "{e}");
    }

    #[test]
    fn rounds_must_fit_the_iterations() {
        let rounds = |args: &[&str]| usdt(args).unwrap().common.rounds;
        assert_eq!(rounds(&[]), super::DEFAULT_ROUNDS);
        assert_eq!(rounds(&["-n", "3"]), 3, "default capped");
        assert_eq!(rounds(&["--rounds", "4", "-n", "8"]), 4);
        assert!(!usdt(&[]).unwrap().allow_loss);
        assert!(usdt(&["--allow-loss"]).unwrap().allow_loss);
        for (n, want) in [
            ("9", "pass --rounds 1..8"),
            ("0", "--rounds must be at least 1"),
        ] {
            let e = usdt(&["--rounds", n, "-n", "8"]).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn cases_are_sorted_and_deduplicated() {
        let o = usdt(&["--case", "3,1,3"]).unwrap();
        assert_eq!(o.cases, vec![Traced, Instrumented]);
        assert_eq!(usdt(&[]).unwrap().cases, Case::ALL.to_vec());
    }

    #[test]
    fn tracers_and_defaults() {
        let o = usdt(&["-t", "ftrace,ebpf", "-t", "ftrace"]).unwrap();
        assert_eq!(o.tracers, TracerChoice::These(vec![Ftrace, Ebpf]));
        assert_eq!(o.iterations, 1_000_000);
        let all = usdt(&["-t", "all"]).unwrap();
        assert_eq!(all.tracers, TracerChoice::AllAvailable);
    }

    #[test]
    fn bad_values_are_rejected() {
        let e = |args: &[&str]| usdt(args).unwrap_err();
        assert_eq!(e(&["--priority", "100"]), OptionsError::Priority(100));
        let zero = OptionsError::Zero { what: "iterations" };
        assert_eq!(e(&["-n", "0"]), zero);
    }

    #[test]
    fn modes_keep_their_order_without_repeats_and_buffers_are_equal() {
        let o = usdt(&[]).unwrap();
        assert_eq!(o.common.tracer.bpf_modes, [Record]);
        let buffer = o.common.tracer.buffer_size_kb;
        assert_eq!(
            buffer,
            Some(DEFAULT_BUFFER_KB),
            "one size for every tracer by default"
        );
        let o = usdt(&["--bpf-mode", "record-wakeup,record,record-wakeup,aggregate"]).unwrap();
        assert_eq!(o.common.tracer.bpf_modes, [RecordWakeup, Record, Aggregate]);
        let o = usdt(&["--bpf-mode", "aggregate", "--bpf-mode", "record,aggregate"]).unwrap();
        assert_eq!(o.common.tracer.bpf_modes, vec![Aggregate, Record]);
        let o = usdt(&["--buffer-size-kb", "256"]).unwrap();
        assert_eq!(o.common.tracer.buffer_size_kb, Some(256));
    }

    #[test]
    fn hooks_are_ordered_and_default_to_usdt() {
        assert_eq!(usdt(&[]).unwrap().hooks, vec![Usdt]);
        let o = usdt(&[
            "--hook",
            "uretprobe,usdt-stepped,usdt,uprobe,usdt-nop5,uretprobe",
        ])
        .unwrap();
        assert_eq!(o.hooks, HookKind::ALL.to_vec());
    }

    #[test]
    fn steady_state_needs_a_buffer_to_fill() {
        let ow = ["--record", "overwrite", "--steady-state"];
        let o = usdt(&[&ow[..], &["-t", "ftrace,ebpf,lttng"]].concat()).unwrap();
        assert!(o.steady_state);
        assert!(!usdt(&[]).unwrap().steady_state);
        for (args, want) in [
            (&["--steady-state"][..], "pass --record overwrite"),
            (&["-t", "none"], "--tracer none has no buffer"),
            (&["-c", "0,2"], "add --case 1"),
            (
                &["-t", "ebpf", "--bpf-mode", "aggregate"],
                "--bpf-mode aggregate writes no buffer",
            ),
            (
                &["-t", "ftrace", "--ftrace-mode", "off"],
                "--ftrace-mode off is not a flight recorder",
            ),
        ] {
            let all = if args == ["--steady-state"] {
                args.to_vec()
            } else {
                [&ow[..], args].concat()
            };
            let e = usdt(&all).unwrap_err().to_string();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        // bpftrace and eBPF modes do not matter without them.
        assert!(usdt(&[&ow[..], &["-t", "lttng", "--bpf-mode", "aggregate"]].concat()).is_ok());
    }

    #[test]
    fn decompose_is_a_plan_of_every_tracer_in_its_steps_modes() {
        let o = usdt(&["--decompose", "--buffer-size-kb", "256"]).unwrap();
        assert!(o.decompose);
        assert_eq!(o.tracers, TracerChoice::AllAvailable);
        assert_eq!(o.hooks, [Usdt, UsdtNop5]);
        assert_eq!(o.common.tracer.bpf_modes.len(), 5);
        assert_eq!(o.common.tracer.buffer_size_kb, Some(256), "honoured");
        assert!(crate::flags::tests::parse(&["usdt", "--decompose", "-t", "ebpf"]).is_err());
    }
}
