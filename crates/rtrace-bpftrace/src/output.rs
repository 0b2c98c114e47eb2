//! Reading what bpftrace printed (pure; unit-tested against bpftrace 0.17's text output).

use anyhow::{Context, Result};

/// Line bpftrace prints (0.17: on stderr) once every probe is attached when the environment variable of
/// the same name is set (its runtime tests use it; present in 0.17 and later).
pub const NOTIFY_ATTACHED: &str = "__BPFTRACE_NOTIFY_PROBES_ATTACHED";

/// What one bpftrace output stream (stdout, or the `-o` file) said.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Lines printed by the record script's `printf` (they start with the timestamp).
    pub events: u64,
    /// Sum of "Lost N events" reports.
    pub lost: u64,
    /// The value of `@c: N`, if printed.
    pub count: Option<u64>,
    /// N of "Attaching N probes...", if printed.
    pub attaching: Option<u64>,
    /// Lines of the flush probe (`crate::flush`), one per CPU it fired on.
    pub flushes: u64,
    /// The entries of a map keyed by tracepoint, `@[tracepoint:CATEGORY:NAME]: N`, as
    /// (`CATEGORY:NAME`, N): a tracepoint script's `@[probe] = count()`.
    pub probes: Vec<(String, u64)>,
}

/// N of bpftrace's "Attaching N probes..." line.
pub fn attaching(line: &str) -> Option<u64> {
    let rest = line.trim_end().strip_prefix("Attaching ")?;
    let (n, probes) = rest.split_once(' ')?;
    probes.starts_with("probe").then(|| n.parse().ok())?
}

impl Tally {
    /// Accounts one line.
    pub fn line(&mut self, line: &str) -> Result<()> {
        let line = line.trim_end();
        if line.starts_with(|c: char| c.is_ascii_digit()) {
            self.events += 1;
        } else if let Some(rest) = line.strip_prefix("Lost ") {
            let n = rest.split(' ').next().unwrap_or_default();
            self.lost += n
                .parse::<u64>()
                .with_context(|| format!("unexpected bpftrace line {line:?}"))?;
        } else if let Some(rest) = line.strip_prefix("@c: ") {
            self.count = Some(
                rest.trim()
                    .parse()
                    .with_context(|| format!("unexpected bpftrace line {line:?}"))?,
            );
        } else if line.starts_with(crate::flush::LINE) {
            self.flushes += 1;
        } else if let Some(rest) = line.strip_prefix("@[tracepoint:") {
            let (probe, n) = rest
                .split_once("]: ")
                .with_context(|| format!("unexpected bpftrace line {line:?}"))?;
            let n = n
                .trim()
                .parse()
                .with_context(|| format!("unexpected bpftrace line {line:?}"))?;
            self.probes.push((probe.to_owned(), n));
        } else if let Some(n) = attaching(line) {
            self.attaching = Some(n);
        }
        Ok(())
    }

    /// Accounts every line of `text`.
    #[cfg(test)]
    pub fn text(&mut self, text: &str) -> Result<()> {
        text.lines().try_for_each(|l| self.line(l))
    }
}

/// The error line worth showing from bpftrace's stderr: the last line with `ERROR:` (a parse
/// error reads `stdin:1:1-40: ERROR: ...`, followed by the program and a `~~~` underline)
/// except the harmless RLIMIT_MEMLOCK complaint (memory is accounted to cgroups on current
/// kernels), else the last non-empty line that is not an underline.
pub fn error_line(stderr: &[String]) -> Option<String> {
    let useful = |l: &&String| {
        let t = l.trim();
        !t.is_empty() && !l.contains("RLIMIT_MEMLOCK") && !t.chars().all(|c| c == '~')
    };
    stderr
        .iter()
        .rev()
        .filter(useful)
        .find(|l| l.contains("ERROR:"))
        .or_else(|| stderr.iter().rev().find(useful))
        .map(|l| l.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn record_file_with_losses() {
        let mut t = Tally::default();
        t.text("Attaching 2 probes...\n325899621505 1 13585 0\nLost 6 events\n325899722607 1 13585 1\nLost 1 events\nLost 3 events\nrtrace-flush 1\nrtrace-flush 0\n")
            .unwrap();
        let expected = Tally {
            events: 2,
            lost: 10,
            count: None,
            attaching: Some(2),
            flushes: 2,
            probes: Vec::new(),
        };
        assert_eq!(t, expected);
    }

    #[test]
    fn aggregate_stdout() {
        let mut t = Tally::default();
        let out = format!("Attaching 2 probes...\n{NOTIFY_ATTACHED}\n\n\n@c: 100000\n");
        t.text(&out).unwrap();
        assert_eq!(
            (t.count, t.attaching, t.events),
            (Some(100_000), Some(2), 0)
        );
    }

    #[test]
    fn a_map_keyed_by_tracepoint() {
        // bpftrace 0.17, `tracepoint:syscalls:sys_enter_* { @[probe] = count(); }`.
        let out = format!("Attaching 360 probes...\n{NOTIFY_ATTACHED}\n\n\n@[tracepoint:syscalls:sys_enter_newfstatat]: 1\n@[tracepoint:syscalls:sys_enter_write]: 20013\n@[tracepoint:syscalls:sys_enter_read]: 20007\n");
        let mut t = Tally::default();
        t.text(&out).unwrap();
        assert_eq!(t.attaching, Some(360));
        assert_eq!(
            t.probes,
            [
                ("syscalls:sys_enter_newfstatat", 1),
                ("syscalls:sys_enter_write", 20013),
                ("syscalls:sys_enter_read", 20007)
            ]
            .map(|(p, n)| (p.to_owned(), n))
        );
        assert!(Tally::default()
            .line("@[tracepoint:syscalls:x]: many")
            .is_err());
        assert_eq!(attaching("Attaching 1 probe..."), Some(1));
        assert_eq!(attaching("Attaching to pid 3"), None);
    }

    #[test]
    fn garbage_numbers_are_errors() {
        assert!(Tally::default().line("Lost many events").is_err());
        assert!(Tally::default().line("@c: x").is_err());
    }

    #[test]
    fn picks_the_real_error() {
        let l = lines(&[
            "ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK for bpftrace. If your program is not loading, you can try \"ulimit -l 8192\" to fix the problem",
            "ERROR: usdt probe not found",
            "",
        ]);
        assert_eq!(error_line(&l).unwrap(), "ERROR: usdt probe not found");
        assert_eq!(error_line(&l[..1]), None);
        let plain = lines(&["No probes to attach"]);
        assert_eq!(error_line(&plain).unwrap(), "No probes to attach");
        // bpftrace 0.17 on an unquoted path with `+`: the underline comes last.
        let parse = lines(&[
            "stdin:1:1-36: ERROR: syntax error, unexpected +",
            "usdt:/lib/libstdc++.so.6:libstdcxx:throw { @c = count(); }",
            "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        ]);
        let want = "stdin:1:1-36: ERROR: syntax error, unexpected +";
        assert_eq!(error_line(&parse).unwrap(), want);
    }
}
