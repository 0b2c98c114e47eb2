//! `__hold-exec`: the process `count` starts. It waits for one byte on fd 3 (the tracer attaches
//! to its pid meanwhile), closes fd 3, and execs the command: same pid, tracer already on.

use crate::cli::HoldExecArgs;
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;

pub const GO_FD: i32 = 3;

pub fn run(args: &HoldExecArgs) -> Result<i32> {
    // SAFETY: `count` hands us fd 3 (a pipe read end) and nobody else owns it.
    let mut go = unsafe { std::fs::File::from_raw_fd(GO_FD) };
    let mut b = [0u8; 1];
    if go.read(&mut b).context("waiting for go")? != 1 {
        bail!("rtrace-bench count went away before starting the command");
    }
    drop(go);
    let err = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .exec();
    bail!("cannot run `{}`: {err}", args.command[0])
}
