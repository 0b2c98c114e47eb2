//! ftrace's trace clock (`trace_clock`): which clocks the running kernel offers, the check of a
//! requested one against them, and what an instance was given. Gebai & Dagenais (Figs 5/6) show
//! that ftrace's cost per event under several CPUs depends on it: `global` takes a spin lock
//! shared by every CPU, `counter` an atomic increment, `local` and `x86-tsc` neither.
//!
//! Only a private instance's `trace_clock` is ever written; the top-level file is only read
//! (for the list of clocks, before any instance exists).

use crate::tracefs::Tracefs;
use anyhow::{bail, Context, Result};

/// A `trace_clock` file's contents: every clock the kernel offers, in its order, and the one
/// selected (`[local] global counter ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceClocks {
    pub available: Vec<String>,
    /// The bracketed one; `None` if the file brackets none.
    pub current: Option<String>,
}

impl TraceClocks {
    /// Parses a `trace_clock` file: clocks separated by white space, the current one in
    /// brackets.
    pub fn parse(text: &str) -> TraceClocks {
        let mut current = None;
        let available = text
            .split_whitespace()
            .map(
                |w| match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                    Some(c) => {
                        current = Some(c.to_owned());
                        c.to_owned()
                    }
                    None => w.to_owned(),
                },
            )
            .collect();
        TraceClocks { available, current }
    }

    /// `clock` if the kernel offers it; else the one-line error naming the choices.
    pub fn check(&self, clock: &str) -> std::result::Result<(), ClockError> {
        if self.available.iter().any(|c| c == clock) {
            return Ok(());
        }
        Err(ClockError {
            clock: clock.to_owned(),
            choices: self.available.join(", "),
        })
    }
}

/// A clock the kernel does not offer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--ftrace-clock {clock} is not a trace clock of this kernel: pass one of {choices} (the kernel's tracefs trace_clock file)")]
pub struct ClockError {
    pub clock: String,
    pub choices: String,
}

/// The clocks of the running kernel, from the top-level `trace_clock` (read only); the error
/// says how to make tracefs readable.
pub fn available() -> Result<TraceClocks> {
    let fs = Tracefs::find().with_context(|| {
        format!(
            "tracefs is not mounted, so the kernel's trace clocks cannot be read: run as root and mount it with `mount -t tracefs nodev {}`",
            crate::tracefs::DEFAULT_ROOT
        )
    })?;
    global(&fs)
}

/// The top-level instance's `trace_clock`, read only.
pub fn global(fs: &Tracefs) -> Result<TraceClocks> {
    Ok(TraceClocks::parse(&fs.read("trace_clock").context(
        "cannot read the kernel's trace clocks: run as root",
    )?))
}

/// Checks that an instance's `trace_clock` file (`text`, read back after the write) selects
/// `clock`.
pub fn verify(text: &str, clock: &str) -> Result<()> {
    let got = TraceClocks::parse(text).current;
    if got.as_deref() != Some(clock) {
        bail!(
            "the instance's trace_clock reads {:?} after `{clock}` was written to it",
            text.trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: &str = "[local] global counter uptime perf mono mono_raw boot tai x86-tsc\n";

    #[test]
    fn the_file_lists_every_clock_and_brackets_the_current_one() {
        let c = TraceClocks::parse(HERE);
        assert_eq!(c.available.len(), 10);
        assert_eq!(c.available[0], "local");
        assert_eq!(c.available[9], "x86-tsc");
        assert_eq!(c.current.as_deref(), Some("local"));
        let g = TraceClocks::parse("local [global] counter");
        assert_eq!(g.current.as_deref(), Some("global"));
        assert_eq!(g.available, ["local", "global", "counter"]);
        assert_eq!(TraceClocks::parse("").current, None);
    }

    #[test]
    fn an_unknown_clock_is_refused_naming_the_choices() {
        let c = TraceClocks::parse(HERE);
        for ok in ["local", "global", "counter", "x86-tsc", "mono_raw"] {
            assert_eq!(c.check(ok), Ok(()), "{ok}");
        }
        for bad in ["tsc", "Local", "[local]", "", "global counter"] {
            let e = c.check(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--ftrace-clock {bad} is not")),
                "{e}"
            );
            assert!(e.contains("local, global, counter, uptime"), "{e}");
            assert!(e.contains("x86-tsc"), "{e}");
            assert_eq!(e.lines().count(), 1);
        }
        // A kernel without x86-tsc (another architecture) refuses it.
        let arm = TraceClocks::parse("[local] global counter uptime perf mono mono_raw boot");
        assert!(arm.check("x86-tsc").is_err());
    }

    #[test]
    fn the_read_back_must_bracket_the_clock_written() {
        assert!(verify("local [global] counter\n", "global").is_ok());
        assert!(verify("[local] global counter\n", "global").is_err());
        assert!(verify("", "local").is_err());
    }
}
