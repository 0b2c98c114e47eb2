//! Names that end up in tracefs syntax, LTTng session names or file names.

/// A name is rejected before it reaches tracefs or a command line.
#[derive(Debug, thiserror::Error)]
#[error("invalid {what} `{name}`: use letters, digits and `_` only, starting with a letter or `_` (at most 64 characters)")]
pub struct NameError {
    pub what: &'static str,
    pub name: String,
}

/// Accepts C identifiers of at most 64 characters: safe in `p:GROUP/EVENT`, in filters and in
/// LTTng/bpftrace syntax.
pub fn validate_name(what: &'static str, name: &str) -> Result<(), NameError> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64;
    if ok {
        Ok(())
    } else {
        Err(NameError {
            what,
            name: name.to_owned(),
        })
    }
}

/// Prefix of every kernel object name this tool creates; followed by the owner pid so that a
/// later run can tell whether the owner is still alive.
pub const PREFIX: &str = "rtrace_";

/// A run-unique tag `rtrace_<pid>_<seq>`: `seq` counts up within this process.
pub fn run_tag() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SEQ: AtomicU32 = AtomicU32::new(0);
    format!(
        "{PREFIX}{}_{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// The owner pid encoded in a name made by [`run_tag`], if it is one.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    rest.split('_').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_identifiers() {
        assert!(validate_name("probe", "event").is_ok());
        assert!(validate_name("probe", "_x9").is_ok());
    }

    #[test]
    fn rejects_tracefs_syntax() {
        for bad in [
            "",
            "9a",
            "a/b",
            "a b",
            "a:b",
            "a\nb",
            "-:x",
            &"a".repeat(65),
        ] {
            assert!(validate_name("probe", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tags_are_unique_and_carry_the_pid() {
        let a = run_tag();
        let b = run_tag();
        assert_ne!(a, b);
        assert_eq!(owner_pid(&a), Some(std::process::id()));
        assert_eq!(owner_pid("other_1_2"), None);
        assert_eq!(owner_pid("rtrace_x_2"), None);
    }
}
