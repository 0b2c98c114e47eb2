//! Overwrite mode's accounting: how many events a snapshot session's ring buffer overwrote,
//! read from the packets of its snapshot.
//!
//! LTTng does not count overwritten events, but every packet carries `packet_seq_num`, one
//! counter per stream: the packets missing from a stream's sequence were overwritten. Each held
//! as many events as fit, when every event has the same size: a full packet's count, `CAP`.
//! Then `overwritten = CAP × missing packets`, exact under conditions this module checks
//! where they show, and refuses to guess where they do not hold:
//!
//! - every event of the trace has one size (metadata: large event header, integer fields
//!   only; `tracef`'s string is not);
//! - no event carries the 64-bit timestamp of the extended header (written after a pause of
//!   2^27 ns or more between two events of a stream, it makes that event 8 bytes longer: a
//!   packet holding one may hold one event fewer). The recorded packets show whether the run
//!   had such pauses;
//! - no packet was closed before it was full while the workload fired (a flush): every
//!   recorded packet but a stream's last holds exactly `CAP` events;
//! - the packets LTTng opens empty when the session starts are known: `lttng start` opens a
//!   packet in every stream, and the attach records a snapshot right after it (`opened`),
//!   before the workload fires, whose packets must all be empty. Missing packets are counted
//!   above the highest sequence number it saw.
//!
//! The harness checks the result against the workload's own hit count: an extended header in
//! an overwritten packet (invisible here) would show there as one event too many.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The LTTng 2.x packet header and context every stream packet starts with (checked against
/// each trace's metadata before the raw bytes are trusted).
const HEADER_TSDL: &str = "packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; uint64_t stream_instance_id; };";
const CONTEXT_TSDL: &str = "struct packet_context { uint64_clock_monotonic_t timestamp_begin; uint64_clock_monotonic_t timestamp_end; uint64_t content_size; uint64_t packet_size; uint64_t packet_seq_num; unsigned long events_discarded; uint32_t cpu_id; };";
/// The integer types those use, byte-aligned: the header and context are then byte-packed,
/// `packet_size` at byte 56, `packet_seq_num` at 64, the first event at [`PACKET_HEADER`].
const TYPES_TSDL: [&str; 7] = [
    "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;",
    "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;",
    "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;",
    "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;",
    "typealias integer { size = 64; align = 8; signed = false; } := unsigned long;",
    "typealias integer { size = 32; align = 8; signed = false; map = clock.monotonic.value; } := uint32_clock_monotonic_t;",
    "typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;",
];
/// The large event header: a 16-bit id and a 32-bit timestamp, or id 65535 and a 32-bit id
/// and 64-bit timestamp (the extended header).
const LARGE_HEADER_TSDL: &str = "struct event_header_large { enum : uint16_t { compact = 0 ... 65534, extended = 65535 } id; variant <id> { struct { uint32_clock_monotonic_t timestamp; } compact; struct { uint32_t id; uint64_clock_monotonic_t timestamp; } extended; } v; } align(8);";
const CTF_MAGIC: u32 = 0xC1FC_1FC1;
/// Bytes of the packet header and context ([`HEADER_TSDL`] + [`CONTEXT_TSDL`], packed).
pub const PACKET_HEADER: u64 = 84;
/// Bytes of a large event header, plain and extended.
const LARGE_HEADER: u64 = 6;
const EXTENDED_EXTRA: u64 = 8;
const EXTENDED_ID: u16 = u16::MAX;

/// One packet of a stream file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    pub seq: u64,
    /// `timestamp_begin` (the trace's clock, ns) and `cpu_id` of its context.
    pub begin: u64,
    pub cpu: u32,
    /// Bytes the packet occupies (`packet_size`), and of them written (`content_size`).
    pub size: u64,
    pub content: u64,
}

impl Packet {
    fn is_empty(&self) -> bool {
        self.content == PACKET_HEADER
    }
}

/// A packet's events, when every event has the same payload size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Events {
    pub events: u64,
    /// Of them, events with the extended (64-bit timestamp) header.
    pub extended: u64,
}

/// The packets of one stream file, in file order.
pub fn packets(bytes: &[u8]) -> Result<Vec<Packet>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < bytes.len() {
        if u32_at(bytes, off) != Some(CTF_MAGIC) {
            bail!("no packet magic at offset {off}");
        }
        let field = |at: usize| u64_at(bytes, off + at).context("truncated packet context");
        let (content, size, seq) = (field(48)? / 8, field(56)? / 8, field(64)?);
        if size < PACKET_HEADER || content < PACKET_HEADER || content > size {
            bail!("packet at offset {off} claims {content} of {size} bytes");
        }
        if off as u64 + size > bytes.len() as u64 {
            bail!("packet at offset {off} ends beyond the file");
        }
        let cpu = u32_at(bytes, off + 80).context("truncated packet context")?;
        out.push(Packet {
            seq,
            begin: field(32)?,
            cpu,
            size,
            content,
        });
        off += usize::try_from(size)?;
    }
    Ok(out)
}

/// The events of the packet at `off` in `bytes` (large headers, `payload` bytes each).
pub fn events(bytes: &[u8], off: usize, p: &Packet, payload: u64) -> Result<Events> {
    let end = off as u64 + p.content;
    let mut at = off as u64 + PACKET_HEADER;
    let mut ev = Events::default();
    while at < end {
        let id = u16_at(bytes, at as usize).context("truncated event")?;
        let mut len = LARGE_HEADER + payload;
        if id == EXTENDED_ID {
            len += EXTENDED_EXTRA;
            ev.extended += 1;
        }
        at += len;
        ev.events += 1;
    }
    if at != end {
        bail!(
            "packet {}: its events of {payload}-byte payloads overrun its content by {} bytes",
            p.seq,
            at - end
        );
    }
    Ok(ev)
}

/// The first 8 payload bytes of the packet at `off`'s first event (large header), `None` for
/// an empty packet.
pub fn first_payload(bytes: &[u8], off: usize, p: &Packet) -> Result<Option<u64>> {
    if p.is_empty() {
        return Ok(None);
    }
    let at = off + PACKET_HEADER as usize;
    let id = u16_at(bytes, at).context("truncated event")?;
    let header = LARGE_HEADER + if id == EXTENDED_ID { EXTENDED_EXTRA } else { 0 };
    u64_at(bytes, at + header as usize)
        .context("truncated event payload")
        .map(Some)
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// TSDL with its whitespace collapsed to single spaces.
pub fn flat(tsdl: &str) -> String {
    tsdl.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Fails unless the trace's packets have the layout [`packets`] reads.
pub fn check_layout(flat: &str) -> Result<()> {
    let types = TYPES_TSDL.iter().all(|t| flat.contains(t));
    if !(flat.contains("byte_order = le;")
        && flat.contains(HEADER_TSDL)
        && flat.contains(CONTEXT_TSDL)
        && types)
    {
        bail!("unexpected CTF packet layout (not LTTng 2.x, little-endian, 64-bit, byte-aligned)");
    }
    Ok(())
}

/// The payload bytes every event of the trace has, or why the events differ in size or in
/// layout from what [`events`] reads.
pub fn fixed_payload(flat: &str) -> Result<u64, String> {
    let streams: Vec<&str> = flat.split("stream { ").skip(1).collect();
    if streams.is_empty() {
        return Err("the metadata declares no stream".into());
    }
    for s in &streams {
        let body = &s[..s.find("};").unwrap_or(s.len())];
        if !body.contains("event.header := struct event_header_large;") {
            return Err("its events have the compact header, whose size this reader does not know (only the large one)".into());
        }
        if body.contains("event.context") {
            return Err("its events carry context fields".into());
        }
    }
    if !flat.contains(LARGE_HEADER_TSDL) {
        return Err("its large event header is not LTTng 2.x's".into());
    }
    let mut size = None;
    for decl in flat.split("event { ").skip(1) {
        let name = decl
            .split("name = \"")
            .nth(1)
            .and_then(|n| n.split('"').next())
            .unwrap_or("?");
        let fields = decl
            .split_once("fields := struct { ")
            .and_then(|(_, f)| f.split_once(" };"))
            .map(|(f, _)| f)
            .ok_or_else(|| format!("event {name}: no fields in its metadata"))?;
        let bytes = integer_fields(fields).ok_or_else(|| {
            format!("event {name} has fields of variable size or alignment ({fields})")
        })?;
        if *size.get_or_insert(bytes) != bytes {
            return Err(format!(
                "its events differ in size ({name}: {bytes} payload bytes)"
            ));
        }
    }
    size.ok_or_else(|| "the metadata declares no event".into())
}

/// Payload bytes of `fields` when every one is a byte-aligned whole-byte integer.
fn integer_fields(fields: &str) -> Option<u64> {
    let mut bytes = 0;
    let mut rest = fields.trim();
    while !rest.is_empty() {
        let (attrs, after) = rest.strip_prefix("integer { ")?.split_once(" }")?;
        let (name, next) = after.split_once(';')?;
        rest = next.trim_start();
        // A sequence or array (`_msg[ __msg_length ]`, tracef's string) is not one integer.
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let attrs: Vec<&str> = attrs.split(';').map(str::trim).collect();
        let get = |k: &str| attrs.iter().find_map(|a| a.strip_prefix(k));
        let size: u64 = get("size = ")?.parse().ok()?;
        if get("align = ")? != "8" || !size.is_multiple_of(8) || size == 0 {
            return None;
        }
        bytes += size / 8;
    }
    (bytes > 0).then_some(bytes)
}

/// One stream's packets as a snapshot holds them.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The stream file's path below its snapshot directory (`ust/uid/0/64-bit/rtrace_1`).
    pub key: PathBuf,
    pub file: PathBuf,
    pub packets: Vec<Packet>,
}

/// The stream files below the traces `traces`, which lie below `root` (one snapshot).
pub fn streams(root: &Path, traces: &[PathBuf]) -> Result<Vec<Stream>> {
    let mut out = Vec::new();
    for trace in traces {
        for e in std::fs::read_dir(trace)? {
            let file = e?.path();
            if !file.is_file() || file.file_name().is_some_and(|n| n == "metadata") {
                continue;
            }
            let bytes =
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let packets = packets(&bytes)
                .with_context(|| format!("{} is not a CTF stream", file.display()))?;
            // Below the snapshot's own directory, whose name holds its date.
            let key = file
                .strip_prefix(root)
                .map(|p| p.components().skip(1).collect::<PathBuf>())
                .unwrap_or_else(|_| file.clone());
            out.push(Stream { key, file, packets });
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// Per stream, the highest sequence number of the packets a snapshot taken before the workload
/// fired holds; fails unless every one of them is empty.
pub fn opened(streams: &[Stream]) -> Result<BTreeMap<PathBuf, u64>> {
    let mut out = BTreeMap::new();
    for s in streams {
        if let Some(p) = s.packets.iter().find(|p| !p.is_empty()) {
            bail!(
                "{}: packet {} of the snapshot taken at the start holds events although the workload had not fired yet",
                s.file.display(),
                p.seq
            );
        }
        if let Some(max) = s.packets.iter().map(|p| p.seq).max() {
            out.insert(s.key.clone(), max);
        }
    }
    Ok(out)
}

/// Packets missing from `seqs` above `opened` (the packets the session opened empty at its
/// start), up to the highest present.
pub fn missing(seqs: &[u64], opened: Option<u64>) -> u64 {
    let base = opened.map_or(0, |s| s + 1);
    let mut seqs: Vec<u64> = seqs.iter().copied().filter(|&s| s >= base).collect();
    seqs.sort_unstable();
    seqs.dedup();
    match seqs.last() {
        Some(&last) => last + 1 - base - seqs.len() as u64,
        None => 0,
    }
}

/// What a snapshot shows of the events its buffer overwrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overwritten {
    /// Packets missing from the streams' sequences.
    pub packets: u64,
    /// Events a full packet holds (`CAP`); 0 when nothing was overwritten.
    pub per_packet: u64,
    /// Events in the recorded packets (the snapshot's count, checked against babeltrace2's).
    pub recorded: u64,
}

impl Overwritten {
    pub fn events(&self) -> u64 {
        self.packets * self.per_packet
    }
}

/// The overwritten events of the snapshot `streams` (one trace, metadata `flat`), the packets
/// of `opened` left out. `None` for `recorded` and `per_packet` when nothing was overwritten:
/// then no layout is needed. Fails with the measured reason where the count cannot be exact.
pub fn overwritten(
    flat: &str,
    streams: &[Stream],
    opened: &BTreeMap<PathBuf, u64>,
) -> Result<Option<Overwritten>> {
    let lost: u64 = streams
        .iter()
        .map(|s| {
            let seqs: Vec<u64> = s.packets.iter().map(|p| p.seq).collect();
            missing(&seqs, opened.get(&s.key).copied())
        })
        .sum();
    if lost == 0 {
        return Ok(None);
    }
    check_layout(flat)?;
    let payload = fixed_payload(flat).map_err(|why| {
        anyhow::anyhow!("the buffer wrapped ({lost} packets overwritten) and how many events they held is unknown: {why}")
    })?;
    let event = LARGE_HEADER + payload;
    let mut o = Overwritten {
        packets: lost,
        ..Default::default()
    };
    for s in streams {
        let bytes = std::fs::read(&s.file)?;
        let base = opened.get(&s.key).map_or(0, |x| x + 1);
        let mut off = 0usize;
        let mut counted = Vec::new();
        for p in &s.packets {
            let ev =
                events(&bytes, off, p, payload).with_context(|| format!("{}", s.file.display()))?;
            off += p.size as usize;
            if ev.extended > 0 {
                bail!(
                    "{}: packet {} holds {} events with a 64-bit timestamp (a pause of at least 2^27 ns between two events): an overwritten packet may have held one event fewer than a full one, so the overwritten events are unknown",
                    s.file.display(),
                    p.seq,
                    ev.extended
                );
            }
            o.recorded += ev.events;
            if p.seq >= base {
                counted.push((p, ev.events));
            }
        }
        counted.sort_by_key(|(p, _)| p.seq);
        // A stream's last packet was closed by `lttng stop`; every other was full.
        for (p, n) in counted.iter().rev().skip(1) {
            let cap = (p.size - PACKET_HEADER) / event;
            if *n != cap {
                bail!(
                    "{}: packet {} holds {n} events where a full one of {} bytes holds {cap}: it was closed early (a flush while the workload fired), so the overwritten packets' events are unknown",
                    s.file.display(),
                    p.seq,
                    p.size
                );
            }
            if o.per_packet == 0 {
                o.per_packet = cap;
            } else if o.per_packet != cap {
                bail!(
                    "packets of different sizes ({} and {cap} events)",
                    o.per_packet
                );
            }
        }
    }
    if o.per_packet == 0 {
        bail!("the buffer wrapped ({lost} packets overwritten) but no full packet was recorded to count what one held");
    }
    Ok(Some(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet of `seq` of `size` bytes holding `events` events of 8-byte payloads, of which
    /// `extended` have the extended header.
    fn packet(seq: u64, size: usize, events: usize, extended: usize) -> Vec<u8> {
        let mut p = vec![0u8; size];
        p[..4].copy_from_slice(&CTF_MAGIC.to_le_bytes());
        let mut at = PACKET_HEADER as usize;
        for i in 0..events {
            let ext = i < extended;
            let id = if ext { EXTENDED_ID } else { 0 };
            p[at..at + 2].copy_from_slice(&id.to_le_bytes());
            at += 14 + if ext { 8 } else { 0 };
        }
        p[48..56].copy_from_slice(&((at as u64) * 8).to_le_bytes());
        p[56..64].copy_from_slice(&((size as u64) * 8).to_le_bytes());
        p[64..72].copy_from_slice(&seq.to_le_bytes());
        p
    }

    #[test]
    fn a_packets_first_payload_is_after_its_first_header() {
        let mut plain = packet(3, 4096, 2, 0);
        plain[84 + 6..84 + 14].copy_from_slice(&4242u64.to_le_bytes());
        let p = packets(&plain).unwrap()[0];
        assert_eq!(first_payload(&plain, 0, &p).unwrap(), Some(4242));
        let mut ext = packet(4, 4096, 1, 1);
        ext[84 + 14..84 + 22].copy_from_slice(&7u64.to_le_bytes());
        let both = [plain.clone(), ext].concat();
        let ps = packets(&both).unwrap();
        assert_eq!(first_payload(&both, 4096, &ps[1]).unwrap(), Some(7));
        let empty = packet(5, 4096, 0, 0);
        let p = packets(&empty).unwrap()[0];
        assert_eq!(first_payload(&empty, 0, &p).unwrap(), None);
    }

    const METADATA: &str = r#"
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 64; align = 8; signed = false; } := unsigned long;
trace { byte_order = le;
	packet.header := struct {
		uint32_t magic;
		uint8_t  uuid[16];
		uint32_t stream_id;
		uint64_t stream_instance_id;
	};
};
typealias integer {
	size = 32; align = 8; signed = false;
	map = clock.monotonic.value;
} := uint32_clock_monotonic_t;
typealias integer {
	size = 64; align = 8; signed = false;
	map = clock.monotonic.value;
} := uint64_clock_monotonic_t;
struct packet_context {
	uint64_clock_monotonic_t timestamp_begin;
	uint64_clock_monotonic_t timestamp_end;
	uint64_t content_size;
	uint64_t packet_size;
	uint64_t packet_seq_num;
	unsigned long events_discarded;
	uint32_t cpu_id;
};
struct event_header_large {
	enum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;
	variant <id> {
		struct {
			uint32_clock_monotonic_t timestamp;
		} compact;
		struct {
			uint32_t id;
			uint64_clock_monotonic_t timestamp;
		} extended;
	} v;
} align(8);
event {
	name = "rtrace:event";
	id = 0;
	stream_id = 0;
	loglevel = 13;
	fields := struct {
		integer { size = 64; align = 8; signed = 1; encoding = none; base = 10; } _i;
	};
};
stream {
	id = 0;
	event.header := struct event_header_large;
	packet.context := struct packet_context;
};
"#;

    /// A snapshot of one stream holding `packets`, in a temporary directory laid out as
    /// LTTng's (`snapshot-1-…/ust/uid/0/64-bit/rtrace_1`).
    fn snapshot(packets: &[Vec<u8>]) -> (tempfile::TempDir, Vec<Stream>) {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("snapshot-1-x/ust/uid/0/64-bit");
        std::fs::create_dir_all(&trace).unwrap();
        std::fs::write(trace.join("metadata"), "").unwrap();
        std::fs::write(trace.join("rtrace_1"), packets.concat()).unwrap();
        let s = streams(dir.path(), &[trace]).unwrap();
        (dir, s)
    }

    fn key() -> PathBuf {
        PathBuf::from("ust/uid/0/64-bit/rtrace_1")
    }

    #[test]
    fn the_layout_read_is_the_metadata_s() {
        let m = flat(METADATA);
        check_layout(&m).unwrap();
        assert_eq!(fixed_payload(&m), Ok(8));
        let tracef = m.replace(
            "integer { size = 64; align = 8; signed = 1; encoding = none; base = 10; } _i;",
            "string { encoding = UTF8; } _msg;",
        );
        let why = fixed_payload(&tracef).unwrap_err();
        assert!(why.contains("variable size"), "{why}");
        let compact = m.replace("struct event_header_large;", "struct event_header_compact;");
        assert!(fixed_payload(&compact).unwrap_err().contains("compact"));
        let packed = m.replace(
            "size = 64; align = 8; signed = false; } := uint64_t",
            "size = 64; align = 64; signed = false; } := uint64_t",
        );
        assert!(check_layout(&packed).is_err());
        let two = format!(
            "{m} {}",
            flat(
                r#"event { name = "rtrace:idle"; id = 1; stream_id = 0; fields := struct { integer { size = 32; align = 8; signed = 1; } _j; }; };"#
            )
        );
        assert!(fixed_payload(&two).unwrap_err().contains("differ in size"));
        // tracef as lttng-ust 2.13 declares it: a length, then a sequence of its bytes.
        let sequence = m.replace(
            "integer { size = 64; align = 8; signed = 1; encoding = none; base = 10; } _i;",
            "integer { size = 32; align = 8; signed = 0; encoding = none; base = 10; } __msg_length; integer { size = 8; align = 8; signed = 1; encoding = UTF8; base = 10; } _msg[ __msg_length ];",
        );
        assert!(fixed_payload(&sequence)
            .unwrap_err()
            .contains("variable size"));
    }

    #[test]
    fn reads_packets_and_their_events() {
        let bytes = [packet(5, 4096, 286, 0), packet(6, 4096, 10, 1)].concat();
        let ps = packets(&bytes).unwrap();
        assert_eq!(ps.iter().map(|p| p.seq).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(ps[0].content, 84 + 286 * 14);
        let ev = events(&bytes, 4096, &ps[1], 8).unwrap();
        assert_eq!(
            ev,
            Events {
                events: 10,
                extended: 1
            }
        );
        assert!(
            events(&bytes, 0, &ps[0], 12).is_err(),
            "12-byte payloads do not fit"
        );
        assert!(packets(b"metadata").is_err());
        let mut cut = packet(0, 4096, 0, 0);
        cut.truncate(60);
        assert!(packets(&cut).is_err());
    }

    #[test]
    fn counts_missing_packets_above_the_opened_ones() {
        assert_eq!(missing(&[351, 352, 354], None), 352);
        assert_eq!(missing(&[351, 352, 354], Some(0)), 351);
        assert_eq!(missing(&[0, 1, 2], Some(0)), 0);
        assert_eq!(missing(&[0, 1], Some(2)), 0, "only opened packets");
        assert_eq!(missing(&[], None), 0);
    }

    #[test]
    fn full_packets_give_the_overwritten_events() {
        let m = flat(METADATA);
        let (_d, s) = snapshot(&[
            packet(207, 4096, 286, 0),
            packet(208, 4096, 286, 0),
            packet(209, 3248, 226, 0),
        ]);
        let opened = BTreeMap::from([(key(), 0)]);
        let o = overwritten(&m, &s, &opened).unwrap().unwrap();
        assert_eq!(o.packets, 206);
        assert_eq!(o.per_packet, 286);
        assert_eq!(o.events(), 206 * 286);
        assert_eq!(o.recorded, 286 * 2 + 226);
        // Nothing missing: nothing to know of the layout.
        let (_d, whole) = snapshot(&[packet(0, 4096, 0, 0), packet(1, 4096, 12, 0)]);
        assert_eq!(overwritten("", &whole, &opened).unwrap(), None);
    }

    #[test]
    fn refuses_what_it_cannot_know() {
        let m = flat(METADATA);
        let opened = BTreeMap::from([(key(), 0)]);
        let (_d, ext) = snapshot(&[packet(7, 4096, 285, 1), packet(8, 1000, 3, 0)]);
        let e = overwritten(&m, &ext, &opened).unwrap_err().to_string();
        assert!(e.contains("64-bit timestamp"), "{e}");
        let (_d, flushed) = snapshot(&[packet(7, 4096, 100, 0), packet(8, 1000, 3, 0)]);
        let e = overwritten(&m, &flushed, &opened).unwrap_err().to_string();
        assert!(e.contains("closed early"), "{e}");
        let (_d, last) = snapshot(&[packet(7, 1000, 3, 0)]);
        let e = overwritten(&m, &last, &opened).unwrap_err().to_string();
        assert!(e.contains("no full packet"), "{e}");
        let (_d, s) = snapshot(&[packet(7, 4096, 286, 0), packet(8, 1000, 3, 0)]);
        let tracef = m.replace(
            "integer { size = 64; align = 8; signed = 1; encoding = none; base = 10; } _i;",
            "string _msg;",
        );
        let e = overwritten(&tracef, &s, &opened).unwrap_err().to_string();
        assert!(e.contains("unknown"), "{e}");
    }

    #[test]
    fn the_start_snapshot_must_be_empty() {
        let (_d, s) = snapshot(&[packet(0, 4096, 0, 0), packet(1, 4096, 0, 0)]);
        assert_eq!(opened(&s).unwrap(), BTreeMap::from([(key(), 1)]));
        let (_d, s) = snapshot(&[packet(0, 4096, 2, 0)]);
        assert!(opened(&s).is_err());
    }
}
