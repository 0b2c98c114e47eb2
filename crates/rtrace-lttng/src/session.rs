//! One recording session per attachment: create → channel → event → track → start, and
//! stop → (snapshot) → statistics → destroy → count.

use crate::daemon::Sessiond;
use crate::{cli, ctf, kernel, mi, overwrite, LttngOptions};
use anyhow::{bail, Context, Result};
use rtrace_tracer::{Attachment, EventStats, Hook, RecordMode, Target};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Name of the one channel of every session.
const CHANNEL: &str = "rtrace";
/// How long `attach` waits for the traced application to register with the session daemon.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(10);

/// What a session records.
#[derive(Debug, Clone, PartialEq, Eq)]
enum What {
    /// An LTTng-UST event `provider:event`.
    Ust { event: String },
    /// Entry and exit of syscall `name`; `exit` says which one the hook counts.
    Syscall { name: String, exit: bool },
}

/// The syscall named by a `syscalls:sys_{enter,exit}_NAME` hook, and whether it is the exit.
pub fn syscall(category: &str, name: &str) -> Result<(String, bool)> {
    let parsed = (category == "syscalls")
        .then(|| {
            name.strip_prefix("sys_exit_")
                .map(|n| (n, true))
                .or_else(|| name.strip_prefix("sys_enter_").map(|n| (n, false)))
        })
        .flatten();
    let Some((call, exit)) = parsed else {
        bail!("LTTng backend: kernel hook {category}:{name} is not supported, only syscalls:sys_exit_NAME / sys_enter_NAME");
    };
    rtrace_tracer::validate_name("syscall", call)?;
    Ok((call.to_owned(), exit))
}

/// Whether the lttng-modules kernel modules are loaded or installed for this kernel.
pub fn kernel_modules_available() -> Result<()> {
    if Path::new("/sys/module/lttng_tracer").exists() {
        return Ok(());
    }
    let installed = std::process::Command::new("modinfo")
        .arg("lttng-tracer")
        .output()
        .is_ok_and(|o| o.status.success());
    if installed {
        Ok(())
    } else {
        bail!("LTTng kernel tracing unavailable: the lttng-modules kernel modules are not loaded or installed for this kernel (apt-get install lttng-modules-dkms)")
    }
}

/// A live LTTng recording session; destroyed by `finish` or on drop.
pub struct LttngSession {
    name: String,
    out: PathBuf,
    what: What,
    record: RecordMode,
    /// Kernel events recorded in a second channel beside a UST event (`kernel::CHANNEL`):
    /// counted apart, never in the UST event's accounting.
    kernel_events: Vec<String>,
    /// Overwrite mode: per stream, the highest sequence number of the packets `lttng start`
    /// opened before the workload fired (see `overwrite`).
    opened: BTreeMap<PathBuf, u64>,
    /// False once `lttng destroy` ran.
    live: bool,
    /// Keeps a session daemon we started alive until this session is gone.
    _sessiond: Arc<Sessiond>,
}

impl LttngSession {
    pub fn start(
        options: &LttngOptions,
        kernel_events: &[String],
        target: &Target,
        sessiond: Arc<Sessiond>,
    ) -> Result<Self> {
        let what = match &target.hook {
            Hook::LttngUst { provider, event } => What::Ust {
                event: options.event_kind.ust_event(provider, event),
            },
            Hook::KernelTracepoint { category, name } => {
                let (name, exit) = syscall(category, name)?;
                What::Syscall { name, exit }
            }
            Hook::Usdt { .. } => bail!("LTTng cannot trace USDT probes"),
            Hook::Tracepoints(_) => {
                bail!("LTTng runs no tracepoint script (a bug: please report it)")
            }
            Hook::Uprobe { .. } => bail!("LTTng has no uprobe/uretprobe hook"),
            Hook::Read { .. } => {
                bail!("the events suite's programs are kernel hooks of their own (a bug: please report it)")
            }
        };
        if !kernel_events.is_empty() {
            if !matches!(what, What::Ust { .. }) {
                bail!("LTTng kernel events beside the traced event need a UST event (a bug: please report it)");
            }
            if target.record == RecordMode::Overwrite {
                bail!("LTTng kernel events beside the UST event are recorded in stream mode only: use --record stream");
            }
        }
        let name = rtrace_tracer::run_tag()?;
        let out = target.out_dir.join("lttng").join(&name);
        std::fs::create_dir_all(target.out_dir.join("lttng"))
            .with_context(|| format!("cannot create {}", target.out_dir.display()))?;
        let snapshot = target.record == RecordMode::Overwrite;
        let output = format!("--output={}", cli::path_arg(&out)?);
        let mut create = vec!["create", name.as_str(), output.as_str()];
        if snapshot {
            create.push("--snapshot");
        }
        cli::lttng(&create).context("cannot create the LTTng session")?;
        // From here on, dropping `s` destroys the session.
        let mut s = LttngSession {
            name,
            out,
            what,
            record: target.record,
            kernel_events: kernel_events.to_vec(),
            opened: BTreeMap::new(),
            live: true,
            _sessiond: sessiond,
        };
        let domain = match s.what {
            What::Ust { .. } => "--userspace",
            What::Syscall { .. } => "--kernel",
        };
        let session = format!("--session={}", s.name);
        let (subbuf, num) = options.geometry(target.buffer_size_kb);
        let mut channel = vec![
            "enable-channel".to_owned(),
            domain.to_owned(),
            session.clone(),
            if snapshot { "--overwrite" } else { "--discard" }.to_owned(),
        ];
        channel.extend(subbuf.map(|v| format!("--subbuf-size={v}")));
        channel.extend(num.map(|v| format!("--num-subbuf={v}")));
        channel.push(CHANNEL.to_owned());
        cli::lttng(&channel.iter().map(String::as_str).collect::<Vec<_>>())
            .context("cannot create the LTTng channel")?;

        let chan = format!("--channel={CHANNEL}");
        match &s.what {
            What::Ust { event } => {
                // A program held before its exec (cyclictest with the preload library)
                // registers only once it runs: the vpid tracker below then applies from its
                // start (liblttng-ust waits for its sessions before `main`).
                if let Some(pid) = target.pid.filter(|_| !target.follow_children) {
                    wait_registered(pid, event)?;
                }
                cli::lttng(&["enable-event", domain, &session, &chan, event])
            }
            What::Syscall { name, exit } => {
                let filter = syscall_filter(*exit, target.skip_tid);
                let mut args = vec!["enable-event", domain, &session, &chan, "--syscall", name];
                let filter_opt = filter.map(|f| format!("--filter={f}"));
                args.extend(filter_opt.as_deref());
                cli::lttng(&args)
            }
        }
        .context("cannot enable the LTTng event")?;
        if let Some(pid) = target.pid {
            let pid_opt = match s.what {
                What::Ust { .. } => format!("--vpid={pid}"),
                What::Syscall { .. } => format!("--pid={pid}"),
            };
            cli::lttng(&["track", domain, &session, &pid_opt])
                .context("cannot restrict the LTTng session to the workload")?;
        }
        if !s.kernel_events.is_empty() {
            // Every process's kernel events on every CPU (what took the CPU from the
            // workload), in LTTng's default kernel geometry.
            let kchan = format!("--channel={}", kernel::CHANNEL);
            cli::lttng(&[
                "enable-channel",
                "--kernel",
                &session,
                "--discard",
                kernel::CHANNEL,
            ])
            .context("cannot create the LTTng kernel channel")?;
            let events = s.kernel_events.join(",");
            cli::lttng(&[
                "enable-event",
                "--kernel",
                &session,
                &kchan,
                "--tracepoint",
                &events,
            ])
            .context("cannot enable the LTTng kernel events")?;
        }
        // Returns once the registered applications have their tracepoints enabled.
        cli::lttng(&["start", &s.name]).context("cannot start the LTTng session")?;
        if snapshot && matches!(s.what, What::Ust { .. }) {
            s.opened = s.opened_packets()?;
        }
        Ok(s)
    }

    /// The packets `lttng start` opened, empty, in every stream: a snapshot recorded before the
    /// workload fires (it waits for the attach), read, then removed.
    fn opened_packets(&self) -> Result<BTreeMap<PathBuf, u64>> {
        let mut dir = self.out.clone().into_os_string();
        dir.push("-start");
        let dir = PathBuf::from(dir);
        let url = format!("file://{}", cli::path_arg(&dir)?);
        cli::lttng(&["snapshot", "record", "--session", &self.name, &url])
            .context("cannot record the LTTng snapshot of the session's start")?;
        let opened = overwrite::streams(&dir, &ctf::traces(&dir)?)
            .and_then(|streams| overwrite::opened(&streams))
            .with_context(|| format!("the snapshot of the session's start in {}", dir.display()));
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove {}", dir.display()))?;
        opened
    }

    /// `lttng destroy` (idempotent).
    fn destroy(&mut self) -> Result<()> {
        if self.live {
            self.live = false;
            cli::lttng(&["destroy", &self.name])?;
        }
        Ok(())
    }

    fn stats(&mut self) -> Result<EventStats> {
        cli::lttng(&["stop", &self.name]).context("cannot stop the LTTng session")?;
        if self.record == RecordMode::Overwrite {
            cli::lttng(&["snapshot", "record", "--session", &self.name])
                .context("cannot record the LTTng snapshot")?;
        }
        let xml = cli::lttng_mi(&["list", &self.name])?;
        // The traced event's domain only: a kernel channel beside it is counted apart.
        let domain = match self.what {
            What::Ust { .. } => "UST",
            What::Syscall { .. } => "KERNEL",
        };
        let discarded = mi::domain_channel_sum(&xml, domain, "discarded_events")
            .context("unreadable discarded-event count in `lttng list`")?;
        let lost_packets = mi::domain_channel_sum(&xml, domain, "lost_packets")
            .context("unreadable lost-packet count in `lttng list`")?;
        if !self.kernel_events.is_empty() {
            let k_discarded = mi::domain_channel_sum(&xml, "KERNEL", "discarded_events")
                .context("unreadable kernel discarded-event count in `lttng list`")?;
            let k_lost = mi::domain_channel_sum(&xml, "KERNEL", "lost_packets")
                .context("unreadable kernel lost-packet count in `lttng list`")?;
            kernel::write_stats(&self.out, k_discarded, k_lost)?;
        }
        self.destroy().context("cannot destroy the LTTng session")?;
        if lost_packets > 0 {
            bail!(
                "LTTng lost {lost_packets} packets of session {} and does not say how many events they held",
                self.name
            );
        }
        let wrapped = match (&self.what, self.record) {
            (What::Ust { .. }, RecordMode::Overwrite) => self.overwritten()?,
            (What::Syscall { .. }, RecordMode::Overwrite) => {
                let missing = self.missing_packets()?;
                if missing > 0 {
                    bail!(
                        "the LTTng snapshot buffer wrapped ({missing} packets overwritten) and the kernel's syscall events differ in size, so how many events they held is unknown: use a bigger buffer (--buffer-size-kb) or stream mode"
                    );
                }
                None
            }
            (_, RecordMode::Stream) => None,
        };
        let (recorded, lost) = match &self.what {
            // The UST trace alone (`ust/`) when a kernel trace is beside it.
            What::Ust { .. } if !self.kernel_events.is_empty() => {
                (ctf::count_events(&self.out.join("ust"))?, discarded)
            }
            What::Ust { .. } => (ctf::count_events(&self.out)?, discarded),
            What::Syscall { name, exit } => {
                let entry_name = format!("syscall_entry_{name}");
                let exit_name = format!("syscall_exit_{name}");
                let c = ctf::count_by_name(&self.out, &[&entry_name, &exit_name])?;
                if !*exit {
                    (c[0], syscall_lost(discarded, c[0], c[1]))
                } else if c[0] > 0 {
                    bail!("LTTng recorded {} {entry_name} events although its filter keeps exits only", c[0]);
                } else {
                    // Exit only (see `syscall_filter`): every discarded event was an exit.
                    (c[1], discarded)
                }
            }
        };
        let overwritten = wrapped.map_or(0, |w| w.events());
        Ok(EventStats {
            recorded,
            lost: lost + overwritten,
            overwritten,
            outside_tree: 0,
        })
    }

    /// The events the snapshot's buffer overwrote (`overwrite`), summed over its traces.
    fn overwritten(&self) -> Result<Option<overwrite::Overwritten>> {
        let mut sum: Option<overwrite::Overwritten> = None;
        for trace in ctf::traces(&self.out)? {
            let streams = overwrite::streams(&self.out, std::slice::from_ref(&trace))?;
            let Some(w) =
                overwrite::overwritten(&ctf::metadata(&trace)?, &streams, &self.opened)
                    .with_context(|| format!("LTTng overwrite mode, trace {}", trace.display()))?
            else {
                continue;
            };
            let counted = ctf::count_events(&trace)?;
            if counted != w.recorded {
                bail!(
                    "{}: babeltrace2 counts {counted} events, its packets {}",
                    trace.display(),
                    w.recorded
                );
            }
            let s = sum.get_or_insert(overwrite::Overwritten {
                per_packet: w.per_packet,
                ..Default::default()
            });
            if s.per_packet != w.per_packet {
                bail!(
                    "traces with packets of different sizes ({} and {} events)",
                    s.per_packet,
                    w.per_packet
                );
            }
            s.packets += w.packets;
            s.recorded += w.recorded;
        }
        Ok(sum)
    }

    /// Packets missing from the snapshot's streams.
    fn missing_packets(&self) -> Result<u64> {
        let traces = ctf::traces(&self.out)?;
        Ok(overwrite::streams(&self.out, &traces)?
            .iter()
            .map(|s| {
                let seqs: Vec<u64> = s.packets.iter().map(|p| p.seq).collect();
                overwrite::missing(&seqs, None)
            })
            .sum())
    }
}

/// The filter of a syscall event rule. `--syscall` enables a call's entry and exit; for an
/// exit hook a filter on `ret`, a field only exit records have, keeps the exits alone (LTTng
/// evaluates a filter naming a field the record lacks to false), so LTTng records one event
/// per call as ftrace and eBPF do. `skip_tid` leaves one thread out (`$ctx.tid`).
pub fn syscall_filter(exit: bool, skip_tid: Option<u32>) -> Option<String> {
    let mut tests = Vec::new();
    if exit {
        tests.push("(ret >= 0 || ret < 0)".to_owned());
    }
    if let Some(tid) = skip_tid {
        tests.push(format!("$ctx.tid != {tid}"));
    }
    (!tests.is_empty()).then(|| tests.join(" && "))
}

/// Hooked events lost when each call makes one entry and one exit event (`2H` events in all)
/// and LTTng discarded `discarded` of them: `H = (discarded + hooked + other) / 2`.
pub fn syscall_lost(discarded: u64, hooked: u64, other: u64) -> u64 {
    (discarded + other).saturating_sub(hooked).div_ceil(2)
}

impl Attachment for LttngSession {
    fn finish(mut self: Box<Self>) -> Result<EventStats> {
        let name = self.name.clone();
        self.stats()
            .with_context(|| format!("LTTng session {name} (trace in {})", self.out.display()))
    }
}

impl Drop for LttngSession {
    fn drop(&mut self) {
        let _ = self.destroy();
    }
}

/// Waits until process `pid` is registered with the session daemon and offers `event`: an
/// LTTng-UST application registers from its constructor, or as soon as a daemon appears.
fn wait_registered(pid: u32, event: &str) -> Result<()> {
    let deadline = Instant::now() + REGISTER_TIMEOUT;
    loop {
        let xml = cli::lttng_mi(&["list", "--userspace"]).unwrap_or_default();
        match mi::app_events(&xml, pid) {
            Some(events) if events.iter().any(|e| e == event) => return Ok(()),
            Some(events) if !events.is_empty() => bail!(
                "process {pid} does not provide LTTng-UST event {event} (it offers {}): wrong workload binary or event kind?",
                events.join(", ")
            ),
            _ if !rtrace_tracer::is_alive(pid) => bail!("process {pid} exited before LTTng attached"),
            _ if Instant::now() > deadline => bail!(
                "process {pid} did not register with lttng-sessiond within {}s: is it linked with liblttng-ust (workload-lttng)?",
                REGISTER_TIMEOUT.as_secs()
            ),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Destroys the sessions named `rtrace_<tag>_<seq>` whose run is gone (see
/// [`rtrace_tracer::owner`]). Returns what was removed.
pub fn remove_stale() -> Result<Vec<String>> {
    let Ok(xml) = cli::lttng_mi(&["list"]) else {
        // No session daemon: no session can be left over.
        return Ok(Vec::new());
    };
    let mut stale = rtrace_tracer::owner::Stale::new();
    let mut removed = Vec::new();
    for name in mi::session_names(&xml) {
        // Another cleaner may destroy it meanwhile: only count what we destroyed.
        // `--no-wait`: a session whose traced process was killed mid-event may never stop
        // having data pending, and a dead run's data is not wanted: never wait for it.
        if stale.is_dead_name(&name) && cli::lttng(&["destroy", "--no-wait", &name]).is_ok() {
            removed.push(format!("LTTng session {name}"));
        }
    }
    // Dead runs' lock files go last, in `owner::remove_dead_locks`, once every backend has
    // judged their tags: a lock file removed here would make the next backend misjudge them.
    drop(stale);
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_hooks_map_to_lttng_syscalls() {
        let exit = syscall("syscalls", "sys_exit_clock_nanosleep").unwrap();
        assert_eq!(exit, ("clock_nanosleep".to_owned(), true));
        let enter = syscall("syscalls", "sys_enter_read").unwrap();
        assert_eq!(enter, ("read".to_owned(), false));
        assert!(syscall("sched", "sched_switch").is_err());
        assert!(syscall("syscalls", "clock_nanosleep").is_err());
        assert!(syscall("syscalls", "sys_exit_a;b").is_err());
    }

    #[test]
    fn exit_hooks_filter_out_entries_and_skipped_threads() {
        for (exit, skip, want) in [
            (true, None, Some("(ret >= 0 || ret < 0)")),
            (
                true,
                Some(7),
                Some("(ret >= 0 || ret < 0) && $ctx.tid != 7"),
            ),
            (false, None, None),
            (false, Some(7), Some("$ctx.tid != 7")),
        ] {
            assert_eq!(syscall_filter(exit, skip).as_deref(), want);
        }
    }

    #[test]
    fn syscall_loss_is_exact_for_paired_events() {
        // 10 calls, nothing lost.
        assert_eq!(syscall_lost(0, 10, 10), 0);
        // 10 calls = 20 events; 3 entries and 4 exits discarded.
        assert_eq!(syscall_lost(7, 6, 7), 4);
        assert_eq!(syscall_lost(7, 7, 6), 3);
    }
}
