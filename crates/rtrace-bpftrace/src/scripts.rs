//! Tracepoint scripts ([`Hook::Tracepoints`](rtrace_tracer::Hook), `app`'s
//! `syscalls:sys_enter_*`, `sched:*`) as the published bpftrace one-liners: the script's patterns
//! as bpftrace's own probe globs, counting per probe,
//! `tracepoint:syscalls:sys_enter_*,tracepoint:sched:* { @[probe] = count(); }`.
//!
//! - `Target::pid` `None`: every process (what `app` traces); `Some(pid)`: a `/pid == N/`
//!   predicate keeps that process's hits (the probes still fire everywhere). A process tree
//!   (`Target::tree`) is refused, and so is `record` mode: the one-liner only counts.
//! - bpftrace expands the globs itself: the "Attaching N probes..." it prints before attaching
//!   must say as many probes as the script has tracepoints (expanded by
//!   [`rtrace_tracer::tracepoints::expand`]), or `attach` fails naming both numbers. Patterns
//!   that overlap (one tracepoint matched twice) are refused: bpftrace would attach it twice.
//! - bpftrace 0.17 refuses more than 512 probes or BPF programs (`syscalls:*` has 720 here):
//!   [`MAX_ENV`] raises both limits to the script's size.
//! - recorded = the sum of the printed map, lost = 0: a `count()` map is updated in the kernel
//!   on every hit and loses nothing (no perf buffer is involved; a "Lost N events" line would
//!   still be counted). [`Attachment::finish_by_probe`] gives the map per tracepoint
//!   (`syscalls:sys_enter_read`; bpftrace prints `@[tracepoint:syscalls:sys_enter_read]: N`),
//!   every point of the script in its order, 0 for those that never fired.
//! - bpftrace needs long to exit after SIGINT: it detaches probe after probe, each waiting for
//!   the kernel's grace periods (measured here: 25 s for the 360 `syscalls:sys_enter_*`, 52 s
//!   for the 720 `syscalls:*`); `child::Bpftrace::stop` waits while it makes progress.

use anyhow::{bail, ensure, Context, Result};
use rtrace_tracer::tracepoints::{matches, Script};
use rtrace_tracer::{validate_name, Attachment, EventStats, Target};
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use crate::child::Bpftrace;
use crate::output::Tally;
use crate::BpftraceMode;

/// bpftrace 0.17's limits on attached probes and generated BPF programs (512 each by default).
pub const MAX_ENV: [&str; 2] = ["BPFTRACE_MAX_PROBES", "BPFTRACE_MAX_BPF_PROGS"];

/// bpftrace 0.17's default for both [`MAX_ENV`] limits.
const DEFAULT_MAX: usize = 512;

/// How long after bpftrace said it attached its "Attaching N probes..." line may still be unread.
const ATTACHING_LINE_WAIT: Duration = Duration::from_secs(2);

/// The one-liner for `script`, with a `/pid == N/` predicate for `pid`; refused in record mode,
/// for a process tree, and for patterns that are not `CATEGORY:GLOB` or that overlap.
pub fn program(
    script: &Script,
    mode: BpftraceMode,
    pid: Option<u32>,
    tree: bool,
) -> Result<String> {
    ensure!(
        mode == BpftraceMode::Aggregate,
        "bpftrace runs a tracepoint script as the one-liner `@[probe] = count()`, which only counts: use the aggregate mode"
    );
    ensure!(
        !(tree && pid.is_some()),
        "bpftrace does not follow a process tree with a tracepoint script: trace every process (no pid) or one pid"
    );
    ensure!(
        !script.patterns.is_empty() && !script.points.is_empty(),
        "the tracepoint script `{}` has no tracepoint: give patterns such as syscalls:sys_enter_*",
        script.label()
    );
    let mut probes = Vec::new();
    for p in &script.patterns {
        let Some((category, glob)) = p.split_once(':') else {
            bail!("tracepoint pattern `{p}` is not CATEGORY:NAME (e.g. syscalls:sys_enter_*)");
        };
        validate_name("tracepoint category", category)?;
        ensure!(
            !glob.is_empty()
                && glob
                    .chars()
                    .all(|c| c == '*' || c == '_' || c.is_ascii_alphanumeric()),
            "tracepoint name `{glob}` of `{p}` is not a name or a `*` glob"
        );
        probes.push(format!("tracepoint:{category}:{glob}"));
    }
    for (category, name) in &script.points {
        let by: Vec<&String> = script
            .patterns
            .iter()
            .filter(|p| {
                p.split_once(':')
                    .is_some_and(|(c, g)| c == category && matches(g, name))
            })
            .collect();
        ensure!(
            by.len() <= 1,
            "the patterns {by:?} of the tracepoint script all match {category}:{name}: bpftrace would attach it {} times; give patterns that do not overlap",
            by.len()
        );
    }
    let predicate = pid.map_or(String::new(), |p| format!(" /pid == {p}/"));
    Ok(format!(
        "{}{predicate} {{ @[probe] = count(); }}",
        probes.join(",")
    ))
}

/// The environment that lets bpftrace 0.17 attach `points` probes (see [`MAX_ENV`]).
pub fn env(points: usize) -> Vec<(&'static str, String)> {
    let limit = points.max(DEFAULT_MAX).to_string();
    MAX_ENV.iter().map(|&k| (k, limit.clone())).collect()
}

/// The events per tracepoint of the printed map, every point of `points` in its order; an entry
/// for a tracepoint outside the script is an error.
pub fn by_probe(
    points: &[(String, String)],
    printed: &[(String, u64)],
) -> Result<Vec<(String, u64)>> {
    let mut out: Vec<(String, u64)> = points
        .iter()
        .map(|(c, n)| (format!("{c}:{n}"), 0))
        .collect();
    for (probe, n) in printed {
        let Some(slot) = out.iter_mut().find(|(p, _)| p == probe) else {
            bail!("bpftrace counted {probe}, which is not a tracepoint of the script (a bug: please report it)");
        };
        slot.1 += n;
    }
    Ok(out)
}

/// bpftrace counting a script's tracepoints; killed if dropped without `finish`.
pub struct ScriptAttachment {
    bpftrace: Bpftrace,
    points: Vec<(String, String)>,
    program: String,
}

impl ScriptAttachment {
    /// Starts bpftrace on the script's one-liner, pinned to the target's consumer CPUs; returns
    /// once it attached as many probes as the script has tracepoints.
    pub fn start(
        bpftrace: &Path,
        script: &Script,
        mode: BpftraceMode,
        target: &Target,
    ) -> Result<ScriptAttachment> {
        let program = program(script, mode, target.pid, target.tree)?;
        let args: Vec<OsString> = vec!["-e".into(), program.as_str().into()];
        let bpftrace = Bpftrace::start(
            bpftrace,
            &args,
            &env(script.points.len()),
            &target.consumer_cpus,
        )
        .with_context(|| format!("bpftrace program: {program}"))?;
        let want = script.points.len() as u64;
        match bpftrace.attaching(ATTACHING_LINE_WAIT) {
            Some(n) if n == want => {}
            Some(n) => bail!(
                "bpftrace attached {n} probes for the tracepoint script `{}`, which has {want} tracepoints on this kernel: check `bpftrace -l 'tracepoint:{}'`",
                script.label(),
                script.patterns.join("' 'tracepoint:")
            ),
            None => bail!(
                "bpftrace did not say how many probes it attached for `{}` (no \"Attaching N probes\" line): check its version (0.17 or later)",
                script.label()
            ),
        }
        Ok(ScriptAttachment {
            bpftrace,
            points: script.points.clone(),
            program,
        })
    }
}

impl Attachment for ScriptAttachment {
    fn finish(self: Box<Self>) -> Result<EventStats> {
        Ok(self.finish_by_probe()?.0)
    }

    /// SIGINT (bpftrace then detaches every probe, which takes long, and prints its map).
    fn finish_by_probe(self: Box<Self>) -> Result<(EventStats, Vec<(String, u64)>)> {
        let exited = self.bpftrace.stop()?;
        let mut out = Tally::default();
        for l in &exited.stdout {
            out.line(l)?;
        }
        let per_probe = by_probe(&self.points, &out.probes)
            .with_context(|| format!("bpftrace program: {}", self.program))?;
        let recorded = per_probe.iter().map(|(_, n)| n).sum();
        Ok((EventStats::new(recorded, out.lost), per_probe))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(patterns: &[&str], points: &[(&str, &str)]) -> Script {
        Script {
            patterns: patterns.iter().map(|p| p.to_string()).collect(),
            points: points
                .iter()
                .map(|&(c, n)| (c.to_owned(), n.to_owned()))
                .collect(),
        }
    }

    const SYS: [(&str, &str); 3] = [
        ("syscalls", "sys_enter_read"),
        ("syscalls", "sys_enter_write"),
        ("syscalls", "sys_exit_read"),
    ];

    #[test]
    fn the_patterns_are_bpftrace_globs_counted_per_probe() {
        let s = script(&["syscalls:sys_enter_*"], &SYS[..2]);
        let agg = BpftraceMode::Aggregate;
        assert_eq!(
            program(&s, agg, None, false).unwrap(),
            "tracepoint:syscalls:sys_enter_* { @[probe] = count(); }"
        );
        assert_eq!(
            program(&s, agg, Some(42), false).unwrap(),
            "tracepoint:syscalls:sys_enter_* /pid == 42/ { @[probe] = count(); }"
        );
        let two = script(
            &["syscalls:sys_enter_*", "sched:*"],
            &[SYS[0], ("sched", "sched_switch")],
        );
        assert_eq!(
            program(&two, agg, None, false).unwrap(),
            "tracepoint:syscalls:sys_enter_*,tracepoint:sched:* { @[probe] = count(); }"
        );
        // A tree without a pid is every process: nothing to follow.
        assert!(program(&s, agg, None, true).is_ok());
    }

    #[test]
    fn record_mode_trees_bad_and_overlapping_patterns_are_refused() {
        let s = script(&["syscalls:sys_enter_*"], &SYS[..2]);
        let e = format!(
            "{:#}",
            program(&s, BpftraceMode::Record, None, false).unwrap_err()
        );
        assert!(e.contains("aggregate"), "{e}");
        assert!(program(&s, BpftraceMode::Aggregate, Some(1), true).is_err());
        for bad in [
            script(&["syscalls"], &SYS[..1]),
            script(&["sys calls:*"], &SYS[..1]),
            script(&["syscalls:a}{"], &SYS[..1]),
            script(&["syscalls:"], &SYS[..1]),
            script(&[], &[]),
            script(&["syscalls:*"], &[]),
        ] {
            assert!(
                program(&bad, BpftraceMode::Aggregate, None, false).is_err(),
                "{bad:?}"
            );
        }
        let overlap = script(&["syscalls:sys_enter_*", "syscalls:*_read"], &SYS);
        let e = format!(
            "{:#}",
            program(&overlap, BpftraceMode::Aggregate, None, false).unwrap_err()
        );
        assert!(
            e.contains("syscalls:sys_enter_read") && e.contains("2 times"),
            "{e}"
        );
    }

    #[test]
    fn the_limits_grow_with_the_script() {
        assert_eq!(
            env(720),
            vec![
                ("BPFTRACE_MAX_PROBES", "720".to_owned()),
                ("BPFTRACE_MAX_BPF_PROGS", "720".to_owned())
            ]
        );
        assert_eq!(env(3)[0].1, "512");
    }

    #[test]
    fn the_map_becomes_every_point_in_order() {
        let points: Vec<(String, String)> = script(&["syscalls:*"], &SYS).points;
        let printed = [
            ("syscalls:sys_exit_read", 5),
            ("syscalls:sys_enter_read", 7),
        ]
        .map(|(p, n)| (p.to_owned(), n));
        let got = by_probe(&points, &printed).unwrap();
        let want = [
            ("syscalls:sys_enter_read", 7),
            ("syscalls:sys_enter_write", 0),
            ("syscalls:sys_exit_read", 5),
        ]
        .map(|(p, n)| (p.to_owned(), n));
        assert_eq!(got, want);
        assert!(by_probe(&points, &[("sched:sched_switch".to_owned(), 1)]).is_err());
    }
}
