//! State left by runs that died without cleaning up (SIGKILL): instances and uprobe groups named
//! `rtrace_<pid>_<seq>` whose pid is gone. Only those are touched.

use crate::tracefs::Tracefs;
use anyhow::Result;
use rtrace_tracer::{is_alive, owner_pid};

fn dead(name: &str) -> bool {
    owner_pid(name).is_some_and(|pid| pid != std::process::id() && !is_alive(pid))
}

/// Removes dead runs' instances first (disabling their events), then their uprobe events.
/// Returns a description of each removed object.
pub fn remove_dead(fs: &Tracefs) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    if let Ok(dir) = std::fs::read_dir(fs.path("instances")) {
        for e in dir.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if dead(&name) && std::fs::remove_dir(e.path()).is_ok() {
                removed.push(format!("instance {name}"));
            }
        }
    }
    for line in fs.read("uprobe_events")?.lines() {
        // `p:GROUP/EVENT /path:0x...` or `r:...`
        let Some(spec) = line.split_whitespace().next() else {
            continue;
        };
        let Some((_, ev)) = spec.split_once(':') else {
            continue;
        };
        let Some((group, _)) = ev.split_once('/') else {
            continue;
        };
        if dead(group) {
            fs.append_event("uprobe_events", &format!("-:{ev}"))?;
            removed.push(format!("uprobe {ev}"));
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_of_dead_owners_count() {
        assert!(!dead(&format!("rtrace_{}_0", std::process::id())));
        assert!(!dead("rtrace_1_0"), "pid 1 is alive");
        assert!(dead("rtrace_4194303_0"), "pid above pid_max is dead");
        assert!(!dead("someone_else"));
    }
}
