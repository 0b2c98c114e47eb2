//! The `events` suite's programs (`bpf/events.bpf.c`) behind [`Hook::Read`](rtrace_tracer::Hook):
//! one experiment of Gregg's benchmark at a time, attached to every process as the bpftrace
//! one-liners are, or an accounting program counting one hook's events per process. A thread
//! owns the BPF object from open to close (the skeleton borrows its storage); when stopped it
//! detaches and reads the program's map (or counts the per-event lines it wrote) into an
//! [`Output`], from which the attachment's evidence and event counts are computed.

use anyhow::{bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, RingBufferBuilder};
use rtrace_tracer::features::{Evidence, Feature, ReadHook, ReadProgram, Unsupported, NO_KPROBES};
use rtrace_tracer::{Attachment, EventStats};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use crate::freed::KernelIds;
use crate::libbpf_log;
use crate::worker::Worker;

#[allow(clippy::all, unused_imports)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/events.skel.rs"));
    // SAFETY: `#[repr(C)]` structs of plain integers: every bit pattern is valid.
    unsafe impl plain::Plain for types::ev_line {}
}

/// Experiment 18's lines (`"%d bytes"`, as bpftrace's printf), below the run's directory:
/// written, counted, then removed (the suite keeps no per-event output).
const LINES_FILE: &str = "ebpf-per-event.txt";

/// Log2 buckets of `ev_hist` (`EV_HIST_BUCKETS` in `bpf/events.h`).
const HIST_BUCKETS: u32 = 64;

/// Everything one program's session needs.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    pub program: ReadProgram,
    /// Whether 8-18 hook `vfs_read` with kprobes as Gregg's do (else the syscall's tracepoint).
    pub kprobes: bool,
    /// libc and the file offset of its `read` (experiments 6 and 7, libc accounting).
    pub libc: PathBuf,
    pub read_offset: u64,
    /// Size of the `ev_lines` ring buffer (experiment 18), as `plan::ring_bytes` gives it.
    pub ring_bytes: u32,
    /// The process an accounting program counts (`None` for an experiment's program).
    pub pid: Option<u32>,
    pub out_dir: PathBuf,
    pub consumer_cpus: Vec<usize>,
}

/// Whether this backend can run `program` here; `Unsupported` when not.
pub fn check(program: ReadProgram, kprobes: bool, libc: &Path) -> Result<()> {
    if program.needs_kprobes() && !kprobes {
        return Err(Unsupported::Unavailable(NO_KPROBES.into()).into());
    }
    if on_libc(program).is_some() {
        anyhow::ensure!(
            libc.is_file(),
            "cannot read {}: check the path of libc",
            libc.display()
        );
    }
    Ok(())
}

/// The program as the report names it: `bpf/events.bpf.c, experiment 04`.
pub fn describe(program: ReadProgram) -> String {
    match program {
        ReadProgram::Feature(f) => format!("bpf/events.bpf.c, experiment {:02}", f.number()),
        ReadProgram::Account(h) => format!("bpf/events.bpf.c, {}", account_program(h)),
    }
}

/// A running program of the suite; stopped by `finish` / `evidence`, or on drop.
pub struct ReadAttachment {
    worker: Worker<Output>,
    program: ReadProgram,
    pid: Option<u32>,
}

impl ReadAttachment {
    /// Loads and attaches the program; returns once it is attached.
    pub fn start(plan: ReadPlan) -> Result<ReadAttachment> {
        if let ReadProgram::Account(h) = plan.program {
            anyhow::ensure!(
                plan.pid.is_some(),
                "the accounting program on {} counts one process: give the target's pid",
                h.label()
            );
        }
        let (program, pid) = (plan.program, plan.pid);
        let worker = Worker::start(
            "rtrace-ebpf-ev",
            Box::new(move |attached, stop, ids| trace(&plan, attached, stop, ids)),
        )?;
        Ok(ReadAttachment {
            worker,
            program,
            pid,
        })
    }
}

impl Attachment for ReadAttachment {
    /// Every event the program's output counts (of every process; an accounting program's: of
    /// its process). Fails for the empty-action experiments, whose output counts nothing.
    fn finish(self: Box<Self>) -> Result<EventStats> {
        let out = self.worker.finish()?;
        let Some(recorded) = out.total(self.program, self.pid) else {
            bail!(
                "{} counts nothing (its action is empty): read its evidence instead",
                describe(self.program)
            );
        };
        Ok(EventStats {
            recorded,
            lost: out.lost,
            overwritten: 0,
        })
    }

    fn evidence(self: Box<Self>, pid: u32, comm: &str) -> Result<Evidence> {
        let out = self.worker.finish()?;
        Ok(out.evidence(self.program, pid, comm))
    }
}

/// What a session read before closing its BPF object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Output {
    /// Every key of the program's counting map with its count summed over CPUs (a per-CPU
    /// array's entries keyed by index); empty for the empty-action experiments and 18.
    rows: Vec<(Vec<u8>, u64)>,
    /// Experiment 18: lines written, by pid.
    lines: BTreeMap<u32, u64>,
    /// Experiment 18: ring-buffer reservations that failed.
    lost: u64,
}

impl Output {
    fn sum(&self) -> u64 {
        self.rows.iter().map(|r| r.1).sum()
    }

    fn at(&self, key: &[u8]) -> u64 {
        self.rows
            .iter()
            .filter(|(k, _)| k == key)
            .map(|r| r.1)
            .sum()
    }

    /// Rows whose key holds `pid` at byte `at`.
    fn of_pid_at(&self, pid: u32, at: usize) -> u64 {
        self.rows
            .iter()
            .filter(|(k, _)| k.get(at..at + 4) == Some(&pid.to_ne_bytes()[..]))
            .map(|r| r.1)
            .sum()
    }

    /// Events in the output: every process's, an accounting program's at `pid`; `None` where
    /// the output counts nothing.
    fn total(&self, program: ReadProgram, pid: Option<u32>) -> Option<u64> {
        match program {
            ReadProgram::Account(_) => Some(self.at(&pid?.to_ne_bytes())),
            ReadProgram::Feature(Feature::PerEvent) => Some(self.lines.values().sum()),
            ReadProgram::Feature(f) if counts(f) => Some(self.sum()),
            ReadProgram::Feature(_) => None,
        }
    }

    /// What the output shows of the workload `pid` / `comm`.
    fn evidence(&self, program: ReadProgram, pid: u32, comm: &str) -> Evidence {
        let e = |workload, all, source: String| Evidence {
            workload,
            all,
            lost: self.lost,
            source,
        };
        let feature = match program {
            ReadProgram::Account(h) => {
                let n = self.at(&pid.to_ne_bytes());
                return e(
                    Some(n),
                    None,
                    format!("{}: {n} at the workload's pid", h.label()),
                );
            }
            ReadProgram::Feature(f) => f,
        };
        match feature {
            Feature::Map => {
                let n = self.sum();
                e(None, Some(n), format!("@ = count(): {n} (every process)"))
            }
            Feature::SingleKey => {
                let n = self.at(&pid.to_ne_bytes());
                e(Some(n), None, format!("@[pid]: {n} at the workload's pid"))
            }
            Feature::StringKey => {
                let n = self.at(&comm_bytes(comm));
                e(Some(n), None, format!("@[comm]: {n} at \"{comm}\""))
            }
            Feature::TwoKeys => {
                let mut key = pid.to_ne_bytes().to_vec();
                key.extend_from_slice(&comm_bytes(comm));
                let n = self.at(&key);
                e(
                    Some(n),
                    None,
                    format!("@[pid, comm]: {n} at the workload's"),
                )
            }
            Feature::KernelStack => {
                let n = self.sum();
                e(
                    None,
                    Some(n),
                    format!(
                        "@[kstack]: {n} over {} stacks (every process)",
                        self.rows.len()
                    ),
                )
            }
            Feature::UserStack | Feature::Multiple => {
                // The pid sits after the stack id(s): offset 8 (ev_stack_key) or 16 (ev_multi_key).
                let at = if feature == Feature::UserStack { 8 } else { 16 };
                let n = self.of_pid_at(pid, at);
                e(
                    Some(n),
                    Some(self.sum()),
                    format!("{n} at the workload's pid over {} keys", self.rows.len()),
                )
            }
            Feature::Histogram | Feature::Timing => {
                let n = self.sum();
                e(
                    None,
                    Some(n),
                    format!("@ = hist(): {n} values (every process)"),
                )
            }
            Feature::PerEvent => {
                let all: u64 = self.lines.values().sum();
                let workload = self.lines.get(&pid).copied().unwrap_or(0);
                e(
                    Some(workload),
                    Some(all),
                    format!("{all} lines in {LINES_FILE}, {workload} of the workload's pid"),
                )
            }
            _ => e(None, None, "no output (the action is empty)".into()),
        }
    }
}

/// Whether an experiment counts its events in a map (else its action is empty, or it prints).
fn counts(feature: Feature) -> bool {
    Counted::of(ReadProgram::Feature(feature)).is_some()
}

/// The map of `events.bpf.c` a program counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    /// `ev_count` (a per-CPU array of one entry).
    Count,
    ByPid,
    ByComm,
    ByPidComm,
    ByStack,
    ByMulti,
    /// `ev_hist` (a per-CPU array of log2 buckets).
    Hist,
}

impl Counted {
    fn of(program: ReadProgram) -> Option<Counted> {
        Some(match program {
            ReadProgram::Account(_) => Counted::ByPid,
            ReadProgram::Feature(f) => match f {
                Feature::Map => Counted::Count,
                Feature::SingleKey => Counted::ByPid,
                Feature::StringKey => Counted::ByComm,
                Feature::TwoKeys => Counted::ByPidComm,
                Feature::KernelStack | Feature::UserStack => Counted::ByStack,
                Feature::Multiple => Counted::ByMulti,
                Feature::Histogram | Feature::Timing => Counted::Hist,
                _ => return None,
            },
        })
    }

    fn map<'a>(self, m: &'a skel::EventsMaps<'_>) -> &'a dyn MapCore {
        match self {
            Counted::Count => &m.ev_count,
            Counted::ByPid => &m.ev_by_pid,
            Counted::ByComm => &m.ev_by_comm,
            Counted::ByPidComm => &m.ev_by_pid_comm,
            Counted::ByStack => &m.ev_by_stack,
            Counted::ByMulti => &m.ev_by_multi,
            Counted::Hist => &m.ev_hist,
        }
    }
}

/// The programs of each experiment, by name in `events.bpf.c` (8-18: `_kp` on `vfs_read` with
/// kprobes, `_tp` on the syscall's tracepoint without).
fn programs(feature: Feature, kprobes: bool) -> Vec<String> {
    let one = |n: &str| vec![n.to_owned()];
    let hooked = |n: &str| vec![format!("{n}_{}", if kprobes { "kp" } else { "tp" })];
    match feature {
        Feature::Control => Vec::new(),
        Feature::Kprobe => one("ev_kprobe"),
        Feature::Kretprobe => one("ev_kretprobe"),
        Feature::TracepointEntry => one("ev_enter"),
        Feature::TracepointReturn => one("ev_exit"),
        Feature::Uprobe => one("ev_uprobe"),
        Feature::Uretprobe => one("ev_uretprobe"),
        Feature::Filter => hooked("ev_filter"),
        Feature::Map => hooked("ev_map"),
        Feature::SingleKey => hooked("ev_pid_key"),
        Feature::StringKey => hooked("ev_comm_key"),
        Feature::TwoKeys => hooked("ev_two_keys"),
        Feature::KernelStack => hooked("ev_kstack"),
        Feature::UserStack => hooked("ev_ustack"),
        Feature::Histogram => hooked("ev_hist_arg"),
        Feature::Timing => [hooked("ev_timing_enter"), hooked("ev_timing_exit")].concat(),
        Feature::Multiple => hooked("ev_multiple"),
        Feature::PerEvent => hooked("ev_print"),
    }
}

/// The accounting program of `hook` (per-pid counts in `ev_by_pid`).
fn account_program(hook: ReadHook) -> &'static str {
    match hook {
        ReadHook::Enter => "ev_acct_enter",
        ReadHook::Exit => "ev_acct_exit",
        ReadHook::Uprobe => "ev_acct_uprobe",
        ReadHook::Uretprobe => "ev_acct_uretprobe",
        ReadHook::Kprobe => "ev_acct_kprobe",
        ReadHook::Kretprobe => "ev_acct_kretprobe",
    }
}

/// Whether the program hooks libc's `read`, and its return (`Some(true)`) or entry.
fn on_libc(program: ReadProgram) -> Option<bool> {
    match program {
        ReadProgram::Feature(Feature::Uprobe) | ReadProgram::Account(ReadHook::Uprobe) => {
            Some(false)
        }
        ReadProgram::Feature(Feature::Uretprobe) | ReadProgram::Account(ReadHook::Uretprobe) => {
            Some(true)
        }
        _ => None,
    }
}

fn trace(
    plan: &ReadPlan,
    attached: &mut dyn FnMut(),
    stop: &Receiver<()>,
    ids: &mut KernelIds,
) -> Result<Output> {
    crate::session::pin(&plan.consumer_cpus)?;
    libbpf_log::capture();
    libbpf_log::clear();
    let mut storage = MaybeUninit::<OpenObject>::uninit();
    let mut open = skel::EventsSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| crate::session::explain(e, "opening the embedded events BPF object"))?;
    let per_event = plan.program == ReadProgram::Feature(Feature::PerEvent);
    open.maps
        .ev_lines
        .set_max_entries(lines_ring(plan.program, plan.ring_bytes)?)
        .context("cannot size the ring buffer")?;
    let wanted = match plan.program {
        ReadProgram::Account(h) => vec![account_program(h).to_owned()],
        ReadProgram::Feature(f) => programs(f, plan.kprobes),
    };
    for mut prog in open.open_object_mut().progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        prog.set_autoload(wanted.contains(&name));
    }
    let mut skel = open
        .load()
        .map_err(|e| crate::session::explain(e, "loading the events BPF programs"))?;
    *ids = KernelIds::of(skel.object());
    let mut links: Vec<Link> = Vec::new();
    for prog in skel.object_mut().progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        if !wanted.contains(&name) {
            continue;
        }
        let link = match on_libc(plan.program) {
            Some(ret) => prog.attach_uprobe(ret, -1, &plan.libc, plan.read_offset as usize),
            None => prog.attach(),
        }
        .map_err(|e| crate::session::explain(e, &format!("attaching {name}")))?;
        links.push(link);
    }
    if per_event {
        return lines(plan, &skel, links, attached, stop);
    }
    attached();
    let _ = stop.recv();
    drop(links);
    read_map(plan.program, &skel)
}

/// The size of `ev_lines`: the target's ring (`ring_bytes`) for experiment 18, which writes
/// into it; the smallest ring for the others.
fn lines_ring(program: ReadProgram, ring_bytes: u32) -> Result<u32> {
    if program == ReadProgram::Feature(Feature::PerEvent) {
        Ok(ring_bytes)
    } else {
        crate::plan::ring_bytes(Some(1), 1)
    }
}

/// Experiment 18: every record woken and formatted as bpftrace's printf line, counted by pid.
fn lines(
    plan: &ReadPlan,
    skel: &skel::EventsSkel<'_>,
    links: Vec<Link>,
    attached: &mut dyn FnMut(),
    stop: &Receiver<()>,
) -> Result<Output> {
    let path = plan.out_dir.join(LINES_FILE);
    let file = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {} (check --out)", path.display()))?;
    let out = RefCell::new((std::io::BufWriter::new(file), BTreeMap::<u32, u64>::new()));
    let mut builder = RingBufferBuilder::new();
    builder
        .add(&skel.maps.ev_lines, |data| {
            let mut line = skel::types::ev_line::default();
            if plain::copy_from_bytes(&mut line, data).is_err() {
                return -1;
            }
            let mut o = out.borrow_mut();
            if writeln!(o.0, "{} bytes", line.count).is_err() {
                return -1;
            }
            *o.1.entry(line.pid).or_default() += 1;
            0
        })
        .context("cannot set up the ring-buffer consumer")?;
    let ring = builder
        .build()
        .context("cannot set up the ring-buffer consumer")?;
    attached();
    loop {
        let n = ring.poll_raw(Duration::from_millis(50));
        if n < 0 && n != -(nix::errno::Errno::EINTR as i32) {
            bail!(
                "waiting on the BPF ring buffer failed: {}",
                std::io::Error::from_raw_os_error(-n)
            );
        }
        if stop.recv_timeout(Duration::ZERO) != Err(RecvTimeoutError::Timeout) {
            break;
        }
    }
    drop(links);
    while ring.consume_raw() > 0 {}
    drop(ring);
    let (mut w, lines) = out.into_inner();
    w.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    drop(w);
    let _ = std::fs::remove_file(&path);
    Ok(Output {
        rows: Vec::new(),
        lines,
        lost: sum_percpu(&skel.maps.ev_lost, &0u32.to_ne_bytes())?,
    })
}

/// The program's counting map, every key with its count summed over CPUs.
fn read_map(program: ReadProgram, skel: &skel::EventsSkel<'_>) -> Result<Output> {
    let Some(counted) = Counted::of(program) else {
        return Ok(Output::default());
    };
    let map = counted.map(&skel.maps);
    let rows = match counted {
        // Per-CPU arrays: their indices, not a key iteration.
        Counted::Count => vec![index_row(map, 0)?],
        Counted::Hist => (0..HIST_BUCKETS)
            .map(|b| index_row(map, b))
            .collect::<Result<_>>()?,
        _ => map
            .keys()
            .map(|k| Ok((k.clone(), sum_percpu(map, &k)?)))
            .collect::<Result<_>>()?,
    };
    Ok(Output {
        rows,
        ..Output::default()
    })
}

fn index_row(map: &dyn MapCore, index: u32) -> Result<(Vec<u8>, u64)> {
    let key = index.to_ne_bytes();
    Ok((key.to_vec(), sum_percpu(map, &key)?))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
}

fn sum_percpu(map: &dyn MapCore, key: &[u8]) -> Result<u64> {
    Ok(map
        .lookup_percpu(key, MapFlags::ANY)
        .with_context(|| format!("cannot read the BPF map {}", map.name().to_string_lossy()))?
        .unwrap_or_default()
        .iter()
        .map(|v| u64_at(v, 0))
        .sum())
}

fn comm_bytes(comm: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    for (d, s) in c.iter_mut().zip(comm.bytes().take(15)) {
        *d = s;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: &[(Vec<u8>, u64)]) -> Output {
        Output {
            rows: rows.to_vec(),
            ..Output::default()
        }
    }

    #[test]
    fn keyed_maps_give_the_workloads_count() {
        let out = rows(&[
            (7u32.to_ne_bytes().to_vec(), 3),
            (4242u32.to_ne_bytes().to_vec(), 1000),
        ]);
        let ev = out.evidence(ReadProgram::Feature(Feature::SingleKey), 4242, "workload");
        assert_eq!((ev.workload, ev.all), (Some(1000), None));
        let acct = ReadProgram::Account(ReadHook::Enter);
        assert_eq!(out.evidence(acct, 4242, "w").workload, Some(1000));
        assert_eq!(out.total(acct, Some(4242)), Some(1000));
        assert_eq!(out.total(acct, None), None);
        // Every process's events for an experiment's program.
        assert_eq!(
            out.total(ReadProgram::Feature(Feature::SingleKey), None),
            Some(1003)
        );
        let mut key = 4242u32.to_ne_bytes().to_vec();
        key.extend_from_slice(&comm_bytes("workload"));
        let two = rows(&[(key, 1000)]);
        let ev = two.evidence(ReadProgram::Feature(Feature::TwoKeys), 4242, "workload");
        assert_eq!(ev.workload, Some(1000));
    }

    #[test]
    fn lines_are_counted_by_pid_and_empty_actions_count_nothing() {
        let out = Output {
            lines: BTreeMap::from([(1, 5), (4242, 1000)]),
            lost: 2,
            ..Output::default()
        };
        let ev = out.evidence(ReadProgram::Feature(Feature::PerEvent), 4242, "w");
        assert_eq!((ev.workload, ev.all, ev.lost), (Some(1000), Some(1005), 2));
        assert_eq!(
            out.total(ReadProgram::Feature(Feature::PerEvent), None),
            Some(1005)
        );
        let none = Output::default();
        let control = ReadProgram::Feature(Feature::TracepointEntry);
        assert_eq!(none.total(control, None), None);
        assert_eq!(none.evidence(control, 1, "w"), {
            Evidence {
                source: "no output (the action is empty)".into(),
                ..Evidence::default()
            }
        });
    }

    #[test]
    fn experiment_18s_ring_is_the_targets() {
        let ring = crate::plan::ring_bytes(Some(64), 2).unwrap();
        assert_eq!(ring, 128 << 10);
        let per_event = ReadProgram::Feature(Feature::PerEvent);
        assert_eq!(lines_ring(per_event, ring).unwrap(), ring);
        let page = crate::plan::ring_bytes(Some(1), 1).unwrap();
        assert_eq!(
            lines_ring(ReadProgram::Feature(Feature::Map), ring).unwrap(),
            page
        );
    }

    #[test]
    fn kprobe_programs_are_unavailable_without_kprobes() {
        let libc = Path::new("/nonexistent/libc.so.6");
        let e = check(ReadProgram::Feature(Feature::Kprobe), false, libc).unwrap_err();
        assert_eq!(
            e.downcast_ref::<Unsupported>(),
            Some(&Unsupported::Unavailable(NO_KPROBES.into()))
        );
        assert!(check(ReadProgram::Feature(Feature::Kprobe), true, libc).is_ok());
        assert!(check(ReadProgram::Account(ReadHook::Kretprobe), false, libc).is_err());
        // A uprobe needs the library.
        assert!(check(ReadProgram::Feature(Feature::Uprobe), false, libc).is_err());
        assert_eq!(
            describe(ReadProgram::Feature(Feature::Map)),
            "bpf/events.bpf.c, experiment 09"
        );
    }
}
