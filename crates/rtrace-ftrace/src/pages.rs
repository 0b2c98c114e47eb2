//! What a stream run's pages (`ftrace-cpuN.raw`, 4 KiB pages as `trace_pipe_raw` hands them
//! over) tell of single events of a USDT probe whose first argument numbers its hits: on which
//! of the kernel's ring-buffer pages each hit's event was written, whether it was that page's
//! first (the writer switched pages in that probe hit), and how long after the page's first
//! event (the trace clock's ns, the page header's time stamp plus the events' deltas).
//!
//! An output page is not always a kernel page: a `read()` that finds the writer still on its page
//! gets a copy of the events so far, and the next read the rest of that same page as a page of
//! its own, whose first event is no switch (about one such continuation per consumer pass and
//! CPU). A page continues the previous one when the kernel page still had room for its first
//! event: the writer switches pages only for an event that does not fit. A page whose header
//! says events were missed starts a kernel page.

use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::path::Path;

/// Size of a ring-buffer page as `trace_pipe_raw` returns it.
pub(crate) const PAGE: usize = 4096;
/// Page header: u64 timestamp, then the commit word (bytes of event data, flags above).
pub(crate) const PAGE_HEADER: usize = 16;
/// Mask of the commit word's size bits (the high bits flag missed events).
pub(crate) const COMMIT_MASK: u64 = 0xf_ffff;
/// The page header's flag: the writer dropped events before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// Data bytes a kernel page holds (`BUF_PAGE_SIZE`).
const BUF_PAGE_SIZE: usize = PAGE - PAGE_HEADER;
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

/// The kernel pages of `file`: how many, and where each hit of `hits` was written (absent: its
/// event was not recorded).
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

/// The hits whose event began a kernel page (the writer switched pages in that probe hit), in
/// file order.
pub fn first_hits(file: &Path) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    each_event(file, |arg, first, _| {
        if first {
            out.push(arg);
        }
    })?;
    Ok(out)
}

/// [`walk`] over every page of `file`; the number of kernel pages.
fn each_event(file: &Path, mut f: impl FnMut(u64, bool, u64)) -> Result<u64> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut kernel = KernelPage::default();
    let mut pages = 0;
    for (i, page) in bytes.chunks(PAGE).enumerate() {
        if walk(page, &mut kernel, &mut f)
            .with_context(|| format!("{} page {i}", file.display()))?
        {
            pages += 1;
        }
    }
    Ok(pages)
}

/// The kernel page the output pages walked so far ended in.
#[derive(Debug, Default)]
struct KernelPage {
    /// Its data bytes seen.
    used: usize,
    /// The trace clock at its first event.
    first_ts: Option<u64>,
}

/// Calls `f(arg1, first on the kernel page, ns since the kernel page's first event)` for each
/// data event of `page`, which continues `kernel` or starts a kernel page of its own: whether it
/// started one.
fn walk(page: &[u8], kernel: &mut KernelPage, mut f: impl FnMut(u64, bool, u64)) -> Result<bool> {
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
    let flags = u64_at(8).context("truncated page header")?;
    let commit = flags & COMMIT_MASK;
    let end = (PAGE_HEADER + commit as usize).min(page.len());
    let mut events = Vec::new();
    let (mut off, mut ts) = (PAGE_HEADER, page_ts);
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
        if size < 4 {
            bail!("event of {size} bytes at offset {off}");
        }
        off += size;
        if let Some(at) = data {
            let arg = u64_at(at + ARG1).context("event shorter than a uprobe's argument")?;
            // Bytes from the page's start to the end of this event.
            events.push((arg, ts, off - PAGE_HEADER));
        }
    }
    let Some(&(_, _, first_end)) = events.first() else {
        // No data event: padding the writer left at a switch belongs to the page it ends.
        kernel.used += commit as usize;
        return Ok(false);
    };
    let continues =
        kernel.used > 0 && flags & MISSED_EVENTS == 0 && kernel.used + first_end <= BUF_PAGE_SIZE;
    if !continues {
        *kernel = KernelPage::default();
    }
    kernel.used += commit as usize;
    for (arg, ts, _) in events {
        let first = kernel.first_ts.is_none();
        let since = ts - *kernel.first_ts.get_or_insert(ts);
        f(arg, first, since);
    }
    Ok(!continues)
}

/// The events of each type in `file` (pages as `trace_pipe_raw` hands them over): a data
/// event's payload starts with `struct trace_entry`, whose first field (`u16 common_type`) is
/// its event's id (`events/CATEGORY/NAME/id`).
pub fn count_types(file: &Path) -> Result<HashMap<u16, u64>> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut counts = HashMap::new();
    for (i, page) in bytes.chunks(PAGE).enumerate() {
        types_of(page, &mut counts).with_context(|| format!("{} page {i}", file.display()))?;
    }
    Ok(counts)
}

/// Adds the data events of one page to `counts`, by type.
fn types_of(page: &[u8], counts: &mut HashMap<u16, u64>) -> Result<()> {
    let u32_at = |o: usize| {
        page.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .context("truncated event")
    };
    let flags = page
        .get(8..PAGE_HEADER)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .context("truncated page header")?;
    let end = (PAGE_HEADER + (flags & COMMIT_MASK) as usize).min(page.len());
    let mut off = PAGE_HEADER;
    while off + 4 <= end {
        let head = u32_at(off)?;
        let (type_len, delta) = (head & 0x1f, head >> 5);
        let (data, size) = match type_len {
            PADDING if delta == 0 => break,
            PADDING => (None, 4 + u32_at(off + 4)? as usize),
            TIME_EXTEND | TIME_STAMP => (None, 8),
            0 => (Some(off + 8), 4 + u32_at(off + 4)? as usize),
            n => (Some(off + 4), 4 + 4 * n as usize),
        };
        if size < 4 {
            bail!("event of {size} bytes at offset {off}");
        }
        if let Some(at) = data {
            let t = page
                .get(at..at + 2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .context("event shorter than its common_type")?;
            *counts.entry(t).or_default() += 1;
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

    /// Marks the last page of `bytes` full: padding to the end of the kernel page.
    fn full(bytes: &mut [u8]) {
        let at = bytes.len() - PAGE;
        let p = &mut bytes[at..];
        let used = u64::from_le_bytes(p[8..16].try_into().unwrap()) as usize;
        let pad = BUF_PAGE_SIZE - used;
        let o = PAGE_HEADER + used;
        p[o..o + 4].copy_from_slice(&(PADDING | (1 << 5)).to_le_bytes());
        p[o + 4..o + 8].copy_from_slice(&((pad - 4) as u32).to_le_bytes());
        p[8..16].copy_from_slice(&(BUF_PAGE_SIZE as u64).to_le_bytes());
    }

    #[test]
    fn events_are_counted_by_their_common_type() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("ftrace-cpu0.raw");
        // page() writes the argument at ARG1; the common_type is the payload's first u16.
        let mut bytes = page(&[(1, 0), (2, 10), (3, 0)]);
        for (k, t) in [(0usize, 7u16), (1, 9), (2, 7)] {
            // Events are 28 bytes; the third follows an 8-byte time extend.
            let at = PAGE_HEADER + 28 * k + if k == 2 { 8 } else { 0 } + 4;
            bytes[at..at + 2].copy_from_slice(&t.to_le_bytes());
        }
        full(&mut bytes);
        bytes.extend(page(&[(4, 0)]));
        std::fs::write(&f, bytes).unwrap();
        let c = count_types(&f).unwrap();
        assert_eq!((c[&7], c[&9], c[&0]), (2, 1, 1));
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn a_page_after_missed_events_starts_a_kernel_page() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("ftrace-cpu1.raw");
        let mut bytes = page(&[(1, 0)]);
        let mut missed = page(&[(2, 0)]);
        missed[11] |= 0x80;
        bytes.extend(missed);
        std::fs::write(&f, bytes).unwrap();
        assert_eq!(first_hits(&f).unwrap(), vec![1, 2]);
    }

    #[test]
    fn reads_each_events_argument_and_time_on_its_page() {
        let mut seen = Vec::new();
        let mut kernel = KernelPage::default();
        walk(
            &page(&[(7, 0), (8, 100), (9, 3)]),
            &mut kernel,
            |a, first, since| seen.push((a, first, since)),
        )
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
        // A full kernel page, then one read while the writer was on it, and the rest of that
        // page read later: a continuation, no switch.
        let mut bytes = page(&[(1, 0), (2, 10)]);
        full(&mut bytes);
        bytes.extend(page(&[(3, 0), (4, 20)]));
        bytes.extend(page(&[(5, 0), (6, 30)]));
        std::fs::write(&f, bytes).unwrap();
        let (pages, found) = locate(&f, &[3, 4, 5, 6, 99]).unwrap();
        assert_eq!(pages, 2);
        assert_eq!(first_hits(&f).unwrap(), vec![1, 3]);
        assert!(!found[&5].first);
        // Its time counts from the kernel page's first event (page() stamps every page 1000).
        assert_eq!(found[&6].since_page_ns, 30);
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
