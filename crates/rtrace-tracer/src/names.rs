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
}
