//! QEMU guests on Debian's PREEMPT_RT and PREEMPT_DYNAMIC kernels: `cargo xtask vm` runs one
//! rtrace-bench command (or a plan) in guests and copies the results out; [`ci_suites_on`] runs the
//! guest test plan (`xtask/guest/plan`) on both kernels for `cargo xtask ci`.
//!
//! Pipeline per kernel: resolve and download the kernel packages (`kernel.rs`), build the LTTng
//! modules against its headers (`lttng_modules.rs`), stage a newc initramfs with our init, the
//! plan and the binaries (`initramfs.rs`, `cpio.rs`), boot it under TCG (`qemu.rs`), read the
//! verdict, check the result files the guest wrote to the shared 9p directory (`results.rs`).
//! Downloads and builds are cached in `<target dir>/vm-cache`. More: xtask/guest/README.md.

mod cpio;
mod initramfs;
mod kernel;
mod lttng_modules;
mod qemu;
mod results;

use crate::exec::{cargo, exec, target_dir};
use anyhow::{bail, Context, Result};
use kernel::Kernel;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The plan `cargo xtask ci` runs in every guest.
const CI_PLAN: &str = include_str!("../../guest/plan");

/// Kernel command line of every guest. No `quiet`: a lockup's stack trace must reach the
/// console (quiet hides `dump_stack`'s warning-level lines). Every kind of hang becomes a
/// panic, which ends QEMU at once (`panic=-1` reboots, `-no-reboot` exits: "no verdict")
/// instead of a silent wait for the host's timeout: a soft lockup after 2 x watchdog_thresh =
/// 20 s, with every CPU's backtrace; a task blocked for 60 s; an RCU stall (21 s); an oops.
const GUEST_CMDLINE: &str = "console=ttyS0 panic=-1 oops=panic softlockup_panic=1 \
softlockup_all_cpu_backtrace=1 hung_task_panic=1 sysctl.kernel.hung_task_timeout_secs=60 \
sysctl.kernel.panic_on_rcu_stall=1";

/// The guest's console, kept beside its results (a CI artifact: the kernel's stack traces).
const CONSOLE_LOG: &str = "console.log";

/// Environment variables passed from the host into the guest plan.
const PASSED_ENV: &[&str] = &["RTRACE_GUEST_FAIL", "RTRACE_CHECK_TIMEOUT"];

#[derive(clap::Args)]
pub struct Options {
    /// Guest kernel(s): rt (Debian's PREEMPT_RT) or preempt (PREEMPT_DYNAMIC, preempt=full).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "rt")]
    kernel: Vec<Kernel>,
    /// Where the files written in the guest's working directory land; one subdirectory per
    /// kernel when several run. Default: results/vm-<timestamp>.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Use the release binaries as they are (no `cargo build --release`).
    #[arg(long)]
    no_build: bool,
    /// Seconds before a guest without verdict is killed (counts as failure).
    #[arg(long, default_value_t = 1200)]
    timeout: u64,
    /// Run the checks of a plan file instead of one command, judged as `cargo xtask ci` judges
    /// its own plan (xtask/guest/plan, whose header gives the syntax).
    #[arg(long, value_name = "FILE", conflicts_with = "args")]
    plan: Option<PathBuf>,
    /// The rtrace-bench command, after `--`, e.g. `-- usdt --tracer ftrace -n 5000`. Relative
    /// paths resolve in the output directory; without --json, usdt, count and cyclictest-sweep
    /// write `<command>-<kernel>.json`.
    #[arg(last = true, required_unless_present = "plan", value_name = "ARGS")]
    args: Vec<String>,
}

/// `cargo xtask vm`.
pub fn run(o: Options) -> Result<()> {
    if !o.no_build {
        exec(cargo().args(["build", "--workspace", "--release", "--bins", "--lib"]))?;
    }
    let mut kernels = o.kernel.clone();
    kernels.dedup();
    let out = o.out.unwrap_or_else(|| crate::exec::results_dir("vm"));
    let dest = |k: Kernel| {
        if kernels.len() > 1 {
            out.join(k.label())
        } else {
            out.clone()
        }
    };
    let plan = o
        .plan
        .as_ref()
        .map(|f| {
            std::fs::read_to_string(f)
                .with_context(|| format!("cannot read the plan {}", f.display()))
        })
        .transpose()?;
    // A plan file is judged as `cargo xtask ci` judges its own; one command's findings are notes.
    let judge = if plan.is_some() {
        Judge::Plan
    } else {
        Judge::Command
    };
    let started = Instant::now();
    let guests = prepare_guests(&kernels, &target_dir()?)?;
    eprintln!(
        "xtask: guest kernels ready in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    run_prepared(
        guests,
        |k| plan.clone().unwrap_or_else(|| command_plan(&o.args, k)),
        dest,
        judge,
        Duration::from_secs(o.timeout),
    )
}

/// The CI guests' kernels and modules, prepared ahead (downloads, LTTng module builds).
pub struct Prepared {
    guests: Result<Vec<Guest>>,
    took: Duration,
}

/// Prepares every CI kernel (see [`prepare_guests`]); `cargo xtask ci` calls it in a thread of
/// low priority while the host's root tests run, then [`ci_suites_on`].
pub fn prepare_ci() -> Prepared {
    let started = Instant::now();
    let guests = target_dir().and_then(|t| prepare_guests(&Kernel::ALL, &t));
    Prepared {
        guests,
        took: started.elapsed(),
    }
}

/// The guest suites of `cargo xtask ci`: its plan on every kernel prepared by [`prepare_ci`];
/// results under the cache.
pub fn ci_suites_on(prepared: Prepared, timeout: Duration) -> Result<()> {
    let cache = target_dir()?.join("vm-cache");
    let dest = |k: Kernel| cache.join(format!("guest-{}", k.label())).join("results");
    for k in Kernel::ALL {
        if dest(k).exists() {
            std::fs::remove_dir_all(dest(k))?;
        }
    }
    eprintln!(
        "xtask: guest kernels prepared in {:.0} s",
        prepared.took.as_secs_f64()
    );
    run_prepared(
        prepared.guests?,
        |_| CI_PLAN.to_owned(),
        dest,
        Judge::Plan,
        timeout,
    )
}

/// How strictly a guest run is judged beyond its verdict.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Judge {
    /// A test plan: a result file that does not fit its kernel (preemption model, emulation,
    /// sweep configurations unavailable or unaccounted) fails the run.
    Plan,
    /// A user's command: such findings are notes (e.g. `--configs all` in a guest without
    /// bpftrace).
    Command,
}

/// Downloads and module builds first: a broken cache fails before any guest boots. One
/// thread per kernel: one unpacks (xz, one core) while the other builds.
fn prepare_guests(kernels: &[Kernel], target: &Path) -> Result<Vec<Guest>> {
    each_in_a_thread(kernels, |&k| Guest::prepare(k, target))
}

/// `f` of every item, each in its own thread; the results in order, or the first error.
fn each_in_a_thread<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let f = &f;
    std::thread::scope(|s| {
        let threads: Vec<_> = items.iter().map(|i| s.spawn(move || f(i))).collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a thread of each_in_a_thread panicked"))
            .collect()
    })
}

/// Boots each prepared guest with its plan; the results of kernel `k` land in `dest(k)`. Fails
/// if a guest fails or gives no verdict (or, for [`Judge::Plan`], a result file is wrong).
fn run_prepared(
    guests: Vec<Guest>,
    plan: impl Fn(Kernel) -> String + Sync,
    dest: impl Fn(Kernel) -> PathBuf + Sync,
    judge: Judge,
    timeout: Duration,
) -> Result<()> {
    let started = Instant::now();
    // Each guest is one host thread (single-threaded TCG, see qemu.rs): on 2 cores both boot
    // at once.
    let reports = each_in_a_thread(&guests, |g| {
        g.run(&plan(g.kernel), &dest(g.kernel), judge, timeout)
    })?;
    eprintln!(
        "xtask: {} guest(s) in {:.0} s:",
        reports.len(),
        started.elapsed().as_secs_f64()
    );
    for r in &reports {
        r.print();
    }
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| !r.passed())
        .map(|r| {
            format!(
                "{} (console: {})",
                r.kernel.label(),
                r.results.join(CONSOLE_LOG).display()
            )
        })
        .collect();
    if !failed.is_empty() {
        bail!("guest run failed on {}", failed.join(", "));
    }
    Ok(())
}

/// A kernel with its modules, ready to boot with any plan.
struct Guest {
    kernel: Kernel,
    unpacked: kernel::Unpacked,
    lttng_modules: PathBuf,
    bin_dir: PathBuf,
    /// `<cache>/guest-<label>`: initramfs, console log, results of the CI plan.
    work: PathBuf,
}

impl Guest {
    fn prepare(kernel: Kernel, target: &Path) -> Result<Guest> {
        let cache = target.join("vm-cache");
        let unpacked = kernel::prepare(kernel, &cache)?;
        let lttng_modules = lttng_modules::prepare(&unpacked, &cache)?;
        Ok(Guest {
            kernel,
            unpacked,
            lttng_modules,
            bin_dir: target.join("release"),
            work: cache.join(format!("guest-{}", kernel.label())),
        })
    }

    /// Boots with `plan`; the guest's results land in `dest`.
    fn run(&self, plan: &str, dest: &Path, judge: Judge, timeout: Duration) -> Result<Report> {
        std::fs::create_dir_all(&self.work)?;
        let mut env = vec![
            ("RTRACE_KERNEL".to_owned(), self.kernel.label().to_owned()),
            (
                "RTRACE_EXPECT_PREEMPTION".to_owned(),
                self.kernel.expected_preemption().to_owned(),
            ),
        ];
        for &name in PASSED_ENV {
            if let Ok(v) = std::env::var(name) {
                env.push((name.to_owned(), v));
            }
        }
        let staged = Instant::now();
        let initrd = initramfs::build(
            &initramfs::Contents {
                kernel: &self.unpacked,
                lttng_modules: &self.lttng_modules,
                bin_dir: &self.bin_dir,
                plan,
                env: &env,
            },
            &self.work,
        )?;
        eprintln!(
            "xtask: initramfs for {} ({} MB) in {:.1} s",
            self.kernel.label(),
            std::fs::metadata(&initrd)?.len() >> 20,
            staged.elapsed().as_secs_f64()
        );
        std::fs::create_dir_all(dest)?;
        let dest = &dest
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", dest.display()))?;
        let outcome = qemu::boot(&qemu::Boot {
            label: self.kernel.label(),
            kernel: &self.unpacked.boot_image,
            initrd: &initrd,
            cmdline: format!("{GUEST_CMDLINE} {}", self.kernel.cmdline())
                .trim()
                .to_owned(),
            share: dest,
            console_log: &dest.join(CONSOLE_LOG),
            timeout,
        })?;
        // `init: pending NAME (WHY): COMMAND`
        let pending: Vec<String> = outcome
            .console
            .iter()
            .filter_map(|l| l.trim().strip_prefix("init: pending "))
            .filter_map(|l| l.split_once(" (").map(|(n, _)| n.to_owned()))
            .collect();
        let mut checked = results::check(dest, self.kernel, &pending)?;
        if judge == Judge::Command {
            let notes = checked.problems.drain(..).map(|p| format!("note: {p}"));
            checked.files.extend(notes);
        }
        Ok(Report {
            kernel: self.kernel,
            release: self.unpacked.release.clone(),
            outcome,
            results: dest.to_path_buf(),
            files: checked.files,
            problems: checked.problems,
        })
    }
}

/// What one guest run showed.
struct Report {
    kernel: Kernel,
    release: String,
    outcome: qemu::Outcome,
    results: PathBuf,
    /// One line per result file (preemption, emulated).
    files: Vec<String>,
    /// Host-side findings that fail the run.
    problems: Vec<String>,
}

impl Report {
    fn passed(&self) -> bool {
        self.outcome.verdict == qemu::Verdict::Success && self.problems.is_empty()
    }

    /// The console line starting with `prefix`.
    fn said(&self, prefix: &str) -> Option<&str> {
        self.outcome
            .console
            .iter()
            .map(|l| l.trim())
            .find(|l| l.starts_with(prefix))
    }

    fn print(&self) {
        let preemption = self
            .said("init: kernel ")
            .and_then(|l| l.split_once(" preemption "))
            .map_or("unknown (no init line)", |(_, p)| {
                p.split_once(" (up ").map_or(p, |(p, _)| p)
            });
        let verdict = match &self.outcome.verdict {
            qemu::Verdict::Success | qemu::Verdict::Failure => self
                .said("init: success")
                .or_else(|| self.said("init: failure"))
                .unwrap_or("(verdict line missing)")
                .to_owned(),
            qemu::Verdict::None(why) => format!("no verdict: {why}"),
        };
        eprintln!(
            "xtask: guest {} ({}, {preemption}): {verdict} [{:.0} s]",
            self.kernel.label(),
            self.release,
            self.outcome.elapsed.as_secs_f64()
        );
        for l in ["init: pending, failing", "init: pending, passing"] {
            if let Some(l) = self.said(l) {
                eprintln!("xtask:   {}", l.trim_start_matches("init: "));
            }
        }
        for f in &self.files {
            eprintln!("xtask:   {f}");
        }
        for p in &self.problems {
            eprintln!("xtask:   FAILED {p}");
        }
        for l in kernel_trouble(&self.outcome.console) {
            eprintln!("xtask:   kernel: {l}");
        }
        eprintln!("xtask:   results: {}", self.results.display());
    }
}

/// The console lines where the guest kernel reported a lockup, stall, oops or panic (the first
/// few; the stack traces follow them in the console log).
fn kernel_trouble(console: &[String]) -> Vec<&str> {
    const MARKS: &[&str] = &[
        "BUG:",
        "Kernel panic",
        "rcu: INFO:",
        "blocked for more than",
        "WARNING: CPU:",
        "Oops:",
        "general protection fault",
    ];
    console
        .iter()
        .map(|l| l.trim())
        .filter(|l| MARKS.iter().any(|m| l.contains(m)))
        .take(6)
        .collect()
}

/// Quotes `s` for sh.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=.,:/+@%".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The plan of `cargo xtask vm`: one check running rtrace-bench with `args`.
fn command_plan(args: &[String], kernel: Kernel) -> String {
    let mut args = args.to_vec();
    let sub = args.first().cloned().unwrap_or_default();
    let writes_json = ["usdt", "count", "cyclictest-sweep"].contains(&sub.as_str());
    if writes_json
        && !args
            .iter()
            .any(|a| a == "--json" || a.starts_with("--json="))
    {
        // `count` takes the command after `--`: options go before it.
        let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
        args.splice(
            at..at,
            [
                "--json".to_owned(),
                format!("{sub}-{}.json", kernel.label()),
            ],
        );
    }
    let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
    format!(
        "# cargo xtask vm: one rtrace-bench command in {}\ncheck rtrace-bench rtrace-bench {}\n",
        kernel.label(),
        quoted.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("usdt"), "usdt");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn vm_plan_adds_json_before_the_command() {
        let args: Vec<String> = ["count", "-p", "a:b", "--", "prog", "x y"]
            .map(String::from)
            .to_vec();
        let plan = command_plan(&args, Kernel::Rt);
        assert!(plan.contains(
            "check rtrace-bench rtrace-bench count -p a:b --json count-rt.json -- prog 'x y'\n"
        ));
        let args: Vec<String> = ["usdt", "--json", "r.json"].map(String::from).to_vec();
        assert!(command_plan(&args, Kernel::Preempt).contains("usdt --json r.json\n"));
        let args: Vec<String> = ["probes", "/opt/rtrace/workload"]
            .map(String::from)
            .to_vec();
        assert!(!command_plan(&args, Kernel::Rt).contains("--json"));
    }
}
