//! Stream mode: a consumer thread on a non-measured CPU drains each CPU's `trace_pipe_raw` of our
//! instance into `ftrace-cpuN.raw` files, so every event is kept (the thesis' "storing all logs").

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
                pin_to(&pin);
                drain_until(pipes, &flag)
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

fn pin_to(cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        let _ = set.set(c);
    }
    let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
}

fn drain_until(mut pipes: Vec<Pipe>, stop: &AtomicBool) -> Result<u64> {
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
        if moved == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
