//! State left by runs that died without cleaning up (SIGKILL): instances and uprobe groups named
//! `rtrace_<tag>_<seq>` whose run is gone (its lock is free or absent, see
//! [`rtrace_tracer::owner`]). Only those are touched.

use crate::tracefs::Tracefs;
use anyhow::Result;
use rtrace_tracer::owner::Stale;
use std::time::{Duration, Instant};

/// How long one pass waits, in all, for dead runs' uprobe events that are still in use: a
/// SIGKILLed run's perf dies with it, and the kernel releases its events a moment later.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(10);

/// Removes dead runs' instances first (disabling their events), then their uprobe events.
/// Returns a description of each removed object.
pub fn remove_dead(fs: &Tracefs) -> Result<Vec<String>> {
    let mut stale = Stale::new();
    let mut removed = Vec::new();
    if let Ok(dir) = std::fs::read_dir(fs.path("instances")) {
        for e in dir.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            // Another cleaner may have removed it meanwhile: only count what we removed.
            if stale.is_dead_name(&name) && std::fs::remove_dir(e.path()).is_ok() {
                removed.push(format!("instance {name}"));
            }
        }
    }
    let deadline = Instant::now() + RELEASE_TIMEOUT;
    for line in fs.read("uprobe_events")?.lines() {
        // `p:GROUP/EVENT /path:0x...` or `r:...`
        let Some(ev) = event_of(line) else {
            continue;
        };
        let group = ev.split_once('/').map_or(ev, |(g, _)| g);
        if !stale.is_dead_name(group) {
            continue;
        }
        // It may be gone already (another cleaner). Busy while the kernel still releases the
        // perf events of a killed run's perf (each unregistration waits for a grace period).
        loop {
            if fs.append_event("uprobe_events", &format!("-:{ev}")).is_ok() {
                removed.push(format!("uprobe {ev}"));
                break;
            }
            let listed = fs
                .read("uprobe_events")
                .is_ok_and(|t| t.lines().any(|l| event_of(l) == Some(ev)));
            if !listed || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // Dead runs' lock files go last, in `owner::remove_dead_locks`, once every backend has
    // judged their tags: a lock file removed here would make the next backend misjudge them.
    drop(stale);
    Ok(removed)
}

/// `GROUP/EVENT` of a `uprobe_events` line.
fn event_of(line: &str) -> Option<&str> {
    let spec = line.split_whitespace().next()?;
    let (_, ev) = spec.split_once(':')?;
    ev.contains('/').then_some(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_of_uprobe_lines() {
        assert_eq!(
            event_of("p:rtrace_ab_0/event /bin/x:0x10 arg1=%di:s64"),
            Some("rtrace_ab_0/event")
        );
        assert_eq!(event_of("r:g/e /bin/x:0x10"), Some("g/e"));
        assert_eq!(event_of(""), None);
        assert_eq!(event_of("garbage"), None);
    }
}
