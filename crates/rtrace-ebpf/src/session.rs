//! One tracing session: a thread that owns the BPF object from open to close.
//!
//! The skeleton borrows its storage, so the whole lifecycle (open → rodata → load → attach →
//! poll → detach → count) runs on one thread, pinned to the consumer CPUs. `attach` waits for the
//! thread to report "attached" (or the error); `finish` and `Drop` tell it to stop and join it, so
//! every BPF fd (programs, maps, links) is closed before either returns.

use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{ErrorKind, Link, MapCore, OpenObject, ProgramMut, RingBuffer, RingBufferBuilder};
use rtrace_tracer::{Attachment, EventStats, Hook};
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

use crate::freed::KernelIds;
use crate::plan::NANOSLEEP_EXIT;
use crate::readout::{floor_hits, script_hits, sum_percpu, write_aggregate, write_script_hits};
use crate::sink::EventSink;
use crate::worker::Worker;
use crate::{libbpf_log, skel, EbpfMode};

/// How long the record-mode consumer sleeps between drains when the ring is not filling up.
/// Events are submitted without wakeup (a wakeup costs ~1.5 µs per event here), so this poll is
/// the only thing that drains the ring. In `record-wakeup` mode the consumer sleeps in epoll
/// instead and every event wakes it; this is then only how often it checks for the end.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Size of one ring-buffer record: the event plus the kernel's 8-byte record header.
const RECORD_BYTES: u64 = std::mem::size_of::<skel::types::rtrace_event>() as u64 + 8;

/// File names below `Target::out_dir`.
pub const EVENTS_FILE: &str = "ebpf-events.txt";
pub const AGGREGATE_FILE: &str = "ebpf-aggregate.txt";

/// Everything the session thread needs, decided before it starts.
#[derive(Debug, Clone)]
pub struct Plan {
    /// A hook `plan::check` let through.
    pub hook: Hook,
    pub mode: EbpfMode,
    pub pid: Option<u32>,
    /// `pid` and every process it starts later (see `Target::tree`): the probe is attached to
    /// every process, `tree_fork`/`tree_exit` keep the tree's thread-group ids in the map
    /// `tree`, and the programs drop the other hits (counted in `outside`).
    pub tree: bool,
    /// Hits of this thread are ignored in BPF (rodata `skip_tid`).
    pub skip_tid: Option<u32>,
    pub ring_bytes: u32,
    pub out_dir: PathBuf,
    pub consumer_cpus: Vec<usize>,
    /// The record consumer's wait between drains ([`POLL_INTERVAL`] unless the target says).
    pub poll: Duration,
}

/// What a session counted: the accounting, and a tracepoint script's events per point (in the
/// script's order; empty for the other hooks).
type Counted = (EventStats, Vec<u64>);

/// A running session, its programs attached until `finish` or drop; see the module doc.
pub struct Session {
    worker: Worker<Counted>,
    /// A tracepoint script's points, to name its counts.
    points: Vec<(String, String)>,
}

impl Session {
    /// Starts the thread and returns once the program is attached (or with the reason it is not).
    pub fn start(plan: Plan) -> Result<Session> {
        let points = match &plan.hook {
            Hook::Tracepoints(script) => script.points.clone(),
            _ => Vec::new(),
        };
        let worker = Worker::start(
            "rtrace-ebpf",
            Box::new(move |attached, stop, ids| trace(&plan, attached, stop, ids)),
        )?;
        Ok(Session { worker, points })
    }
}

impl Attachment for Session {
    /// Stops tracing, drains, counts, closes everything.
    fn finish(self: Box<Self>) -> Result<EventStats> {
        Ok(self.worker.finish()?.0)
    }

    /// A tracepoint script's events per point, `category:name`, every point of the script in
    /// its order (0 for a point that never fired): from the per-index counts in counting modes,
    /// from the recorded events' indices in record modes (their sum is `recorded`).
    fn finish_by_probe(self: Box<Self>) -> Result<(EventStats, Vec<(String, u64)>)> {
        let (stats, counts) = self.worker.finish()?;
        Ok((stats, crate::plan::by_probe(&self.points, &counts)))
    }
}

fn trace(
    plan: &Plan,
    attached: &mut dyn FnMut(),
    stop: &Receiver<()>,
    ids: &mut KernelIds,
) -> Result<Counted> {
    rtrace_tracer::pin(0, &plan.consumer_cpus, "the eBPF consumer")?;
    let mut storage = MaybeUninit::uninit();
    let skel = load(plan, &mut storage)?;
    *ids = KernelIds::of(skel.object());
    let points = script_points(plan);
    let mut per_point = vec![0u64; points];
    let recorded = match plan.mode {
        EbpfMode::Record | EbpfMode::RecordWakeup => {
            let path = plan.out_dir.join(EVENTS_FILE);
            let sink = RefCell::new(EventSink::create(&path)?);
            // A script's events carry their point's index as `arg`.
            let counts = RefCell::new(&mut per_point);
            let ring = ring(&skel.maps.events, |data| {
                if points > 0 {
                    if let Some(e) = skel::from_bytes::<skel::types::rtrace_event>(data) {
                        if let Some(n) = counts.borrow_mut().get_mut(e.arg as usize) {
                            *n += 1;
                        }
                    }
                }
                sink.borrow_mut().push(data)
            })?;
            let links = attach(plan, &skel)?;
            attached();
            if plan.mode == EbpfMode::RecordWakeup {
                // Every event wakes us (bpftrace's perf-buffer reader loop).
                poll_until_stopped(&ring, stop)?;
            } else {
                // Drain every POLL_INTERVAL, or at once again while the ring is filling up fast.
                let busy = u64::from(plan.ring_bytes) / 4;
                loop {
                    let n = consume(&ring)?;
                    let wait = if n * RECORD_BYTES >= busy {
                        Duration::ZERO
                    } else {
                        plan.poll
                    };
                    if stop.recv_timeout(wait) != Err(RecvTimeoutError::Timeout) {
                        break; // finish (message) or drop (disconnected)
                    }
                }
            }
            drain(ring, links)?;
            sink.into_inner().finish()?
        }
        EbpfMode::Aggregate | EbpfMode::Count | EbpfMode::Floor => {
            let links = attach(plan, &skel)?;
            attached();
            let _ = stop.recv();
            detach(links);
            match plan.mode {
                _ if points > 0 => {
                    per_point = script_hits(&skel, points)?;
                    let path = plan.out_dir.join(AGGREGATE_FILE);
                    write_script_hits(&plan.hook, &per_point, &path)?;
                    per_point.iter().sum()
                }
                EbpfMode::Floor => floor_hits(&skel)?,
                mode => write_aggregate(
                    &skel,
                    &plan.out_dir.join(AGGREGATE_FILE),
                    mode == EbpfMode::Aggregate,
                )?,
            }
        }
    };
    let stats = EventStats {
        recorded,
        lost: sum_percpu(&skel.maps.lost, &0u32.to_ne_bytes())?,
        overwritten: 0,
        outside_tree: sum_percpu(&skel.maps.outside, &0u32.to_ne_bytes())?,
    };
    Ok((stats, per_point))
}

/// The number of tracepoints of a script (0 for the other hooks).
fn script_points(plan: &Plan) -> usize {
    match &plan.hook {
        Hook::Tracepoints(script) => script.points.len(),
        _ => 0,
    }
}

/// open → rodata/map sizes/autoload → load.
fn load<'o>(plan: &Plan, storage: &'o mut MaybeUninit<OpenObject>) -> Result<skel::RtraceSkel<'o>> {
    libbpf_log::capture();
    libbpf_log::clear();
    let mut open = skel::RtraceSkelBuilder::default()
        .open(storage)
        .map_err(|e| explain(e, "opening the embedded BPF object"))?;
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .context("the BPF object has no rodata (a build bug: rebuild rtrace-bench)")?;
    rodata.target_tgid = match plan.hook {
        // USDT, uprobes: the kernel filters the pid at attach; the tracepoint filters in BPF;
        // a tree is filtered by the map `tree`.
        Hook::Usdt { .. } | Hook::Uprobe { .. } => 0,
        _ if plan.tree => 0,
        _ => plan.pid.unwrap_or(0),
    };
    rodata.follow_tree = plan.tree;
    rodata.wakeup_per_event = plan.mode == EbpfMode::RecordWakeup;
    rodata.skip_tid = plan.skip_tid.unwrap_or(0);
    rodata.agg_level = match plan.mode {
        EbpfMode::Floor => 0,
        EbpfMode::Count => 1,
        _ => 2,
    };
    let ring = if plan.mode.records() {
        plan.ring_bytes
    } else {
        crate::plan::ring_bytes(Some(1), 1)?
    };
    open.maps
        .events
        .set_max_entries(ring)
        .context("cannot size the ring buffer")?;
    // A script's counts: one per point (`plan::check` bounded their number).
    let points = u32::try_from(script_points(plan).max(1)).context("too many tracepoints")?;
    open.maps
        .script_hits
        .set_max_entries(points)
        .context("cannot size the BPF map script_hits")?;
    // The hook's program, and `tree_fork` and `tree_exit` for a tree.
    let wanted = crate::plan::program(&plan.hook, plan.mode);
    for mut prog in open.open_object_mut().progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        prog.set_autoload(name == wanted || (plan.tree && name.starts_with("tree_")));
    }
    let skel = open
        .load()
        .map_err(|e| explain(e, "loading the BPF program"))?;
    if let (true, Some(pid)) = (plan.tree, plan.pid) {
        skel.maps
            .tree
            .update(&pid.to_ne_bytes(), &[1], libbpf_rs::MapFlags::ANY)
            .context("cannot put the command's pid into the BPF map `tree`")?;
    }
    Ok(skel)
}

/// The hook's program, and in tree mode first the programs that keep the tree (so that no
/// process the command starts is missed: it is still held when we attach).
fn attach(plan: &Plan, skel: &skel::RtraceSkel<'_>) -> Result<Vec<Link>> {
    let mut links = Vec::new();
    if plan.tree {
        for (prog, tracepoint) in [
            (&skel.progs.tree_fork, ("task", "task_newtask")),
            (&skel.progs.tree_exit, ("sched", "sched_process_exit")),
        ] {
            links.push(attach_tracepoint(prog, tracepoint)?);
        }
    }
    if let Hook::Tracepoints(script) = &plan.hook {
        let prog = if plan.mode.records() {
            &skel.progs.script_record
        } else {
            &skel.progs.script_count
        };
        links.reserve(script.points.len());
        for (i, (category, name)) in script.points.iter().enumerate() {
            libbpf_log::clear();
            let opts = libbpf_rs::TracepointOpts {
                cookie: i as u64,
                ..Default::default()
            };
            let tp = libbpf_rs::TracepointCategory::Custom(category.clone());
            match prog.attach_tracepoint_with_opts(tp, name, opts) {
                Ok(link) => links.push(link),
                Err(e) => {
                    // Those attached so far go at once (in parallel, see `detach`).
                    detach(links);
                    return Err(explain(
                        e,
                        &format!(
                            "attaching to tracepoint {category}:{name} ({} of the {} of script `{}`)",
                            i + 1,
                            script.points.len(),
                            script.label()
                        ),
                    ));
                }
            }
        }
        return Ok(links);
    }
    links.push(attach_hook(plan, skel)?);
    Ok(links)
}

/// Most threads [`detach`] closes links on at once (measured for the 360 `sys_enter_*` links:
/// 1 thread 24 s, 8 threads 13 s, 32 and 128 threads 14 s).
const DETACH_THREADS: usize = 8;

/// Closes `links`. Closing a tracepoint's last perf event waits for the kernel's grace periods
/// (`perf_trace_destroy` → `perf_trace_event_unreg` → `tracepoint_synchronize_unregister`,
/// ~70 ms here: bpftrace 0.17 needs 25 s to detach the 360 `syscalls:sys_enter_*`). That wait
/// runs under the kernel's `event_mutex`, so threads overlap only the rest of the release: a
/// script's links are closed by up to [`DETACH_THREADS`] threads at once, which halves the
/// time (~36 ms per link here); returns once all are closed.
pub(crate) fn detach(mut links: Vec<Link>) {
    if links.len() < 4 {
        return drop(links);
    }
    let per_thread = links.len().div_ceil(DETACH_THREADS);
    std::thread::scope(|s| {
        while !links.is_empty() {
            let chunk: Vec<Link> = links.drain(..per_thread.min(links.len())).collect();
            // Without a thread, the closure and its links are dropped here, one by one.
            let _ = std::thread::Builder::new()
                .name("rtrace-detach".into())
                .spawn_scoped(s, move || drop(chunk));
        }
    });
}

fn attach_hook(plan: &Plan, skel: &skel::RtraceSkel<'_>) -> Result<Link> {
    libbpf_log::clear();
    // A tree: every process mapping the binary (its semaphores raised by the kernel in
    // processes that map it later); the programs keep the tree's hits.
    let pid = match plan.pid {
        Some(p) if !plan.tree => p as i32,
        _ => -1,
    };
    let (progs, record) = (&skel.progs, plan.mode.records());
    match &plan.hook {
        Hook::Usdt { binary, sites } => {
            // `plan::check` let through the sites of one probe.
            let (provider, name) = (&sites[0].provider, &sites[0].name);
            let prog = if record {
                &progs.usdt_record
            } else {
                &progs.usdt_aggregate
            };
            prog.attach_usdt(pid, binary, provider, name).map_err(|e| {
                if e.kind() == ErrorKind::NotFound {
                    let why = libbpf_log::last_matching(&["usdt"]).unwrap_or_default();
                    anyhow!(
                        "cannot attach to USDT {provider}:{name} in {} ({}): check the probe with `rtrace-bench probes {}` and that the pid is alive",
                        binary.display(),
                        if why.is_empty() { e.to_string() } else { why },
                        binary.display()
                    )
                } else {
                    explain(e, &format!("attaching to USDT {provider}:{name} in {}", binary.display()))
                }
            })
        }
        Hook::Uprobe {
            binary,
            function,
            offset,
            ret,
        } => {
            let prog = match (ret, record) {
                (false, true) => &progs.up_record,
                (false, false) => &progs.up_aggregate,
                (true, true) => &progs.uret_record,
                (true, false) => &progs.uret_aggregate,
            };
            let kind = if *ret { "uretprobe" } else { "uprobe" };
            let offset = usize::try_from(*offset).context("function offset out of range")?;
            prog.attach_uprobe(*ret, pid, binary, offset).map_err(|e| {
                if e.kind() == ErrorKind::NotFound {
                    anyhow!(
                        "cannot attach a {kind} to {function} in {}: check the function with `rtrace-bench probes {} --symbols {function}` and that the pid is alive",
                        binary.display(),
                        binary.display()
                    )
                } else {
                    explain(e, &format!("attaching a {kind} to {function} in {}", binary.display()))
                }
            })
        }
        // `syscalls:sys_exit_clock_nanosleep`, the one tracepoint `plan::check` lets through.
        _ => {
            let prog = if record {
                &progs.tp_record
            } else {
                &progs.tp_aggregate
            };
            attach_tracepoint(prog, NANOSLEEP_EXIT)
        }
    }
}

fn attach_tracepoint(prog: &ProgramMut<'_>, (category, name): (&str, &str)) -> Result<Link> {
    prog.attach_tracepoint(libbpf_rs::TracepointCategory::Custom(category.into()), name)
        .map_err(|e| explain(e, &format!("attaching to tracepoint {category}:{name}")))
}

/// One line that names the fix, with libbpf's last word as the detail.
pub(crate) fn explain(e: libbpf_rs::Error, what: &str) -> anyhow::Error {
    if let Some(reason) = libbpf_log::verifier_error() {
        return anyhow!(
            "{what} failed: the kernel's verifier rejected it ({reason}): please report this with the output of `uname -r` (RTRACE_LIBBPF_LOG=1 shows the full log)"
        );
    }
    let detail = libbpf_log::last_matching(&[]).unwrap_or_else(|| e.to_string());
    match e.kind() {
        ErrorKind::PermissionDenied => anyhow!(
            "{what} was refused ({detail}): run as root (CAP_BPF and CAP_PERFMON) on a kernel that is not locked down against BPF"
        ),
        _ => anyhow!("{what} failed: {e} ({detail})"),
    }
}

/// Sleeps in epoll, woken by every record or after [`POLL_INTERVAL`], and drains the ring
/// buffer, until `stop` ends it (a message: `finish`; disconnected: drop).
pub(crate) fn poll_until_stopped(ring: &RingBuffer<'_>, stop: &Receiver<()>) -> Result<()> {
    loop {
        let n = ring.poll_raw(POLL_INTERVAL);
        if n < 0 && n != -(nix::errno::Errno::EINTR as i32) {
            bail!(
                "waiting on the BPF ring buffer failed: {}",
                std::io::Error::from_raw_os_error(-n)
            );
        }
        if stop.try_recv() != Err(TryRecvError::Empty) {
            return Ok(());
        }
    }
}

/// A ring-buffer consumer calling `callback` with every record of `map`.
pub(crate) fn ring<'a>(
    map: &'a dyn MapCore,
    callback: impl FnMut(&[u8]) -> i32 + 'a,
) -> Result<RingBuffer<'a>> {
    let mut builder = RingBufferBuilder::new();
    builder
        .add(map, callback)
        .context("cannot set up the ring-buffer consumer")?;
    builder
        .build()
        .context("cannot set up the ring-buffer consumer")
}

/// Detaches (drops `links`), then drains what the ring buffer still holds.
pub(crate) fn drain(ring: RingBuffer<'_>, links: Vec<Link>) -> Result<()> {
    detach(links);
    while consume(&ring)? > 0 {}
    Ok(())
}

/// Drains the ring buffer once; number of records consumed.
pub(crate) fn consume(ring: &RingBuffer<'_>) -> Result<u64> {
    let n = ring.consume_raw();
    if n < 0 {
        bail!(
            "draining the BPF ring buffer failed: {}",
            std::io::Error::from_raw_os_error(-n)
        );
    }
    Ok(n as u64)
}
