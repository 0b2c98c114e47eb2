//! What a stream run's pages (`ftrace-cpuN.raw`, whole 4 KiB ring-buffer pages as
//! `trace_pipe_raw` hands them over) tell of single events of a USDT probe whose first argument
//! numbers its hits: on which page each hit's event was written, whether it was the page's
//! first (the writer switched pages in that probe hit), and how long after the page's first
//! event (the trace clock's ns, the page header's time stamp plus the events' deltas).

use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::path::Path;

const PAGE: usize = 4096;
const PAGE_HEADER: usize = 16;
const COMMIT_MASK: u64 = 0xf_ffff;
/// Ring-buffer event types (`type_len` of the 32-bit event header), as in
/// `kernel/trace/ring_buffer.c`.
const PADDING: u32 = 29;
const TIME_EXTEND: u32 = 30;
const TIME_STAMP: u32 = 31;
/// Payload offset of a uprobe event's first fetch argument: `struct trace_entry` (8 bytes),
/// then the probed address (8).
const ARG1: usize = 16;

/// Where one hit's event was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnPage {
    /// The event was its page's first: the writer switched pages in this probe hit.
    pub first: bool,
    /// Trace-clock ns from the page's first event to this one.
    pub since_page_ns: u64,
}

/// The pages of `file`: how many, and where each hit of `hits` was written (absent: its event
/// was not recorded).
pub fn locate(file: &Path, hits: &[u64]) -> Result<(u64, HashMap<u64, OnPage>)> {
    let mut found = HashMap::new();
    let pages = each_event(file, |arg, first, since| {
        if hits.contains(&arg) {
            found.insert(
                arg,
                OnPage {
                    first,
                    since_page_ns: since,
                },
            );
        }
    })?;
    Ok((pages, found))
}

/// The hits whose event began a page (the writer switched pages in that probe hit), in file
/// order.
pub fn first_hits(file: &Path) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    each_event(file, |arg, first, _| {
        if first {
            out.push(arg);
        }
    })?;
    Ok(out)
}

/// [`walk`] over every page of `file`; the number of pages.
fn each_event(file: &Path, mut f: impl FnMut(u64, bool, u64)) -> Result<u64> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut pages = 0;
    for (i, page) in bytes.chunks(PAGE).enumerate() {
        walk(page, &mut f).with_context(|| format!("{} page {i}", file.display()))?;
        pages += 1;
    }
    Ok(pages)
}

/// Calls `f(arg1, first on the page, ns since the page's first event)` for each data event of
/// `page`.
fn walk(page: &[u8], mut f: impl FnMut(u64, bool, u64)) -> Result<()> {
    let u32_at = |o: usize| {
        page.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |o: usize| {
        page.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let Some(page_ts) = u64_at(0) else {
        bail!("truncated page header")
    };
    let commit = u64_at(8).context("truncated page header")? & COMMIT_MASK;
    let end = (PAGE_HEADER + commit as usize).min(page.len());
    let (mut off, mut ts, mut first_ts) = (PAGE_HEADER, page_ts, None);
    while off + 4 <= end {
        let head = u32_at(off).context("truncated event")?;
        let (type_len, delta) = (head & 0x1f, u64::from(head >> 5));
        let array0 = || u32_at(off + 4).map(u64::from).context("truncated event");
        let (data, size) = match type_len {
            PADDING if delta == 0 => break,
            PADDING => (None, 4 + array0()? as usize),
            TIME_EXTEND => {
                ts += (array0()? << 27) | delta;
                (None, 8)
            }
            TIME_STAMP => {
                // Absolute: the low 59 bits, the rest from the page's time stamp.
                let abs = (array0()? << 27) | delta;
                ts = (page_ts & !((1u64 << 59) - 1)) | abs;
                (None, 8)
            }
            0 => {
                ts += delta;
                let len = array0()? as usize;
                (Some(off + 8), 4 + len)
            }
            n => {
                ts += delta;
                (Some(off + 4), 4 + 4 * n as usize)
            }
        };
        if let Some(at) = data {
            let arg = u64_at(at + ARG1).context("event shorter than a uprobe's argument")?;
            let first = first_ts.is_none();
            let since = ts - *first_ts.get_or_insert(ts);
            f(arg, first, since);
        }
        if size < 4 {
            bail!("event of {size} bytes at offset {off}");
        }
        off += size;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of uprobe events (type_len 6: 24-byte payload, the argument last) with the given
    /// deltas, and a time extend before the third.
    fn page(args: &[(u64, u32)]) -> Vec<u8> {
        let mut p = vec![0u8; PAGE];
        p[..8].copy_from_slice(&1_000u64.to_le_bytes());
        let mut off = PAGE_HEADER;
        for (i, &(arg, delta)) in args.iter().enumerate() {
            if i == 2 {
                let ext = TIME_EXTEND | (5 << 5);
                p[off..off + 4].copy_from_slice(&ext.to_le_bytes());
                p[off + 4..off + 8].copy_from_slice(&1u32.to_le_bytes());
                off += 8;
            }
            p[off..off + 4].copy_from_slice(&(6 | (delta << 5)).to_le_bytes());
            p[off + 4 + ARG1..off + 12 + ARG1].copy_from_slice(&arg.to_le_bytes());
            off += 28;
        }
        let commit = (off - PAGE_HEADER) as u64;
        p[8..16].copy_from_slice(&commit.to_le_bytes());
        p
    }

    #[test]
    fn reads_each_events_argument_and_time_on_its_page() {
        let mut seen = Vec::new();
        walk(&page(&[(7, 0), (8, 100), (9, 3)]), |a, first, since| {
            seen.push((a, first, since))
        })
        .unwrap();
        // The time extend adds (1 << 27) | 5 before event 9's own delta.
        assert_eq!(
            seen,
            vec![
                (7, true, 0),
                (8, false, 100),
                (9, false, 100 + (1 << 27) + 5 + 3)
            ]
        );
    }

    #[test]
    fn locates_hits_over_pages() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("ftrace-cpu1.raw");
        let mut bytes = page(&[(1, 0), (2, 10)]);
        bytes.extend(page(&[(3, 0), (4, 20)]));
        std::fs::write(&f, bytes).unwrap();
        let (pages, found) = locate(&f, &[3, 4, 99]).unwrap();
        assert_eq!(pages, 2);
        assert_eq!(
            found[&3],
            OnPage {
                first: true,
                since_page_ns: 0
            }
        );
        assert_eq!(
            found[&4],
            OnPage {
                first: false,
                since_page_ns: 20
            }
        );
        assert!(!found.contains_key(&99));
    }
}
