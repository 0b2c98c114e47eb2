//! Stream mode: a consumer thread on a non-measured CPU drains each CPU's `trace_pipe_raw` of our
//! instance into `ftrace-cpuN.raw` files, so every event is kept (the thesis' "storing all logs").

use crate::pages::{COMMIT_MASK, PAGE, PAGE_HEADER};
use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Consumer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<u64>>>,
}

struct Pipe {
    from: File,
    to: File,
}

impl Consumer {
    /// Opens every `per_cpu/cpuN/trace_pipe_raw` of the instance at `instance_dir` and starts
    /// draining them into `out_dir` from a thread pinned to `consumer_cpus`.
    pub fn start(
        instance_dir: &Path,
        cpus: &[usize],
        out_dir: &Path,
        consumer_cpus: &[usize],
        poll: Option<Duration>,
    ) -> Result<Consumer> {
        std::fs::create_dir_all(out_dir)
            .with_context(|| format!("cannot create {}", out_dir.display()))?;
        let pipes = cpus
            .iter()
            .map(|c| {
                let src: PathBuf = instance_dir.join(format!("per_cpu/cpu{c}/trace_pipe_raw"));
                let from = OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&src)
                    .with_context(|| format!("cannot open {}", src.display()))?;
                let dst = out_dir.join(format!("ftrace-cpu{c}.raw"));
                let to = File::create(&dst)
                    .with_context(|| format!("cannot create {}", dst.display()))?;
                Ok(Pipe { from, to })
            })
            .collect::<Result<Vec<_>>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let pin = consumer_cpus.to_vec();
        let handle = std::thread::Builder::new()
            .name("ftrace-consumer".into())
            .spawn(move || {
                let _ = rtrace_tracer::pin(0, &pin, "the ftrace consumer");
                drain_until(pipes, &flag, poll)
            })
            .context("cannot start the ftrace consumer thread")?;
        Ok(Consumer {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops after a final full drain; returns the bytes written. Call after disabling events.
    pub fn finish(mut self) -> Result<u64> {
        self.join()
    }

    fn join(&mut self) -> Result<u64> {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("ftrace consumer thread panicked"))?,
            None => Ok(0),
        }
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// Drains `pipes` until `stop`, waiting `poll` between passes (else [`BETWEEN_PASSES`] after a
/// pass that found data, [`IDLE`] after one that found none).
fn drain_until(mut pipes: Vec<Pipe>, stop: &AtomicBool, poll: Option<Duration>) -> Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        // Read the flag before draining: once set, one more full pass empties the buffers.
        let last = stop.load(Ordering::SeqCst);
        let mut moved = 0u64;
        for p in &mut pipes {
            loop {
                match p.from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        p.to.write_all(&buf[..n])
                            .context("cannot write trace data")?;
                        moved += n as u64;
                        // A page the writer was still filling: the rest comes next pass,
                        // on full pages (but the last pass drains everything).
                        if !last && partial_page(&buf[..n]) {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e).context("cannot read trace_pipe_raw"),
                }
            }
        }
        total += moved;
        if last && moved == 0 {
            return Ok(total);
        }
        if !last {
            std::thread::sleep(poll.unwrap_or(if moved == 0 { IDLE } else { BETWEEN_PASSES }));
        }
    }
}

/// Pause after a pass that found data. `trace_pipe_raw` hands over whole 4 KiB pages, however
/// few events a page holds, and reading the page the writer is on takes it from the writer:
/// draining until the pipe was empty chased the writer page by page, ~7 events a page (~570
/// bytes per event at a million events/s). Each pass now stops at the first partial page and
/// the next comes 5 ms later, when ~40 more pages are full; the 4 MiB per-CPU buffer holds
/// ~80 ms of events.
const BETWEEN_PASSES: Duration = Duration::from_millis(5);

/// Room an event may need: a page with more free space than this was not full.
const LARGEST_EVENT: usize = 256;

/// Whether `page` (one page read from `trace_pipe_raw`) was taken before it was full.
fn partial_page(page: &[u8]) -> bool {
    let Some(word) = page.get(8..PAGE_HEADER) else {
        return true;
    };
    let commit = u64::from_le_bytes(word.try_into().expect("8 bytes")) & COMMIT_MASK;
    (commit as usize) + PAGE_HEADER + LARGEST_EVENT < PAGE.min(page.len())
}
/// Pause after a pass that found nothing.
const IDLE: Duration = Duration::from_millis(20);

#[cfg(test)]
mod tests {
    use super::*;

    fn page(commit: u64) -> Vec<u8> {
        let mut p = vec![0u8; PAGE];
        p[8..16].copy_from_slice(&commit.to_le_bytes());
        p
    }

    #[test]
    fn only_pages_the_writer_left_are_full() {
        assert!(!partial_page(&page(4060)));
        assert!(
            !partial_page(&page(4060 | 1 << 31)),
            "missed-events flag ignored"
        );
        assert!(partial_page(&page(112)));
        assert!(partial_page(&[0u8; 4]));
    }
}
