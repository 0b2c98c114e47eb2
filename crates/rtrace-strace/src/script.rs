//! Tracepoint scripts under strace: a script of `syscalls` tracepoints as strace's
//! `-e trace=` list, and strace's output (`-o FILE`, one line per call) counted in the script's
//! terms: a `syscalls:sys_enter_NAME` event for every call of NAME strace saw enter, a
//! `syscalls:sys_exit_NAME` one for every call it saw return.
//!
//! A line `NAME(...) = R` is both; `NAME(... <unfinished ...>` (another thread's call came
//! between), `NAME(... = ?` (the call never returned: `exit_group`, a process killed in it)
//! and `NAME(... <detached ...>` are an entry only; `<... NAME resumed> ...` is an exit only.
//! Signals (`--- SIG...`) and exits (`+++ ...`) are no calls.

use anyhow::{bail, Result};
use rtrace_tracer::tracepoints::Script;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// Why strace refuses a script with another category.
pub const SYSCALLS_ONLY: &str = "strace sees system calls only (ptrace): a script for strace takes the `syscalls` category only";

/// The name strace gives the system call of tracepoint `sys_enter_NAME` / `sys_exit_NAME`:
/// NAME, but for the calls the kernel defines under another name than their x86-64 table's
/// (`SYSCALL_DEFINE(newuname)` is `uname`).
pub fn strace_name(call: &str) -> &str {
    match call {
        "newuname" => "uname",
        "newstat" => "stat",
        "newlstat" => "lstat",
        "newfstat" => "fstat",
        "sendfile64" => "sendfile",
        "umount" => "umount2",
        c => c,
    }
}

/// A script as strace runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// strace's names of the script's calls, sorted, each once.
    pub calls: Vec<String>,
    /// strace's name → the script's `syscalls:sys_enter_NAME`, if it has it.
    enter: HashMap<String, String>,
    /// strace's name → the script's `syscalls:sys_exit_NAME`, if it has it.
    exit: HashMap<String, String>,
    /// Every tracepoint of the script (`category:name`), in its order.
    points: Vec<String>,
}

impl Plan {
    /// Refuses a script with another category than `syscalls`, or a tracepoint that is no
    /// call's entry or exit.
    pub fn new(script: &Script) -> Result<Plan> {
        let others: Vec<&str> = script
            .categories()
            .into_iter()
            .filter(|c| *c != "syscalls")
            .collect();
        if !others.is_empty() {
            bail!(
                "{SYSCALLS_ONLY}, not {} (script `{}`): use --tracer ftrace or perf for it",
                others.join(", "),
                script.label()
            );
        }
        let (mut enter, mut exit) = (HashMap::new(), HashMap::new());
        let mut calls = Vec::new();
        let mut points = Vec::new();
        for (c, n) in &script.points {
            let point = format!("{c}:{n}");
            let (map, call) = match (n.strip_prefix("sys_enter_"), n.strip_prefix("sys_exit_")) {
                (Some(call), _) => (&mut enter, call),
                (_, Some(call)) => (&mut exit, call),
                _ => bail!("{SYSCALLS_ONLY}: tracepoint {point} is no system call's entry or exit"),
            };
            let name = strace_name(call).to_owned();
            map.insert(name.clone(), point.clone());
            calls.push(name);
            points.push(point);
        }
        calls.sort();
        calls.dedup();
        Ok(Plan {
            calls,
            enter,
            exit,
            points,
        })
    }

    /// strace's `-e trace=` value: each call with `?` before it, so that a call this strace
    /// does not know (one newer than it) is no error; strace then does not see it.
    pub fn filter(&self) -> String {
        let calls: Vec<String> = self.calls.iter().map(|c| format!("?{c}")).collect();
        format!("trace={}", calls.join(","))
    }

    /// Events of each tracepoint in strace's output `file`, in the script's order.
    pub fn count(&self, file: &Path) -> Result<Vec<(String, u64)>> {
        let f = std::fs::File::open(file)
            .map_err(|e| anyhow::anyhow!("cannot read strace's output {}: {e}", file.display()))?;
        let mut by_point: HashMap<&str, u64> = HashMap::new();
        for line in std::io::BufReader::new(f).lines() {
            let line = line.map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
            let (call, entered, returned) = match event(&line) {
                Some(e) => e,
                None => continue,
            };
            if entered {
                if let Some(p) = self.enter.get(call) {
                    *by_point.entry(p).or_default() += 1;
                }
            }
            if returned {
                if let Some(p) = self.exit.get(call) {
                    *by_point.entry(p).or_default() += 1;
                }
            }
        }
        Ok(self
            .points
            .iter()
            .map(|p| (p.clone(), by_point.get(p.as_str()).copied().unwrap_or(0)))
            .collect())
    }
}

/// The call of one output line, whether the line is its entry, and whether its return.
fn event(line: &str) -> Option<(&str, bool, bool)> {
    let l = crate::lines::without_tid(line);
    if let Some(rest) = l.strip_prefix("<... ") {
        let call = rest.split_once(" resumed>")?.0;
        let returned = !l.ends_with("= ?") && !l.ends_with("<detached ...>");
        return Some((call, false, returned));
    }
    let (call, _) = l.split_once('(')?;
    if call.is_empty() || !call.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let returned =
        !(l.ends_with("<unfinished ...>") || l.ends_with("= ?") || l.ends_with("<detached ...>"));
    Some((call, true, returned))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(points: &[(&str, &str)]) -> Script {
        Script {
            patterns: vec!["test".into()],
            points: points
                .iter()
                .map(|(c, n)| (c.to_string(), n.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_script_becomes_stracess_call_list() {
        let s = script(&[
            ("syscalls", "sys_enter_newuname"),
            ("syscalls", "sys_enter_read"),
            ("syscalls", "sys_exit_read"),
        ]);
        let p = Plan::new(&s).unwrap();
        assert_eq!(p.calls, ["read", "uname"]);
        assert_eq!(p.filter(), "trace=?read,?uname");
        let e = Plan::new(&script(&[
            ("syscalls", "sys_enter_read"),
            ("sched", "sched_switch"),
        ]))
        .unwrap_err();
        assert!(
            e.to_string().contains("strace sees system calls only"),
            "{e}"
        );
        assert!(e.to_string().contains("not sched"), "{e}");
    }

    #[test]
    fn lines_count_as_entries_and_exits() {
        let s = script(&[
            ("syscalls", "sys_enter_exit_group"),
            ("syscalls", "sys_enter_read"),
            ("syscalls", "sys_exit_read"),
            ("syscalls", "sys_exit_write"),
        ]);
        let p = Plan::new(&s).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("out");
        let text = [
            r#"123 read(3, "\0", 1)                    = 1"#,
            r#"[pid 124] read(3,  <unfinished ...>"#,
            r#"123 write(1, "read(", 5) = 5"#,
            r#"124 <... read resumed>"\0", 1)          = 1"#,
            r#"125 read(0,  <detached ...>"#,
            r#"123 readv(0, [{iov_base="g", iov_len=1}], 1) = 1"#,
            "123 --- SIGCHLD {si_signo=SIGCHLD} ---",
            "123 exit_group(0)                     = ?",
            "123 +++ exited with 0 +++",
        ]
        .join("\n");
        std::fs::write(&f, text).unwrap();
        let counts = p.count(&f).unwrap();
        assert_eq!(
            counts,
            [
                ("syscalls:sys_enter_exit_group".to_owned(), 1),
                ("syscalls:sys_enter_read".to_owned(), 3),
                ("syscalls:sys_exit_read".to_owned(), 2),
                ("syscalls:sys_exit_write".to_owned(), 1),
            ]
        );
    }
}
