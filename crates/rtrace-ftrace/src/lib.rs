//! ftrace backend: writes tracefs itself (no trace-cmd).
//!
//! Per attachment: a private instance `rtrace_<tag>_<seq>` (own buffer, own enable switches,
//! a `common_pid` filter on the process's threads, or `set_event_pid` with `event-fork` when
//! threads and children created later must count: that one hooks the scheduler), and for USDT
//! hooks one uprobe event per probe site in a run-unique
//! group of the same name, appended to the global `uprobe_events` with O_APPEND and removed with
//! `-:GROUP/EVENT`; uprobe/uretprobe hooks get one `p:`/`r:` event on the function's file offset,
//! the same way. Kernel tracepoints (e.g. `syscalls:sys_exit_clock_nanosleep`) are only
//! enabled in the instance. Accounting comes from the instance's `per_cpu/cpuN/stats`.
//!
//! Tracepoint scripts ([`Hook::Tracepoints`], the `app` experiment): each of `script.points`
//! is enabled in the private instance, one write each (~720 for `syscalls:*`), with the
//! instance's `tracing_on` at 0 meanwhile, so that recording starts and stops on every
//! tracepoint at once; `check` finds each tracepoint in `events/` (one error names the missing
//! ones). `Target::pid == None`: every process (what `app` uses); `Some(pid)`: as a kernel
//! tracepoint, a `common_pid` filter on each tracepoint (or `set_event_pid` with
//! `follow_children`), refused inside another PID namespace. Accounting as for one
//! tracepoint: the per-CPU `stats` (recorded = entries + read, lost = overrun + dropped) count
//! every event of every enabled tracepoint while `tracing_on` was 1. Stream mode's
//! [`Attachment::finish_by_probe`] counts the consumer's pages by each event's `common_type`
//! (the tracepoint's `events/CATEGORY/NAME/id`) and fails unless they add up to `recorded`;
//! overwrite mode gives no breakdown. Mode `off` is refused (no `uprobe_profile` counts them).
//! Finish and drop disable every tracepoint and remove the instance.
//!
//! The events suite's programs ([`Hook::Read`]): module `features` (syscall events, filters and
//! hist triggers in an instance of the target's `buffer_size_kb`; uprobes and accounting
//! programs through the ordinary path).
//!
//! `set_event_pid` takes pids of the initial PID namespace. Inside another PID namespace (a
//! container) the pids a run sees are not those: there, USDT and uprobe events are not filtered
//! by process (the uprobe is on the binary, so every process running it counts, and the
//! accounting check fails if another one does), and kernel tracepoints kept to one process are
//! refused. Paths written to tracefs are whitelisted (`uprobe::plain_path`).

pub mod clock;
mod features;
mod instance;
pub mod pages;
mod stale;
mod stats;
mod stream;
mod tracefs;
mod uprobe;

pub use stats::{account, CpuStats};
pub use tracefs::Tracefs;
pub use uprobe::{
    check_tracepoint, check_tracepoints, definitions, function_definition, hook_definitions,
    register, tracepoint_ids, unregister, UprobeDef,
};

use anyhow::{bail, ensure, Context, Result};
use features::{FeatureEvent, FtracePlan};
use instance::Instance;
use rtrace_tracer::features::Ordinary;
use rtrace_tracer::{Attachment, EventStats, Hook, RecordMode, Target, Tracer, TracerKind};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use stream::Consumer;

/// What an ftrace attachment does with its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FtraceMode {
    /// The events are enabled in an instance whose `tracing_on` is 0: every hit traps, runs the
    /// uprobe handler and the event's filter path, and the ring-buffer reservation fails (a step
    /// of the per-hit cost decomposition). Hits are counted from `uprobe_profile` (uprobe
    /// events only).
    Off,
    /// Flight recorder: the instance's ring buffer in overwrite mode, no consumer.
    Overwrite,
    /// A consumer drains `trace_pipe_raw` to disk on the harness CPUs.
    Stream,
}

impl FtraceMode {
    pub fn name(self) -> &'static str {
        match self {
            FtraceMode::Off => "off",
            FtraceMode::Overwrite => "overwrite",
            FtraceMode::Stream => "stream",
        }
    }
}

/// The ftrace backend.
#[derive(Debug, Default)]
pub struct FtraceTracer {
    /// `None`: as `Target::record` says.
    mode: Option<FtraceMode>,
    /// The instance's `trace_clock`; `None`: the instance's default.
    clock: Option<String>,
}

impl FtraceTracer {
    pub fn new() -> FtraceTracer {
        FtraceTracer::default()
    }

    /// A backend in `mode` whatever `Target::record` says.
    pub fn with_mode(mode: FtraceMode) -> FtraceTracer {
        FtraceTracer {
            mode: Some(mode),
            clock: None,
        }
    }

    /// This backend with its instances' `trace_clock` set to `clock` (checked against the
    /// kernel's clocks by [`Tracer::check`]); `None`: the instance's default.
    pub fn clock(self, clock: Option<String>) -> FtraceTracer {
        FtraceTracer { clock, ..self }
    }

    fn mode(&self, record: RecordMode) -> FtraceMode {
        self.mode.unwrap_or(match record {
            RecordMode::Overwrite => FtraceMode::Overwrite,
            RecordMode::Stream => FtraceMode::Stream,
        })
    }
}

/// The control files a new instance gets before anything is enabled in it, in order: its trace
/// clock when one is asked for (first: writing it resets the buffer), its per-CPU buffer size
/// when the target asks for one (else the kernel's defaults stay), and whether a full buffer
/// overwrites its oldest events.
fn instance_setup(
    clock: Option<&str>,
    buffer_size_kb: Option<u64>,
    overwrite: bool,
) -> Vec<(&'static str, String)> {
    let mut files: Vec<(&'static str, String)> = clock
        .map(|c| ("trace_clock", c.to_owned()))
        .into_iter()
        .collect();
    files.extend(buffer_size_kb.map(|kb| ("buffer_size_kb", kb.to_string())));
    files.push((
        "options/overwrite",
        if overwrite { "1" } else { "0" }.into(),
    ));
    files
}

impl Tracer for FtraceTracer {
    fn kind(&self) -> TracerKind {
        TracerKind::Ftrace
    }

    fn check(&self, hook: &Hook) -> Result<()> {
        rtrace_tracer::require_root("ftrace")?;
        Tracefs::available()?;
        if let Some(c) = &self.clock {
            clock::available()?.check(c)?;
        }
        if let Hook::Read(read) = hook {
            let fs = Tracefs::find().with_context(|| {
                format!(
                    "tracefs is not mounted: mount it with `mount -t tracefs nodev {}`",
                    tracefs::DEFAULT_ROOT
                )
            })?;
            return match features::plan(read, &fs)? {
                FtracePlan::Event { .. } => Ok(()),
                FtracePlan::Ordinary(h) => self.check(&h),
            };
        }
        if self.mode == Some(FtraceMode::Off)
            && matches!(hook, Hook::KernelTracepoint { .. } | Hook::Tracepoints(_))
        {
            bail!("ftrace mode `off` counts hits from uprobe_profile, which kernel tracepoints are not in: use it with USDT or uprobe hooks");
        }
        match hook {
            Hook::KernelTracepoint { category, name } => check_tracepoint(category, name),
            Hook::Tracepoints(script) => check_tracepoints(&script.points),
            Hook::LttngUst { .. } => {
                bail!("ftrace cannot trace LTTng-UST tracepoints: use --tracer lttng")
            }
            Hook::Read { .. } => unreachable!("checked above"),
            Hook::Usdt { .. } | Hook::Uprobe { .. } => hook_definitions("check", hook).map(drop),
        }
    }

    fn attach(&self, target: &Target) -> Result<Box<dyn Attachment>> {
        self.check(&target.hook)?;
        let pid = target
            .pid
            .filter(|_| rtrace_tracer::in_initial_pid_namespace());
        if target.pid.is_some() && pid.is_none() {
            if let Hook::KernelTracepoint { .. } | Hook::Tracepoints(_) = &target.hook {
                bail!("ftrace cannot keep kernel event {} to one process inside a PID namespace (set_event_pid takes the host's pids): run rtrace-bench in the host's PID namespace, or use --tracer ebpf", target.hook.label());
            }
        }
        let fs = Tracefs::mount_if_needed()?;
        if let Hook::Read(read) = &target.hook {
            return match features::plan(read, &fs)? {
                FtracePlan::Event {
                    event,
                    filter,
                    trigger,
                } => {
                    let (kb, clock) = (target.buffer_size_kb, self.clock.as_deref());
                    Ok(Box::new(FeatureEvent::start(
                        event, filter, trigger, kb, clock,
                    )?))
                }
                FtracePlan::Ordinary(h) => {
                    Ordinary::attach(read.program, target, h, |t| self.attach(t))
                }
            };
        }
        let tag = rtrace_tracer::run_tag()?;
        let mut a = FtraceAttachment {
            fs: fs.clone(),
            instance: None,
            uprobes: Vec::new(),
            enabled: Vec::new(),
            consumer: None,
            off: false,
            script: false,
            by_type: None,
        };
        // Every step registers what it created in `a` first, so dropping `a` on error undoes it.
        let inst = Instance::create(&fs, &tag)?;
        let inst = a.instance.insert(inst);
        let mode = self.mode(target.record);
        let clock = self.clock.as_deref();
        inst.configure(&instance_setup(
            clock,
            target.buffer_size_kb,
            mode != FtraceMode::Stream,
        ))?;
        if mode == FtraceMode::Off {
            inst.write("tracing_on", "0")?;
        }
        a.off = mode == FtraceMode::Off;
        // Threads of the process now; threads and children created later only with
        // `follow_children` (set_event_pid + event-fork, which hook the scheduler).
        let skip = target.skip_tid.filter(|_| pid.is_some());
        let filter = match pid {
            Some(pid) if target.follow_children => {
                inst.write("options/event-fork", "1")?;
                inst.write("set_event_pid", &thread_ids(pid).join(" "))?;
                skip.map(|t| format!("common_pid != {t}"))
            }
            Some(pid) => {
                let skip = skip.map(|t| t.to_string());
                let tids: Vec<String> = thread_ids(pid)
                    .into_iter()
                    .filter(|t| Some(t) != skip.as_ref())
                    .collect();
                Some(pid_filter(&tids))
            }
            None => None,
        };
        let events: Vec<(String, String)> = match &target.hook {
            Hook::KernelTracepoint { category, name } => vec![(category.clone(), name.clone())],
            Hook::Tracepoints(script) => script.points.clone(),
            hook => {
                let defs = hook_definitions(&tag, hook)?.expect("rejected by check");
                register(&fs, defs, &mut a.uprobes)?
            }
        };
        let inst = a.instance.as_ref().expect("created above");
        let raw_dir = target.out_dir.join(inst.name());
        if mode == FtraceMode::Stream {
            let cpus = inst.cpus()?;
            a.consumer = Some(Consumer::start(
                &inst.path(""),
                &cpus,
                &raw_dir,
                &target.consumer_cpus,
                target.poll,
            )?);
            if let Hook::Tracepoints(script) = &target.hook {
                let ids = tracepoint_ids(&fs, &script.points)?;
                a.by_type = Some(ProbeTypes::new(raw_dir, cpus, ids)?);
            }
        }
        // A script starts and stops at once on all its tracepoints: its instance records
        // nothing while they are enabled one by one (and disabled, in `finish`).
        a.script = matches!(target.hook, Hook::Tracepoints(_));
        if a.script {
            inst.write("tracing_on", "0")?;
        }
        for (group, event) in events {
            if let Some(f) = &filter {
                inst.write(&format!("events/{group}/{event}/filter"), f)?;
            }
            inst.set_enabled(&group, &event, true)?;
            a.enabled.push((group, event));
        }
        if a.script {
            inst.write("tracing_on", "1")?;
        }
        Ok(Box::new(a))
    }

    fn program(&self, hook: &Hook) -> String {
        match hook {
            Hook::Read(read) => {
                let fs =
                    Tracefs::find().unwrap_or_else(|| Tracefs::at(tracefs::DEFAULT_ROOT.as_ref()));
                features::describe(read, &fs)
            }
            h => h.label(),
        }
    }
}

/// An event filter keeping the events of these threads: `common_pid == 12 || common_pid == 13`.
/// No thread at all: `common_pid == -1`, which matches nothing (an empty filter would match
/// everything).
fn pid_filter(tids: &[String]) -> String {
    if tids.is_empty() {
        return "common_pid == -1".into();
    }
    tids.iter()
        .map(|t| format!("common_pid == {t}"))
        .collect::<Vec<_>>()
        .join(" || ")
}

/// The instance buffer a run asking for `buffer_size_kb` per CPU gets, and the clock that
/// stamps its events when one was asked for (else the instance's default, unsaid, as before
/// `--ftrace-clock` existed), as the report shows it.
pub fn buffer_description(buffer_size_kb: Option<u64>, clock: Option<&str>) -> String {
    let buffer = match buffer_size_kb {
        Some(kb) => format!("instance buffer_size_kb = {kb} KiB per CPU"),
        None => "the kernel's default instance buffer per CPU".into(),
    };
    match clock {
        Some(c) => format!("{buffer}, trace_clock {c}"),
        None => buffer,
    }
}

/// Removes the instances and uprobe events of runs that are gone (see
/// [`rtrace_tracer::owner`]); nothing without root or tracefs. Returns what was removed.
pub fn remove_stale() -> Result<Vec<String>> {
    if rtrace_tracer::require_root("ftrace").is_err() {
        return Ok(Vec::new());
    }
    match Tracefs::find() {
        Some(fs) => stale::remove_dead(&fs),
        None => Ok(Vec::new()),
    }
}

/// A live ftrace attachment; owns its instance and uprobe events.
struct FtraceAttachment {
    fs: Tracefs,
    instance: Option<Instance>,
    /// `GROUP/EVENT` of uprobe events we created.
    uprobes: Vec<String>,
    /// Events enabled in our instance.
    enabled: Vec<(String, String)>,
    consumer: Option<Consumer>,
    /// Mode `off`: nothing reaches the buffer; hits come from `uprobe_profile`.
    off: bool,
    /// A tracepoint script: `tracing_on` is 0 while its tracepoints are enabled and disabled.
    script: bool,
    /// A script in stream mode: where its pages go and which event each id is.
    by_type: Option<ProbeTypes>,
}

/// What counting a stream run's events by tracepoint needs: the consumer's files
/// (`DIR/ftrace-cpuN.raw`) and each tracepoint's id (`common_type`) and name.
struct ProbeTypes {
    dir: PathBuf,
    cpus: Vec<usize>,
    /// Ids in the script's order, with their names.
    ids: Vec<(u16, String)>,
}

impl ProbeTypes {
    fn new(dir: PathBuf, cpus: Vec<usize>, ids: Vec<(u64, String)>) -> Result<ProbeTypes> {
        let ids = ids
            .into_iter()
            .map(|(id, n)| {
                let t = u16::try_from(id)
                    .with_context(|| format!("tracepoint {n}'s id {id} is no common_type"))?;
                Ok((t, n))
            })
            .collect::<Result<_>>()?;
        Ok(ProbeTypes { dir, cpus, ids })
    }

    /// Each tracepoint's events in the consumer's files, in the script's order; their sum must
    /// be `recorded` (the buffers' count of what the consumer read).
    fn count(&self, recorded: u64) -> Result<Vec<(String, u64)>> {
        let mut types: HashMap<u16, u64> = HashMap::new();
        for c in &self.cpus {
            let file = self.dir.join(format!("ftrace-cpu{c}.raw"));
            for (t, n) in pages::count_types(&file)? {
                *types.entry(t).or_default() += n;
            }
        }
        let out: Vec<(String, u64)> = self
            .ids
            .iter()
            .map(|(t, name)| (name.clone(), types.remove(t).unwrap_or(0)))
            .collect();
        ensure!(
            types.is_empty(),
            "the instance's pages hold events of {} types that are none of the script's tracepoints (ids {:?}): cannot attribute them",
            types.len(),
            types.keys().collect::<Vec<_>>()
        );
        let sum: u64 = out.iter().map(|(_, n)| n).sum();
        ensure!(
            sum == recorded,
            "the consumer's pages hold {sum} events, the instance's buffers counted {recorded} read: the per-tracepoint counts are not exact"
        );
        Ok(out)
    }
}

/// Hits of the uprobe events `uprobes` (`GROUP/EVENT`) since they were created, from
/// `uprobe_profile`. Its lines (`FILE EVENT NHIT`) do not name the group, and event names repeat
/// across runs; they come in the order of `uprobe_events` (`p:GROUP/EVENT ...`), which names
/// it: the two are read as a pair, `uprobe_events` before and after, again while it changed in
/// between (another run adding or removing events). The ftrace backend's mode `off`, perf's
/// flight recorder and perf's check of its stream runs count hits this way.
pub fn uprobe_hits(fs: &Tracefs, uprobes: &[String]) -> Result<u64> {
    for _ in 0..20 {
        let before = fs.read("uprobe_events")?;
        let profile = fs.read("uprobe_profile")?;
        if fs.read("uprobe_events")? == before {
            return profile_hits(&before, &profile, uprobes);
        }
    }
    bail!("uprobe_events kept changing while its profile was read (other runs adding and removing uprobes): cannot tell this run's hits")
}

/// The hits of `uprobes` (`GROUP/EVENT`) in `profile`, whose lines follow `events`' lines.
fn profile_hits(events: &str, profile: &str, uprobes: &[String]) -> Result<u64> {
    let names: Vec<&str> = events
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .next()?
                .split_once(':')
                .map(|(_, ge)| ge)
        })
        .collect();
    let counts: Vec<&str> = profile.lines().filter(|l| !l.trim().is_empty()).collect();
    ensure!(
        names.len() == counts.len(),
        "uprobe_profile has {} lines for {} uprobe events: cannot pair them",
        counts.len(),
        names.len()
    );
    let mut hits = 0;
    for (name, line) in names.iter().zip(&counts) {
        if !uprobes.iter().any(|u| u == name) {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, event, nhit] = f[..] else {
            bail!("unreadable uprobe_profile line {line:?}");
        };
        ensure!(
            name.ends_with(&format!("/{event}")),
            "uprobe_profile's line {line:?} is not event {name}'s: cannot pair them"
        );
        hits += nhit
            .parse::<u64>()
            .with_context(|| format!("unreadable uprobe_profile line {line:?}"))?;
    }
    Ok(hits)
}

impl FtraceAttachment {
    fn disable(&mut self) -> Result<()> {
        if let Some(inst) = &self.instance {
            for (g, e) in self.enabled.drain(..) {
                inst.set_enabled(&g, &e, false)?;
            }
        }
        Ok(())
    }

    /// Removes the instance, then our uprobe events (an event must be disabled in every
    /// instance before `-:` can remove it).
    fn teardown(&mut self) -> Result<()> {
        let mut first_err = None;
        if let Some(c) = self.consumer.take() {
            if let Err(e) = c.finish() {
                first_err.get_or_insert(e);
            }
        }
        if let Some(mut inst) = self.instance.take() {
            if let Err(e) = inst.remove() {
                first_err.get_or_insert(e);
            }
        }
        if let Err(e) = unregister(&self.fs, &mut self.uprobes, Duration::ZERO) {
            first_err.get_or_insert(e);
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Attachment for FtraceAttachment {
    fn finish(self: Box<Self>) -> Result<EventStats> {
        self.finish_counting(false).map(|(st, _)| st)
    }

    /// A script in stream mode counts its events by tracepoint from the consumer's pages
    /// (each event's `common_type`); in overwrite mode, or for another hook, no breakdown.
    fn finish_by_probe(self: Box<Self>) -> Result<(EventStats, Vec<(String, u64)>)> {
        self.finish_counting(true)
    }
}

impl FtraceAttachment {
    fn finish_counting(
        mut self: Box<Self>,
        by_probe: bool,
    ) -> Result<(EventStats, Vec<(String, u64)>)> {
        if self.script {
            if let Some(inst) = &self.instance {
                inst.write("tracing_on", "0")?;
            }
        }
        self.disable()?;
        if let Some(c) = self.consumer.take() {
            c.finish().context("draining trace_pipe_raw")?;
        }
        if self.off {
            // Read before teardown removes the events (and their counters).
            let hits = uprobe_hits(&self.fs, &self.uprobes)?;
            self.teardown()?;
            return Ok((EventStats::new(hits, 0), Vec::new()));
        }
        let stats = self
            .instance
            .as_ref()
            .expect("instance lives until teardown")
            .stats()?;
        self.teardown()?;
        let st = account(&stats);
        let probes = match &self.by_type {
            Some(t) if by_probe => t.count(st.recorded)?,
            _ => Vec::new(),
        };
        Ok((st, probes))
    }
}

impl Drop for FtraceAttachment {
    fn drop(&mut self) {
        let _ = self.disable();
        let _ = self.teardown();
    }
}

/// Thread ids of `pid` (just `pid` if /proc cannot be read).
fn thread_ids(pid: u32) -> Vec<String> {
    let mut tids: Vec<String> = rtrace_tracer::procs::threads(pid)
        .unwrap_or_default()
        .iter()
        .map(|t| t.pid.to_string())
        .collect();
    if tids.is_empty() {
        tids.push(pid.to_string());
    }
    tids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_hits_are_paired_with_their_group() {
        let events =
            "p:rtrace_a_1/hit /w:0x10 arg1=%di:s64\np:rtrace_b_1/hit /w:0x10 arg1=%di:s64\n";
        let profile = "  /w  hit  7\n  /w  hit  5\n";
        let ours = ["rtrace_b_1/hit".to_owned()];
        assert_eq!(profile_hits(events, profile, &ours).unwrap(), 5);
        assert!(profile_hits(events, "  /w  hit  7\n", &ours).is_err());
    }

    #[test]
    fn instances_get_the_targets_buffer_size() {
        assert_eq!(
            instance_setup(None, Some(64), true),
            [
                ("buffer_size_kb", "64".to_owned()),
                ("options/overwrite", "1".to_owned())
            ]
        );
        let stream = [("options/overwrite", "0".to_owned())];
        assert_eq!(instance_setup(None, None, false), stream);
        assert!(buffer_description(Some(64), None).contains("64 KiB per CPU"));
    }

    #[test]
    fn the_clock_is_written_first_and_described_with_the_buffer() {
        let files = instance_setup(Some("global"), Some(64), true);
        assert_eq!(files[0], ("trace_clock", "global".to_owned()));
        assert_eq!(files.len(), 3);
        let d = buffer_description(Some(64), Some("global"));
        assert_eq!(
            d,
            "instance buffer_size_kb = 64 KiB per CPU, trace_clock global"
        );
        assert!(!buffer_description(Some(64), None).contains("trace_clock"));
    }

    #[test]
    fn pid_filter_lists_every_thread() {
        assert_eq!(pid_filter(&["12".into()]), "common_pid == 12");
        let filter = pid_filter(&["12".into(), "13".into()]);
        assert_eq!(filter, "common_pid == 12 || common_pid == 13");
    }
}
