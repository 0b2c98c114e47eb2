//! Reading what LTTng wrote: event counts (babeltrace2) and packet headers (overwrite check).

use crate::cli;
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
    let out = cli::run(
        Command::new("babeltrace2")
            .arg(cli::path_arg(dir)?)
            .args(["--component=sink.utils.counter", "--params=step=+0"]),
    )?;
    parse_counter(&out).with_context(|| {
        format!(
            "babeltrace2 counter printed no event count: {}",
            cli::first_lines(&out, 3)
        )
    })
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
    if traces(dir)?.is_empty() {
        return Ok(counts);
    }
    let needles: Vec<String> = names.iter().map(|n| format!(" {n}: ")).collect();
    let mut child = rtrace_tracer::die_with_parent(&mut Command::new("babeltrace2"))
        .arg(cli::path_arg(dir)?)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run babeltrace2")?;
    for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
        let line = line.context("reading babeltrace2 output")?;
        if let Some(i) = needles.iter().position(|n| line.contains(n.as_str())) {
            counts[i] += 1;
        }
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "babeltrace2 {} failed: {}",
            dir.display(),
            cli::first_lines(&String::from_utf8_lossy(&out.stderr), 3)
        );
    }
    Ok(counts)
}

/// The LTTng 2.x packet header and context every stream packet starts with (checked against
/// each trace's metadata before the raw bytes are trusted).
const HEADER_TSDL: &str = "packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; uint64_t stream_instance_id; };";
const CONTEXT_TSDL: &str = "struct packet_context { uint64_clock_monotonic_t timestamp_begin; uint64_clock_monotonic_t timestamp_end; uint64_t content_size; uint64_t packet_size; uint64_t packet_seq_num; unsigned long events_discarded; uint32_t cpu_id; };";
const CTF_MAGIC: u32 = 0xC1FC_1FC1;

/// How many packets were overwritten before the data below `dir` was written out (snapshot
/// mode): per stream, the sequence numbers missing before and between the packets present.
pub fn overwritten_packets(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for trace in traces(dir)? {
        check_layout(&trace)?;
        for e in std::fs::read_dir(&trace)? {
            let path = e?.path();
            if path.is_file() && path.file_name().is_some_and(|n| n != "metadata") {
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                let seqs = packet_seq_nums(&bytes)
                    .with_context(|| format!("{} is not a CTF stream", path.display()))?;
                total += missing(&seqs);
            }
        }
    }
    Ok(total)
}

/// Sub-buffer switches on CPU `cpu` in every trace below `dir`: the `timestamp_begin` of each
/// packet but a stream's first, in the trace's clock (LTTng-UST's `monotonic`: raw
/// `CLOCK_MONOTONIC` ns). The writer that filled a sub-buffer opens the next at the time of the
/// event that did not fit, and wakes the consumer then. Reads the packet headers only.
pub fn switches(dir: &Path, cpu: u32) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for trace in traces(dir)? {
        check_layout(&trace)?;
        for e in std::fs::read_dir(&trace)? {
            let path = e?.path();
            if path.is_file() && path.file_name().is_some_and(|n| n != "metadata") {
                let packets = packet_begins(&path)
                    .with_context(|| format!("{} is not a CTF stream", path.display()))?;
                out.extend(packets.iter().filter(|p| p.1 == cpu).skip(1).map(|p| p.0));
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// `(timestamp_begin, cpu_id)` of every packet of one stream file, seeking from header to
/// header (layout: [`HEADER_TSDL`] then [`CONTEXT_TSDL`], little-endian).
fn packet_begins(path: &Path) -> Result<Vec<(u64, u32)>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let mut out = Vec::new();
    let mut off = 0u64;
    let mut head = [0u8; 88];
    while off < len {
        f.seek(SeekFrom::Start(off))?;
        f.read_exact(&mut head)
            .with_context(|| format!("truncated packet at offset {off}"))?;
        let u64_at = |o: usize| u64::from_le_bytes(head[o..o + 8].try_into().unwrap());
        if u32::from_le_bytes(head[..4].try_into().unwrap()) != CTF_MAGIC {
            bail!("no packet magic at offset {off}");
        }
        let size = u64_at(56) / 8;
        if size < 88 {
            bail!("packet at offset {off} claims {size} bytes");
        }
        out.push((
            u64_at(32),
            u32::from_le_bytes(head[80..84].try_into().unwrap()),
        ));
        off += size;
    }
    Ok(out)
}

fn check_layout(trace: &Path) -> Result<()> {
    let text = cli::run(
        Command::new("babeltrace2")
            .args(["--output-format=ctf-metadata"])
            .arg(cli::path_arg(trace)?),
    )?;
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let le = flat.contains("byte_order = le;");
    if !(le && flat.contains(HEADER_TSDL) && flat.contains(CONTEXT_TSDL)) {
        bail!(
            "{}: unexpected CTF packet layout (not LTTng 2.x, little-endian, 64-bit)",
            trace.display()
        );
    }
    Ok(())
}

/// `packet_seq_num` of every packet of one stream file (layout: [`HEADER_TSDL`] then
/// [`CONTEXT_TSDL`], little-endian, 64-bit `unsigned long`).
pub fn packet_seq_nums(bytes: &[u8]) -> Result<Vec<u64>> {
    let u32_at = |o: usize| {
        bytes
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |o: usize| {
        bytes
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let mut seqs = Vec::new();
    let mut off = 0usize;
    while off < bytes.len() {
        if u32_at(off) != Some(CTF_MAGIC) {
            bail!("no packet magic at offset {off}");
        }
        let size_bits = u64_at(off + 56).context("truncated packet context")?;
        let seq = u64_at(off + 64).context("truncated packet context")?;
        let size = usize::try_from(size_bits / 8)?;
        if size < 88 {
            bail!("packet at offset {off} claims {size} bytes");
        }
        seqs.push(seq);
        off += size;
    }
    Ok(seqs)
}

/// Sequence numbers missing from `seqs` (which should be `0, 1, 2, …`).
pub fn missing(seqs: &[u64]) -> u64 {
    let Some(&first) = seqs.first() else { return 0 };
    first
        + seqs
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]).saturating_sub(1))
            .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u64, size: usize) -> Vec<u8> {
        let mut p = vec![0u8; size];
        p[..4].copy_from_slice(&CTF_MAGIC.to_le_bytes());
        p[56..64].copy_from_slice(&((size as u64) * 8).to_le_bytes());
        p[64..72].copy_from_slice(&seq.to_le_bytes());
        p
    }

    #[test]
    fn reads_sequence_numbers_of_consecutive_packets() {
        let mut s = packet(351, 4096);
        s.extend(packet(352, 4096));
        s.extend(packet(354, 128));
        assert_eq!(packet_seq_nums(&s).unwrap(), [351, 352, 354]);
        assert_eq!(missing(&[351, 352, 354]), 352);
        assert_eq!(missing(&[0, 1, 2]), 0);
        assert_eq!(missing(&[]), 0);
    }

    #[test]
    fn rejects_what_is_not_a_stream() {
        assert!(packet_seq_nums(b"metadata").is_err());
        let mut s = packet(0, 4096);
        s.truncate(60);
        assert!(packet_seq_nums(&s).is_err());
    }

    #[test]
    fn parses_the_counter_report() {
        let out = "         101000 Event messages\n              2 Stream beginning messages\n";
        assert_eq!(parse_counter(out), Some(101000));
        assert_eq!(parse_counter("0 Discarded event messages"), None);
    }
}
