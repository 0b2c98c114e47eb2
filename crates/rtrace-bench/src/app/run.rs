//! One timed run of a program: started held before its exec (`__hold-exec`), the tracer
//! attached (timed), released, waited for with `wait4` (its tree's CPU time), the machine's busy
//! time read around it from `/proc/stat`, then the tracer finished (its exit, timed).

use super::workload::Timed;
use anyhow::{bail, Context, Result};
use procfs::CurrentSI;
use rtrace_measure::app::AppRun;
use rtrace_tracer::{Target, Tracer};
use std::io::Write;
use std::process::Stdio;
use std::time::Instant;

/// What a timed run gives besides its [`AppRun`]: the command's output.
pub struct Ran {
    pub run: AppRun,
    pub stdout: String,
    pub stderr: String,
}

/// Busy time of every CPU since boot (ns): user, nice, system, irq, softirq and steal.
pub fn machine_busy_ns() -> Result<u64> {
    let t = procfs::KernelStats::current()
        .context("cannot read /proc/stat")?
        .total;
    let ticks = t.user
        + t.nice
        + t.system
        + t.irq.unwrap_or(0)
        + t.softirq.unwrap_or(0)
        + t.steal.unwrap_or(0);
    Ok(ticks * 1_000_000_000 / procfs::ticks_per_second())
}

/// A tracer and the target it attaches with, given the command's pid (for tracers that attach
/// to a process).
pub type Traced<'a> = (&'a dyn Tracer, &'a dyn Fn(Option<u32>) -> Target);

/// Runs `cmd` once on `cpus` (every CPU: not the harness's, which it would inherit), traced by
/// `tracer` on the target `target(pid)` makes when given; `outside` reads the workload's CPU
/// time outside the command's tree.
pub fn timed(
    cmd: &Timed,
    tracer: Option<Traced>,
    outside: &dyn Fn() -> Result<Option<u64>>,
    scratch: &std::path::Path,
    cpus: &[usize],
) -> Result<Ran> {
    let (read_end, write_end) = nix::unistd::pipe().context("cannot make a pipe")?;
    let mut c = crate::hold::held_command(&cmd.argv, &cmd.env, &read_end, Some((cpus, None)))?;
    if let Some(dir) = &cmd.cwd {
        c.current_dir(dir);
    }
    let out_path = scratch.join("stdout.txt");
    let err_path = scratch.join("stderr.txt");
    let file = |p: &std::path::Path| {
        std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))
    };
    c.stdin(Stdio::null())
        .stdout(file(&out_path)?)
        .stderr(file(&err_path)?);
    let child = c
        .spawn()
        .with_context(|| format!("cannot start `{}`", cmd.argv.join(" ")))?;
    drop(read_end);
    let pid = child.id();
    let _watched = rtrace_measure::spawn::watch(pid);
    let kill = || {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = wait4(pid);
    };
    let mut attached = None;
    let mut attach_ns = None;
    if let Some((t, target)) = tracer {
        let at = Instant::now();
        let pid = t.attaches_to_process().then_some(pid);
        match t.attach(&target(pid)) {
            Ok(a) => attached = Some(a),
            Err(e) => {
                kill();
                return Err(e);
            }
        }
        attach_ns = Some(at.elapsed().as_nanos() as u64);
    }
    let outside0 = outside()?;
    let busy0 = machine_busy_ns()?;
    let start = Instant::now();
    let mut go = std::fs::File::from(write_end);
    if let Err(e) = go.write_all(b"g") {
        kill();
        return Err(e).context("cannot release the command");
    }
    drop(go);
    let (status, cpu) = wait4(pid)?;
    let wall_ns = start.elapsed().as_nanos() as u64;
    let busy1 = machine_busy_ns()?;
    let outside1 = outside()?;
    let (mut events, mut by_probe, mut exit_ns, mut exit_cpu) = (None, Vec::new(), None, None);
    if let Some(a) = attached {
        let at = Instant::now();
        let (stats, probes) = a.finish_by_probe()?;
        exit_ns = Some(at.elapsed().as_nanos() as u64);
        exit_cpu = Some(machine_busy_ns()?.saturating_sub(busy1));
        events = Some(stats);
        by_probe = probes;
    }
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "`{}` failed ({status}): {}",
            cmd.argv.join(" "),
            tail.join(" | ")
        );
    }
    let outside_ns = match (outside0, outside1) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    Ok(Ran {
        run: AppRun {
            tracer: String::new(),
            script: None,
            round: 0,
            warmup: false,
            wall_ns,
            cpu_ns: cpu + outside_ns,
            machine_cpu_ns: busy1.saturating_sub(busy0),
            attach_ns,
            exit_ns,
            exit_machine_cpu_ns: exit_cpu,
            events,
            by_probe,
            metrics: Vec::new(),
            ground_truth: None,
        },
        stdout,
        stderr,
    })
}

/// Waits for `pid`: its exit status and its tree's CPU time (ns, user + system of it and of
/// every descendant it waited for).
fn wait4(pid: u32) -> Result<(std::process::ExitStatus, u64)> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    // SAFETY: a plain syscall on our own child with pointers to locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
        if r == pid as i32 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("waiting for the command");
        }
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok((
        std::process::ExitStatus::from_raw(status),
        ns(usage.ru_utime) + ns(usage.ru_stime),
    ))
}
