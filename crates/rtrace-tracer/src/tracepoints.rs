//! Tracing scripts of some breadth: kernel tracepoints chosen by `CATEGORY:GLOB` patterns
//! (`syscalls:sys_enter_*`, `syscalls:*`, `sched:*`), expanded once against the kernel's event
//! list so that every backend traces the same tracepoints and the run can say how many.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// One script: its patterns as written, and the tracepoints they matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub patterns: Vec<String>,
    /// (category, name), sorted, each once.
    pub points: Vec<(String, String)>,
}

impl Script {
    /// The patterns joined by `,`: `syscalls:*,sched:*`.
    pub fn label(&self) -> String {
        self.patterns.join(",")
    }

    /// The categories its tracepoints are in, sorted, each once.
    pub fn categories(&self) -> Vec<&str> {
        let mut c: Vec<&str> = self.points.iter().map(|(c, _)| c.as_str()).collect();
        c.dedup();
        c
    }
}

/// Whether `name` matches `glob`, where `*` stands for any run of characters.
pub fn matches(glob: &str, name: &str) -> bool {
    let mut parts = glob.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.len() >= part.len() && rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Expands `patterns` against `events` (tracefs' `events/` directory). A malformed pattern, an
/// unknown category or a pattern that matches nothing is an error naming the fix.
pub fn expand(events: &Path, patterns: &[String]) -> Result<Script> {
    let mut points = Vec::new();
    for p in patterns {
        let Some((category, glob)) = p.split_once(':') else {
            bail!("tracepoint pattern `{p}` is not CATEGORY:NAME (e.g. syscalls:sys_enter_read, sched:*): see `ls {}`", events.display());
        };
        crate::validate_name("tracepoint category", category).map_err(|_| {
            anyhow::anyhow!(
                "tracepoint category `{category}` of `{p}` is not a name: see `ls {}`",
                events.display()
            )
        })?;
        if glob.is_empty()
            || !glob
                .chars()
                .all(|c| c == '*' || c == '_' || c.is_ascii_alphanumeric())
        {
            bail!("tracepoint name `{glob}` of `{p}` is not a name or a `*` glob");
        }
        let dir = events.join(category);
        let entries = std::fs::read_dir(&dir).with_context(|| {
            format!(
                "no tracepoint category `{category}` on this kernel (pattern `{p}`): see `ls {}`",
                events.display()
            )
        })?;
        let before = points.len();
        for e in entries {
            let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
            if !e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if matches(glob, &name) {
                points.push((category.to_owned(), name));
            }
        }
        if points.len() == before {
            bail!(
                "no tracepoint matches `{p}` on this kernel: see `ls {}`",
                dir.display()
            );
        }
    }
    points.sort();
    points.dedup();
    Ok(Script {
        patterns: patterns.to_vec(),
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_the_kernel_s() {
        assert!(matches("sys_enter_*", "sys_enter_read"));
        assert!(!matches("sys_enter_*", "sys_exit_read"));
        assert!(matches("*", "sched_switch"));
        assert!(matches("sys_enter_read", "sys_enter_read"));
        assert!(!matches("sys_enter_read", "sys_enter_readv"));
        assert!(matches("*_read", "sys_exit_read"));
        assert!(matches("sys_*_read*", "sys_exit_readv"));
        assert!(!matches("sys_*_read", "sys_exit_readv"));
    }

    #[test]
    fn expands_against_a_directory_and_refuses_what_matches_nothing() {
        let d = tempfile::tempdir().unwrap();
        for n in ["sys_enter_read", "sys_exit_read", "sys_enter_write"] {
            std::fs::create_dir_all(d.path().join("syscalls").join(n)).unwrap();
        }
        std::fs::write(d.path().join("syscalls/enable"), "0").unwrap();
        let s = expand(
            d.path(),
            &["syscalls:sys_enter_*".into(), "syscalls:*_read".into()],
        )
        .unwrap();
        assert_eq!(s.points.len(), 3);
        assert_eq!(s.categories(), vec!["syscalls"]);
        assert_eq!(s.label(), "syscalls:sys_enter_*,syscalls:*_read");
        assert!(expand(d.path(), &["syscalls:nope_*".into()]).is_err());
        assert!(expand(d.path(), &["sched:*".into()]).is_err());
        assert!(expand(d.path(), &["syscalls".into()]).is_err());
        assert!(expand(d.path(), &["syscalls:a/b".into()]).is_err());
    }
}
