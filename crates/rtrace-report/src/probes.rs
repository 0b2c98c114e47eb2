//! The listings of `rtrace-bench probes`.

use crate::doc::terminal::table::plain;
use crate::doc::{columns, Table};
use rtrace_sdt::{Function, ProbeSite, RawProbe};
use serde::Serialize;

/// A USDT probe or a function with the instruction at its file offset: what a uprobe there
/// replaces, and how the kernel then runs it. In JSON, `item`'s fields, `site` and
/// `libbpf_site`.
#[derive(Debug, Serialize)]
pub struct Sited<T> {
    #[serde(flatten)]
    pub item: T,
    pub site: ProbeSite,
    /// USDT only: the nop5 one byte on, where libbpf attaches instead on a `nop; nop5` site.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub libbpf_site: Option<ProbeSite>,
}

impl<T> Sited<T> {
    /// The instruction and the uprobe mechanism, each followed by libbpf's when it differs.
    fn cells(&self) -> [String; 2] {
        let Some(libbpf) = &self.libbpf_site else {
            return [self.site.instruction.clone(), self.site.mechanism.label()];
        };
        [
            format!("{}; {}", self.site.instruction, libbpf.instruction),
            format!(
                "{}; libbpf at +1: {}",
                self.site.mechanism, libbpf.mechanism
            ),
        ]
    }
}

/// USDT probe sites with their first instruction, offsets, semaphores and argument specs.
pub fn table(probes: &[Sited<RawProbe>]) -> String {
    if probes.is_empty() {
        return "no USDT probes (.note.stapsdt is absent or empty)\n".into();
    }
    let mut t = Table::new(
        "probes",
        4,
        columns(&[
            "provider",
            "name",
            "instruction",
            "uprobe",
            "address",
            "file offset",
            "semaphore",
            "args",
        ]),
    );
    for sited in probes {
        let (p, [instruction, uprobe]) = (&sited.item, sited.cells());
        t.text_row(vec![
            printable(&p.provider),
            printable(&p.name),
            instruction,
            uprobe,
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
    let shown = |c: char| match c.is_control() {
        true => c.escape_default().to_string(),
        false => c.to_string(),
    };
    s.chars().map(shown).collect()
}

/// Function symbols with their first instruction and the file offsets uprobes take.
pub fn functions(functions: &[Sited<Function>]) -> String {
    if functions.is_empty() {
        return "no matching function symbols\n".into();
    }
    let mut t = Table::new(
        "functions",
        3,
        columns(&[
            "function",
            "instruction",
            "uprobe",
            "address",
            "file offset",
            "size",
        ]),
    );
    for sited in functions {
        let (f, [instruction, uprobe]) = (&sited.item, sited.cells());
        t.text_row(vec![
            printable(&f.name),
            instruction,
            uprobe,
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
    use rtrace_sdt::{Emulation, Mechanism};

    fn nop() -> ProbeSite {
        ProbeSite {
            instruction: "nop".into(),
            bytes: "90".into(),
            mechanism: Mechanism::Emulated { op: Emulation::Nop },
            function_entry: Some(false),
        }
    }

    #[test]
    fn every_site_shows_its_instruction_and_mechanism() {
        let read = Sited {
            item: Function {
                name: "read".into(),
                address: 0x11ba50,
                offset: 0x11ba50,
                size: 157,
            },
            site: ProbeSite {
                instruction: "cmpb $0,0xeaa5d(%rip)".into(),
                bytes: "80 3d 5d aa 0e 00 00".into(),
                mechanism: Mechanism::SingleStepped { rip_relative: true },
                function_entry: Some(true),
            },
            libbpf_site: None,
        };
        let text = functions(std::slice::from_ref(&read));
        assert!(text.contains("cmpb $0,0xeaa5d(%rip)"), "{text}");
        assert!(
            text.contains("single-stepped out of line (RIP-relative)"),
            "{text}"
        );
        let json = serde_json::to_value(&read).unwrap();
        assert_eq!(json["name"], "read");
        assert_eq!(json["site"]["mechanism"]["kind"], "single-stepped");
        assert_eq!(json["site"]["bytes"], "80 3d 5d aa 0e 00 00");
        assert!(json.get("libbpf_site").is_none(), "{json}");
    }

    /// A `nop; nop5` USDT site: the nop where ftrace and bpftrace attach, the nop5 for libbpf.
    #[test]
    fn a_nop_nop5_site_shows_both() {
        let combo = Sited {
            item: (),
            site: nop(),
            libbpf_site: Some(ProbeSite {
                instruction: "nopl 0x0(%rax,%rax,1)".into(),
                bytes: "0f 1f 44 00 00".into(),
                mechanism: Mechanism::Nop5,
                function_entry: Some(false),
            }),
        };
        let [instruction, uprobe] = combo.cells();
        assert_eq!(instruction, "nop; nopl 0x0(%rax,%rax,1)");
        assert_eq!(uprobe, "emulated (nop); libbpf at +1: nop5: optimizable");
    }

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
        let text = table(&[Sited {
            item: p,
            site: nop(),
            libbpf_site: None,
        }]);
        assert!(text.contains("emulated (nop)"), "{text}");
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(
            text.contains(r"evil\nprov") && text.contains(r"hit\u{1b}[31m"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
    }
}
