//! Counting the `read` calls in strace's output (`-o FILE`): one line per call, or, when another
//! thread's call comes between its entry and exit, a `read(... <unfinished ...>` line and later
//! a `<... read resumed>` one. With `-f`, a line may start with the thread's id.

use anyhow::{Context, Result};
use rtrace_tracer::features::ReadHook;
use std::io::BufRead;
use std::path::Path;

/// What the accounting run of `hook` counts, as the report says it.
pub fn what(hook: ReadHook) -> &'static str {
    match hook {
        ReadHook::Exit => "completed `read(` calls",
        _ => "`read(` calls (entries)",
    }
}

/// The `read` calls of strace's output `file` that `hook` sees: every entry (`sys_enter_read`)
/// or every completed call (`sys_exit_read`).
pub fn count(file: &Path, hook: ReadHook) -> Result<u64> {
    let f = std::fs::File::open(file)
        .with_context(|| format!("cannot read strace's output {}", file.display()))?;
    let mut n = 0;
    for line in std::io::BufReader::new(f).lines() {
        let line = line.with_context(|| format!("cannot read {}", file.display()))?;
        n += u64::from(counts(&line, hook));
    }
    Ok(n)
}

/// Whether one line of strace's output is a `read` call's entry or exit, as `hook` asks.
fn counts(line: &str, hook: ReadHook) -> bool {
    let call = without_tid(line);
    let unfinished = call.ends_with("<unfinished ...>");
    if call.starts_with("read(") {
        hook != ReadHook::Exit || !unfinished
    } else {
        hook == ReadHook::Exit && call.starts_with("<... read resumed>")
    }
}

/// The line after the thread id `-f` puts before it (`1234 read(...)` or `[pid 1234] read(...)`).
pub(crate) fn without_tid(line: &str) -> &str {
    let rest = line.strip_prefix("[pid").unwrap_or(line).trim_start();
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return line;
    }
    let rest = &rest[digits..];
    rest.strip_prefix(']').unwrap_or(rest).trim_start()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReadHook::{Enter, Exit};

    #[test]
    fn read_lines_count_by_entry_or_exit() {
        let lines = [
            r#"123 read(3, "\0", 1)                    = 1"#,
            r#"read(3, "\0", 1) = 1"#,
            r#"[pid 124] read(3,  <unfinished ...>"#,
            r#"123 <... read resumed>"\0", 1)          = 1"#,
            r#"123 readv(0, [{iov_base="g", iov_len=1}], 1) = 1"#,
            r#"123 pread64(3, "", 1, 0) = 0"#,
            r#"123 write(1, "read(", 5) = 5"#,
            "123 +++ exited with 0 +++",
        ];
        let n = |h| lines.iter().filter(|l| counts(l, h)).count();
        assert_eq!(n(Enter), 3);
        assert_eq!(n(Exit), 3);
    }

    #[test]
    fn a_file_is_counted_line_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("out");
        std::fs::write(&f, "1 read(3, \"\\0\", 1) = 1\n1 read(3, \"\\0\", 1) = 1\n").unwrap();
        assert_eq!(count(&f, Exit).unwrap(), 2);
        assert!(count(&dir.path().join("none"), Exit).is_err());
    }
}
