//! Where record-mode events go: one text line per event in the run's output directory.

use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::skel;

/// Header of the events file; one line per event follows, fields separated by a space.
pub const EVENTS_HEADER: &str = "# ts_ns cpu pid arg";

/// Writes events as they are consumed and counts them. A write error stops the counting (an
/// event that is not in the file is not recorded) and is reported by [`EventSink::finish`].
pub struct EventSink {
    path: PathBuf,
    out: BufWriter<File>,
    written: u64,
    malformed: u64,
    error: Option<std::io::Error>,
}

impl EventSink {
    pub fn create(path: &Path) -> Result<EventSink> {
        let file = File::create(path)
            .with_context(|| format!("cannot create {} (check --out-dir)", path.display()))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        writeln!(out, "{EVENTS_HEADER}")
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(EventSink {
            path: path.to_owned(),
            out,
            written: 0,
            malformed: 0,
            error: None,
        })
    }

    /// Ring-buffer callback body: one raw record. Always returns 0 so libbpf keeps consuming.
    pub fn push(&mut self, data: &[u8]) -> i32 {
        if self.error.is_some() {
            return 0;
        }
        let Some(e) = skel::from_bytes::<skel::types::rtrace_event>(data) else {
            self.malformed += 1;
            return 0;
        };
        match writeln!(self.out, "{} {} {} {}", e.ts_ns, e.cpu, e.pid, e.arg) {
            Ok(()) => self.written += 1,
            Err(err) => self.error = Some(err),
        }
        0
    }

    /// Flushes the file; returns the number of events written.
    pub fn finish(mut self) -> Result<u64> {
        if let Some(err) = self.error.take() {
            return Err(err).with_context(|| {
                format!(
                    "writing events to {} failed after {} events (free disk space or pick another --out-dir)",
                    self.path.display(),
                    self.written
                )
            });
        }
        anyhow::ensure!(
            self.malformed == 0,
            "{} ring-buffer records were shorter than an event: rebuild rtrace-bench (BPF object and loader disagree)",
            self.malformed
        );
        self.out
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(ts: u64, arg: i64, cpu: u32, pid: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ts.to_ne_bytes());
        v.extend_from_slice(&arg.to_ne_bytes());
        v.extend_from_slice(&cpu.to_ne_bytes());
        v.extend_from_slice(&pid.to_ne_bytes());
        v
    }

    #[test]
    fn writes_one_line_per_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.txt");
        let mut sink = EventSink::create(&path).unwrap();
        assert_eq!(sink.push(&raw(10, -3, 1, 42)), 0);
        assert_eq!(sink.push(&raw(11, 7, 0, 42)), 0);
        assert_eq!(sink.finish().unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{EVENTS_HEADER}\n10 1 42 -3\n11 0 42 7\n"));
    }

    #[test]
    fn short_records_are_an_error_not_a_silent_drop() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = EventSink::create(&dir.path().join("e.txt")).unwrap();
        sink.push(&[1, 2, 3]);
        assert!(sink.finish().is_err());
    }
}
