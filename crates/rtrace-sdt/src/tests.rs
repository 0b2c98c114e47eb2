//! End-to-end tests on ELF files built by gcc (PIE, non-PIE, semaphores, shared library,
//! 32-bit) and on system libraries. Offsets are checked against the section headers and
//! `readelf -n`, never against the crate's own segment arithmetic.

use crate::fixtures::{
    gcc, has_stapsdt_section, readelf_notes, section_address, section_offset, symbol_address,
};
use crate::*;
use goblin::elf::header::{ET_DYN, ET_EXEC};
use goblin::elf::Elf;
use tempfile::TempDir;

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

fn tmp() -> TempDir {
    tempfile::tempdir().expect("create a temporary directory")
}

fn e_type(data: &[u8]) -> u16 {
    Elf::parse_header(data).unwrap().e_type
}

/// Checks every probe of `path` independently of the crate's segment arithmetic: same notes as
/// `readelf -n`, the site is a `nop` at `offset`, and `offset` (and `semaphore_offset`) match the
/// section-header mapping of the address. Returns the raw probes.
fn check_binary(path: &Path) -> Vec<RawProbe> {
    let data = std::fs::read(path).unwrap();
    let raw = raw_probes(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reference = readelf_notes(path);
    assert_eq!(
        raw.len(),
        reference.len(),
        "{}: probe count vs readelf",
        path.display()
    );
    let base_section = section_address(&data, ".stapsdt.base");
    for (p, r) in raw.iter().zip(&reference) {
        let what = format!("{}: {}:{}", path.display(), p.provider, p.name);
        assert_eq!(
            (&p.provider, &p.name, &p.args),
            (&r.provider, &r.name, &r.args),
            "{what}"
        );
        // Not prelinked: .stapsdt.base is where the note says, so the address is the note's pc.
        assert_eq!(base_section, Some(r.base), "{what}: .stapsdt.base");
        assert_eq!(p.address, r.location, "{what}: address");
        assert_eq!(
            p.semaphore_address,
            (r.semaphore != 0).then_some(r.semaphore),
            "{what}"
        );
        assert_eq!(
            data[p.offset as usize], NOP,
            "{what}: no nop at offset {:#x}",
            p.offset
        );
        let (section, off) = section_offset(&data, p.address).expect("site in a section");
        assert_eq!(p.offset, off, "{what}: offset vs section {section}");
        if let Some(sem) = p.semaphore_address {
            let (section, off) = section_offset(&data, sem).expect("semaphore in a section");
            assert_eq!(
                p.semaphore_offset,
                Some(off),
                "{what}: semaphore vs section {section}"
            );
        } else {
            assert_eq!(p.semaphore_offset, None, "{what}");
        }
    }
    raw
}

fn names(probes: &[Probe]) -> Vec<(&str, &str)> {
    probes
        .iter()
        .map(|p| (p.provider.as_str(), p.name.as_str()))
        .collect()
}

/// Checks the probes of [`PROBES_C`].
fn check_probes_c(path: &Path) -> Vec<Probe> {
    check_binary(path);
    let probes = probes(path).unwrap();
    assert_eq!(
        names(&probes),
        [("prov", "a"), ("prov", "two"), ("prov", "none")]
    );
    let a = &probes[0];
    assert_eq!(a.args.len(), 1);
    assert_eq!((a.args[0].size, a.args[0].signed), (8, true), "long x");
    assert!(
        matches!(a.args[0].location, ArgLocation::Register(_)),
        "{:?}",
        a.args
    );
    let two = &probes[1];
    assert_eq!((two.args[0].size, two.args[0].signed), (4, true), "int y");
    assert_eq!(
        two.args[1],
        Arg {
            size: 4,
            signed: true,
            location: ArgLocation::Constant(5)
        }
    );
    let fetch = two.ftrace_fetchargs().unwrap();
    assert!(
        fetch[0].starts_with('%') && fetch[0].ends_with(":s32"),
        "{fetch:?}"
    );
    assert_eq!(fetch[1], "\\5:s32");
    assert!(probes[2].args.is_empty());
    assert!(probes.iter().all(|p| !p.has_semaphore()));
    assert_eq!(find(path, "prov", "two").unwrap(), vec![two.clone()]);
    assert_eq!(
        two.ftrace_location(Path::new("/x/bin")),
        format!("/x/bin:{:#x}", two.offset)
    );
    probes
}

#[test]
fn pie_executable() {
    let dir = tmp();
    let bin = gcc(
        dir.path(),
        "pie",
        &[("pie.c", PROBES_C)],
        &["-fPIE", "-pie"],
    );
    assert_eq!(e_type(&std::fs::read(&bin).unwrap()), ET_DYN);
    check_probes_c(&bin);
}

/// A PIE whose code is not at `vaddr == offset` (like rust-lld output): the site must be
/// translated through the right one of two executable segments.
#[test]
fn pie_executable_with_text_away_from_its_file_offset() {
    let dir = tmp();
    let flags = ["-fPIE", "-pie", "-Wl,--section-start=.text=0x10000"];
    let bin = gcc(dir.path(), "pie_moved", &[("pie.c", PROBES_C)], &flags);
    assert_eq!(e_type(&std::fs::read(&bin).unwrap()), ET_DYN);
    for p in check_probes_c(&bin) {
        assert!(p.address >= 0x10000, "{p:?}");
        assert_ne!(p.address, p.offset, "{p:?}");
    }
}

#[test]
fn non_pie_executable() {
    let dir = tmp();
    let bin = gcc(dir.path(), "nopie", &[("nopie.c", PROBES_C)], &["-no-pie"]);
    assert_eq!(e_type(&std::fs::read(&bin).unwrap()), ET_EXEC);
    for p in check_probes_c(&bin) {
        assert!(p.address >= 0x400000, "{p:?}");
        assert!(p.offset < 0x400000, "{p:?}");
    }
}

#[test]
fn semaphore_probe_in_pie_and_non_pie() {
    for flags in [&["-fPIE", "-pie"][..], &["-no-pie"][..]] {
        let dir = tmp();
        let sources = [("main.c", SEM_MAIN_C), ("sem.c", SEM_C)];
        let bin = gcc(dir.path(), "sem", &sources, flags);
        check_binary(&bin);
        let data = std::fs::read(&bin).unwrap();
        let probes = probes(&bin).unwrap();
        assert_eq!(names(&probes), [("prov", "a"), ("prov", "b")], "{flags:?}");
        assert!(!probes[0].has_semaphore());
        let b = &probes[1];
        assert!(b.has_semaphore());
        let sym = symbol_address(&data, "prov_b_semaphore").expect("semaphore symbol");
        assert_eq!(b.semaphore_address, Some(sym), "{flags:?}");
        let off = b.semaphore_offset.unwrap();
        assert_eq!(
            &data[off as usize..off as usize + 2],
            &0xBEEFu16.to_le_bytes(),
            "{flags:?}"
        );
        // The data segment is not mapped at vaddr == offset: the mapping really happened.
        assert_ne!(off, sym, "{flags:?}");
        assert_eq!(
            b.ftrace_location(Path::new("/b")),
            format!("/b:{:#x}({:#x})", b.offset, off)
        );
    }
}

#[test]
fn shared_library() {
    let dir = tmp();
    let lib_c = r#"
#include <sys/sdt.h>
int lib_fn(int x) { DTRACE_PROBE1(libprov, hit, x); return x * 3; }
"#;
    let sources = [("lib.c", lib_c), ("sem.c", SEM_C)];
    let lib = gcc(dir.path(), "libsdt.so", &sources, &["-shared", "-fPIC"]);
    let data = std::fs::read(&lib).unwrap();
    assert_eq!(e_type(&data), ET_DYN);
    check_binary(&lib);
    let probes = probes(&lib).unwrap();
    assert_eq!(names(&probes), [("libprov", "hit"), ("prov", "b")]);
    assert_eq!(probes[0].args.len(), 1);
    assert_eq!(
        (probes[0].args[0].size, probes[0].args[0].signed),
        (4, true)
    );
    let sym = symbol_address(&data, "prov_b_semaphore").unwrap();
    assert_eq!(probes[1].semaphore_address, Some(sym));
    let off = probes[1].semaphore_offset.unwrap() as usize;
    assert_eq!(&data[off..off + 2], &0xBEEFu16.to_le_bytes());
}

/// i386 ELF (4-byte addresses in the note), static so that no 32-bit libc is needed.
#[test]
fn elf32_static_executable() {
    let dir = tmp();
    let src = r#"
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short p_s_semaphore __attribute__((unused)) __attribute__((section(".probes"))) = 0xBEEF;
volatile int g = 3;
void _start(void) { int x = g; if (p_s_semaphore) DTRACE_PROBE2(p, s, x, 7); for (;;); }
"#;
    let flags = [
        "-m32",
        "-nostdlib",
        "-static",
        "-idirafter",
        "/usr/include/x86_64-linux-gnu",
    ];
    let bin = gcc(dir.path(), "t32", &[("t32.c", src)], &flags);
    let data = std::fs::read(&bin).unwrap();
    assert!(!Elf::parse_header(&data)
        .unwrap()
        .container()
        .unwrap()
        .is_big());
    check_binary(&bin);
    let probes = probes(&bin).unwrap();
    assert_eq!(names(&probes), [("p", "s")]);
    let p = &probes[0];
    assert!(
        p.address >= 0x0804_8000 && p.address < 0x1_0000_0000,
        "{p:?}"
    );
    assert_ne!(p.address, p.offset);
    assert_eq!(p.semaphore_address, symbol_address(&data, "p_s_semaphore"));
    let off = p.semaphore_offset.unwrap() as usize;
    assert_eq!(&data[off..off + 2], &0xBEEFu16.to_le_bytes());
    assert_eq!((p.args[0].size, p.args[0].signed), (4, true));
    assert_eq!(p.args[1].location, ArgLocation::Constant(7));
}

/// Real arguments gcc emits that ftrace cannot fetch: `probes` fails naming the probe, while
/// `raw_probes` lists everything and `find` still works for the other probes.
#[test]
fn unsupported_arguments_fail_only_where_needed() {
    let dir = tmp();
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
    let bin = gcc(dir.path(), "badargs", &[("g.c", src)], &[]);
    let raw = check_binary(&bin);
    assert_eq!(raw[0].args, "-4@counter(%rip)");
    assert!(
        raw[1].args.contains(','),
        "indexed operand: {}",
        raw[1].args
    );

    let err = probes(&bin).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SdtError::BadArg { .. }), "{err:?}");
    assert!(
        msg.contains("-4@counter(%rip)") && msg.contains("prov:glob"),
        "{msg}"
    );
    let err = find(&bin, "prov", "idx").unwrap_err();
    assert!(err.to_string().contains("indexed memory operand"), "{err}");
    let ok = find(&bin, "prov", "ok").unwrap();
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0].args[0].ftrace_fetcharg().unwrap(), "%di:s32");
    assert_eq!(ok[0].offset, raw[2].offset);
}

/// The prelink adjustment on real bytes: moving the note's pc and base together changes
/// nothing; moving only the base moves the site the other way.
#[test]
fn stapsdt_base_adjustment_on_patched_notes() {
    let dir = tmp();
    let bin = gcc(
        dir.path(),
        "pie",
        &[("pie.c", PROBES_C)],
        &["-fPIE", "-pie"],
    );
    let data = std::fs::read(&bin).unwrap();
    let before = probes(&bin).unwrap();
    let first = &readelf_notes(&bin)[0];
    let mut pattern = first.location.to_le_bytes().to_vec();
    pattern.extend_from_slice(&first.base.to_le_bytes());
    let at = data
        .windows(16)
        .position(|w| w == pattern.as_slice())
        .expect("note descriptor in the file");
    let patch = |pc: u64, base: u64| {
        let mut d = data.clone();
        d[at..at + 8].copy_from_slice(&pc.to_le_bytes());
        d[at + 8..at + 16].copy_from_slice(&base.to_le_bytes());
        probes_from_bytes(&d, &bin).unwrap()
    };
    let shifted = patch(first.location + 0x1000, first.base + 0x1000);
    assert_eq!(shifted, before);
    let base_down = patch(first.location, first.base - 1);
    assert_eq!(base_down[0].address, before[0].address + 1);
    assert_eq!(base_down[0].offset, before[0].offset + 1);
    assert_eq!(base_down[1..], before[1..]);
}

#[test]
fn errors_name_the_fix() {
    let dir = tmp();
    let missing = dir.path().join("missing");
    let err = probes(&missing).unwrap_err();
    assert!(matches!(err, SdtError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("check the path"), "{err}");

    // Never opened: a FIFO would block, /dev/zero never ends.
    for special in [Path::new("/dev/zero"), dir.path()] {
        let err = probes(special).unwrap_err();
        assert!(matches!(err, SdtError::NotAFile { .. }), "{err:?}");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let err = crate::functions(special, "*").unwrap_err();
        assert!(matches!(err, SdtError::NotAFile { .. }), "{err:?}");
    }

    let script = dir.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let err = probes(&script).unwrap_err();
    assert!(matches!(err, SdtError::NotElf { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("give the path of a compiled binary"),
        "{err}"
    );

    // An object file has notes but no segments to map them through.
    let obj = gcc(dir.path(), "pie.o", &[("pie.c", PROBES_C)], &["-c"]);
    let err = probes(&obj).unwrap_err();
    assert!(matches!(err, SdtError::BadNote { .. }), "{err:?}");
    assert!(
        err.to_string().contains("link it into an executable"),
        "{err}"
    );

    let nf = find(
        &gcc(dir.path(), "pie", &[("pie.c", PROBES_C)], &[]),
        "prov",
        "zzz",
    );
    let err = nf.unwrap_err();
    assert!(matches!(err, SdtError::NoSuchProbe { .. }), "{err:?}");
    assert!(err.to_string().contains("rtrace-bench probes"), "{err}");
}

#[test]
fn elf_without_notes_has_no_probes() {
    let dir = tmp();
    let bin = gcc(
        dir.path(),
        "plain",
        &[("plain.c", "int main(void) { return 0; }\n")],
        &[],
    );
    assert!(!has_stapsdt_section(&std::fs::read(&bin).unwrap()));
    assert_eq!(probes(&bin).unwrap(), vec![]);
    assert_eq!(raw_probes(&bin).unwrap(), vec![]);
}

#[test]
fn corrupt_files() {
    let dir = tmp();
    let bin = gcc(dir.path(), "pie", &[("pie.c", PROBES_C)], &[]);
    let data = std::fs::read(&bin).unwrap();

    // Truncated: the section headers are at the end of the file.
    let err = probes_from_bytes(&data[..data.len() / 2], &bin).unwrap_err();
    assert!(matches!(err, SdtError::NotElf { .. }), "{err:?}");
    assert!(err.to_string().contains("truncated"), "{err}");

    let elf = Elf::parse(&data).unwrap();
    let note = elf
        .section_headers
        .iter()
        .find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(".note.stapsdt"))
        .unwrap();
    let at = note.sh_offset as usize;
    // First note header: namesz, descsz, type.
    assert_eq!(&data[at..at + 4], &8u32.to_le_bytes());
    assert_eq!(&data[at + 8..at + 12], &3u32.to_le_bytes());

    let mut bad_size = data.clone();
    bad_size[at + 4..at + 8].copy_from_slice(&0xffffu32.to_le_bytes());
    let err = probes_from_bytes(&bad_size, &bin).unwrap_err();
    assert!(matches!(err, SdtError::BadNote { .. }), "{err:?}");
    assert!(err.to_string().contains("truncated or corrupt"), "{err}");

    let mut short_desc = data.clone();
    short_desc[at + 4..at + 8].copy_from_slice(&20u32.to_le_bytes());
    // The descriptor is cut short and the next note header is read from the wrong place.
    let err = probes_from_bytes(&short_desc, &bin).unwrap_err();
    assert!(matches!(err, SdtError::BadNote { .. }), "{err:?}");

    // A note of another type in .note.stapsdt is skipped, not misread.
    let mut other_type = data.clone();
    other_type[at + 8..at + 12].copy_from_slice(&1u32.to_le_bytes());
    let rest = probes_from_bytes(&other_type, &bin).unwrap();
    assert_eq!(names(&rest), [("prov", "two"), ("prov", "none")]);
}

/// Probes of installed system files, where present: libc (Debian's glibc is built without
/// systemtap, so it must give an empty list), libstdc++ (`libstdcxx:throw`...), python3
/// (semaphores in a non-PIE executable).
#[test]
fn system_binaries() {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    if !libc.exists() {
        eprintln!("skipped libc: {} is absent", libc.display());
    } else if !has_stapsdt_section(&std::fs::read(libc).unwrap()) {
        eprintln!(
            "{} has no .note.stapsdt: checking it gives no probes",
            libc.display()
        );
        assert_eq!(probes(libc).unwrap(), vec![]);
    } else {
        check_binary(libc);
        let all = probes(libc).unwrap();
        assert!(
            names(&all).contains(&("libc", "setjmp")),
            "{:?}",
            names(&all)
        );
        assert!(names(&all)
            .iter()
            .any(|(p, n)| *p == "libc" && n.starts_with("memory_")));
    }

    let libstdcxx = Path::new("/lib/x86_64-linux-gnu/libstdc++.so.6");
    if libstdcxx.exists() {
        check_binary(libstdcxx);
        let throw = find(libstdcxx, "libstdcxx", "throw").unwrap();
        assert!(throw
            .iter()
            .all(|p| p.args.len() == 2 && !p.has_semaphore()));
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
