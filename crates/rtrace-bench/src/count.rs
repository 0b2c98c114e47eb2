//! `rtrace-bench count`: run any command with one USDT probe, uprobe or uretprobe traced; report
//! recorded/lost. Every process of the command's tree counts, however started (fork, exec,
//! setsid, another user through runuser/su/sudo), and only those (see `Target::tree`); what the
//! command leaves running is ended when it exits (`tree.rs`). Exits with the command's status
//! (128 + signal when it was killed), also when nothing was counted: a count of 0 is a warning
//! on stderr naming the causes checked (binary not mapped, semaphore not raised, hits outside
//! the tree), and `--expect N` makes a mismatch an error (exit 1). SIGINT, SIGTERM and SIGHUP
//! end the command's tree, remove the tracer's state and exit 128 + the signal.

use crate::options::{OptionsError, TracerOptions};
use crate::{output, tracers};
use anyhow::{bail, Context, Result};
use rtrace_measure::spawn::interrupted;
use rtrace_measure::WorkloadError;
use rtrace_tracer::{Hook, TracerKind};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// `count`'s options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    pub tracer: TracerKind,
    pub probe: CountProbe,
    pub binary: Option<PathBuf>,
    pub tracer_opts: TracerOptions,
    /// `--expect N`: the ground truth, when the user knows it.
    pub expect: Option<u64>,
    pub json: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub command: Vec<String>,
}

/// What `count` traces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountProbe {
    /// A USDT probe `PROVIDER:NAME`.
    Usdt { provider: String, name: String },
    /// The entry (`uprobe:NAME`) or return (`uretprobe:NAME`, `ret`) of a function.
    Function { name: String, ret: bool },
}

impl std::fmt::Display for CountProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CountProbe::Usdt { provider, name } => write!(f, "{provider}:{name}"),
            CountProbe::Function { name, ret: false } => write!(f, "uprobe:{name}"),
            CountProbe::Function { name, ret: true } => write!(f, "uretprobe:{name}"),
        }
    }
}

/// `uprobe:FUNCTION`, `uretprobe:FUNCTION` (these prefixes win over a USDT provider of the same
/// name), else a USDT `PROVIDER:NAME`; all names C identifiers.
pub fn parse_probe(s: &str) -> Result<CountProbe, OptionsError> {
    let bad = || OptionsError::ProbeSyntax(s.to_owned());
    let (kind, name) = s.split_once(':').ok_or_else(bad)?;
    let ret = match kind {
        "uprobe" => false,
        "uretprobe" => true,
        _ => {
            rtrace_tracer::validate_name("provider", kind).map_err(|_| bad())?;
            rtrace_tracer::validate_name("probe", name).map_err(|_| bad())?;
            return Ok(CountProbe::Usdt {
                provider: kind.to_owned(),
                name: name.to_owned(),
            });
        }
    };
    rtrace_tracer::validate_name("function", name).map_err(|_| bad())?;
    Ok(CountProbe::Function {
        name: name.to_owned(),
        ret,
    })
}

/// What `count` reports.
#[derive(Debug, Serialize)]
struct CountResult {
    tracer: String,
    probe: String,
    binary: String,
    /// Probe sites traced (1 for a function).
    sites: usize,
    recorded: u64,
    lost: u64,
    /// Events the tracer saw: recorded + lost. Not a ground truth: the tracer may miss hits.
    events: u64,
    /// `--expect`: the hits the user knows the command makes; `events` must equal it.
    expected: Option<u64>,
    /// Exit status of the command (`None` if killed by a signal).
    exit_code: Option<i32>,
    /// The trace buffer the tracer got (`--buffer-size-kb`, as its backend made it).
    buffer: String,
    /// Backend options as given (`record`, `bpf_modes`, ...).
    tracer_options: serde_json::Value,
    /// What the command's process tree showed while it ran.
    tree: TreeSeen,
}

/// The command's process tree as `count` saw it: every process it started (fork, exec, setsid,
/// another user), sampled every 50 ms (a process shorter than that may be missed).
#[derive(Debug, Serialize, Default)]
struct TreeSeen {
    /// Processes seen.
    processes: usize,
    /// Of those, the ones that had the probed binary mapped.
    mapped_binary: usize,
    /// For a USDT probe with a semaphore: in how many of those it was read, and seen raised.
    semaphore: Option<SemaphoreSeen>,
    /// Processes still running when the command exited, which `count` ended (SIGTERM, then
    /// SIGKILL after 2 s).
    left_running: usize,
    /// Hits in processes outside the tree, left out (counted by the eBPF tracer only).
    outside_tree: u64,
}

/// A USDT semaphore in the tree's processes that mapped the binary (its page mapped: during an
/// exec it may not be yet).
#[derive(Debug, Serialize, Default, Clone)]
struct SemaphoreSeen {
    read: usize,
    raised: usize,
    /// Processes where it was read 0 twice and never seen raised while the probe was attached:
    /// their hits were skipped by the program itself, so no tracer could count them.
    unraised: Vec<u32>,
}

/// How long what the command left running gets to exit after SIGTERM.
const END_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// `cmd` as found on PATH (or as given when it contains a `/`).
pub fn resolve(cmd: &str) -> Result<PathBuf> {
    if cmd.contains('/') {
        return Ok(PathBuf::from(cmd));
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
        .with_context(|| format!("command `{cmd}` not found on PATH: give its full path"))
}

pub fn run(o: Options) -> Result<i32> {
    let cmd_path = resolve(&o.command[0])?;
    let given = o.binary.as_deref().unwrap_or(&cmd_path);
    let binary = std::fs::canonicalize(given)
        .with_context(|| format!("cannot find {}: check the path", given.display()))?;
    let (hook, sites) = match &o.probe {
        CountProbe::Usdt { provider, name } => {
            let sites = rtrace_sdt::find(&binary, provider, name)?;
            let n = sites.len();
            let hook = Hook::Usdt {
                binary: binary.clone(),
                sites,
            };
            (hook, n)
        }
        CountProbe::Function { name, ret } => (Hook::uprobe(&binary, name, *ret)?, 1),
    };
    let Some(tracer) = tracers::build(o.tracer, &o.tracer_opts)? else {
        bail!("`count` needs a tracer: pass --tracer ftrace|ebpf|bpftrace");
    };
    tracer.check(&hook)?;
    // `count` measures nothing: no CPU is claimed, and its consumers take every usable CPU but
    // the last.
    let session =
        crate::runner::start(None, o.out.as_deref().map(|d| (d, true)), o.json.as_deref())?;
    let usable = crate::cpus::usable();
    let consumers = match usable.split_last() {
        Some((_, rest)) if !rest.is_empty() => rest.to_vec(),
        _ => usable.clone(),
    };
    let semaphore = match &hook {
        Hook::Usdt { sites, .. } => sites.iter().find_map(|p| p.semaphore_offset),
        _ => None,
    };
    // Every process the command starts stays ours to end (see `tree`).
    crate::tree::become_subreaper()?;
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // Held until the tracer is attached (see [`crate::hold::held_command`]).
    let mut child = crate::hold::held_command(&o.command, &[], &read_end, None)?
        .spawn()
        .context("cannot start the command")?;
    drop(read_end);
    // A signal now kills the command, and we unwind through the cleanup below.
    let watched = rtrace_measure::spawn::watch(child.id());
    let target = o
        .tracer_opts
        .target(hook, Some(child.id()), &session.out, &consumers)
        .following_tree();
    let attachment = match tracer.attach(&target) {
        Ok(a) => a,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(if interrupted() {
                WorkloadError::Interrupted.into()
            } else {
                e
            });
        }
    };
    // The command is still held: our other children are the tracer's.
    let tree = crate::tree::Tree::of(child.id());
    let watch = crate::tree::Watch::start(tree.clone(), &binary, semaphore);
    let mut go = std::fs::File::from(write_end);
    let started = go.write_all(b"g");
    drop(go);
    let status = child.wait()?;
    // What the command left running (a daemon, a server it started) ends with it.
    let left_running = tree.end(END_GRACE);
    let seen = watch.stop();
    drop(watched);
    if interrupted() {
        // The tracer comes off (dropping the attachment removes its state); main exits
        // 128 + the signal.
        drop(attachment);
        return Err(WorkloadError::Interrupted.into());
    }
    started.context("the command died before it started")?;
    let stats = attachment.finish()?;
    let r = CountResult {
        tracer: o.tracer.to_string(),
        probe: o.probe.to_string(),
        binary: binary.display().to_string(),
        sites,
        recorded: stats.recorded,
        lost: stats.lost,
        events: stats.recorded + stats.lost,
        expected: o.expect,
        exit_code: status.code(),
        buffer: tracers::buffers(&[o.tracer], &o.tracer_opts)?
            .into_values()
            .collect(),
        tracer_options: o.tracer_opts.json(),
        tree: TreeSeen {
            processes: seen.processes.len(),
            mapped_binary: seen.mapped.len(),
            semaphore: semaphore.map(|_| SemaphoreSeen {
                read: seen.semaphore_read.len(),
                raised: seen.semaphore_raised.len(),
                unraised: seen.semaphore_lowered.iter().copied().collect(),
            }),
            left_running,
            outside_tree: stats.outside_tree,
        },
    };
    println!("{}, command {status}", r.line());
    if let Some(w) = r.never_fired() {
        eprintln!("warning: {w}");
    }
    if let Some(j) = &o.json {
        output::write_atomic(j, &serde_json::to_vec_pretty(&r)?)?;
    }
    if let Some(e) = r.unraised() {
        bail!(e);
    }
    if let Some(want) = r.expected {
        if r.events != want {
            bail!(
                "{} saw {} events of {} at {}, --expect says {want}: the tracer missed or invented events",
                r.tracer,
                r.events,
                r.probe,
                r.binary
            );
        }
    }
    Ok(exit_code(status))
}

impl CountResult {
    /// Why the count is short, when a process of the tree mapped the binary and its semaphore
    /// stayed 0 while the probe was attached: the program skipped its probe there, so the count
    /// misses whatever that process would have fired.
    fn unraised(&self) -> Option<String> {
        let s = self.tree.semaphore.as_ref()?;
        if s.unraised.is_empty() {
            return None;
        }
        let pids: Vec<String> = s.unraised.iter().map(u32::to_string).collect();
        Some(format!(
            "the USDT semaphore of {} stayed 0 while the probe was attached in {} process(es) of the tree that mapped {} (pid {}): the program skips the probe where it is 0, so {} events is short by whatever those processes would have fired; the tracer did not raise it there, or the program lowered it itself",
            self.probe,
            s.unraised.len(),
            self.binary,
            pids.join(", "),
            self.events
        ))
    }

    /// With no event: the warning that says so and the causes `count` could check.
    fn never_fired(&self) -> Option<String> {
        if self.events > 0 {
            return None;
        }
        let t = &self.tree;
        let mut causes = Vec::new();
        if t.processes == 0 {
            causes.push(
                "the command's processes ended before they could be sampled, so no cause was checked"
                    .to_owned(),
            );
        } else if t.mapped_binary == 0 {
            causes.push(format!(
                "none of the {} process(es) of the tree seen mapped {} (is it the file they run or load? pass it with --binary)",
                t.processes, self.binary
            ));
        }
        match &t.semaphore {
            Some(s) if s.raised < s.read => causes.push(format!(
                "its semaphore was seen raised in {} of the {} process(es) where it was read (the probe is skipped where it is 0)",
                s.raised, s.read
            )),
            _ => {}
        }
        if t.outside_tree > 0 {
            causes.push(format!(
                "{} hit(s) in processes outside the command's tree were left out (a server started before `count`, or by another parent)",
                t.outside_tree
            ));
        }
        if causes.is_empty() {
            let semaphore = match &t.semaphore {
                Some(s) => format!(
                    ", its semaphore seen raised in {} of the {} where it was read",
                    s.raised, s.read
                ),
                None => String::new(),
            };
            causes.push(format!(
                "the {} process(es) of the tree that mapped the binary never reached the probe{semaphore}",
                t.mapped_binary
            ));
        }
        Some(format!(
            "{} never fired in the command's processes ({}): {}; processes sampled every 50 ms",
            self.probe,
            self.binary,
            causes.join("; ")
        ))
    }

    /// `ftrace rtest:hit: recorded 10 lost 0 (events 10, expected 10) in /bin/x [1 site(s)]`.
    fn line(&self) -> String {
        let expected = self
            .expected
            .map_or(String::new(), |n| format!(", expected {n}"));
        format!(
            "{} {}: recorded {} lost {} (events {}{expected}) in {} [{} site(s)]",
            self.tracer, self.probe, self.recorded, self.lost, self.events, self.binary, self.sites
        )
    }
}

/// The command's exit status as a shell reports it: its code, or 128 + the signal that killed it.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_syntax() {
        let name = "getpid".into();
        let getpid = CountProbe::Function { name, ret: false };
        assert_eq!(parse_probe("uprobe:getpid").unwrap(), getpid);
        let r = parse_probe("uretprobe:rtrace_marker_hit").unwrap();
        assert_eq!(r.to_string(), "uretprobe:rtrace_marker_hit");
        let (provider, name) = ("rtest".into(), "hit".into());
        let usdt = CountProbe::Usdt { provider, name };
        assert_eq!(parse_probe("rtest:hit").unwrap(), usdt);
        for bad in [
            "uprobe:",
            "uprobe:a b",
            "uretprobe:x/y",
            "getpid",
            "rtrace",
            "a:b/c",
            ":x",
            "a:",
            "a b:c",
        ] {
            let e = parse_probe(bad).unwrap_err().to_string();
            assert!(e.contains("uprobe:FUNCTION"), "{bad}: {e}");
        }
    }

    #[test]
    fn events_are_not_called_hits_and_the_expectation_is_shown() {
        let mut r = CountResult {
            tracer: "ebpf".into(),
            probe: "libstdcxx:throw".into(),
            binary: "/lib/libstdc++.so.6".into(),
            sites: 1,
            recorded: 4990,
            lost: 10,
            events: 5000,
            expected: None,
            exit_code: Some(0),
            buffer: String::new(),
            tracer_options: serde_json::Value::Null,
            tree: TreeSeen::default(),
        };
        assert_eq!(
            r.line(),
            "ebpf libstdcxx:throw: recorded 4990 lost 10 (events 5000) in /lib/libstdc++.so.6 [1 site(s)]"
        );
        r.expected = Some(5000);
        assert!(r.line().contains("(events 5000, expected 5000)"));
    }

    #[test]
    fn a_count_of_zero_warns_with_each_cause_checked() {
        let mut r = CountResult {
            tracer: "ebpf".into(),
            probe: "postgresql:query__start".into(),
            binary: "/usr/lib/postgresql/15/bin/postgres".into(),
            sites: 1,
            recorded: 0,
            lost: 0,
            events: 0,
            expected: None,
            exit_code: Some(0),
            buffer: String::new(),
            tracer_options: serde_json::Value::Null,
            tree: TreeSeen::default(),
        };
        let w = |r: &CountResult| r.never_fired().expect("a warning");
        assert!(
            w(&r).contains("ended before they could be sampled"),
            "{}",
            w(&r)
        );
        r.tree.processes = 3;
        assert!(w(&r).contains(
            "none of the 3 process(es) of the tree seen mapped /usr/lib/postgresql/15/bin/postgres"
        ));
        r.tree.mapped_binary = 2;
        r.tree.semaphore = Some(SemaphoreSeen {
            read: 2,
            raised: 1,
            unraised: vec![],
        });
        r.tree.outside_tree = 40;
        let both = w(&r);
        assert!(
            both.contains("semaphore was seen raised in 1 of the 2"),
            "{both}"
        );
        assert!(
            both.contains("40 hit(s) in processes outside the command's tree"),
            "{both}"
        );
        assert!(both.starts_with("postgresql:query__start never fired in the command's processes (/usr/lib/postgresql/15/bin/postgres): "));
        r.tree.semaphore = Some(SemaphoreSeen {
            read: 2,
            raised: 2,
            unraised: vec![],
        });
        r.tree.outside_tree = 0;
        assert!(w(&r).contains("the 2 process(es) of the tree that mapped the binary never reached the probe, its semaphore seen raised in 2 of the 2"));
        assert!(r.unraised().is_none());
        r.events = 1;
        assert!(r.never_fired().is_none());
        // A process whose semaphore stayed 0: the count is short, whatever it says.
        r.tree.semaphore = Some(SemaphoreSeen {
            read: 3,
            raised: 2,
            unraised: vec![4242],
        });
        let e = r.unraised().expect("an error");
        assert!(
            e.contains("stayed 0 while the probe was attached in 1 process(es)")
                && e.contains("(pid 4242)")
                && e.contains("so 1 events is short"),
            "{e}"
        );
    }

    #[test]
    fn exit_codes_are_the_shell_s() {
        for (script, code) in [("exit 0", 0), ("exit 3", 3), ("kill -TERM $$", 143)] {
            let status = std::process::Command::new("sh")
                .args(["-c", script])
                .status();
            assert_eq!(exit_code(status.unwrap()), code, "{script}");
        }
    }
}
