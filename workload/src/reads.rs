//! `rtrace-bench events`' loop: `reads` 1-byte `read(2)` calls from `/dev/zero` through libc's
//! `read` (what `uprobe:libc:read` hooks), timed on the TSC as a whole. Everything else (opening
//! the file, calibrating the TSC) happens before the ready message, and "go" is read with
//! `readv(2)`: after the ready message the process makes no other `read` call, so every tracer
//! must see exactly `reads` events of it.

use crate::tsc;
use anyhow::{bail, Context, Result};
use rtrace_protocol::{ReadsConfig, ReadsDone};
use std::os::fd::AsRawFd;
use std::time::Duration;

pub fn run(c: &ReadsConfig, ready: impl FnOnce() -> Result<()>) -> Result<ReadsDone> {
    let zero = std::fs::File::open("/dev/zero").context("cannot open /dev/zero")?;
    let fd = zero.as_raw_fd();
    let tsc_hz = tsc::calibrate(Duration::from_millis(100));
    let comm = std::fs::read_to_string("/proc/self/comm")
        .context("cannot read /proc/self/comm")?
        .trim_end()
        .to_owned();
    let mut byte = [0u8; 1];
    ready()?;
    let start = tsc::start();
    for i in 0..c.reads {
        // SAFETY: one byte into a one-byte buffer that lives across the call.
        let n = unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) };
        if n != 1 {
            bail!(
                "read {i} of /dev/zero returned {n}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    let end = tsc::stop();
    Ok(ReadsDone {
        reads: c.reads,
        elapsed_ns: ((end - start) as f64 * 1e9 / tsc_hz) as u64,
        comm,
    })
}

/// Waits for the harness's "go" byte with `readv(2)`, not `read(2)`.
pub fn wait_for_go_without_read() -> Result<()> {
    let mut b = [0u8; 1];
    let n = nix::sys::uio::readv(std::io::stdin(), &mut [std::io::IoSliceMut::new(&mut b)])?;
    if n != 1 {
        bail!("harness closed stdin before go");
    }
    Ok(())
}
