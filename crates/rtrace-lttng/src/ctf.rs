//! Reading what LTTng wrote: event counts (babeltrace2); packets: `overwrite`.

use crate::cli;
use anyhow::{bail, Context, Result};
use rtrace_tracer::tool::{Spawn, Stdout, Tool};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// CTF traces (directories holding a `metadata` file) below `dir`, sorted.
pub fn traces(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.join("metadata").is_file() {
            out.push(d.clone());
        }
        for e in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
            let e = e?;
            if e.file_type()?.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Number of event records in every trace below `dir` (babeltrace2's `sink.utils.counter`:
/// ~1 s per million events here, no text formatting). No trace at all counts as 0.
pub fn count_events(dir: &Path) -> Result<u64> {
    if traces(dir)?.is_empty() {
        return Ok(0);
    }
    let counter = ["--component=sink.utils.counter", "--params=step=+0"];
    let out = cli::run(
        "babeltrace2",
        &[&[cli::path_arg(dir)?], &counter[..]].concat(),
        &[],
        &[],
    )?;
    parse_counter(&out).with_context(|| {
        format!(
            "babeltrace2 counter printed no event count: {}",
            cli::first_lines(&out, 3)
        )
    })
}

/// The metadata of `trace` as TSDL text, its whitespace collapsed (babeltrace2's
/// `ctf-metadata` output).
pub fn metadata(trace: &Path) -> Result<String> {
    let args = ["--output-format=ctf-metadata", cli::path_arg(trace)?];
    let text = cli::run("babeltrace2", &args, &[], &[])?;
    Ok(crate::overwrite::flat(&text))
}

/// `N Event messages` from the counter sink's report.
pub fn parse_counter(out: &str) -> Option<u64> {
    out.lines()
        .find_map(|l| l.trim().strip_suffix("Event messages")?.trim().parse().ok())
}

/// Per name in `names`, how many event records below `dir` have that name (babeltrace2 text
/// output, streamed; meant for the small event counts of kernel syscall tracing).
pub fn count_by_name(dir: &Path, names: &[&str]) -> Result<Vec<u64>> {
    let mut counts = vec![0u64; names.len()];
    let needles: Vec<String> = names.iter().map(|n| format!(" {n}: ")).collect();
    each_line(dir, &[], |line| {
        if let Some(i) = needles.iter().position(|n| line.contains(n.as_str())) {
            counts[i] += 1;
        }
        Ok(())
    })?;
    Ok(counts)
}

/// Calls `f` on every line babeltrace2 prints of the traces below `dir` (with `args` before
/// the path), streamed; nothing when `dir` holds no trace. An error of `f` stops babeltrace2.
pub fn each_line(dir: &Path, args: &[&str], mut f: impl FnMut(&str) -> Result<()>) -> Result<()> {
    if traces(dir)?.is_empty() {
        return Ok(());
    }
    let mut all: Vec<OsString> = args.iter().map(OsString::from).collect();
    all.push(dir.into());
    let mut bt = Tool::spawn(Spawn {
        stdout: Stdout::Pipe,
        tagged: false,
        ..Spawn::new(
            "babeltrace2",
            "babeltrace2",
            Path::new("babeltrace2"),
            all,
            &[],
        )
    })?;
    let stdout = bt.take_stdout().expect("piped");
    for line in BufReader::new(stdout).lines() {
        // An error of `f` stops babeltrace2: dropping the tool kills it.
        f(&line.context("reading babeltrace2 output")?)?;
    }
    let out = bt.finish()?;
    if !out.status.success() {
        bail!(
            "babeltrace2 {} failed: {}",
            dir.display(),
            rtrace_tracer::tool::first_lines(&out.stderr, 3)
        );
    }
    Ok(())
}

/// The sub-buffer switches of one CPU's streams.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Switches {
    /// Each switch's `timestamp_begin` (the trace's clock), sorted.
    pub times: Vec<u64>,
    /// The hit number of each switch's first event (its payload, the probe's argument), in
    /// file order; `None` when the events are not what this reads (one 8-byte integer each,
    /// large headers: see `overwrite::fixed_payload`).
    pub hits: Option<Vec<u64>>,
}

/// Sub-buffer switches on CPU `cpu` in every trace below `dir`: each packet but a stream's
/// first, by its `timestamp_begin` in the trace's clock (LTTng-UST's `monotonic`: raw
/// `CLOCK_MONOTONIC` ns) and by the hit of its first event (no clock involved). The writer that
/// filled a sub-buffer opens the next at the time of the event that did not fit, and wakes the
/// consumer then. A kernel trace beside the UST trace (a session's `kernel/` directory, `npt
/// --lttng-kernel`) is not read: its sub-buffers are not the traced event's.
pub fn switches(dir: &Path, cpu: u32) -> Result<Switches> {
    let traces: Vec<PathBuf> = traces(dir)?.into_iter().filter(|t| !is_kernel(t)).collect();
    let mut by_hit = true;
    for trace in &traces {
        let flat = metadata(trace)?;
        crate::overwrite::check_layout(&flat).with_context(|| format!("{}", trace.display()))?;
        by_hit &= crate::overwrite::fixed_payload(&flat) == Ok(8);
    }
    let mut out = Switches {
        times: Vec::new(),
        hits: by_hit.then(Vec::new),
    };
    for s in crate::overwrite::streams(dir, &traces)? {
        let bytes = match out.hits {
            Some(_) => std::fs::read(&s.file)
                .with_context(|| format!("cannot read {}", s.file.display()))?,
            None => Vec::new(),
        };
        let mut off = 0usize;
        let mut first = true;
        for p in &s.packets {
            if p.cpu == cpu {
                if !first {
                    out.times.push(p.begin);
                    if let Some(hits) = &mut out.hits {
                        hits.extend(crate::overwrite::first_payload(&bytes, off, p)?);
                    }
                }
                first = false;
            }
            off += usize::try_from(p.size)?;
        }
    }
    out.times.sort_unstable();
    Ok(out)
}

/// Whether `trace` is a session's kernel trace (LTTng writes it to `<session>/kernel`).
pub fn is_kernel(trace: &Path) -> bool {
    trace.file_name().is_some_and(|n| n == "kernel")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_kernel_traces_from_ust_ones() {
        assert!(is_kernel(Path::new("/r/run-1/lttng/rtrace_1_0/kernel")));
        assert!(!is_kernel(Path::new(
            "/r/run-1/lttng/rtrace_1_0/ust/uid/0/64-bit"
        )));
    }

    #[test]
    fn parses_the_counter_report() {
        let out = "         101000 Event messages\n              2 Stream beginning messages\n";
        assert_eq!(parse_counter(out), Some(101000));
        assert_eq!(parse_counter("0 Discarded event messages"), None);
    }
}
