//! `__hold-exec`: the process `count` (and `events` for dd) starts. It waits for one byte on
//! fd 3 (the tracer attaches to its pid meanwhile), closes fd 3, and execs the command: same
//! pid, tracer already on. It waits with `readv(2)`, not `read(2)`: a tracer of `read` (the
//! events suite's) sees nothing of the hold, only the command.

use anyhow::{bail, Context, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

pub const GO_FD: i32 = 3;

pub fn run(env: &[String], command: &[String]) -> Result<i32> {
    // SAFETY: `count` hands us fd 3 (a pipe read end) and nobody else owns it.
    let go = unsafe { std::fs::File::from_raw_fd(GO_FD) };
    let mut b = [0u8; 1];
    let n = nix::sys::uio::readv(&go, &mut [std::io::IoSliceMut::new(&mut b)])
        .context("waiting for go")?;
    if n != 1 {
        bail!("rtrace-bench count went away before starting the command");
    }
    drop(go);
    let mut exec = std::process::Command::new(&command[0]);
    exec.args(&command[1..]);
    for pair in env {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--env {pair}: expected KEY=VALUE"))?;
        exec.env(key, value);
    }
    let err = exec.exec();
    bail!("cannot run `{}`: {err}", command[0])
}

/// `rtrace-bench __hold-exec -- CMD...` with the pipe's `read_end` as fd 3: once spawned, it
/// waits for one byte on that pipe, then execs the command (same pid, so a tracer can attach to
/// it first) with `env` added to its environment. It dies with us (PR_SET_PDEATHSIG survives
/// the exec). `on`: the CPUs it runs on from the start (not the harness's, which it would
/// inherit), and its SCHED_FIFO priority if any (the hold's exec keeps both). Drop `read_end` after spawn.
pub fn held_command(
    command: &[String],
    env: &[(String, String)],
    read_end: &OwnedFd,
    on: Option<(&[usize], Option<i32>)>,
) -> Result<Command> {
    let me = std::env::current_exe()?;
    let fd = read_end.as_raw_fd();
    let mut cmd = Command::new(me);
    cmd.arg("__hold-exec");
    for (k, v) in env {
        cmd.arg(format!("--env={k}={v}"));
    }
    cmd.arg("--").args(command);
    let on = on.map(|(cpus, priority)| {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus {
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        (set, priority)
    });
    // SAFETY: dup2, fcntl, prctl, sched_setaffinity and sched_setscheduler are
    // async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || {
            if let Some((set, priority)) = on {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(p) = priority {
                    let param = libc::sched_param { sched_priority: p };
                    if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            // dup2 onto itself keeps O_CLOEXEC: clear it explicitly in that case.
            let moved = if fd == GO_FD {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, GO_FD)
            };
            if moved < 0 || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(cmd)
}

/// Makes `cmd` run on every usable CPU, not only the harness's, which it would inherit (a
/// server it starts, PostgreSQL's, keeps that).
pub fn on_every_cpu(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in crate::cpus::usable_at_start() {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: sched_setaffinity is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
