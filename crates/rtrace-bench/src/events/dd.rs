//! Gregg's workload, `dd if=/dev/zero of=/dev/null bs=1 count=N`, pinned to the measured CPU (and
//! SCHED_FIFO with `--priority`), held before its exec until the tracer is attached to its pid
//! (`__hold-exec`, which waits with `readv(2)`: no `read` of the hold reaches a tracer), timed
//! from "go" to its exit. Its ground truth is its own count of blocks copied ("N+0 records in").

use super::Ran;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::process::Stdio;

/// Starts dd held, lets `attach` put the tracer on its pid, releases and times it.
pub fn run<A>(
    cpu: usize,
    priority: Option<i32>,
    blocks: u64,
    attach: impl FnOnce(u32) -> Result<A>,
) -> Result<(Ran, A)> {
    let (read_end, write_end) = nix::unistd::pipe().context("cannot make a pipe")?;
    let count = format!("count={blocks}");
    let command = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", &count].map(String::from);
    let env = [("LC_ALL".into(), "C".into())];
    let cpus = [cpu];
    let on = Some((&cpus[..], priority));
    let mut cmd = crate::hold::held_command(&command, &env, &read_end, on)?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .context("cannot start dd (coreutils): check that `dd` is on PATH")?;
    drop(read_end);
    let pid = child.id();
    let _watched = rtrace_measure::spawn::watch(pid);
    let attached = match attach(pid) {
        Ok(a) => a,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    let start = std::time::Instant::now();
    let mut go = std::fs::File::from(write_end);
    go.write_all(b"g").context("cannot release dd")?;
    drop(go);
    let out = child.wait_with_output().context("waiting for dd")?;
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("dd failed ({}): {}", out.status, stderr.trim());
    }
    let copied = records_in(&stderr)
        .with_context(|| format!("dd printed no record count: {}", stderr.trim()))?;
    if copied != blocks {
        bail!("dd copied {copied} blocks of the {blocks} asked");
    }
    Ok((
        Ran {
            pid,
            comm: "dd".into(),
            reads: copied,
            elapsed_ns,
        },
        attached,
    ))
}

/// Full blocks read, from dd's `N+M records in`.
fn records_in(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .find(|l| l.ends_with("records in"))?
        .split('+')
        .next()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_is_dd_s_full_block_count() {
        let s = "1000000+0 records in\n1000000+0 records out\n1000000 bytes (1.0 MB, 977 KiB) copied, 0.5 s, 2.0 MB/s\n";
        assert_eq!(records_in(s), Some(1_000_000));
        assert_eq!(records_in("dd: invalid number\n"), None);
    }
}
