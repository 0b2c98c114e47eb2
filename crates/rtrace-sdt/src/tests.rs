//! End-to-end tests on ELF files built by gcc (PIE, non-PIE, semaphores, shared library,
//! 32-bit) and on system libraries. Offsets are checked against the section headers and
//! `readelf -n`, never against the crate's own segment arithmetic.

use crate::fixtures::{gcc, readelf_notes, section, section_offset, symbol_address};
use crate::ArgLocation::{Constant, Register};
use crate::*;
use goblin::elf::header::{ET_DYN, ET_EXEC};
use goblin::elf::Elf;

/// Two probes with arguments and one without.
const PROBES_C: &str = r#"
#include <stdlib.h>
#include <sys/sdt.h>
int main(int argc, char **argv) {
    long x = argc > 1 ? atol(argv[1]) : 3;
    int y = (int)x * 7;
    DTRACE_PROBE1(prov, a, x);
    DTRACE_PROBE2(prov, two, y, 5);
    DTRACE_PROBE(prov, none);
    return 0;
}
"#;

/// A translation unit whose probe has an is-enabled semaphore. The semaphore's initial value is
/// a marker (a real one starts at 0) so the test can find its bytes at `semaphore_offset`.
const SEM_C: &str = r#"
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short prov_b_semaphore __attribute__((unused)) __attribute__((section(".probes"))) = 0xBEEF;
int sem_fire(int v) { if (prov_b_semaphore) DTRACE_PROBE1(prov, b, v); return v + 1; }
"#;

/// Calls [`SEM_C`]; its own probe has no semaphore (sys/sdt.h semaphores are per translation
/// unit: with `_SDT_HAS_SEMAPHORES` every probe of the unit needs one).
const SEM_MAIN_C: &str = r#"
#include <sys/sdt.h>
int sem_fire(int v);
int main(int argc, char **argv) { DTRACE_PROBE1(prov, a, argc); return sem_fire(argc); }
"#;

const NOP: u8 = 0x90;
const PIE: &str = "-fPIE -pie";

/// `r` failed with `SdtError::<variant>` whose message contains `needle`; returns the message.
#[track_caller]
fn assert_err<T: std::fmt::Debug>(r: Result<T, SdtError>, variant: &str, needle: &str) -> String {
    let err = r.unwrap_err();
    let debug = format!("{err:?}");
    assert!(debug.starts_with(&format!("{variant} {{")), "{debug}");
    let msg = err.to_string();
    assert!(msg.contains(needle), "{msg}");
    msg
}

fn e_type(data: &[u8]) -> u16 {
    Elf::parse_header(data).unwrap().e_type
}

fn has_stapsdt_section(data: &[u8]) -> bool {
    section(data, ".note.stapsdt").is_some()
}

fn sized(arg: &Arg) -> (u8, bool) {
    (arg.size, arg.signed)
}

/// The semaphore at file offset `off` holds the marker 0xBEEF of [`SEM_C`]; returns `off`.
fn assert_marker(data: &[u8], off: Option<u64>) -> u64 {
    let off = off.expect("a semaphore offset");
    let bytes = &data[off as usize..][..2];
    assert_eq!(bytes, 0xBEEFu16.to_le_bytes(), "at {off:#x}");
    off
}

/// Checks every probe of `path` independently of the crate's segment arithmetic: same notes as
/// `readelf -n`, the site is a `nop` at `offset`, and `offset` (and `semaphore_offset`) match the
/// section-header mapping of the address. Returns the raw probes.
fn check_binary(path: &Path) -> Vec<RawProbe> {
    let data = std::fs::read(path).unwrap();
    let raw = raw_probes(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reference = readelf_notes(path);
    let file = path.display();
    assert_eq!(raw.len(), reference.len(), "{file}: count vs readelf");
    let base_section = section(&data, ".stapsdt.base").map(|s| s.sh_addr);
    for (p, r) in raw.iter().zip(&reference) {
        let what = format!("{file}: {}:{}", p.provider, p.name);
        let note = (&p.provider, &p.name, &p.args);
        assert_eq!(note, (&r.provider, &r.name, &r.args), "{what}");
        // Not prelinked: .stapsdt.base is where the note says, so the address is the note's pc.
        assert_eq!(base_section, Some(r.base), "{what}: .stapsdt.base");
        assert_eq!(p.address, r.location, "{what}: address");
        let semaphore = (r.semaphore != 0).then_some(r.semaphore);
        assert_eq!(p.semaphore_address, semaphore, "{what}: semaphore");
        let at = p.offset as usize;
        assert_eq!(data[at], NOP, "{what}: no nop at offset {at:#x}");
        let (section, off) = section_offset(&data, p.address).expect("site in a section");
        assert_eq!(p.offset, off, "{what}: offset vs section {section}");
        let in_section = |sem| section_offset(&data, sem).expect("semaphore in a section");
        let sem = p.semaphore_address.map(in_section);
        let sem_offset = sem.as_ref().map(|(_, off)| *off);
        assert_eq!(p.semaphore_offset, sem_offset, "{what}: {sem:?}");
    }
    raw
}

fn names(probes: &[Probe]) -> Vec<(&str, &str)> {
    probes.iter().map(|p| (&*p.provider, &*p.name)).collect()
}

/// Checks the probes of [`PROBES_C`].
fn check_probes_c(path: &Path) -> Vec<Probe> {
    check_binary(path);
    let probes = probes(path).unwrap();
    let want = [("prov", "a"), ("prov", "two"), ("prov", "none")];
    assert_eq!(names(&probes), want);
    let (a, two) = (&probes[0], &probes[1]);
    assert_eq!(a.args.len(), 1);
    assert_eq!(sized(&a.args[0]), (8, true), "long x");
    assert!(matches!(a.args[0].location, Register(_)), "{:?}", a.args);
    assert_eq!(sized(&two.args[0]), (4, true), "int y");
    let c = &two.args[1];
    assert_eq!((c.size, c.signed, &c.location), (4, true, &Constant(5)));
    let reg = two.args[0].ftrace_fetcharg().unwrap();
    assert!(reg.starts_with('%') && reg.ends_with(":s32"), "{reg}");
    assert_eq!(two.args[1].ftrace_fetcharg().unwrap(), "\\5:s32");
    assert!(probes[2].args.is_empty());
    assert!(probes.iter().all(|p| !p.has_semaphore()));
    assert_eq!(find(path, "prov", "two").unwrap(), vec![two.clone()]);
    let location = format!("/x/bin:{:#x}", two.offset);
    assert_eq!(two.ftrace_location(Path::new("/x/bin")), location);
    probes
}

/// A PIE, a PIE whose code is not at `vaddr == offset` (like rust-lld output: the site must be
/// translated through the right one of two executable segments), and a non-PIE executable.
#[test]
fn executables() {
    let moved = "-fPIE -pie -Wl,--section-start=.text=0x10000";
    type Placed = fn(address: u64, offset: u64) -> bool;
    let cases: [(&str, u16, Placed); 3] = [
        (PIE, ET_DYN, |_, _| true),
        (moved, ET_DYN, |a, o| a >= 0x10000 && a != o),
        ("-no-pie", ET_EXEC, |a, o| a >= 0x400000 && o < 0x400000),
    ];
    for (flags, ty, placed) in cases {
        let (_dir, bin, data) = gcc(&[PROBES_C], flags);
        assert_eq!(e_type(&data), ty, "{flags}");
        for p in check_probes_c(&bin) {
            assert!(placed(p.address, p.offset), "{flags}: {p:?}");
        }
    }
}

#[test]
fn semaphore_probe_in_pie_and_non_pie() {
    for flags in [PIE, "-no-pie"] {
        let (_dir, bin, data) = gcc(&[SEM_MAIN_C, SEM_C], flags);
        check_binary(&bin);
        let probes = probes(&bin).unwrap();
        assert_eq!(names(&probes), [("prov", "a"), ("prov", "b")], "{flags}");
        let b = &probes[1];
        assert!(!probes[0].has_semaphore() && b.has_semaphore(), "{flags}");
        let sym = symbol_address(&data, "prov_b_semaphore").expect("semaphore symbol");
        assert_eq!(b.semaphore_address, Some(sym), "{flags}");
        let off = assert_marker(&data, b.semaphore_offset);
        // The data segment is not mapped at vaddr == offset: the mapping really happened.
        assert_ne!(off, sym, "{flags}");
        let location = format!("/b:{:#x}({off:#x})", b.offset);
        assert_eq!(b.ftrace_location(Path::new("/b")), location);
    }
}

#[test]
fn shared_library() {
    let lib_c = r#"
#include <sys/sdt.h>
int lib_fn(int x) { DTRACE_PROBE1(libprov, hit, x); return x * 3; }
"#;
    let (_dir, lib, data) = gcc(&[lib_c, SEM_C], "-shared -fPIC");
    assert_eq!(e_type(&data), ET_DYN);
    check_binary(&lib);
    let probes = probes(&lib).unwrap();
    assert_eq!(names(&probes), [("libprov", "hit"), ("prov", "b")]);
    assert_eq!(probes[0].args.len(), 1);
    assert_eq!(sized(&probes[0].args[0]), (4, true));
    let sym = symbol_address(&data, "prov_b_semaphore").unwrap();
    assert_eq!(probes[1].semaphore_address, Some(sym));
    assert_marker(&data, probes[1].semaphore_offset);
}

/// i386 ELF (4-byte addresses in the note), static so that no 32-bit libc is needed.
#[test]
fn elf32_static_executable() {
    let src = r#"
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short p_s_semaphore __attribute__((unused)) __attribute__((section(".probes"))) = 0xBEEF;
volatile int g = 3;
void _start(void) { int x = g; if (p_s_semaphore) DTRACE_PROBE2(p, s, x, 7); for (;;); }
"#;
    let flags = "-m32 -nostdlib -static -idirafter /usr/include/x86_64-linux-gnu";
    let (_dir, bin, data) = gcc(&[src], flags);
    let header = Elf::parse_header(&data).unwrap();
    assert!(!header.container().unwrap().is_big());
    check_binary(&bin);
    let probes = probes(&bin).unwrap();
    assert_eq!(names(&probes), [("p", "s")]);
    let p = &probes[0];
    assert!((0x0804_8000..0x1_0000_0000).contains(&p.address), "{p:?}");
    assert_ne!(p.address, p.offset);
    assert_eq!(p.semaphore_address, symbol_address(&data, "p_s_semaphore"));
    assert_marker(&data, p.semaphore_offset);
    assert_eq!(sized(&p.args[0]), (4, true));
    assert_eq!(p.args[1].location, Constant(7));
}

/// Real arguments gcc emits that ftrace cannot fetch: `probes` fails naming the probe, while
/// `raw_probes` lists everything and `find` still works for the other probes.
#[test]
fn unsupported_arguments_fail_only_where_needed() {
    let src = r#"
#include <sys/sdt.h>
int counter = 4;
int arr[8];
int main(int argc, char **argv) {
    DTRACE_PROBE1(prov, glob, counter);
    DTRACE_PROBE1(prov, idx, arr[argc]);
    DTRACE_PROBE1(prov, ok, argc);
    return 0;
}
"#;
    let (_dir, bin, _) = gcc(&[src], "");
    let raw = check_binary(&bin);
    assert_eq!(raw[0].args, "-4@counter(%rip)");
    let indexed = &raw[1].args;
    assert!(indexed.contains(','), "indexed operand: {indexed}");
    let msg = assert_err(probes(&bin), "BadArg", "-4@counter(%rip)");
    assert!(msg.contains("prov:glob"), "{msg}");
    let idx = find(&bin, "prov", "idx");
    assert_err(idx, "BadArg", "indexed memory operand");
    let ok = find(&bin, "prov", "ok").unwrap();
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0].args[0].ftrace_fetcharg().unwrap(), "%di:s32");
    assert_eq!(ok[0].offset, raw[2].offset);
}

/// The prelink adjustment on real bytes: moving the note's pc and base together changes
/// nothing; moving only the base moves the site the other way.
#[test]
fn stapsdt_base_adjustment_on_patched_notes() {
    let (_dir, bin, data) = gcc(&[PROBES_C], PIE);
    let before = probes(&bin).unwrap();
    let first = &readelf_notes(&bin)[0];
    let words = |pc: u64, base: u64| [pc.to_le_bytes(), base.to_le_bytes()].concat();
    let pattern = words(first.location, first.base);
    let at = data.windows(16).position(|w| w == pattern).expect("note");
    let patch = |pc: u64, base: u64| {
        let mut d = data.clone();
        d[at..at + 16].copy_from_slice(&words(pc, base));
        probes_from_bytes(&d, &bin).unwrap()
    };
    assert_eq!(patch(first.location + 0x1000, first.base + 0x1000), before);
    let base_down = patch(first.location, first.base - 1);
    assert_eq!(base_down[0].address, before[0].address + 1);
    assert_eq!(base_down[0].offset, before[0].offset + 1);
    assert_eq!(base_down[1..], before[1..]);
}

#[test]
fn errors_name_the_fix() {
    // An object file has notes but no segments to map them through.
    let (dir, obj, _) = gcc(&[PROBES_C], "-c");
    assert_err(probes(&obj), "BadNote", "link it into an executable");
    let missing = dir.path().join("missing");
    assert_err(probes(&missing), "Io", "check the path");
    // Never opened: a FIFO would block, /dev/zero never ends.
    for special in [Path::new("/dev/zero"), dir.path()] {
        assert_err(probes(special), "NotAFile", "not a regular file");
        assert_err(functions(special, "*"), "NotAFile", "not a regular file");
    }
    let sh = dir.path().join("script.sh");
    std::fs::write(&sh, "#!/bin/sh\necho hi\n").unwrap();
    assert_err(probes(&sh), "NotElf", "give the path of a compiled binary");
    let (_dir, bin, _) = gcc(&[PROBES_C], "");
    let zzz = find(&bin, "prov", "zzz");
    assert_err(zzz, "NoSuchProbe", "rtrace-bench probes");
}

#[test]
fn elf_without_notes_has_no_probes() {
    let (_dir, bin, data) = gcc(&["int main(void) { return 0; }\n"], "");
    assert!(!has_stapsdt_section(&data));
    assert_eq!(probes(&bin).unwrap(), vec![]);
    assert_eq!(raw_probes(&bin).unwrap(), vec![]);
}

#[test]
fn corrupt_files() {
    let (_dir, bin, data) = gcc(&[PROBES_C], "");
    // Truncated: the section headers are at the end of the file.
    let truncated = probes_from_bytes(&data[..data.len() / 2], &bin);
    assert_err(truncated, "NotElf", "truncated");
    let at = section(&data, ".note.stapsdt").unwrap().sh_offset as usize;
    // First note header: namesz, descsz, type.
    assert_eq!(data[at..at + 4], 8u32.to_le_bytes());
    assert_eq!(data[at + 8..at + 12], 3u32.to_le_bytes());
    let patched = |field: usize, value: u32| {
        let mut d = data.clone();
        d[at + field..at + field + 4].copy_from_slice(&value.to_le_bytes());
        probes_from_bytes(&d, &bin)
    };
    assert_err(patched(4, 0xffff), "BadNote", "truncated or corrupt");
    // The descriptor is cut short and the next note header is read from the wrong place.
    assert_err(patched(4, 20), "BadNote", "malformed USDT note");
    // A note of another type in .note.stapsdt is skipped, not misread.
    let rest = patched(8, 1).unwrap();
    assert_eq!(names(&rest), [("prov", "two"), ("prov", "none")]);
}

/// Probes of installed system files, where present: libc (Debian's glibc is built without
/// systemtap, so it must give an empty list), libstdc++ (`libstdcxx:throw`...), python3
/// (semaphores in a non-PIE executable).
#[test]
fn system_binaries() {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let name = libc.display();
    if !libc.exists() {
        eprintln!("skipped libc: {name} is absent");
    } else if !has_stapsdt_section(&std::fs::read(libc).unwrap()) {
        eprintln!("{name} has no .note.stapsdt: checking it gives no probes");
        assert_eq!(probes(libc).unwrap(), vec![]);
    } else {
        check_binary(libc);
        let all = probes(libc).unwrap();
        let names = names(&all);
        assert!(names.contains(&("libc", "setjmp")), "{names:?}");
        let memory = |(p, n): &(&str, &str)| *p == "libc" && n.starts_with("memory_");
        assert!(names.iter().any(memory), "{names:?}");
    }

    let libstdcxx = Path::new("/lib/x86_64-linux-gnu/libstdc++.so.6");
    if libstdcxx.exists() {
        check_binary(libstdcxx);
        let throw = find(libstdcxx, "libstdcxx", "throw").unwrap();
        let two_args = |p: &Probe| p.args.len() == 2 && !p.has_semaphore();
        assert!(throw.iter().all(two_args), "{throw:?}");
        assert!(find(libstdcxx, "libstdcxx", "catch").is_ok());
    } else {
        eprintln!("skipped libstdc++: {} is absent", libstdcxx.display());
    }

    let python = Path::new("/usr/bin/python3");
    if python.exists() && has_stapsdt_section(&std::fs::read(python).unwrap()) {
        let raw = check_binary(python);
        assert!(raw.iter().any(|p| p.semaphore_offset.is_some()));
    } else {
        eprintln!("skipped python3: absent or without USDT notes");
    }
}
