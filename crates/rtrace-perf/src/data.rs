//! Counting the events of a `perf.data` file (perf's own format, `PERFILE2`), without `perf
//! script`: a million samples take perf seconds to print, and its counts (`perf report --stats`)
//! include the copies perf 6.1 writes of some samples.
//!
//! - Samples (`PERF_RECORD_SAMPLE`), each counted once. `perf record` in stream mode writes
//!   some bytes of its ring twice: `perf_mmap__push` (tools/lib/perf, upstream, any version)
//!   reads the ring's `data_head` twice, pushes up to the second read, and sets the next push's
//!   start from the first, so the samples the kernel wrote between the two reads are pushed again
//!   (measured: up to 3,987 copies among 1,000,000 samples; the kernel's ring held each once; none
//!   in overwrite mode). One CPU writes one event at a time, so a second sample of one CPU and
//!   time is such a copy, and must equal the first byte for byte: otherwise the file is refused.
//!   That needs sample times finer than the events: perf records with `-k monotonic` (its
//!   default clock ticks in jiffies in a TCG guest). The time is the copy's identity, not the
//!   payload (which carries the hit index only for our workload's probes): two events of one CPU
//!   in one nanosecond cannot both be real, each takes a trap of a microsecond or more. A real
//!   event taken for a copy would still not pass unseen: every perf run is counted against an
//!   exact count besides perf's, the kernel's hits of its uprobe events (`uprobe_profile`, equal
//!   to samples + lost) or the workload's own hits (the runner's accounting), and a shortfall
//!   fails the run.
//! - Losses: `PERF_RECORD_LOST_SAMPLES` of the traced events, which perf writes at its exit
//!   from the kernel's per-event lost count (`PERF_FORMAT_LOST`, Linux 6.0 and perf 6.0 or
//!   later): that includes the losses of a buffer still full at the end, which no
//!   `PERF_RECORD_LOST` reports yet, and leaves out those of perf's own tracking event (its
//!   mmap and comm records share the buffers: measured, 1 lost among 35,676). The buffers'
//!   `PERF_RECORD_LOST` counts are kept for information; they cannot tell the events apart.
//! - Counts read with each sample (`PERF_SAMPLE_READ`, the `{EVENT}:S` group of overwrite mode):
//!   the largest count of each event id is its hits up to its last sample.
//! - A process tree ([`count`] with a root, `perf record -a`): a sample counts when its process
//!   belongs to the tree at the sample's time, from perf's side band replayed in time order
//!   (`PERF_RECORD_FORK`: a new process whose creator's thread group is in the tree joins it; a
//!   new thread of a member adds to its live threads; `PERF_RECORD_EXIT` of a member's thread
//!   takes one away, and the process leaves the tree with its last thread, not with its leader:
//!   a main thread that exits first or an exec from another thread keeps it). Samples of other
//!   processes are `outside_tree`. A side band with a `PERF_RECORD_LOST` cannot be replayed
//!   exactly: the file is refused.

use anyhow::{bail, ensure, Context, Result};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_EXIT: u32 = 4;
const PERF_RECORD_FORK: u32 = 7;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_RECORD_LOST_SAMPLES: u32 = 13;
/// perf's own records that hide samples from a plain reading: refused.
const PERF_RECORD_AUXTRACE: u32 = 71;
const PERF_RECORD_COMPRESSED: u32 = 81;

const PERF_TYPE_TRACEPOINT: u32 = 2;

const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_ADDR: u64 = 1 << 3;
const SAMPLE_READ: u64 = 1 << 4;
const SAMPLE_ID: u64 = 1 << 6;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_PERIOD: u64 = 1 << 8;
const SAMPLE_STREAM_ID: u64 = 1 << 9;
const SAMPLE_IDENTIFIER: u64 = 1 << 16;

const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const FORMAT_ID: u64 = 1 << 2;
const FORMAT_GROUP: u64 = 1 << 3;
const FORMAT_LOST: u64 = 1 << 4;

/// What a `perf.data` file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Samples, each counted once.
    pub samples: u64,
    /// Copies of samples perf wrote a second time (not in `samples`).
    pub copies: u64,
    /// The sum of the traced events' `PERF_RECORD_LOST_SAMPLES` (the kernel's per-event lost
    /// counts, read by perf at exit).
    pub lost_samples: u64,
    /// The sum of `PERF_RECORD_LOST` (losses the kernel reported in each buffer, of whatever
    /// event: perf's tracking event shares the buffers); for information.
    pub lost_records: u64,
    /// With `PERF_SAMPLE_READ`: the sum over event ids of the largest count read.
    pub read_count: Option<u64>,
    /// With a tree's root: samples of processes outside the tree (not in `samples`).
    pub outside_tree: u64,
    /// Without a tree: the samples of each traced event, by its attribute's `config` (a
    /// tracepoint's id, `events/CATEGORY/NAME/id`); every traced event of the file is here,
    /// with 0 samples if it has none. Empty with a tree.
    pub by_config: HashMap<u64, u64>,
}

impl Counts {
    /// The traced events perf knows it lost.
    pub fn lost(&self) -> u64 {
        self.lost_samples
    }
}

/// The layout of one event's samples, and whether it is a traced event (a tracepoint: ours)
/// rather than perf's side-band tracking event (`dummy`, whose lost mmap and comm records are
/// no hits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    sample_type: u64,
    read_format: u64,
    traced: bool,
    /// The attribute's `config`: a tracepoint's id.
    config: u64,
}

fn u64_at(b: &[u8], at: usize) -> Result<u64> {
    let s = b
        .get(at..at + 8)
        .context("perf.data ends inside a field: the file is cut short")?;
    Ok(u64::from_le_bytes(s.try_into().expect("8 bytes")))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32> {
    let s = b
        .get(at..at + 4)
        .context("perf.data ends inside a field: the file is cut short")?;
    Ok(u32::from_le_bytes(s.try_into().expect("4 bytes")))
}

/// Counts the events of the `perf.data` file at `path`; with `tree`, only the samples of the
/// process tree rooted at that process (see the module doc).
pub fn count(path: &Path, tree: Option<u32>) -> Result<Counts> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    count_bytes(&bytes, tree).with_context(|| format!("reading {}", path.display()))
}

/// Counts the events of a `perf.data` file's bytes (see [`count`]).
pub fn count_bytes(b: &[u8], tree: Option<u32>) -> Result<Counts> {
    ensure!(
        b.get(0..8) == Some(b"PERFILE2"),
        "not a perf.data file of this byte order (no PERFILE2 magic)"
    );
    let attr_size = u64_at(b, 16)? as usize;
    let (attrs_off, attrs_size) = (u64_at(b, 24)? as usize, u64_at(b, 32)? as usize);
    let (data_off, data_size) = (u64_at(b, 40)? as usize, u64_at(b, 48)? as usize);
    ensure!(
        data_size > 0,
        "perf.data has no data section (perf record did not finish writing it)"
    );
    ensure!(
        attr_size > 16 && attrs_size % attr_size == 0,
        "perf.data's attribute section is malformed"
    );
    // Each event's layout, and which event each sample id belongs to.
    let mut layouts: Vec<Layout> = Vec::new();
    let mut by_id: HashMap<u64, Layout> = HashMap::new();
    for k in 0..attrs_size / attr_size {
        let at = attrs_off + k * attr_size;
        let l = Layout {
            sample_type: u64_at(b, at + 24)?,
            read_format: u64_at(b, at + 32)?,
            traced: u32_at(b, at)? == PERF_TYPE_TRACEPOINT,
            config: u64_at(b, at + 8)?,
        };
        let (ids_off, ids_size) = (
            u64_at(b, at + attr_size - 16)? as usize,
            u64_at(b, at + attr_size - 8)? as usize,
        );
        for i in 0..ids_size / 8 {
            by_id.insert(u64_at(b, ids_off + 8 * i)?, l);
        }
        layouts.push(l);
    }
    let first = *layouts.first().context("perf.data has no event")?;
    // Several events: perf puts the event's id first in a sample and last in other records
    // (PERF_SAMPLE_IDENTIFIER).
    let mixed = layouts.len() > 1;
    ensure!(
        !mixed
            || layouts
                .iter()
                .all(|l| l.sample_type & SAMPLE_IDENTIFIER != 0),
        "perf.data holds several events that carry no identifier: cannot tell them apart"
    );
    let event = |id: u64| -> Result<Layout> {
        by_id
            .get(&id)
            .copied()
            .with_context(|| format!("perf.data holds a record of unknown event id {id}"))
    };
    // The event of a record whose id is at `at`: a sample's first field, the last of another
    // record's sample_id trailer.
    let layout_at = |rec: &[u8], at: usize| -> Result<Layout> {
        if mixed {
            event(u64_at(rec, at)?)
        } else {
            Ok(first)
        }
    };
    let data = b
        .get(data_off..data_off + data_size)
        .context("perf.data's data section runs past the end of the file")?;
    let mut counts = Counts::default();
    if tree.is_none() {
        counts.by_config = layouts
            .iter()
            .filter(|l| l.traced)
            .map(|l| (l.config, 0))
            .collect();
    }
    let mut seen = Seen::default();
    let mut reads: HashMap<u64, u64> = HashMap::new();
    let mut side = Vec::new();
    let mut at = 0;
    while at + 8 <= data.len() {
        let kind = u32_at(data, at)?;
        let size = u16::from_le_bytes([data[at + 6], data[at + 7]]) as usize;
        ensure!(
            size >= 8,
            "perf.data holds a record of size {size} at data offset {at}"
        );
        let rec = data
            .get(at..at + size)
            .context("perf.data's last record is cut short")?;
        match kind {
            PERF_RECORD_SAMPLE => {
                let layout = layout_at(rec, 8)?;
                if !layout.traced {
                    at += size;
                    continue;
                }
                let s = sample(rec, layout)?;
                if seen.seen(s.cpu, s.time, rec)? {
                    match (tree, s.pid) {
                        (None, _) => {
                            counts.samples += 1;
                            *counts.by_config.entry(layout.config).or_default() += 1;
                        }
                        (Some(_), Some(pid)) => side.push(Side::sample(s.time, pid)),
                        (Some(_), None) => bail!(
                            "perf.data's samples carry no process id (PERF_SAMPLE_TID): cannot keep a process tree's"
                        ),
                    }
                    for (id, value) in s.reads {
                        let v = reads.entry(id).or_default();
                        *v = (*v).max(value);
                    }
                } else {
                    counts.copies += 1;
                }
            }
            PERF_RECORD_LOST => counts.lost_records += u64_at(rec, 16)?,
            PERF_RECORD_COMPRESSED | PERF_RECORD_AUXTRACE => bail!(
                "perf.data holds {} records, whose samples this reader cannot count: record without -z and without AUX area tracing",
                if kind == PERF_RECORD_COMPRESSED { "compressed (perf record -z)" } else { "AUX area (AUXTRACE)" }
            ),
            PERF_RECORD_FORK | PERF_RECORD_EXIT if tree.is_some() => {
                side.push(Side::task(kind == PERF_RECORD_FORK, rec)?)
            }
            PERF_RECORD_LOST_SAMPLES if layout_at(rec, rec.len() - 8)?.traced => {
                counts.lost_samples += u64_at(rec, 8)?
            }
            _ => {}
        }
        at += size;
    }
    if layouts.iter().any(|l| l.sample_type & SAMPLE_READ != 0) {
        counts.read_count = Some(reads.values().sum());
    }
    if let Some(root) = tree {
        ensure!(
            counts.lost_records == 0,
            "perf lost {} records of its buffers, its fork and exit records among them perhaps: the process tree cannot be followed exactly (pass a larger --buffer-size-kb)",
            counts.lost_records
        );
        let (inside, outside) = replay(root, side);
        counts.samples = inside;
        counts.outside_tree = outside;
    }
    Ok(counts)
}

/// A record of a tree's replay: a process or thread created or ended, or a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Side {
    time: u64,
    /// At one time: creations first, then samples, then ends.
    what: What,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum What {
    /// A task of thread group `pid` (a new thread when `pid == ppid`), created by a thread of
    /// group `ppid`.
    Fork {
        pid: u32,
        ppid: u32,
    },
    Sample {
        pid: u32,
    },
    Exit {
        pid: u32,
    },
}

impl Side {
    fn sample(time: u64, pid: u32) -> Side {
        Side {
            time,
            what: What::Sample { pid },
        }
    }

    /// `PERF_RECORD_FORK` or `_EXIT`: pid, ppid, tid, ptid (u32 each), time.
    fn task(fork: bool, rec: &[u8]) -> Result<Side> {
        let (pid, ppid) = (u32_at(rec, 8)?, u32_at(rec, 12)?);
        let time = u64_at(rec, 24)?;
        let what = if fork {
            What::Fork { pid, ppid }
        } else {
            What::Exit { pid }
        };
        Ok(Side { time, what })
    }
}

/// Samples in the tree rooted at `root` (one thread when perf starts: `count`'s held command)
/// and outside it, replaying `side` in time order.
fn replay(root: u32, mut side: Vec<Side>) -> (u64, u64) {
    side.sort_unstable();
    // Thread group → its live threads.
    let mut live: HashMap<u32, u64> = HashMap::from([(root, 1)]);
    let (mut inside, mut outside) = (0, 0);
    for s in side {
        match s.what {
            What::Fork { pid, ppid } if pid != ppid => {
                if live.contains_key(&ppid) {
                    live.insert(pid, 1);
                }
            }
            What::Fork { pid, .. } => {
                if let Some(n) = live.get_mut(&pid) {
                    *n += 1;
                }
            }
            What::Sample { pid } if live.contains_key(&pid) => inside += 1,
            What::Sample { .. } => outside += 1,
            What::Exit { pid } => {
                if let Some(n) = live.get_mut(&pid) {
                    *n -= 1;
                    if *n == 0 {
                        live.remove(&pid);
                    }
                }
            }
        }
    }
    (inside, outside)
}

/// The fields of a sample that counting needs.
struct Sample {
    /// The thread group (with `PERF_SAMPLE_TID`).
    pid: Option<u32>,
    cpu: u32,
    time: u64,
    /// `(event id, count)` pairs read with the sample.
    reads: Vec<(u64, u64)>,
}

/// The 8-byte fields of a record, read in order.
struct Fields<'a> {
    rec: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn next(&mut self) -> Result<u64> {
        self.at += 8;
        u64_at(self.rec, self.at - 8)
    }

    /// The next field if `present` (skipped when not read).
    fn next_if(&mut self, present: bool) -> Result<Option<u64>> {
        present.then(|| self.next()).transpose()
    }
}

fn sample(rec: &[u8], l: Layout) -> Result<Sample> {
    let has = |flag: u64| l.sample_type & flag != 0;
    ensure!(
        has(SAMPLE_TIME) && has(SAMPLE_CPU),
        "perf.data's samples carry no time or CPU: record with -T (perf record gives both by default with -p)"
    );
    // The fields in `perf_event_open`'s order; `pid, tid` and `cpu, res` are u32 pairs (the
    // first of each, little-endian, is the low half of the field).
    let mut f = Fields { rec, at: 8 };
    f.next_if(has(SAMPLE_IDENTIFIER))?;
    f.next_if(has(SAMPLE_IP))?;
    let pid = f.next_if(has(SAMPLE_TID))?.map(|v| v as u32);
    let time = f.next()?;
    f.next_if(has(SAMPLE_ADDR))?;
    let id = f.next_if(has(SAMPLE_ID))?;
    f.next_if(has(SAMPLE_STREAM_ID))?;
    let cpu = f.next()? as u32;
    f.next_if(has(SAMPLE_PERIOD))?;
    let mut reads = Vec::new();
    if has(SAMPLE_READ) {
        let format = |flag: u64| l.read_format & flag != 0;
        let group = format(FORMAT_GROUP);
        // A group's member count, else the one value.
        let first = f.next()?;
        f.next_if(format(FORMAT_TOTAL_TIME_ENABLED))?;
        f.next_if(format(FORMAT_TOTAL_TIME_RUNNING))?;
        for _ in 0..if group { first } else { 1 } {
            let value = if group { f.next()? } else { first };
            let own = f.next_if(format(FORMAT_ID))?;
            f.next_if(format(FORMAT_LOST))?;
            let id = own.or(id).context(
                "perf.data's samples read a count without an event id: cannot tell events apart",
            )?;
            reads.push((id, value));
        }
    }
    Ok(Sample {
        pid,
        cpu,
        time,
        reads,
    })
}

/// The samples seen, by CPU and time, with a hash of their bytes: one CPU writes one event at a
/// time, so two samples of one CPU and time are one event (the overwrite ring's samples come
/// newest first, so no order is assumed). About 40 bytes per sample.
#[derive(Default)]
struct Seen {
    samples: HashMap<(u32, u64), u64>,
}

impl Seen {
    /// `true` for a new sample, `false` for a copy of one seen; a different sample of the same
    /// CPU and time is an error.
    fn seen(&mut self, cpu: u32, time: u64, rec: &[u8]) -> Result<bool> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        rec.hash(&mut h);
        let hash = h.finish();
        match self.samples.insert((cpu, time), hash) {
            None => Ok(true),
            Some(h) if h == hash => Ok(false),
            Some(_) => bail!(
                "perf.data holds two different samples of CPU {cpu} at time {time}: cannot count them (not perf 6.1's copies)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `records` with one event whose samples have `sample_type` and `read_format`.
    fn file(sample_type: u64, read_format: u64, records: &[Vec<u8>]) -> Vec<u8> {
        let attr_size = 136 + 16;
        let header = 104usize;
        let data: Vec<u8> = records.concat();
        let mut b = Vec::new();
        b.extend_from_slice(b"PERFILE2");
        for v in [
            header as u64,
            attr_size as u64,
            header as u64,
            attr_size as u64,
            (header + attr_size) as u64,
            data.len() as u64,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.resize(header, 0);
        let mut attr = vec![0u8; attr_size];
        attr[0..4].copy_from_slice(&PERF_TYPE_TRACEPOINT.to_le_bytes());
        attr[24..32].copy_from_slice(&sample_type.to_le_bytes());
        attr[32..40].copy_from_slice(&read_format.to_le_bytes());
        b.extend_from_slice(&attr);
        b.extend_from_slice(&data);
        b
    }

    fn record(kind: u32, body: &[u64]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&kind.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((8 + 8 * body.len()) as u16).to_le_bytes());
        for v in body {
            r.extend_from_slice(&v.to_le_bytes());
        }
        r
    }

    fn count_bytes_all(b: &[u8]) -> Result<Counts> {
        count_bytes(b, None)
    }

    const PLAIN: u64 = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_PERIOD;

    /// A sample at `time` on `cpu` with argument `arg` (as the RAW field would follow).
    fn plain(time: u64, cpu: u64, arg: u64) -> Vec<u8> {
        record(PERF_RECORD_SAMPLE, &[0x1000, 7, time, cpu, 1, arg])
    }

    #[test]
    fn samples_are_counted_by_their_events_config() {
        // Two tracepoints (ids 11 and 12), samples carrying their id first.
        let t = PLAIN | SAMPLE_IDENTIFIER;
        let mut b = file(t, 0, &[]);
        let attr_size = 152usize;
        let mut second = b[104..104 + attr_size].to_vec();
        b[104 + 8..104 + 16].copy_from_slice(&11u64.to_le_bytes());
        second[8..16].copy_from_slice(&12u64.to_le_bytes());
        // Each attribute's ids: 1 for the first, 2 for the second, after the attributes.
        let ids_at = 104 + 2 * attr_size;
        for (k, attr) in [(0usize, None), (1, Some(&mut second))] {
            let (off, size) = ((ids_at + 8 * k) as u64, 8u64);
            let a = match attr {
                Some(a) => a.as_mut_slice(),
                None => &mut b[104..104 + attr_size],
            };
            a[attr_size - 16..attr_size - 8].copy_from_slice(&off.to_le_bytes());
            a[attr_size - 8..].copy_from_slice(&size.to_le_bytes());
        }
        b.truncate(104 + attr_size);
        b.extend_from_slice(&second);
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(&2u64.to_le_bytes());
        let s = |id: u64, time: u64| record(PERF_RECORD_SAMPLE, &[id, 0x1000, 7, time, 0, 1]);
        let data: Vec<u8> = [s(1, 10), s(2, 11), s(1, 12), s(1, 12)].concat();
        let data_at = b.len() as u64;
        b[24..32].copy_from_slice(&104u64.to_le_bytes());
        b[32..40].copy_from_slice(&(2 * attr_size as u64).to_le_bytes());
        b[40..48].copy_from_slice(&data_at.to_le_bytes());
        b[48..56].copy_from_slice(&(data.len() as u64).to_le_bytes());
        b.extend_from_slice(&data);
        let c = count_bytes_all(&b).unwrap();
        assert_eq!((c.samples, c.copies), (3, 1));
        assert_eq!(c.by_config, HashMap::from([(11, 2), (12, 1)]));
    }

    #[test]
    fn copies_count_once_and_losses_add_up() {
        let recs = vec![
            plain(10, 0, 1),
            plain(11, 0, 2),
            plain(12, 0, 3),
            plain(5, 1, 9),
            plain(11, 0, 2),
            plain(12, 0, 3),
            plain(13, 0, 4),
            record(PERF_RECORD_LOST, &[42, 3, 0]),
            record(PERF_RECORD_LOST_SAMPLES, &[5]),
        ];
        let c = count_bytes_all(&file(PLAIN, 0, &recs)).unwrap();
        assert_eq!((c.samples, c.copies), (5, 2));
        assert_eq!((c.lost_records, c.lost_samples, c.lost()), (3, 5, 5));
        assert_eq!(c.read_count, None);
    }

    #[test]
    fn an_earlier_sample_that_differs_is_refused() {
        let recs = vec![plain(10, 0, 1), plain(11, 0, 2), plain(11, 0, 3)];
        let e = count_bytes_all(&file(PLAIN, 0, &recs)).unwrap_err();
        assert!(e.to_string().contains("two different samples"), "{e}");
        // Newest first (an overwrite ring) is fine.
        let recs = vec![
            plain(12, 0, 1),
            plain(11, 0, 2),
            plain(10, 0, 3),
            plain(11, 0, 2),
        ];
        let c = count_bytes_all(&file(PLAIN, 0, &recs)).unwrap();
        assert_eq!((c.samples, c.copies), (3, 1));
    }

    #[test]
    fn group_reads_give_each_ids_largest_count() {
        let t = PLAIN | SAMPLE_ID | SAMPLE_READ;
        let f = FORMAT_GROUP | FORMAT_ID | FORMAT_LOST;
        // id, then read: nr, {value, id, lost}
        let s = |time: u64, id: u64, value: u64| {
            record(
                PERF_RECORD_SAMPLE,
                &[0x1000, 7, time, id, 0, 1, 1, value, id, 0],
            )
        };
        let recs = vec![s(1, 100, 7), s(2, 100, 8), s(3, 200, 4), s(2, 100, 8)];
        let c = count_bytes_all(&file(t, f, &recs)).unwrap();
        assert_eq!((c.samples, c.copies), (3, 1));
        assert_eq!(c.read_count, Some(12));
    }

    #[test]
    fn a_tree_keeps_a_process_until_its_last_thread_ends() {
        let task = |kind, pid: u64, ppid: u64, tid: u64, time| {
            record(kind, &[pid | ppid << 32, tid | ppid << 32, time])
        };
        let at = |time, pid: u64| {
            record(
                PERF_RECORD_SAMPLE,
                &[0x1000, pid | pid << 32, time, 0, 1, 0],
            )
        };
        let recs = vec![
            // Out of time order, as perf writes its CPUs' buffers.
            at(25, 200),
            task(PERF_RECORD_FORK, 200, 100, 200, 10),
            task(PERF_RECORD_FORK, 200, 200, 201, 20),
            // The leader leaves first (pthread_exit, or an exec from thread 201): 200 stays.
            task(PERF_RECORD_EXIT, 200, 100, 200, 30),
            at(40, 200),
            at(41, 100),
            task(PERF_RECORD_EXIT, 200, 100, 201, 50),
            // 200 reused by a process outside the tree, and one that never was in it.
            at(60, 200),
            at(61, 999),
            // A child of a process outside the tree.
            task(PERF_RECORD_FORK, 300, 999, 300, 70),
            at(71, 300),
        ];
        let c = count_bytes(&file(PLAIN, 0, &recs), Some(100)).unwrap();
        assert_eq!((c.samples, c.outside_tree), (3, 3));
        assert_eq!(count_bytes_all(&file(PLAIN, 0, &recs)).unwrap().samples, 6);
        // A lost side band cannot be replayed.
        let mut lost = recs.clone();
        lost.push(record(PERF_RECORD_LOST, &[42, 3, 0]));
        let e = count_bytes(&file(PLAIN, 0, &lost), Some(100)).unwrap_err();
        assert!(e.to_string().contains("lost 3 records"), "{e}");
    }

    #[test]
    fn compressed_and_aux_records_are_refused() {
        for kind in [PERF_RECORD_COMPRESSED, PERF_RECORD_AUXTRACE] {
            let recs = vec![plain(10, 0, 1), record(kind, &[0, 0])];
            let e = count_bytes_all(&file(PLAIN, 0, &recs)).unwrap_err();
            assert!(e.to_string().contains("cannot count"), "{e}");
        }
    }

    #[test]
    fn a_file_perf_did_not_finish_is_refused() {
        let mut b = file(PLAIN, 0, &[]);
        b.truncate(104);
        assert!(count_bytes_all(&b).is_err());
        assert!(count_bytes_all(b"garbage").is_err());
    }
}
