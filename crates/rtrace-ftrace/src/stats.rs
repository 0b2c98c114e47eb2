//! Per-CPU ring-buffer statistics (`instances/NAME/per_cpu/cpuN/stats`).

use rtrace_tracer::EventStats;

/// The counters of one CPU's buffer that event accounting needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// Events still in the buffer.
    pub entries: u64,
    /// Events overwritten by newer ones (overwrite mode).
    pub overrun: u64,
    /// Events dropped because the buffer was full (no-overwrite mode).
    pub dropped: u64,
    /// Events consumed by a reader (trace_pipe_raw).
    pub read: u64,
}

impl CpuStats {
    /// Parses the text of a `stats` file; missing counters count as 0.
    pub fn parse(text: &str) -> CpuStats {
        let mut s = CpuStats::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(v) = value.trim().parse::<u64>() else {
                continue;
            };
            match key.trim() {
                "entries" => s.entries = v,
                "overrun" => s.overrun = v,
                "dropped events" => s.dropped = v,
                "read events" => s.read = v,
                _ => {}
            }
        }
        s
    }
}

/// Sums per-CPU counters into event accounting: kept = in buffer + already read; lost =
/// overwritten + dropped.
pub fn account(cpus: &[CpuStats]) -> EventStats {
    cpus.iter()
        .fold(EventStats::default(), |acc, c| EventStats {
            recorded: acc.recorded + c.entries + c.read,
            lost: acc.lost + c.overrun + c.dropped,
            overwritten: acc.overwritten + c.overrun,
            outside_tree: 0,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "entries: 51215\noverrun: 149785\ncommit overrun: 0\nbytes: 1441080\n\
oldest event ts:   347.436674\nnow ts:   347.497997\ndropped events: 3\nread events: 7\n";

    #[test]
    fn parses_the_kernel_format() {
        assert_eq!(
            CpuStats::parse(SAMPLE),
            CpuStats {
                entries: 51215,
                overrun: 149785,
                dropped: 3,
                read: 7
            }
        );
    }

    #[test]
    fn timestamps_and_unknown_lines_are_ignored() {
        assert_eq!(CpuStats::parse("now ts: 1.5\nfoo\n"), CpuStats::default());
    }

    #[test]
    fn accounting_sums_cpus() {
        let a = CpuStats::parse(SAMPLE);
        let b = CpuStats {
            entries: 1,
            ..Default::default()
        };
        assert_eq!(
            account(&[a, b]),
            EventStats {
                recorded: 51215 + 7 + 1,
                lost: 149785 + 3,
                overwritten: 149785,
                outside_tree: 0,
            }
        );
    }
}
