//! perf backend: runs the real `perf record` (Debian 12 ships perf 6.1) as an external
//! reference, as the bpftrace backend runs the real bpftrace.
//!
//! - USDT, uprobe and uretprobe hooks: the uprobe events are ours, not `perf probe`'s. The
//!   definitions are the ftrace backend's, word for word (`rtrace_ftrace::definitions`,
//!   `function_definition`: checked file offsets from `.note.stapsdt` and the symbol table,
//!   the semaphore as `ref_ctr_offset`), appended to `uprobe_events` in a run-owned group
//!   `rtrace_<tag>_<seq>`, removed by the attachment and, after a SIGKILL, by the ftrace
//!   backend's stale cleanup. `perf probe` is not used, for measured reasons (issue #34's
//!   research, perf 6.1.192 on Linux 6.18): it cannot name the group of a USDT event (always
//!   `sdt_<provider>`, so runs would share events and no owner could be judged), it needs
//!   `perf buildid-cache` in `$HOME/.debug`, it resolves the workload's `rtrace_marker_hit`
//!   through DWARF to three wrong inlined sites (and segfaults with `--no-inlines`), and it
//!   writes a raw address as a file offset unchanged. With our definitions, perf and ftrace
//!   differ only in their buffer and reader.
//! - Kernel tracepoints: by name.
//! - Tracepoint scripts ([`Hook::Tracepoints`], the `app` experiment): every tracepoint of
//!   `script.points` as its own `-e CATEGORY:NAME` (no globs: perf then opens exactly the
//!   script's set; ~720 arguments of ~30 bytes for `syscalls:*`, far below the kernel's argument
//!   limits). `Target::pid == None`: `-a`, every process (what `app` uses); `Some(pid)`: `-p PID`
//!   as for one tracepoint (a tree: `-a`, kept by pid as below). perf opens one descriptor per
//!   tracepoint and CPU (~1,440 for `syscalls:*` on 2 CPUs) and raises its own RLIMIT_NOFILE to
//!   the hard limit when it runs out; it refuses to record if any event fails to open. `attach`
//!   fails loudly unless perf holds at least one event descriptor per tracepoint and CPU, and
//!   `finish` unless `perf.data` describes exactly the script's tracepoints (by id, naming the
//!   missing ones). Stream mode only: recorded = samples (each once), lost = the kernel's
//!   per-event lost counts, as for one tracepoint; [`Attachment::finish_by_probe`] counts the
//!   samples by their event (sample id → attribute → its `config`, the tracepoint's id). The
//!   flight recorder is refused: with hundreds of events per CPU, the counts read with samples
//!   miss every event and CPU whose samples were all overwritten.
//! - A process tree (`Target::tree`: `count`'s command) is recorded system-wide (`-a`), not with
//!   `-p`: perf's per-task uprobe filter turns away a process it does not follow yet and removes
//!   the breakpoint, and with it the USDT semaphore, from that process (measured: workers forked
//!   after the attach fired 0 of 300 queries, 600 of 1200 counted, in 3 of 6 runs). System-wide,
//!   every process mapping the binary gets both; the tree's samples are told from the others by
//!   their pid and perf's fork and exit records (module `data`), the others are `outside_tree`.
//! - `perf record -e GROUP:EVENT -m PAGES -p PID -D -1 --control fd:CTL,ACK -o perf.data`:
//!   events opened disabled, `attach` returns once perf answered `ack` to `enable`. `-N -B`:
//!   no build-id cache in `$HOME/.debug`, no build-id collection. `-k monotonic`: sample times
//!   fine enough to tell samples apart everywhere (see `record_args`).
//! - Stream (`--record stream`): perf writes every sample to `perf.data` in the run's trace
//!   directory; recorded = its samples counted once (module `data`: `perf_mmap__push`
//!   writes some twice), lost = the kernel's lost count perf writes at exit (`PERF_RECORD_LOST_SAMPLES`).
//! - Overwrite (`--record overwrite`, the flight recorder): `--overwrite` keeps the newest
//!   samples of each CPU's ring and writes them at exit, with no record of what it overwrote.
//!   Hits of our uprobe events come from tracefs' `uprobe_profile` (as ftrace's mode `off`
//!   counts them), read after perf exits: a USDT probe inlined at several sites is several
//!   events, and an event whose samples were all overwritten has no count of its own in the
//!   file. A kernel tracepoint is one event, a one-member group sampling its leader
//!   (`{EVENT}:S`): every sample carries its count, hits = the largest. Overwritten = hits -
//!   recorded - lost.
//!
//! `perf record -m` takes a power of two of pages: a `--buffer-size-kb` that is not 4 KiB times
//! a power of two is rounded up ([`rounding`] says so in the result).

mod data;
pub mod events;
mod record;

pub use data::{count, Counts};

use anyhow::{bail, ensure, Context, Result};
use events::Stack;
use rtrace_ftrace::{Tracefs, UprobeDef};
use rtrace_tracer::features::Ordinary;
use rtrace_tracer::{Attachment, EventStats, Hook, RecordMode, Target, Tracer, TracerKind};
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where Debian installs perf (`linux-perf`).
pub const PERF: &str = "/usr/bin/perf";

/// File below `Target::out_dir` that `perf record` writes.
pub const DATA_FILE: &str = "perf.data";

/// Per-CPU buffer when `Target::buffer_size_kb` is not given (KiB).
pub const DEFAULT_BUFFER_KB: u64 = 4 << 10;

/// The smallest sample perf writes for the loop's probe (one 8-byte argument), in bytes: 80
/// (IP, TID, TIME, CPU, PERIOD and the raw tracepoint record; measured: a 4 MiB overwrite ring
/// kept 52,428 samples).
pub const SAMPLE_BYTES: u64 = 80;

/// The oldest perf whose counts are exact: 6.0 reads the kernel's lost count
/// (`PERF_FORMAT_LOST`) at exit.
const OLDEST: (u32, u32) = (6, 0);

/// The perf tracer backend.
#[derive(Debug, Clone)]
pub struct PerfTracer {
    program: PathBuf,
    /// The recording mode of every attachment, whatever the target asks (`usdt --decompose`
    /// runs perf in both); `None`: the target's.
    record: Option<RecordMode>,
}

impl Default for PerfTracer {
    fn default() -> PerfTracer {
        PerfTracer::new()
    }
}

impl PerfTracer {
    pub fn new() -> PerfTracer {
        PerfTracer {
            program: PathBuf::from(PERF),
            record: None,
        }
    }

    /// Records in `mode` whatever the target asks.
    pub fn with_record(mut self, mode: RecordMode) -> PerfTracer {
        self.record = Some(mode);
        self
    }

    /// Uses another perf executable than [`PERF`].
    pub fn with_program(mut self, program: impl Into<PathBuf>) -> PerfTracer {
        self.program = program.into();
        self
    }
}

/// `perf 6.1.192` from `perf version 6.1.192`, and its major and minor numbers.
fn parse_version(text: &str) -> Option<(String, (u32, u32))> {
    let word = text
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    Some((format!("perf {word}"), (major, minor)))
}

/// The installed perf's version (`perf 6.1.192`), `None` if it does not run.
pub fn version() -> Option<String> {
    program_version(Path::new(PERF)).ok().map(|(v, _)| v)
}

fn program_version(program: &Path) -> Result<(String, (u32, u32))> {
    let o = std::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .with_context(|| format!("cannot run {} --version", program.display()))?;
    let text = String::from_utf8_lossy(&o.stdout);
    parse_version(&text).with_context(|| {
        format!(
            "{} --version printed no version ({:?}): reinstall linux-perf",
            program.display(),
            text.trim()
        )
    })
}

/// `perf record -m`'s pages for `buffer_size_kb` per CPU: whole 4 KiB pages, rounded up to a
/// power of two (perf refuses others).
pub fn mmap_pages(buffer_size_kb: Option<u64>) -> Result<u64> {
    let kb = buffer_size_kb.unwrap_or(DEFAULT_BUFFER_KB);
    ensure!(kb > 0, "--buffer-size-kb must be at least 4 for perf");
    let pages = kb.div_ceil(4).next_power_of_two();
    ensure!(
        pages <= 1 << 20,
        "--buffer-size-kb {kb} is more than perf's 4 GiB per CPU: pass a smaller one"
    );
    Ok(pages)
}

/// The buffer a run asking for `buffer_size_kb` per CPU gets, as the report shows it.
pub fn buffer_description(buffer_size_kb: Option<u64>) -> Result<String> {
    let pages = mmap_pages(buffer_size_kb)?;
    Ok(format!(
        "perf record -m {pages} pages = {} KiB per CPU",
        pages * 4
    ))
}

/// Why perf's buffer differs from the `buffer_size_kb` asked for, if it does.
pub fn rounding(buffer_size_kb: Option<u64>) -> Option<String> {
    let kb = buffer_size_kb.unwrap_or(DEFAULT_BUFFER_KB);
    let pages = mmap_pages(Some(kb)).ok()?;
    (pages * 4 != kb).then(|| {
        format!(
            "perf record -m takes a power of two of pages: {kb} KiB became {} KiB per CPU",
            pages * 4
        )
    })
}

/// Stops the `perf` processes of runs that are gone (tagged with the run in
/// `RTRACE_BENCH_RUN`); their uprobe events are the ftrace backend's stale cleanup's (group
/// `rtrace_<tag>_<seq>`), which must come after: an event perf still holds cannot be removed.
pub fn remove_stale() -> Result<Vec<String>> {
    Ok(rtrace_tracer::owner::stop_dead_runs_processes(Some("perf")))
}

impl Tracer for PerfTracer {
    fn kind(&self) -> TracerKind {
        TracerKind::Perf
    }

    fn check(&self, hook: &Hook) -> Result<()> {
        rtrace_tracer::tool::require("perf", "linux-perf", &self.program)?;
        let (version, number) = program_version(&self.program)?;
        if number < OLDEST {
            bail!(
                "{version} is older than perf {}.{}, which reads the kernel's lost counts: install linux-perf {}.{} or later",
                OLDEST.0, OLDEST.1, OLDEST.0, OLDEST.1
            );
        }
        Tracefs::available()?;
        match hook {
            Hook::Usdt { .. } | Hook::Uprobe { .. } => {
                rtrace_ftrace::hook_definitions("check", hook).map(drop)
            }
            Hook::KernelTracepoint { category, name } => {
                rtrace_ftrace::check_tracepoint(category, name)
            }
            Hook::Tracepoints(script) => rtrace_ftrace::check_tracepoints(&script.points),
            Hook::LttngUst { .. } => {
                bail!("perf cannot trace LTTng-UST tracepoints: use --tracer lttng")
            }
            Hook::Read(read) => {
                let p = events::plan(read)?;
                self.check(&p.hook)
            }
        }
    }

    fn program(&self, hook: &Hook) -> String {
        match hook {
            Hook::Read(read) => events::describe(read),
            h => h.label(),
        }
    }

    fn attach(&self, target: &Target) -> Result<Box<dyn Attachment>> {
        self.check(&target.hook)?;
        let moded;
        let target = match self.record {
            Some(record) => {
                moded = Target {
                    record,
                    ..target.clone()
                };
                &moded
            }
            None => target,
        };
        if let Hook::Read(read) = &target.hook {
            let p = events::plan(read)?;
            let (filter, stack) = (p.filter, p.stack);
            return Ordinary::attach(read.program, target, p.hook, |t| {
                self.start(t, filter, stack)
            });
        }
        self.start(target, None, None)
    }
}

impl PerfTracer {
    /// `perf record` on `target`'s hook (checked), with the events suite's filter or stack.
    fn start(
        &self,
        target: &Target,
        filter: Option<&str>,
        stack: Option<Stack>,
    ) -> Result<Box<dyn Attachment>> {
        let pages = mmap_pages(target.buffer_size_kb)?;
        let fs = Tracefs::mount_if_needed()?;
        let overwrite = target.record == RecordMode::Overwrite;
        let data = target.out_dir.join(DATA_FILE);
        let mut a = PerfAttachment {
            fs: fs.clone(),
            uprobes: Vec::new(),
            record: None,
            data: data.clone(),
            overwrite,
            filtered: filter.is_some() || target.skip_tid.is_some(),
            tree: target.pid.filter(|_| target.tree),
            script: Vec::new(),
        };
        if a.tree.is_some() && overwrite {
            bail!("perf's flight recorder (--record overwrite) keeps no count of the hits it overwrote per process, so a process tree's cannot be told from the others': use --record stream with perf, or --tracer ftrace or ebpf");
        }
        if let Hook::Tracepoints(script) = &target.hook {
            if overwrite {
                bail!("perf's flight recorder (--record overwrite) cannot count a tracepoint script's overwritten events (its samples' counts miss every event and CPU whose samples were all overwritten): use --record stream with perf, or --tracer ftrace");
            }
            a.script = rtrace_ftrace::tracepoint_ids(&fs, &script.points)?;
        }
        // Every step registers what it created in `a` first, so dropping `a` on error undoes it.
        let events: Vec<String> = match &target.hook {
            Hook::KernelTracepoint { category, name } => vec![format!("{category}:{name}")],
            Hook::Tracepoints(script) => script
                .points
                .iter()
                .map(|(c, n)| format!("{c}:{n}"))
                .collect(),
            hook => {
                let tag = rtrace_tracer::run_tag()?;
                let defs = rtrace_ftrace::hook_definitions(&tag, hook)?.expect("rejected by check");
                let defs = defs.into_iter().map(parsable).collect();
                let events = rtrace_ftrace::register(&fs, defs, &mut a.uprobes)?;
                events.iter().map(|(g, e)| format!("{g}:{e}")).collect()
            }
        };
        // Kernel tracepoints' samples read their count; uprobe events are counted by tracefs.
        let read_counts = overwrite && a.uprobes.is_empty();
        let mut args = record_args(&events, target, pages, &data, read_counts, filter);
        args.extend(stack_args(stack));
        let rec = a.record.insert(record::Record::start(
            &self.program,
            &args,
            &target.consumer_cpus,
        )?);
        if !a.script.is_empty() {
            let system_wide = target.pid.is_none() || target.tree;
            opened_every_event(rec.pid(), a.script.len(), system_wide)?;
        }
        Ok(Box::new(a))
    }
}

/// `perf record`'s arguments (before `--control`); `read_counts`: every sample reads its event's
/// count (`{EVENT}:S`); `filter`: a kernel event filter on every event (beside the skipped
/// thread's).
fn record_args(
    events: &[String],
    target: &Target,
    pages: u64,
    data: &Path,
    read_counts: bool,
    filter: Option<&str>,
) -> Vec<OsString> {
    // `-k monotonic`: sample times from CLOCK_MONOTONIC, not perf's default scheduler clock,
    // which ticks in jiffies where the TSC is unstable (measured in the TCG guests: distinct
    // samples of one CPU at one time), and counting tells perf 6.1's copies apart by CPU and time.
    let mut args: Vec<OsString> = ["-N", "-B", "-k", "monotonic", "-D", "-1", "-m"]
        .map(OsString::from)
        .to_vec();
    args.push(pages.to_string().into());
    if target.record == RecordMode::Overwrite {
        args.push("--overwrite".into());
    }
    for e in events {
        args.push("-e".into());
        args.push(if read_counts {
            format!("{{{e}}}:S").into()
        } else {
            e.into()
        });
        let skip = target.skip_tid.map(|tid| format!("common_pid != {tid}"));
        let filters: Vec<String> = filter.map(str::to_owned).into_iter().chain(skip).collect();
        if !filters.is_empty() {
            args.push("--filter".into());
            args.push(format!("({})", filters.join(") && (")).into());
        }
    }
    match target.pid {
        // Threads and children created later count too (perf's events are inherited).
        Some(pid) if !target.tree => {
            args.push("-p".into());
            args.push(pid.to_string().into());
        }
        // A tree is kept from the samples' pids (see the crate doc).
        _ => args.push("-a".into()),
    }
    args.push("-o".into());
    args.push(data.into());
    args
}

/// `def` under a name perf 6.1's event parser reads as a tracepoint: it reads a name that is
/// `r` and hex digits only (libc's `read`) as a raw hardware event (`rNNN`) and refuses
/// `GROUP:read` (measured: "event syntax error ... parser error"); such a name gets `fn_` before it.
fn parsable(def: UprobeDef) -> UprobeDef {
    let e = &def.event;
    let raw = e.len() > 1 && e.starts_with('r') && e[1..].chars().all(|c| c.is_ascii_hexdigit());
    if !raw {
        return def;
    }
    let event = format!("fn_{e}");
    let line = def
        .line
        .replacen(&format!("/{e} "), &format!("/{event} "), 1);
    UprobeDef { event, line, ..def }
}

/// The events suite's stack per sample: frame-pointer call chains of one side.
fn stack_args(stack: Option<Stack>) -> Vec<OsString> {
    let side = match stack {
        None => return Vec::new(),
        Some(Stack::Kernel) => "--kernel-callchains",
        Some(Stack::User) => "--user-callchains",
    };
    ["-g", side].map(OsString::from).to_vec()
}

/// A running `perf record` and the uprobe events it records; dropping it kills perf and
/// removes the events.
struct PerfAttachment {
    fs: Tracefs,
    /// `GROUP/EVENT` of the uprobe events we created.
    uprobes: Vec<String>,
    record: Option<record::Record>,
    data: PathBuf,
    overwrite: bool,
    /// A kernel filter drops some hits on purpose (a skipped thread's, the events suite's
    /// `count > 0`): the kernel's hit count is then no measure of perf's.
    filtered: bool,
    /// The root of the process tree whose samples count (recorded with `-a`).
    tree: Option<u32>,
    /// A tracepoint script's tracepoints: id, `category:name`, in the script's order.
    script: Vec<(u64, String)>,
}

/// Fails unless perf (process `pid`, its events enabled) holds at least one event descriptor
/// per tracepoint and online CPU (`-a`, `system_wide`), or per tracepoint (`-p`: one per
/// thread, on any CPU).
fn opened_every_event(pid: u32, points: usize, system_wide: bool) -> Result<()> {
    let cpus = match system_wide {
        true => std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|l| rtrace_tracer::parse_cpu_list(l.trim()))
            .map_or(1, |c| c.len().max(1)),
        false => 1,
    };
    let dir = format!("/proc/{pid}/fd");
    let fds = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list perf's descriptors in {dir}"))?
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|l| l.to_string_lossy() == "anon_inode:[perf_event]")
        .count();
    let want = points * cpus;
    ensure!(
        fds >= want,
        "perf opened {fds} event descriptors for the script's {points} tracepoints on {cpus} CPUs (at least {want} expected): {} tracepoints or more are not traced; raise RLIMIT_NOFILE (ulimit -n) or trace fewer tracepoints",
        (want - fds).div_ceil(cpus)
    );
    Ok(())
}

/// The samples of each tracepoint of a script (`ids`: id, `category:name`, in the script's
/// order) from `by_config`; fails unless the file describes exactly these tracepoints (perf
/// opened all of them, and nothing else).
fn by_probe(ids: &[(u64, String)], by_config: &HashMap<u64, u64>) -> Result<Vec<(String, u64)>> {
    let missing: Vec<&str> = ids
        .iter()
        .filter(|(id, _)| !by_config.contains_key(id))
        .map(|(_, n)| n.as_str())
        .collect();
    ensure!(
        missing.is_empty(),
        "perf recorded {} of the script's {} tracepoints: {} missing ({}{})",
        ids.len() - missing.len(),
        ids.len(),
        missing.len(),
        missing
            .iter()
            .take(5)
            .copied()
            .collect::<Vec<_>>()
            .join(", "),
        if missing.len() > 5 { ", ..." } else { "" }
    );
    ensure!(
        by_config.len() == ids.len(),
        "perf.data describes {} tracepoints, the script {}: cannot attribute its samples",
        by_config.len(),
        ids.len()
    );
    Ok(ids
        .iter()
        .map(|(id, n)| (n.clone(), by_config[id]))
        .collect())
}

/// How long removing an event waits for the kernel to release a dead perf's hold on it.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

impl PerfAttachment {
    /// Removes our uprobe events (perf has exited: a recorded event cannot be removed).
    fn remove_uprobes(&mut self) -> Result<()> {
        rtrace_ftrace::unregister(&self.fs, &mut self.uprobes, RELEASE_TIMEOUT)
    }
}

impl Attachment for PerfAttachment {
    fn finish(self: Box<Self>) -> Result<EventStats> {
        self.finish_counting().map(|(st, _)| st)
    }

    /// A script's samples by tracepoint (not in a tree); no breakdown for other hooks.
    fn finish_by_probe(self: Box<Self>) -> Result<(EventStats, Vec<(String, u64)>)> {
        self.finish_counting()
    }
}

impl PerfAttachment {
    fn finish_counting(mut self: Box<Self>) -> Result<(EventStats, Vec<(String, u64)>)> {
        let record = self.record.take().expect("started by attach");
        let exited = record.stop();
        // Read before the events (and their counters) go: the kernel's count of every hit of
        // our uprobe events, in both modes.
        let profile =
            (!self.uprobes.is_empty()).then(|| rtrace_ftrace::uprobe_hits(&self.fs, &self.uprobes));
        let removed = self.remove_uprobes();
        let exited = exited?;
        // perf record ends itself with the SIGINT it was stopped by, once its file is written.
        let stopped = exited.status.signal() == Some(libc::SIGINT);
        if !exited.status.success() && !stopped {
            bail!("perf record failed: {}", exited.why());
        }
        removed?;
        let counts = data::count(&self.data, self.tree)?;
        let profile = profile.transpose()?;
        let hits = match profile {
            Some(h) if self.overwrite => Some(h),
            None if self.overwrite => Some(counts.read_count.context(
                "perf.data's samples carry no count (PERF_SAMPLE_READ): cannot tell what the flight recorder overwrote",
            )?),
            _ => None,
        };
        let mut stats = account(&counts, hits)?;
        stats.outside_tree = counts.outside_tree;
        if let (Some(kernel), false, false) = (profile, self.overwrite, self.filtered) {
            against_kernel(kernel, &stats, self.tree.is_some())?;
        }
        let probes = match (self.script.is_empty(), self.tree) {
            (false, None) => by_probe(&self.script, &counts.by_config)?,
            _ => Vec::new(),
        };
        Ok((stats, probes))
    }
}

/// A stream run's samples and losses against the kernel's count of hits of its uprobe events
/// (`uprobe_profile`). With `-p`, they are equal: perf's per-task filter turns a hit away when
/// none of its events belongs to the process that hit, and removes the breakpoint from that
/// process, whose later hits then go uncounted (measured on Linux 6.18 with `count` before trees
/// were recorded with `-a`: a worker exec'd right after fork, uprobe_profile 201, perf 200 + 0
/// lost); more samples than hits would be samples perf invented. Never silent: the run fails.
/// System-wide (`tree`), the kernel also counts hits of other processes while perf's events are
/// open but not yet or no longer enabled: perf must then see no more than the kernel counted.
/// Checked where no kernel filter drops hits on purpose.
fn against_kernel(kernel: u64, st: &EventStats, tree: bool) -> Result<()> {
    let seen = st.recorded + st.lost;
    if tree {
        ensure!(
            seen + st.outside_tree <= kernel,
            "perf recorded {} + lost {} + {} outside the tree, more than the {kernel} hits the kernel counted on its uprobe events: perf.data holds samples twice",
            st.recorded,
            st.lost,
            st.outside_tree
        );
        return Ok(());
    }
    ensure!(
        kernel <= seen,
        "perf recorded {} + lost {} of the {kernel} hits the kernel counted on its uprobe events: its per-task filter turned {} away, which removes the breakpoint from that process (a process exec'd right after fork, measured here), so its later hits are not counted at all; use --tracer ftrace or ebpf for this command",
        st.recorded,
        st.lost,
        kernel - seen
    );
    ensure!(
        seen == kernel,
        "perf recorded {} + lost {}, more than the {kernel} hits the kernel counted on its uprobe events: perf.data holds samples twice",
        st.recorded,
        st.lost
    );
    Ok(())
}

impl Drop for PerfAttachment {
    fn drop(&mut self) {
        drop(self.record.take());
        let _ = self.remove_uprobes();
    }
}

/// A run's accounting from its file's counts: a stream run loses what the kernel could not write;
/// an overwrite run (`hits` known) overwrote the hits beyond those kept and lost.
fn account(c: &Counts, hits: Option<u64>) -> Result<EventStats> {
    let lost = c.lost();
    let Some(hits) = hits else {
        return Ok(EventStats::new(c.samples, lost));
    };
    let overwritten = hits.checked_sub(c.samples + lost).with_context(|| {
        format!(
            "perf.data holds {} samples and {lost} lost, more than the {hits} hits counted",
            c.samples
        )
    })?;
    Ok(EventStats {
        recorded: c.samples,
        lost: lost + overwritten,
        overwritten,
        outside_tree: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_perf_reads_as_raw_events_are_renamed() {
        let def = |e: &str| UprobeDef {
            group: "g".into(),
            event: e.into(),
            line: format!("p:g/{e} /lib/libc.so.6:0x10 arg1=%di:s64"),
        };
        let d = parsable(def("read"));
        assert_eq!(d.event, "fn_read");
        assert_eq!(d.line, "p:g/fn_read /lib/libc.so.6:0x10 arg1=%di:s64");
        assert_eq!(parsable(def("rtrace_marker_hit")), def("rtrace_marker_hit"));
        assert_eq!(parsable(def("r")), def("r"));
    }

    #[test]
    fn hits_the_kernel_counted_beyond_perfs_fail_the_run() {
        let st = EventStats {
            recorded: 200,
            lost: 0,
            overwritten: 0,
            outside_tree: 0,
        };
        assert!(against_kernel(200, &st, false).is_ok());
        let err = format!("{:#}", against_kernel(201, &st, false).unwrap_err());
        assert!(
            err.contains("of the 201 hits") && err.contains("turned 1 away"),
            "{err}"
        );
        let err = format!("{:#}", against_kernel(199, &st, false).unwrap_err());
        assert!(err.contains("more than the 199 hits"), "{err}");
        // A tree, system-wide: other processes' hits while perf's events were disabled.
        let tree = EventStats {
            outside_tree: 5,
            ..st
        };
        assert!(against_kernel(210, &tree, true).is_ok());
        assert!(against_kernel(204, &tree, true).is_err());
    }

    #[test]
    fn a_script_s_samples_are_named_and_every_tracepoint_must_be_there() {
        let ids = [
            (11, "syscalls:sys_enter_read".to_owned()),
            (12, "syscalls:sys_enter_write".to_owned()),
        ];
        let got = by_probe(&ids, &HashMap::from([(11, 5), (12, 0)])).unwrap();
        assert_eq!(
            got,
            [
                ("syscalls:sys_enter_read".to_owned(), 5),
                ("syscalls:sys_enter_write".to_owned(), 0)
            ]
        );
        let e = format!(
            "{:#}",
            by_probe(&ids, &HashMap::from([(11, 5)])).unwrap_err()
        );
        assert!(
            e.contains("recorded 1 of the script's 2") && e.contains("sys_enter_write"),
            "{e}"
        );
        let e = by_probe(&ids, &HashMap::from([(11, 5), (12, 1), (13, 1)])).unwrap_err();
        assert!(e.to_string().contains("describes 3 tracepoints"), "{e}");
    }

    #[test]
    fn a_script_is_one_event_argument_per_tracepoint_system_wide() {
        let script = rtrace_tracer::tracepoints::Script {
            patterns: vec!["syscalls:sys_enter_*".into()],
            points: vec![
                ("syscalls".into(), "sys_enter_read".into()),
                ("syscalls".into(), "sys_enter_write".into()),
            ],
        };
        let target = Target {
            hook: Hook::Tracepoints(script),
            pid: None,
            follow_children: false,
            tree: false,
            skip_tid: None,
            out_dir: PathBuf::from("/tmp/o"),
            consumer_cpus: vec![0],
            buffer_size_kb: None,
            record: RecordMode::Stream,
            poll: None,
        };
        let ev = [
            "syscalls:sys_enter_read".to_owned(),
            "syscalls:sys_enter_write".to_owned(),
        ];
        let args = record_args(
            &ev,
            &target,
            1024,
            Path::new("/tmp/o/perf.data"),
            false,
            None,
        );
        let s: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            s.join(" "),
            "-N -B -k monotonic -D -1 -m 1024 -e syscalls:sys_enter_read -e syscalls:sys_enter_write -a -o /tmp/o/perf.data"
        );
    }

    #[test]
    fn versions_parse() {
        let (v, n) = parse_version("perf version 6.1.192\n").unwrap();
        assert_eq!((v.as_str(), n), ("perf 6.1.192", (6, 1)));
        assert_eq!(parse_version("perf version 5.10").unwrap().1, (5, 10));
        assert!(parse_version("nothing").is_none());
    }

    #[test]
    fn buffers_are_powers_of_two_of_pages() {
        assert_eq!(mmap_pages(Some(4096)).unwrap(), 1024);
        assert_eq!(mmap_pages(Some(64)).unwrap(), 16);
        assert_eq!(mmap_pages(Some(100)).unwrap(), 32);
        assert_eq!(mmap_pages(Some(1)).unwrap(), 1);
        assert_eq!(rounding(Some(4096)), None);
        assert!(rounding(Some(100)).unwrap().contains("became 128 KiB"));
        assert!(buffer_description(Some(64))
            .unwrap()
            .contains("64 KiB per CPU"));
    }

    #[test]
    fn missing_perf_is_one_line_naming_the_fix() {
        let t = PerfTracer::new().with_program("/nonexistent/perf");
        let hook = Hook::KernelTracepoint {
            category: "syscalls".into(),
            name: "sys_exit_clock_nanosleep".into(),
        };
        let err = format!("{:#}", t.check(&hook).unwrap_err());
        let fix = "perf not found: apt-get install linux-perf";
        assert!(err.starts_with(fix) && !err.contains('\n'), "{err}");
    }

    #[test]
    fn overwrite_accounts_from_the_hits_counted() {
        let c = Counts {
            samples: 36,
            copies: 2,
            lost_samples: 0,
            lost_records: 0,
            read_count: None,
            outside_tree: 0,
            by_config: Default::default(),
        };
        let st = account(&c, Some(200_000)).unwrap();
        assert_eq!(
            (st.recorded, st.lost, st.overwritten),
            (36, 199_964, 199_964)
        );
        let st = account(&c, None).unwrap();
        assert_eq!((st.recorded, st.lost), (36, 0));
        assert!(account(&c, Some(10)).is_err());
    }

    #[test]
    fn record_arguments() {
        let target = Target {
            hook: Hook::KernelTracepoint {
                category: "syscalls".into(),
                name: "sys_exit_clock_nanosleep".into(),
            },
            pid: Some(42),
            follow_children: false,
            tree: false,
            skip_tid: Some(43),
            out_dir: PathBuf::from("/tmp/o"),
            consumer_cpus: vec![0],
            buffer_size_kb: Some(64),
            record: RecordMode::Overwrite,
            poll: None,
        };
        let ev = ["g:e".to_owned()];
        let data = Path::new("/tmp/o/perf.data");
        let args = record_args(&ev, &target, 16, data, true, None);
        let s: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
        let line = s.join(" ");
        assert_eq!(
            line,
            "-N -B -k monotonic -D -1 -m 16 --overwrite -e {g:e}:S --filter (common_pid != 43) -p 42 -o /tmp/o/perf.data"
        );
        let args = record_args(&ev, &target, 16, data, false, Some("count > 0"));
        let s: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
        assert!(s
            .join(" ")
            .contains("-e g:e --filter (count > 0) && (common_pid != 43) -p"));
        assert_eq!(stack_args(Some(Stack::User)), ["-g", "--user-callchains"]);
        // A process tree: system-wide, kept by pid afterwards.
        let tree = Target {
            tree: true,
            skip_tid: None,
            record: RecordMode::Stream,
            ..target
        };
        let args = record_args(&ev, &tree, 16, data, false, None);
        let s: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
        assert!(
            s.join(" ").ends_with("-e g:e -a -o /tmp/o/perf.data"),
            "{s:?}"
        );
    }
}
