//! Test fixtures: C programs built with gcc into a temporary directory, and checks that do not
//! share code with the crate (section headers and symbols via goblin's full parser, `readelf`).

use goblin::elf::section_header::{SectionHeader, SHF_ALLOC, SHT_NOBITS};
use goblin::elf::Elf;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// Compiles the C `sources` with `gcc -O2 FLAGS` (flags separated by spaces) into a temporary
/// directory: returns it (the file lives as long as it), the binary and its bytes. Panics with
/// gcc's output (or how to install it) on failure.
pub fn gcc(sources: &[&str], flags: &str) -> (TempDir, PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let out = dir.path().join("bin");
    let mut cmd = Command::new("gcc");
    let flag_list = flags.split_whitespace();
    cmd.arg("-O2").args(flag_list).arg("-o").arg(&out);
    for (i, text) in sources.iter().enumerate() {
        let p = dir.path().join(format!("s{i}.c"));
        std::fs::write(&p, text).expect("write C source");
        cmd.arg(p);
    }
    let res = cmd.output().unwrap_or_else(|e| {
        panic!(
            "cannot run gcc ({e}): the ELF fixture tests build C programs; install it with \
             `apt-get install gcc systemtap-sdt-dev`"
        )
    });
    assert!(
        res.status.success(),
        "gcc {flags} failed (is systemtap-sdt-dev, which provides sys/sdt.h, installed?):\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let data = std::fs::read(&out).expect("read the binary gcc wrote");
    (dir, out, data)
}

/// The file offset of virtual address `addr`, found through the *section* headers (not the
/// segments the crate uses): the allocated section containing it. Returns (section, offset).
pub fn section_offset(data: &[u8], addr: u64) -> Option<(String, u64)> {
    let elf = Elf::parse(data).expect("goblin parses the fixture");
    let s = elf.section_headers.iter().find(|s| {
        s.sh_flags & SHF_ALLOC as u64 != 0
            && s.sh_type != SHT_NOBITS
            && (s.sh_addr..s.sh_addr + s.sh_size).contains(&addr)
    })?;
    let name = elf.shdr_strtab.get_at(s.sh_name).unwrap_or("?").to_owned();
    Some((name, addr - s.sh_addr + s.sh_offset))
}

/// Address of symbol `name` from `.symtab` (or `.dynsym`).
pub fn symbol_address(data: &[u8], name: &str) -> Option<u64> {
    let elf = Elf::parse(data).expect("goblin parses the fixture");
    let named = |strtab: &goblin::strtab::Strtab, s: &goblin::elf::Sym| {
        strtab.get_at(s.st_name) == Some(name)
    };
    let sym = elf.syms.iter().find(|s| named(&elf.strtab, s));
    let sym = sym.or_else(|| elf.dynsyms.iter().find(|s| named(&elf.dynstrtab, s)))?;
    Some(sym.st_value)
}

/// The header of the section called `name` (by goblin's full parser).
pub fn section(data: &[u8], name: &str) -> Option<SectionHeader> {
    let elf = Elf::parse(data).expect("goblin parses the file");
    let named = |s: &&SectionHeader| elf.shdr_strtab.get_at(s.sh_name) == Some(name);
    elf.section_headers.iter().find(named).cloned()
}

/// One note as printed by `readelf -n`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadelfNote {
    pub provider: String,
    pub name: String,
    pub location: u64,
    pub base: u64,
    pub semaphore: u64,
    pub args: String,
}

/// Parses the stapsdt notes of `readelf -n PATH` (binutils, installed with gcc).
pub fn readelf_notes(path: &Path) -> Vec<ReadelfNote> {
    let out = Command::new("readelf").arg("-nW").arg(path).output();
    let out = out.expect("readelf (binutils) is installed with gcc");
    assert!(out.status.success(), "readelf -n {}", path.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = |s: &str, label: &str| {
        let s = s.trim().trim_start_matches(label).trim_end_matches(',');
        u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
    };
    let mut notes = Vec::new();
    let mut cur: Option<ReadelfNote> = None;
    for line in text.lines().map(str::trim) {
        // With -W, "Provider:" follows the note header on the same line.
        if let Some((_, provider)) = line.split_once("Provider: ") {
            cur.insert(ReadelfNote::default()).provider = provider.to_owned();
        } else if let (Some(n), Some(v)) = (cur.as_mut(), line.strip_prefix("Name: ")) {
            n.name = v.to_owned();
        } else if let (Some(n), Some(v)) = (cur.as_mut(), line.strip_prefix("Location: ")) {
            // Location: 0x..., Base: 0x..., Semaphore: 0x...
            let parts: Vec<&str> = v.split(", ").collect();
            n.location = hex(parts[0], "");
            n.base = hex(parts[1], "Base: ");
            n.semaphore = hex(parts[2], "Semaphore: ");
        } else if let Some(v) = line.strip_prefix("Arguments:") {
            let mut n = cur.take().expect("Arguments after Provider");
            n.args = v.trim().to_owned();
            notes.push(n);
        }
    }
    notes
}
