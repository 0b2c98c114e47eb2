//! The listings of `rtrace-bench probes`.

use crate::doc::{columns, Table};
use crate::terminal::table::plain;
use rtrace_sdt::{Function, RawProbe};

/// USDT probe sites with offsets, semaphores and argument specs.
pub fn table(probes: &[RawProbe]) -> String {
    if probes.is_empty() {
        return "no USDT probes (.note.stapsdt is absent or empty)\n".into();
    }
    let mut t = Table::new(
        "probes",
        2,
        columns(&[
            "provider",
            "name",
            "address",
            "file offset",
            "semaphore",
            "args",
        ]),
    );
    for p in probes {
        t.text_row(vec![
            printable(&p.provider),
            printable(&p.name),
            format!("0x{:x}", p.address),
            format!("0x{:x}", p.offset),
            p.semaphore_offset
                .map_or("-".into(), |s| format!("0x{s:x}")),
            printable(&p.args),
        ]);
    }
    plain(&t)
}

/// `s` with control characters escaped (`\n`, `\u{1b}`): names come from the ELF file, and a
/// crafted note must not break the table or drive the terminal.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Function symbols with the file offsets uprobes take.
pub fn functions(functions: &[Function]) -> String {
    if functions.is_empty() {
        return "no matching function symbols\n".into();
    }
    let mut t = Table::new(
        "functions",
        1,
        columns(&["function", "address", "file offset", "size"]),
    );
    for f in functions {
        t.text_row(vec![
            printable(&f.name),
            format!("0x{:x}", f.address),
            format!("0x{:x}", f.offset),
            f.size.to_string(),
        ]);
    }
    plain(&t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        let p = RawProbe {
            provider: "evil\nprov".into(),
            name: "hit\u{1b}[31m".into(),
            address: 0x10,
            offset: 0x10,
            semaphore_address: None,
            semaphore_offset: None,
            args: "-8@%rdi\r".into(),
        };
        let text = table(&[p]);
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(
            text.contains(r"evil\nprov") && text.contains(r"hit\u{1b}[31m"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
    }
}
