//! Test fixtures: C programs built with gcc into a temporary directory, and checks that do not
//! share code with the crate (section headers and symbols via goblin's full parser, `readelf`).

use goblin::elf::section_header::{SHF_ALLOC, SHT_NOBITS};
use goblin::elf::Elf;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `sources` (file name, C text) with `gcc -O2 FLAGS` into `dir/out`. Panics with
/// gcc's output (or how to install it) on failure.
pub fn gcc(dir: &Path, out: &str, sources: &[(&str, &str)], flags: &[&str]) -> PathBuf {
    let mut cmd = Command::new("gcc");
    cmd.arg("-O2").args(flags).arg("-o").arg(dir.join(out));
    for (name, text) in sources {
        let p = dir.join(name);
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
        "gcc {flags:?} failed (is systemtap-sdt-dev, which provides sys/sdt.h, installed?):\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    dir.join(out)
}

/// The file offset of virtual address `addr`, found through the *section* headers (not the
/// segments the crate uses): the allocated section containing it. Returns (section, offset).
pub fn section_offset(data: &[u8], addr: u64) -> Option<(String, u64)> {
    let elf = Elf::parse(data).expect("goblin parses the fixture");
    elf.section_headers
        .iter()
        .filter(|s| s.sh_flags & SHF_ALLOC as u64 != 0 && s.sh_type != SHT_NOBITS)
        .find(|s| addr >= s.sh_addr && addr < s.sh_addr + s.sh_size)
        .map(|s| {
            let name = elf.shdr_strtab.get_at(s.sh_name).unwrap_or("?").to_owned();
            (name, addr - s.sh_addr + s.sh_offset)
        })
}

/// Address of symbol `name` from `.symtab` (or `.dynsym`).
pub fn symbol_address(data: &[u8], name: &str) -> Option<u64> {
    let elf = Elf::parse(data).expect("goblin parses the fixture");
    let sym = elf
        .syms
        .iter()
        .find(|s| elf.strtab.get_at(s.st_name) == Some(name))
        .or_else(|| {
            elf.dynsyms
                .iter()
                .find(|s| elf.dynstrtab.get_at(s.st_name) == Some(name))
        })?;
    Some(sym.st_value)
}

/// `sh_addr` of the section called `name` (by goblin's full parser).
pub fn section_address(data: &[u8], name: &str) -> Option<u64> {
    let elf = Elf::parse(data).expect("goblin parses the file");
    elf.section_headers
        .iter()
        .find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(name))
        .map(|s| s.sh_addr)
}

/// Whether the file has a `.note.stapsdt` section.
pub fn has_stapsdt_section(data: &[u8]) -> bool {
    section_address(data, ".note.stapsdt").is_some()
}

/// One note as printed by `readelf -n`.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    let out = Command::new("readelf")
        .arg("-nW")
        .arg(path)
        .output()
        .expect("readelf (binutils) is installed with gcc");
    assert!(out.status.success(), "readelf -n {}", path.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = |s: &str| {
        u64::from_str_radix(s.trim().trim_end_matches(',').trim_start_matches("0x"), 16).unwrap()
    };
    let mut notes = Vec::new();
    let mut cur: Option<ReadelfNote> = None;
    for line in text.lines().map(str::trim) {
        // With -W, "Provider:" follows the note header on the same line.
        if let Some(v) = line
            .find("Provider: ")
            .map(|i| &line[i + "Provider: ".len()..])
        {
            cur = Some(ReadelfNote {
                provider: v.to_owned(),
                name: String::new(),
                location: 0,
                base: 0,
                semaphore: 0,
                args: String::new(),
            });
        } else if let (Some(n), Some(v)) = (cur.as_mut(), line.strip_prefix("Name: ")) {
            n.name = v.to_owned();
        } else if let (Some(n), Some(v)) = (cur.as_mut(), line.strip_prefix("Location: ")) {
            // Location: 0x..., Base: 0x..., Semaphore: 0x...
            let parts: Vec<&str> = v.split(", ").collect();
            n.location = hex(parts[0]);
            n.base = hex(parts[1].trim_start_matches("Base: "));
            n.semaphore = hex(parts[2].trim_start_matches("Semaphore: "));
        } else if let Some(v) = line.strip_prefix("Arguments:") {
            let mut n = cur.take().expect("Arguments after Provider");
            n.args = v.trim().to_owned();
            notes.push(n);
        }
    }
    notes
}
