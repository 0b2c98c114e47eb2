//! `cargo xtask thesis`: the README's main command. Installs what is missing, builds, runs the
//! usdt comparison, its per-hit cost decomposition, the cyclictest sweep, the lossless-rate
//! search, npt and Gregg's per-event cost suite (`events`) with every tracer available here,
//! and writes one report directory (`index.html`, `report.md`, `csv/` with one file per table,
//! `figures/`).
//!
//! The default fits a 15-minute budget on a 2-CPU machine (apt and build included); what it
//! leaves out for time is printed first and last, each with the command that runs it.
//! `--full` runs the thesis' own scale (10^7 iterations and wake-ups) and prints its estimated
//! duration before it starts. Every experiment prints a progress line with its estimate and the
//! time left, corrected by how the experiments so far compared with their estimates.

use crate::exec::{cargo, exec};
use crate::packages;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Options {
    /// Timed iterations per usdt case (the thesis used 10,000,000).
    #[arg(long, default_value_t = 400_000)]
    iterations: u64,
    /// Wake-ups per cyclictest-sweep configuration (the thesis used 10,000,000).
    #[arg(long, default_value_t = 40_000)]
    loops: u64,
    /// The thesis' scale: 10^7 iterations per usdt case and 10^7 wake-ups per sweep
    /// configuration, every hook, Gregg's 5 rounds; prints the estimated duration first (hours).
    #[arg(long, conflicts_with_all = ["iterations", "loops"])]
    full: bool,
    /// Results directory (default: results/thesis-<timestamp>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not install missing Debian packages.
    #[arg(long)]
    no_install: bool,
}

/// The job's scale: what every experiment is run with.
#[derive(Debug, Clone, PartialEq)]
struct Scale {
    iterations: u64,
    /// usdt's and the decomposition's rounds (their fixed cost: every tracer, mode, hook and
    /// case started once per round).
    usdt_rounds: u32,
    loops: u64,
    hooks: &'static str,
    sweep_rounds: u32,
    reads: u64,
    event_rounds: u32,
    /// `rate --buffer-sizes-kb`: a steady state at 4 MiB takes 10 buffer-fulls per point.
    rate_sizes_kb: &'static str,
    /// usdt-spaced's timed hits per case, each after a sleep.
    spaced_iterations: u64,
    /// usdt-spaced's tracers: by default not bpftrace, whose sweep rows agree with its hot
    /// loop and whose every run compiles its program (seconds a run).
    spaced_tracers: &'static str,
    /// app's tracers and scripts on the kernel build: by default ftrace on `syscalls:*`
    /// (eBPF, bpftrace and perf each take 26-53 s to come off its 720 tracepoints, every run).
    app_tracers: &'static str,
    app_scripts: &'static str,
}

impl Scale {
    fn of(o: &Options) -> Scale {
        if o.full {
            return Scale::full();
        }
        Scale {
            iterations: o.iterations,
            usdt_rounds: 4,
            loops: o.loops,
            hooks: "usdt,uprobe,uretprobe",
            sweep_rounds: 6,
            reads: 50_000,
            event_rounds: 2,
            rate_sizes_kb: "256",
            spaced_iterations: 20_000,
            spaced_tracers: "ftrace,ebpf,lttng,perf",
            app_tracers: "ftrace",
            app_scripts: "syscalls",
        }
    }

    /// The thesis' scale (`--full`).
    fn full() -> Scale {
        Scale {
            iterations: 10_000_000,
            usdt_rounds: 10,
            loops: 10_000_000,
            hooks: ALL_HOOKS,
            sweep_rounds: 20,
            reads: 1_000_000,
            event_rounds: 5,
            rate_sizes_kb: "256,4096",
            spaced_iterations: 200_000,
            spaced_tracers: "all",
            app_tracers: "all,strace",
            app_scripts: "sys-enter,syscalls,sched,syscalls-sched",
        }
    }
}

/// The sweep's period (the thesis' 30 µs), also usdt-spaced's sleep before every hit.
const SWEEP_INTERVAL_US: &str = "30";

const ALL_HOOKS: &str = "usdt,usdt-nop5,usdt-stepped,uprobe,uretprobe";

/// One experiment of the job.
struct Step {
    name: &'static str,
    args: Vec<String>,
    /// Its result file below the job's directory.
    result: &'static str,
    /// Expected duration on this kind of machine.
    estimate: Duration,
}

/// Measured on the reference machine (2 CPUs, a VM on Linux 6.18, 2026-11-26): each
/// experiment's time is a fixed cost per round (tracers started, untraced runs beside them)
/// plus a cost per unit of work, fitted to two runs of the main job at different scales. The
/// first experiments' actual durations then correct the rest ([`Eta`]).
mod reference {
    /// usdt, per hook and round (3 modes of eBPF, 2 LTTng events, ftrace, bpftrace, 4 cases):
    /// 5 hooks, 10 rounds, 10^6 iterations took 541 s; 3 hooks, 10 rounds, 400,000: 247 s.
    pub const USDT_PER_HOOK_ROUND_S: f64 = 6.5;
    pub const USDT_PER_HOOK_MILLION_S: f64 = 43.2;
    /// usdt --decompose: 10 rounds of 10^6 iterations 167 s, of 400,000 136 s; perf's two
    /// columns on two hooks add about a fifth (2026-11-27: 3 rounds of 100,000, 70 s).
    pub const DECOMPOSE_PER_ROUND_S: f64 = 13.8;
    pub const DECOMPOSE_PER_MILLION_S: f64 = 62.0;
    /// usdt-spaced (cases 0 and 1, the sweep's modes): 3 hooks, 5 rounds of 20,000 hits 30 µs
    /// apart took 34 s without bpftrace, 63 s with it (2026-11-28).
    pub const SPACED_PER_HOOK_1K_S: f64 = 0.6;
    /// cyclictest-sweep --configs all: 100,000 wake-ups in 20 rounds 453 s, 40,000 in 10 215 s.
    pub const SWEEP_PER_ROUND_S: f64 = 16.9;
    pub const SWEEP_PER_1K_LOOPS_S: f64 = 1.15;
    /// rate --tracer all at 256 KiB, 10 buffer-fulls per point: 70-88 s, and a 5 s flood point
    /// per search (4 searches); perf's search took 67 s more (2026-11-27).
    pub const RATE_256K_S: f64 = 177.0;
    /// ... at 4 MiB (10 buffer-fulls of 4 MiB per point: seconds per point): not yet timed.
    pub const RATE_4MIB_S: f64 = 600.0;
    /// npt --tracer all --duration-ms 1000: 9 s.
    pub const NPT_S: f64 = 9.0;
    /// events --tracer all: 3 rounds of 200,000 reads 206 s, 2 rounds of 100,000 108 s.
    pub const EVENTS_PER_ROUND_S: f64 = 39.3;
    pub const EVENTS_PER_1K_READS_S: f64 = 0.147;
    /// app on the kernel build, once: extracting and configuring Linux 6.1 on tmpfs (27 s,
    /// then cached) and the counting run (2026-11-28).
    pub const APP_FIXED_S: f64 = 40.0;
    /// ... per tracer × script and round: an 8 s build, and the tracer's exit.
    pub const APP_PER_CELL_ROUND_S: f64 = 9.0;
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(1.0))
}

/// A command line's words (no value of ours holds a space).
fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

fn steps(s: &Scale) -> Vec<Step> {
    let hooks = s.hooks.split(',').count() as f64;
    let millions = s.iterations as f64 / 1e6;
    let rounds = f64::from(s.usdt_rounds);
    let (iterations, usdt_rounds) = (s.iterations, s.usdt_rounds);
    vec![
        Step {
            name: "usdt",
            args: words(&format!(
                "usdt --tracer all --priority 99 --bpf-mode record,record-wakeup,aggregate \
                 --lttng-event tracepoint,tracef --hook {} --iterations {iterations} \
                 --rounds {usdt_rounds}",
                s.hooks
            )),
            result: "usdt/usdt.json",
            estimate: secs(
                hooks
                    * (reference::USDT_PER_HOOK_ROUND_S * rounds
                        + reference::USDT_PER_HOOK_MILLION_S * millions),
            ),
        },
        // The per-hit cost decomposition; the report checks each staircase's sum against the
        // same configuration in the plain usdt run above (a separate invocation).
        Step {
            name: "decompose",
            args: words(&format!(
                "usdt --decompose --priority 99 --iterations {iterations} --rounds {usdt_rounds}"
            )),
            result: "decompose/usdt.json",
            estimate: secs(
                reference::DECOMPOSE_PER_ROUND_S * rounds
                    + reference::DECOMPOSE_PER_MILLION_S * millions,
            ),
        },
        // The cold path: every hit after a sleep of the sweep's period, in the sweep's modes;
        // the consistency section takes its step from the hot loop as the measured cost of
        // the sweep's spacing.
        Step {
            name: "usdt-spaced",
            args: words(&format!(
                "usdt --tracer {} --priority 99 --bpf-mode record --lttng-event tracepoint \
                 --hook {} --case 0,1 --spacing-us {SWEEP_INTERVAL_US} --iterations {} \
                 --rounds {usdt_rounds}",
                s.spaced_tracers, s.hooks, s.spaced_iterations
            )),
            result: "usdt-spaced/usdt.json",
            estimate: secs(
                hooks * s.spaced_iterations as f64 / 1e3 * reference::SPACED_PER_HOOK_1K_S,
            ),
        },
        Step {
            name: "cyclictest-sweep",
            args: words(&format!(
                "cyclictest-sweep --configs all --interval-us {SWEEP_INTERVAL_US} --loops {} \
                 --rounds {}",
                s.loops, s.sweep_rounds
            )),
            result: "cyclictest-sweep/cyclictest-sweep.json",
            estimate: secs(
                reference::SWEEP_PER_ROUND_S * f64::from(s.sweep_rounds)
                    + reference::SWEEP_PER_1K_LOOPS_S * s.loops as f64 / 1e3,
            ),
        },
        Step {
            name: "rate",
            args: words(&format!(
                "rate --tracer all --duration-ms 200 --buffer-sizes-kb {}",
                s.rate_sizes_kb
            )),
            result: "rate/rate.json",
            estimate: secs(if s.rate_sizes_kb.contains("4096") {
                reference::RATE_256K_S + reference::RATE_4MIB_S
            } else {
                reference::RATE_256K_S
            }),
        },
        Step {
            name: "npt",
            args: words("npt --tracer all --duration-ms 1000"),
            result: "npt/npt.json",
            estimate: secs(reference::NPT_S),
        },
        Step {
            name: "events",
            args: words(&format!(
                "events --tracer all --reads {} --rounds {}",
                s.reads, s.event_rounds
            )),
            result: "events/events.json",
            estimate: secs(
                f64::from(s.event_rounds)
                    * (reference::EVENTS_PER_ROUND_S
                        + reference::EVENTS_PER_1K_READS_S * s.reads as f64 / 1e3),
            ),
        },
        // A real program under tracing (Piotrowski's Benchmark 2): a kernel build, its
        // slowdown predicted before the traced runs.
        Step {
            name: "app",
            args: words(&format!(
                "app --workload kbuild -t {} --script {} --rounds 3 --warmup 0 \
                 --calibration-runs 2",
                s.app_tracers, s.app_scripts
            )),
            result: "app/app.json",
            estimate: secs(
                reference::APP_FIXED_S
                    + reference::APP_PER_CELL_ROUND_S
                        * 3.0
                        * (1.0
                            + (s.app_tracers.split(',').count() * s.app_scripts.split(',').count())
                                as f64),
            ),
        },
    ]
}

/// What the default scale leaves out for time, each with the command that measures it.
fn left_out(s: &Scale) -> Vec<String> {
    let full = Scale::full();
    let mut out = Vec::new();
    if s.hooks != full.hooks {
        out.push(
            "the usdt-nop5 and usdt-stepped hooks (nop5 optimization, a single-stepped site): \
             `rtrace-bench usdt --tracer all --hook usdt,usdt-nop5,usdt-stepped`"
                .to_owned(),
        );
    }
    if s.iterations < full.iterations || s.usdt_rounds < full.usdt_rounds {
        out.push(format!(
            "the thesis' 10^7 iterations per usdt case in 10 rounds ({} in {} here): `rtrace-bench usdt --tracer all -n 10000000`",
            s.iterations, s.usdt_rounds
        ));
    }
    if s.loops < full.loops || s.sweep_rounds < full.sweep_rounds {
        out.push(format!(
            "the thesis' 10^7 wake-ups per sweep configuration and 20 rounds ({} in {} here): \
             `rtrace-bench cyclictest-sweep --configs all --loops 10000000 --rounds 20`",
            s.loops, s.sweep_rounds
        ));
    }
    if s.rate_sizes_kb != full.rate_sizes_kb {
        out.push(
            "the lossless-rate search at 4 MiB per CPU (10 buffer-fulls per point take seconds \
             at each rate): `rtrace-bench rate --tracer all --buffer-sizes-kb 4096`"
                .to_owned(),
        );
    }
    if s.app_tracers != full.app_tracers || s.app_scripts != full.app_scripts {
        out.push(format!(
            "the kernel build under every tracer and script ({} on {} here; eBPF, bpftrace and perf take 26-53 s to come off syscalls:* each run), and pgbench: \
             `rtrace-bench app -t all,strace --script sys-enter,syscalls,sched,syscalls-sched` and `rtrace-bench app --workload pgbench -t all`",
            s.app_tracers, s.app_scripts
        ));
    }
    if s.event_rounds < full.event_rounds || s.reads < full.reads {
        out.push(format!(
            "the events suite's 5 rounds of 10^6 reads ({} rounds of {} here): \
             `rtrace-bench events --tracer all --reads 1000000 --rounds 5`",
            s.event_rounds, s.reads
        ));
    }
    out
}

/// Estimates of what is left, corrected by the experiments done so far (actual / estimated).
struct Eta {
    done_estimated: Duration,
    done_actual: Duration,
}

impl Eta {
    fn factor(&self) -> f64 {
        if self.done_estimated.is_zero() {
            1.0
        } else {
            self.done_actual.as_secs_f64() / self.done_estimated.as_secs_f64()
        }
    }

    fn left(&self, steps: &[Step]) -> Duration {
        steps
            .iter()
            .map(|s| s.estimate.mul_f64(self.factor()))
            .sum()
    }
}

/// `1 h 02 min`, `9 min 05 s`, `40 s`.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, s) => format!("{m} min {s:02} s"),
        (h, m, _) => format!("{h} h {m:02} min"),
    }
}

pub fn run(o: Options) -> Result<()> {
    let scale = Scale::of(&o);
    let steps = steps(&scale);
    let total: Duration = steps.iter().map(|s| s.estimate).sum();
    eprintln!(
        "xtask: main job: {} experiments, estimated {} on a 2-CPU machine like the reference (build and apt not included){}",
        steps.len(),
        human(total),
        if o.full { " — the thesis' scale" } else { "" }
    );
    let left_out = left_out(&scale);
    print_left_out(&left_out);
    if !o.no_install {
        packages::ensure()?;
    }
    exec(cargo().args(["build", "--workspace", "--release", "--bins", "--lib"]))?;
    let out = o.out.unwrap_or_else(|| crate::exec::results_dir("thesis"));
    let bench = crate::exec::target_dir()?.join("release/rtrace-bench");
    // Every step runs even if an earlier one failed (e.g. a tracer's event accounting did not
    // add up): its results are still written, and the failure is reported at the end.
    let mut failed = Vec::new();
    let mut eta = Eta {
        done_estimated: Duration::ZERO,
        done_actual: Duration::ZERO,
    };
    let job = Instant::now();
    for (i, step) in steps.iter().enumerate() {
        eprintln!(
            "xtask: [{}/{}] {}: estimated {}, about {} left",
            i + 1,
            steps.len(),
            step.name,
            human(step.estimate.mul_f64(eta.factor())),
            human(eta.left(&steps[i..]))
        );
        let started = Instant::now();
        let dir = out.join(Path::new(step.result).parent().expect("a directory"));
        if let Err(e) = exec(Command::new(&bench).args(&step.args).arg("--out").arg(dir)) {
            failed.push(format!("{}: {e:#}", step.name));
        }
        let took = started.elapsed();
        eta.done_estimated += step.estimate;
        eta.done_actual += took;
        eprintln!(
            "xtask: [{}/{}] {} took {} (estimated {}); job so far {}",
            i + 1,
            steps.len(),
            step.name,
            human(took),
            human(step.estimate),
            human(job.elapsed())
        );
    }
    let results: Vec<PathBuf> = steps
        .iter()
        .map(|s| out.join(s.result))
        .filter(|p| p.exists())
        .collect();
    if !results.is_empty() {
        let mut report = Command::new(&bench);
        report.arg("report").args(&results).arg("--out").arg(&out);
        for l in &left_out {
            report.arg("--left-out").arg(l);
        }
        if let Err(e) = exec(&mut report) {
            failed.push(format!("report: {e:#}"));
        }
    }
    eprintln!("xtask: experiments took {}", human(job.elapsed()));
    print_left_out(&left_out);
    eprintln!("xtask: results in {}", out.display());
    eprintln!("xtask: report: {}", out.join("index.html").display());
    if !failed.is_empty() {
        anyhow::bail!(
            "{} step(s) reported failures (their results and warnings are in the report):\n  {}",
            failed.len(),
            failed.join("\n  ")
        );
    }
    Ok(())
}

fn print_left_out(left_out: &[String]) {
    if left_out.is_empty() {
        return;
    }
    eprintln!("xtask: left out for time (cargo xtask thesis --full runs all of it):");
    for l in left_out {
        eprintln!("xtask:   {l}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(full: bool) -> Options {
        Options {
            iterations: 400_000,
            loops: 40_000,
            full,
            out: None,
            no_install: true,
        }
    }

    #[test]
    fn the_default_leaves_out_what_full_runs_and_says_how_to_run_it() {
        let default = Scale::of(&options(false));
        let lo = left_out(&default);
        assert_eq!(lo.len(), 6, "{lo:?}");
        assert!(lo.iter().all(|l| l.contains("`rtrace-bench ")), "{lo:?}");
        assert!(left_out(&Scale::of(&options(true))).is_empty());
    }

    #[test]
    fn full_is_the_thesis_scale_and_its_estimate_is_hours() {
        let full = Scale::of(&options(true));
        assert_eq!((full.iterations, full.loops), (10_000_000, 10_000_000));
        let total: Duration = steps(&full).iter().map(|s| s.estimate).sum();
        assert!(total > Duration::from_secs(3600), "{}", human(total));
        let quick: Duration = steps(&Scale::of(&options(false)))
            .iter()
            .map(|s| s.estimate)
            .sum();
        assert!(quick < Duration::from_secs(15 * 60), "{}", human(quick));
    }

    #[test]
    fn the_time_left_follows_how_the_first_steps_compared_with_their_estimates() {
        let s = steps(&Scale::of(&options(false)));
        let mut eta = Eta {
            done_estimated: Duration::ZERO,
            done_actual: Duration::ZERO,
        };
        let all = eta.left(&s);
        eta.done_estimated = Duration::from_secs(100);
        eta.done_actual = Duration::from_secs(150);
        assert_eq!(eta.left(&s), all.mul_f64(1.5));
        assert_eq!(human(Duration::from_secs(3725)), "1 h 02 min");
        assert_eq!(human(Duration::from_secs(545)), "9 min 05 s");
    }
}
