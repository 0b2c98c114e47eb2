//! The `events` suite's programs (`bpf/events.bpf.c`): one experiment of Gregg's benchmark at a
//! time, attached to every process as the bpftrace one-liners are, on a thread that owns the BPF
//! object from open to close (the skeleton borrows its storage). `finish` detaches, reads the
//! experiment's maps (or the per-event lines it wrote) and returns what they show of the
//! workload's events.

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, RingBufferBuilder};
use rtrace_tracer::features::{Evidence, Feature, ReadHook};
use std::cell::RefCell;
use std::io::Write;
use std::mem::MaybeUninit;
use std::path::PathBuf;
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

/// Experiment 18's lines (`"%d bytes"`, as bpftrace's printf), below the run's directory.
pub const LINES_FILE: &str = "ebpf-per-event.txt";

/// Everything one experiment's session needs.
#[derive(Debug, Clone)]
pub struct FeaturePlan {
    pub feature: Feature,
    /// An accounting run instead: the workload's events on this hook, counted per process.
    pub account: Option<ReadHook>,
    /// Whether the kernel has kprobes: 2, 3 run, and 8-18 hook `vfs_read` as Gregg's do.
    pub kprobes: bool,
    /// libc and the file offset of its `read` (experiments 6 and 7).
    pub libc_read: Option<(PathBuf, u64)>,
    /// The workload, whose events the evidence counts.
    pub workload_pid: u32,
    pub workload_comm: String,
    pub out_dir: PathBuf,
    pub consumer_cpus: Vec<usize>,
}

/// A running experiment; see the module doc.
pub struct FeatureSession(Worker<Evidence>);

/// Whether this eBPF backend can run `feature` here, and if not why (no kprobes on this host).
pub fn check_feature(feature: Feature, kprobes: bool) -> Result<()> {
    if feature.needs_kprobes() && !kprobes {
        anyhow::bail!(
            "kprobes are unavailable on this kernel (no kprobe_events in tracefs): the experiment runs as a functional check in the QEMU guests"
        );
    }
    Ok(())
}

impl FeatureSession {
    /// Loads and attaches the experiment's programs; returns once they are attached.
    pub fn start(plan: FeaturePlan) -> Result<FeatureSession> {
        if plan.account.is_none() {
            check_feature(plan.feature, plan.kprobes)?;
        }
        Worker::start(
            "rtrace-ebpf-ev",
            Box::new(move |attached, stop, ids| trace(&plan, attached, stop, ids)),
        )
        .map(FeatureSession)
    }

    /// Detaches, reads the experiment's output, closes everything.
    pub fn finish(self) -> Result<Evidence> {
        self.0.finish()
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

fn account_program(hook: ReadHook) -> Vec<String> {
    vec![match hook {
        ReadHook::Enter => "ev_acct_enter",
        ReadHook::Exit => "ev_acct_exit",
        ReadHook::Uprobe => "ev_acct_uprobe",
        ReadHook::Uretprobe => "ev_acct_uretprobe",
        ReadHook::Kprobe => "ev_acct_kprobe",
        ReadHook::Kretprobe => "ev_acct_kretprobe",
    }
    .to_owned()]
}

fn trace(
    plan: &FeaturePlan,
    attached: &mut dyn FnMut(),
    stop: &Receiver<()>,
    ids: &mut KernelIds,
) -> Result<Evidence> {
    crate::session::pin(&plan.consumer_cpus)?;
    libbpf_log::capture();
    libbpf_log::clear();
    let mut storage = MaybeUninit::<OpenObject>::uninit();
    let mut open = skel::EventsSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| crate::session::explain(e, "opening the embedded events BPF object"))?;
    let wanted = match plan.account {
        Some(h) => account_program(h),
        None => programs(plan.feature, plan.kprobes),
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
        let uprobe = matches!(plan.feature, Feature::Uprobe | Feature::Uretprobe);
        let ret = plan.feature == Feature::Uretprobe || plan.account == Some(ReadHook::Uretprobe);
        let on_libc = match plan.account {
            Some(ReadHook::Uprobe | ReadHook::Uretprobe) => true,
            Some(_) => false,
            None => uprobe,
        };
        let link = match on_libc {
            true => {
                let (libc, offset) = plan
                    .libc_read
                    .as_ref()
                    .context("no libc read to attach to (a bug: please report it)")?;
                prog.attach_uprobe(ret, -1, libc, *offset as usize)
            }
            false => prog.attach(),
        }
        .map_err(|e| crate::session::explain(e, &format!("attaching {name}")))?;
        links.push(link);
    }
    if plan.account.is_none() && plan.feature == Feature::PerEvent {
        return per_event(plan, &skel, links, attached, stop);
    }
    attached();
    let _ = stop.recv();
    drop(links);
    read_maps(plan, &skel)
}

/// Experiment 18: every record woken and formatted as bpftrace's printf line.
fn per_event(
    plan: &FeaturePlan,
    skel: &skel::EventsSkel<'_>,
    links: Vec<Link>,
    attached: &mut dyn FnMut(),
    stop: &Receiver<()>,
) -> Result<Evidence> {
    let path = plan.out_dir.join(LINES_FILE);
    let file = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {} (check --out)", path.display()))?;
    let out = RefCell::new((std::io::BufWriter::new(file), 0u64, 0u64));
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
            o.1 += 1;
            if line.pid == plan.workload_pid {
                o.2 += 1;
            }
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
            anyhow::bail!(
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
    let (mut w, all, workload) = out.into_inner();
    w.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    let lost = sum_percpu(&skel.maps.ev_lost, &0u32.to_ne_bytes())?;
    Ok(Evidence {
        workload: Some(workload),
        all: Some(all),
        lost,
        source: format!("{all} lines in {LINES_FILE}, {workload} of the workload's pid"),
    })
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

/// Every key of a per-CPU hash with its count summed over CPUs.
fn percpu_counts(map: &dyn MapCore) -> Result<Vec<(Vec<u8>, u64)>> {
    map.keys()
        .map(|k| Ok((k.clone(), sum_percpu(map, &k)?)))
        .collect()
}

fn comm_bytes(comm: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    for (d, s) in c.iter_mut().zip(comm.bytes().take(15)) {
        *d = s;
    }
    c
}

/// What the experiment's maps show of the workload's events.
fn read_maps(plan: &FeaturePlan, skel: &skel::EventsSkel<'_>) -> Result<Evidence> {
    let pid = plan.workload_pid;
    let comm = comm_bytes(&plan.workload_comm);
    let m = &skel.maps;
    if let Some(h) = plan.account {
        let n = sum_percpu(&m.ev_by_pid, &pid.to_ne_bytes())?;
        return Ok(Evidence {
            workload: Some(n),
            source: format!("{}: {n} at the workload's pid", h.label()),
            ..Evidence::default()
        });
    }
    let total = |rows: &[(Vec<u8>, u64)]| rows.iter().map(|r| r.1).sum::<u64>();
    let hist_total = || -> Result<u64> {
        (0..64u32)
            .map(|b| sum_percpu(&m.ev_hist, &b.to_ne_bytes()))
            .sum()
    };
    Ok(match plan.feature {
        Feature::Map => {
            let n = sum_percpu(&m.ev_count, &0u32.to_ne_bytes())?;
            Evidence {
                all: Some(n),
                source: format!("@ = count(): {n} (every process)"),
                ..Evidence::default()
            }
        }
        Feature::SingleKey => {
            let n = sum_percpu(&m.ev_by_pid, &pid.to_ne_bytes())?;
            Evidence {
                workload: Some(n),
                source: format!("@[pid]: {n} at the workload's pid"),
                ..Evidence::default()
            }
        }
        Feature::StringKey => {
            let n = sum_percpu(&m.ev_by_comm, &comm)?;
            Evidence {
                workload: Some(n),
                source: format!("@[comm]: {n} at \"{}\"", plan.workload_comm),
                ..Evidence::default()
            }
        }
        Feature::TwoKeys => {
            let mut key = pid.to_ne_bytes().to_vec();
            key.extend_from_slice(&comm);
            let n = sum_percpu(&m.ev_by_pid_comm, &key)?;
            Evidence {
                workload: Some(n),
                source: format!("@[pid, comm]: {n} at the workload's"),
                ..Evidence::default()
            }
        }
        Feature::KernelStack => {
            let rows = percpu_counts(&m.ev_by_stack)?;
            let n = total(&rows);
            Evidence {
                all: Some(n),
                source: format!("@[kstack]: {n} over {} stacks (every process)", rows.len()),
                ..Evidence::default()
            }
        }
        Feature::UserStack | Feature::Multiple => {
            let map: &dyn MapCore = if plan.feature == Feature::UserStack {
                &m.ev_by_stack
            } else {
                &m.ev_by_multi
            };
            let rows = percpu_counts(map)?;
            // The pid sits after the stack id(s): offset 8 (ev_stack_key) or 16 (ev_multi_key).
            let at = if plan.feature == Feature::UserStack {
                8
            } else {
                16
            };
            let n: u64 = rows
                .iter()
                .filter(|(k, _)| k.get(at..at + 4) == Some(&pid.to_ne_bytes()[..]))
                .map(|r| r.1)
                .sum();
            Evidence {
                workload: Some(n),
                all: Some(total(&rows)),
                source: format!("{n} at the workload's pid over {} keys", rows.len()),
                ..Evidence::default()
            }
        }
        Feature::Histogram | Feature::Timing => {
            let n = hist_total()?;
            Evidence {
                all: Some(n),
                source: format!("@ = hist(): {n} values (every process)"),
                ..Evidence::default()
            }
        }
        _ => Evidence {
            source: "no output (the action is empty)".into(),
            ..Evidence::default()
        },
    })
}
