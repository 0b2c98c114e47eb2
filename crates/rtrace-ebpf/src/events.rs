//! The `events` suite's programs (`bpf/events.bpf.c`) behind [`Hook::Read`](rtrace_tracer::Hook):
//! one experiment of Gregg's benchmark at a time, attached to every process as the bpftrace
//! one-liners are, or an accounting program counting one hook's events per process. A thread
//! owns the BPF object from open to close (the skeleton borrows its storage); when stopped it
//! detaches and reads the program's map (or counts the per-event lines it wrote) into an
//! [`Output`], from which the attachment's evidence and event counts are computed.

use anyhow::{bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, OpenObject};
use rtrace_tracer::features::{Evidence, Feature, Read, ReadHook, ReadProgram};
use rtrace_tracer::{Attachment, EventStats, Target};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::mem::MaybeUninit;
use std::sync::mpsc::Receiver;

use crate::freed::KernelIds;
use crate::libbpf_log;
use crate::readout::sum_percpu;
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

/// Whether this backend can run the program here; `Unsupported` when not.
pub fn check(read: &Read) -> Result<()> {
    read.check_kprobes()?;
    if read.on_libc().is_some() {
        anyhow::ensure!(
            read.libc.is_file(),
            "cannot read {}: check the path of libc",
            read.libc.display()
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
    /// Loads and attaches the program, experiment 18's ring of `ring_bytes`; returns once it
    /// is attached.
    pub fn start(read: &Read, target: &Target, ring_bytes: u32) -> Result<ReadAttachment> {
        read.program.account(target.pid)?;
        let (program, pid) = (read.program, target.pid);
        let (read, target) = (read.clone(), target.clone());
        let worker = Worker::start(
            "rtrace-ebpf-ev",
            Box::new(move |attached, stop, ids| {
                trace(&read, &target, ring_bytes, attached, stop, ids)
            }),
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
        Ok(EventStats::new(recorded, out.lost))
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
    /// array's entries keyed by index); `None` for the programs that count in no map (the
    /// empty-action experiments, and 18).
    rows: Option<Vec<(Vec<u8>, u64)>>,
    /// Experiment 18: lines written, by pid.
    lines: BTreeMap<u32, u64>,
    /// Experiment 18: ring-buffer reservations that failed.
    lost: u64,
}

impl Output {
    fn sum(&self) -> u64 {
        self.rows.iter().flatten().map(|r| r.1).sum()
    }

    /// Rows whose key is `key` (`at`: `None`), or holds it at byte `at`.
    fn at(&self, key: &[u8], at: Option<usize>) -> u64 {
        let hit = |k: &[u8]| match at {
            None => k == key,
            Some(at) => k.get(at..at + key.len()) == Some(key),
        };
        self.rows
            .iter()
            .flatten()
            .filter(|(k, _)| hit(k))
            .map(|r| r.1)
            .sum()
    }

    /// Events in the output: every process's, an accounting program's at `pid`; `None` where
    /// the output counts nothing.
    fn total(&self, program: ReadProgram, pid: Option<u32>) -> Option<u64> {
        match program {
            ReadProgram::Account(_) => Some(self.at(&pid?.to_ne_bytes(), None)),
            ReadProgram::Feature(Feature::PerEvent) => Some(self.lines.values().sum()),
            ReadProgram::Feature(_) => self.rows.as_ref().map(|_| self.sum()),
        }
    }

    /// What the output shows of the workload `pid` / `comm`.
    fn evidence(&self, program: ReadProgram, pid: u32, comm: &str) -> Evidence {
        let (sum, keys, p) = (
            self.sum(),
            self.rows.iter().flatten().count(),
            pid.to_ne_bytes(),
        );
        let at_pid = self.at(&p, None);
        let (workload, all, source) = match program {
            ReadProgram::Account(h) => (
                Some(at_pid),
                None,
                format!("{}: {at_pid} at the workload's pid", h.label()),
            ),
            ReadProgram::Feature(f) => match f {
                Feature::Map => (
                    None,
                    Some(sum),
                    format!("@ = count(): {sum} (every process)"),
                ),
                Feature::SingleKey => (
                    Some(at_pid),
                    None,
                    format!("@[pid]: {at_pid} at the workload's pid"),
                ),
                Feature::StringKey => {
                    let n = self.at(&comm_bytes(comm), None);
                    (Some(n), None, format!("@[comm]: {n} at \"{comm}\""))
                }
                Feature::TwoKeys => {
                    let n = self.at(&[&p[..], &comm_bytes(comm)].concat(), None);
                    (
                        Some(n),
                        None,
                        format!("@[pid, comm]: {n} at the workload's"),
                    )
                }
                Feature::KernelStack => (
                    None,
                    Some(sum),
                    format!("@[kstack]: {sum} over {keys} stacks (every process)"),
                ),
                Feature::UserStack | Feature::Multiple => {
                    // The pid sits after the stack id(s): offset 8 (ev_stack_key) or 16
                    // (ev_multi_key).
                    let n = self.at(&p, Some(if f == Feature::UserStack { 8 } else { 16 }));
                    let source = format!("{n} at the workload's pid over {keys} keys");
                    (Some(n), Some(sum), source)
                }
                Feature::Histogram | Feature::Timing => (
                    None,
                    Some(sum),
                    format!("@ = hist(): {sum} values (every process)"),
                ),
                Feature::PerEvent => {
                    let all: u64 = self.lines.values().sum();
                    let n = self.lines.get(&pid).copied().unwrap_or(0);
                    let source = format!("{all} lines in {LINES_FILE}, {n} of the workload's pid");
                    (Some(n), Some(all), source)
                }
                _ => (None, None, "no output (the action is empty)".into()),
            },
        };
        Evidence {
            workload,
            all,
            lost: self.lost,
            source,
        }
    }
}

/// The map of `events.bpf.c` a program counts in, with the number of indices of a per-CPU
/// array (`None`: a hash map, read by its keys); `None` for a program that counts in no map.
fn counting_map<'a>(
    program: ReadProgram,
    m: &'a skel::EventsMaps<'_>,
) -> Option<(&'a dyn MapCore, Option<u32>)> {
    Some(match program {
        ReadProgram::Account(_) | ReadProgram::Feature(Feature::SingleKey) => (&m.ev_by_pid, None),
        ReadProgram::Feature(f) => match f {
            Feature::Map => (&m.ev_count, Some(1)),
            Feature::StringKey => (&m.ev_by_comm, None),
            Feature::TwoKeys => (&m.ev_by_pid_comm, None),
            Feature::KernelStack | Feature::UserStack => (&m.ev_by_stack, None),
            Feature::Multiple => (&m.ev_by_multi, None),
            Feature::Histogram | Feature::Timing => (&m.ev_hist, Some(HIST_BUCKETS)),
            _ => return None,
        },
    })
}

/// The programs of `program`, by name in `events.bpf.c` (8-18: `_kp` on `vfs_read` with
/// kprobes, `_tp` on the syscall's tracepoint without; an accounting program of `hook` is
/// `ev_acct_<hook>`, its per-pid counts in `ev_by_pid`).
fn programs(program: ReadProgram, kprobes: bool) -> Vec<String> {
    let feature = match program {
        ReadProgram::Account(h) => return vec![account_program(h)],
        ReadProgram::Feature(f) => f,
    };
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

/// `ev_acct_enter`, `ev_acct_uretprobe`, ...: the hook's name in lower case.
fn account_program(hook: ReadHook) -> String {
    format!("ev_acct_{}", format!("{hook:?}").to_lowercase())
}

fn trace(
    read: &Read,
    target: &Target,
    ring_bytes: u32,
    attached: &mut dyn FnMut(),
    stop: &Receiver<()>,
    ids: &mut KernelIds,
) -> Result<Output> {
    rtrace_tracer::pin(0, &target.consumer_cpus, "the eBPF consumer")?;
    libbpf_log::capture();
    libbpf_log::clear();
    let mut storage = MaybeUninit::<OpenObject>::uninit();
    let mut open = skel::EventsSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| crate::session::explain(e, "opening the embedded events BPF object"))?;
    let per_event = read.program == ReadProgram::Feature(Feature::PerEvent);
    open.maps
        .ev_lines
        .set_max_entries(lines_ring(read.program, ring_bytes)?)
        .context("cannot size the ring buffer")?;
    let wanted = programs(read.program, read.kprobes);
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
        let link = match read.on_libc() {
            Some(ret) => prog.attach_uprobe(ret, -1, &read.libc, read.read_offset as usize),
            None => prog.attach(),
        }
        .map_err(|e| crate::session::explain(e, &format!("attaching {name}")))?;
        links.push(link);
    }
    if per_event {
        return lines(target, &skel, links, attached, stop);
    }
    attached();
    let _ = stop.recv();
    drop(links);
    let Some((map, indices)) = counting_map(read.program, &skel.maps) else {
        return Ok(Output::default());
    };
    // Per-CPU arrays: their indices, not a key iteration.
    let keys: Vec<Vec<u8>> = match indices {
        Some(n) => (0..n).map(|i| i.to_ne_bytes().to_vec()).collect(),
        None => map.keys().collect(),
    };
    let rows = keys
        .into_iter()
        .map(|k| Ok((k.clone(), sum_percpu(map, &k)?)));
    Ok(Output {
        rows: Some(rows.collect::<Result<_>>()?),
        ..Output::default()
    })
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
    target: &Target,
    skel: &skel::EventsSkel<'_>,
    links: Vec<Link>,
    attached: &mut dyn FnMut(),
    stop: &Receiver<()>,
) -> Result<Output> {
    let path = target.out_dir.join(LINES_FILE);
    let file = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {} (check --out)", path.display()))?;
    let out = RefCell::new((std::io::BufWriter::new(file), BTreeMap::<u32, u64>::new()));
    let ring = crate::session::ring(&skel.maps.ev_lines, |data| {
        let Some(line) = crate::skel::from_bytes::<skel::types::ev_line>(data) else {
            return -1;
        };
        let mut o = out.borrow_mut();
        if writeln!(o.0, "{} bytes", line.count).is_err() {
            return -1;
        }
        *o.1.entry(line.pid).or_default() += 1;
        0
    })?;
    attached();
    crate::session::poll_until_stopped(&ring, stop)?;
    crate::session::drain(ring, links)?;
    let (mut w, lines) = out.into_inner();
    w.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    drop(w);
    let _ = std::fs::remove_file(&path);
    Ok(Output {
        rows: None,
        lines,
        lost: sum_percpu(&skel.maps.ev_lost, &0u32.to_ne_bytes())?,
    })
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
    use rtrace_tracer::features::{Unsupported, NO_KPROBES};

    fn rows(rows: &[(Vec<u8>, u64)]) -> Output {
        Output {
            rows: Some(rows.to_vec()),
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
        let single = ReadProgram::Feature(Feature::SingleKey);
        assert_eq!(out.total(single, None), Some(1003));
        let key = [&4242u32.to_ne_bytes()[..], &comm_bytes("workload")].concat();
        let two = rows(&[(key, 1000)]);
        let ev = two.evidence(ReadProgram::Feature(Feature::TwoKeys), 4242, "workload");
        assert_eq!(ev.workload, Some(1000));
        // The pid after a stack id (ev_stack_key).
        let key = [&[9u8; 8][..], &4242u32.to_ne_bytes()].concat();
        let stack = rows(&[(key, 7), (vec![0u8; 12], 5)]);
        let ev = stack.evidence(ReadProgram::Feature(Feature::UserStack), 4242, "w");
        assert_eq!((ev.workload, ev.all), (Some(7), Some(12)));
    }

    #[test]
    fn lines_are_counted_by_pid_and_empty_actions_count_nothing() {
        let out = Output {
            lines: BTreeMap::from([(1, 5), (4242, 1000)]),
            lost: 2,
            ..Output::default()
        };
        let per_event = ReadProgram::Feature(Feature::PerEvent);
        let ev = out.evidence(per_event, 4242, "w");
        assert_eq!((ev.workload, ev.all, ev.lost), (Some(1000), Some(1005), 2));
        assert_eq!(out.total(per_event, None), Some(1005));
        let control = ReadProgram::Feature(Feature::TracepointEntry);
        assert_eq!(Output::default().total(control, None), None);
        let expected = Evidence {
            source: "no output (the action is empty)".into(),
            ..Evidence::default()
        };
        assert_eq!(Output::default().evidence(control, 1, "w"), expected);
    }

    #[test]
    fn experiment_18s_ring_is_the_targets() {
        let ring = crate::plan::ring_bytes(Some(64), 2).unwrap();
        assert_eq!(ring, 128 << 10);
        let per_event = ReadProgram::Feature(Feature::PerEvent);
        assert_eq!(lines_ring(per_event, ring).unwrap(), ring);
        let page = crate::plan::ring_bytes(Some(1), 1).unwrap();
        let map = ReadProgram::Feature(Feature::Map);
        assert_eq!(lines_ring(map, ring).unwrap(), page);
    }

    #[test]
    fn programs_and_their_checks() {
        let read = |f, kprobes| Read {
            program: ReadProgram::Feature(f),
            libc: "/nonexistent/libc.so.6".into(),
            read_offset: 1,
            kprobes,
        };
        let e = check(&read(Feature::Kprobe, false)).unwrap_err();
        let unavailable = Unsupported::Unavailable(NO_KPROBES.into());
        assert_eq!(e.downcast_ref::<Unsupported>(), Some(&unavailable));
        assert!(check(&read(Feature::Kprobe, true)).is_ok());
        // A uprobe needs the library.
        assert!(check(&read(Feature::Uprobe, false)).is_err());
        let map = ReadProgram::Feature(Feature::Map);
        assert_eq!(describe(map), "bpf/events.bpf.c, experiment 09");
        assert_eq!(programs(map, true), ["ev_map_kp"]);
        let timing = ReadProgram::Feature(Feature::Timing);
        let want = ["ev_timing_enter_tp", "ev_timing_exit_tp"];
        assert_eq!(programs(timing, false), want);
        for (hook, name) in [
            (ReadHook::Enter, "ev_acct_enter"),
            (ReadHook::Uretprobe, "ev_acct_uretprobe"),
            (ReadHook::Kretprobe, "ev_acct_kretprobe"),
        ] {
            assert_eq!(programs(ReadProgram::Account(hook), true), [name]);
        }
    }
}
