//! libbpf's own messages: kept in memory (never printed during a measurement) so that an error
//! can quote the relevant one. `RTRACE_LIBBPF_LOG=1` also prints them to stderr (debugging).

use libbpf_rs::PrintLevel;
use std::collections::VecDeque;
use std::sync::{Mutex, Once};

static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
const KEEP: usize = 256;

/// Routes libbpf's warnings into memory instead of stderr. Idempotent.
pub fn capture() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Warn, keep)));
    });
}

fn keep(_level: PrintLevel, msg: String) {
    if std::env::var_os("RTRACE_LIBBPF_LOG").is_some_and(|v| v == "1") {
        eprint!("{msg}");
    }
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    for line in msg.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if recent.len() == KEEP {
            recent.pop_front();
        }
        recent.push_back(line.to_owned());
    }
}

/// Forgets what libbpf said so far (call before an operation whose errors you want to explain).
pub fn clear() {
    RECENT.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// The last libbpf message mentioning one of `words` (or the last one at all if `words` is
/// empty), as a single line.
pub fn last_matching(words: &[&str]) -> Option<String> {
    let recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    recent
        .iter()
        .rev()
        .find(|l| words.is_empty() || words.iter().any(|w| l.contains(w)))
        .cloned()
}

/// The verifier's reason if libbpf printed a program load log: the last line before
/// `-- END PROG LOAD LOG --` that is not a statistics line.
pub fn verifier_error() -> Option<String> {
    let recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    let end = recent
        .iter()
        .rposition(|l| l.contains("-- END PROG LOAD LOG --"))?;
    recent
        .iter()
        .take(end)
        .rev()
        .take_while(|l| !l.contains("-- BEGIN PROG LOAD LOG --"))
        .find(|l| !l.starts_with("processed ") && !l.starts_with("verification time"))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_verifier_reason() {
        clear();
        keep(
            PrintLevel::Warn,
            "libbpf: prog 'p': -- BEGIN PROG LOAD LOG --\n0: (79) r8 = *(u64 *)(r6 +0)\n\
             dereference of modified ctx ptr R6 off=8 disallowed\n\
             processed 44 insns (limit 1000000)\n-- END PROG LOAD LOG --\n"
                .into(),
        );
        keep(
            PrintLevel::Warn,
            "libbpf: prog 'p': failed to load: -EACCES\n".into(),
        );
        assert_eq!(
            verifier_error().as_deref(),
            Some("dereference of modified ctx ptr R6 off=8 disallowed")
        );
        clear();
        assert_eq!(verifier_error(), None);
    }
}
