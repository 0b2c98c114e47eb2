//! The strace process: started on a pid (pinned from its exec, dying with the thread that
//! started it, tagged with the run in `RTRACE_BENCH_RUN`), ready once it says
//! `PROGRAM: Process PID attached`, followed out when its process exits, killed if dropped.

use anyhow::{anyhow, bail, Result};
use nix::sys::signal::Signal;
use rtrace_tracer::tool::{NotReady, Spawn, Tool};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait for strace to attach (it needs no compilation: well under a second).
const ATTACH_TIMEOUT: Duration = Duration::from_secs(20);
/// How long strace may take to follow its process out once the process has exited.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// After SIGINT strace detaches and flushes its output.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running strace attached to its process.
pub struct Strace {
    tool: Tool,
}

impl Strace {
    /// Starts `program -f -o output [-e filter] -p pid` on `cpus` (none: anywhere; pinned before it
    /// attaches: every stop of its process wakes it there) and returns once strace reports the
    /// process attached. It dies with us: a strace left behind stops its process at every call.
    pub fn attach(
        program: &Path,
        output: &Path,
        filter: Option<&str>,
        pid: u32,
        cpus: &[usize],
    ) -> Result<Strace> {
        let args = command_line(output, filter, pid);
        // strace names itself by its argv[0]: `/usr/bin/strace: Process 123 attached`.
        let attached = format!(": Process {pid} attached");
        let mut tool = Tool::spawn(Spawn {
            ready: Some(Arc::new(move |l: &str| l.ends_with(&attached))),
            ..Spawn::new("strace", "strace", program, args, cpus)
        })?;
        match tool.wait_ready(ATTACH_TIMEOUT, STOP_TIMEOUT) {
            Ok(()) => Ok(Strace { tool }),
            Err(NotReady::Exited(e)) => Err(anyhow!(
                "strace failed to attach to process {pid} ({}): {}",
                e.status,
                e.last_words().unwrap_or(NOTHING)
            )),
            Err(NotReady::Timeout(lines)) => bail!(
                "strace did not attach to process {pid} within {} s: check the system load (strace said: {})",
                ATTACH_TIMEOUT.as_secs(),
                lines.join(" / ")
            ),
        }
    }

    /// Waits for strace to follow its process out (the process has exited); SIGINT (strace
    /// detaches) if it still runs after [`EXIT_GRACE`]. An error unless strace exited cleanly.
    pub fn stop(mut self) -> Result<()> {
        let deadline = Instant::now() + EXIT_GRACE;
        while self.tool.try_wait()?.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let detached = self.tool.try_wait()?.is_none();
        if detached {
            self.tool.signal(Signal::SIGINT)?;
        }
        let Some(exited) = self.tool.wait(STOP_TIMEOUT)? else {
            let (_, stderr) = self.tool.kill();
            bail!(
                "strace did not exit within {} s of SIGINT and was killed (its last words: {})",
                STOP_TIMEOUT.as_secs(),
                stderr.last().map_or(NOTHING, String::as_str)
            );
        };
        // Detached by SIGINT, strace 6.1 exits with 128 + SIGINT (measured).
        let status = exited.status;
        let interrupted = detached && status.code() == Some(128 + Signal::SIGINT as i32);
        if !status.success() && !interrupted {
            bail!(
                "strace failed ({status}): {}",
                exited.last_words().unwrap_or(NOTHING)
            );
        }
        Ok(())
    }
}

/// Said when strace said nothing.
const NOTHING: &str = "nothing on stderr";

/// strace's arguments: `-f -o OUTPUT [-e FILTER] -p PID`.
pub fn command_line(output: &Path, filter: Option<&str>, pid: u32) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec!["-f".into(), "-o".into(), output.into()];
    if let Some(f) = filter {
        args.push("-e".into());
        args.push(f.into());
    }
    args.push("-p".into());
    args.push(pid.to_string().into());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_comes_before_the_pid() {
        let a = command_line(Path::new("/o/f"), Some("trace=?read"), 7);
        let s: Vec<String> = a.iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(s.join(" "), "-f -o /o/f -e trace=?read -p 7");
        assert_eq!(command_line(Path::new("/dev/null"), None, 7).len(), 5);
    }
}
