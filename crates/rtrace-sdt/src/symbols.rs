//! Function symbols of an ELF file (symtab and dynsym) with the file offsets uprobes take:
//! the dynamic-instrumentation counterpart of USDT notes.

use crate::elf::Layout;
use crate::SdtError;
use goblin::elf::sym::STT_FUNC;
use goblin::elf::Elf;
use serde::Serialize;
use std::path::Path;

/// A defined function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Function {
    pub name: String,
    /// Virtual address (`st_value`).
    pub address: u64,
    /// File offset of the first instruction: where a uprobe goes.
    pub offset: u64,
    /// Size in bytes (`st_size`; 0 if unknown).
    pub size: u64,
}

/// Defined functions of `path` whose name matches the glob `pattern` (`*`, `?`, `[...]`),
/// sorted by name, without duplicates (a symbol in both symtab and dynsym is listed once).
pub fn functions(path: &Path, pattern: &str) -> Result<Vec<Function>, SdtError> {
    let data = crate::read(path)?;
    let not_elf = |reason: String| SdtError::NotElf {
        path: path.to_owned(),
        reason,
    };
    let glob = glob::Pattern::new(pattern).map_err(|e| SdtError::BadPattern {
        pattern: pattern.to_owned(),
        reason: e.to_string(),
    })?;
    let layout = Layout::parse(&data).map_err(not_elf)?;
    let elf = Elf::parse(&data).map_err(|e| not_elf(e.to_string()))?;
    let mut out: Vec<Function> = Vec::new();
    let tables = [(&elf.syms, &elf.strtab), (&elf.dynsyms, &elf.dynstrtab)];
    for (syms, strtab) in tables {
        for sym in syms.iter() {
            if sym.st_type() != STT_FUNC || sym.st_shndx == 0 || sym.st_value == 0 {
                continue;
            }
            let Some(name) = strtab.get_at(sym.st_name) else {
                continue;
            };
            // Versioned dynamic names (`memcpy@@GLIBC_2.14`) match by their base name.
            let base = name.split('@').next().unwrap_or(name);
            if !glob.matches(base) {
                continue;
            }
            let Ok(offset) = layout.code_offset(sym.st_value) else {
                continue;
            };
            out.push(Function {
                name: base.to_owned(),
                address: sym.st_value,
                offset,
                size: sym.st_size,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name).then(a.address.cmp(&b.address)));
    out.dedup_by(|a, b| a.name == b.name && a.address == b.address);
    Ok(out)
}

/// File offsets where a defined function starts (symtab and dynsym), sorted, and whether the
/// file has a `.symtab` (a stripped file lists only its exported functions).
pub(crate) fn entry_offsets(data: &[u8], layout: &Layout) -> (Vec<u64>, bool) {
    let Ok(elf) = Elf::parse(data) else {
        return (Vec::new(), false);
    };
    let mut out: Vec<u64> = [&elf.syms, &elf.dynsyms]
        .into_iter()
        .flat_map(|syms| syms.iter())
        .filter(|s| s.st_type() == STT_FUNC && s.st_shndx != 0 && s.st_value != 0)
        .filter_map(|s| layout.code_offset(s.st_value).ok())
        .collect();
    out.sort_unstable();
    out.dedup();
    (out, !elf.syms.is_empty())
}

/// The function named exactly `name`; [`SdtError::NoSuchFunction`] if absent.
pub fn function(path: &Path, name: &str) -> Result<Function, SdtError> {
    functions(path, &glob::Pattern::escape(name))?
        .into_iter()
        .next()
        .ok_or_else(|| SdtError::NoSuchFunction {
            path: path.to_owned(),
            name: name.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{gcc, section_offset, symbol_address};

    const SRC: &str = r#"
__attribute__((noinline)) long marker_hit(long i) { __asm__ volatile("" ::: "memory"); return i; }
__attribute__((noinline)) long marker_idle(long i) { __asm__ volatile("" ::: "memory"); return i + 1; }
int main(int argc, char **argv) { long s = 0; for (long i = 0; i < argc; i++) s += marker_hit(i); return (int)s; }
"#;

    /// PIE, non-PIE, text away from its file offset, shared library.
    #[test]
    fn functions_resolve_to_file_offsets() {
        let moved = "-Wl,--section-start=.text=0x10000";
        for flags in ["", "-no-pie", moved, "-shared -fPIC"] {
            let (_dir, bin, data) = gcc(&[SRC], flags);
            let f = functions(&bin, "marker_*").unwrap();
            let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(names, ["marker_hit", "marker_idle"], "{flags}");
            for func in &f {
                assert_eq!(Some(func.address), symbol_address(&data, &func.name));
                assert!(func.size > 0);
                // The function's bytes at the offset are the code at the address: compare with
                // the section-based mapping used by the fixtures.
                let (section, off) = section_offset(&data, func.address).unwrap();
                assert_eq!(
                    (section.as_str(), func.offset),
                    (".text", off),
                    "{}",
                    func.name
                );
            }
            assert_eq!(function(&bin, "marker_idle").unwrap().name, "marker_idle");
            let nope = function(&bin, "nope");
            assert!(
                matches!(nope, Err(SdtError::NoSuchFunction { .. })),
                "{nope:?}"
            );
            let bad = functions(&bin, "[unclosed");
            assert!(matches!(bad, Err(SdtError::BadPattern { .. })), "{bad:?}");
        }
    }

    #[test]
    fn libc_functions_are_found_by_base_name() {
        let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        if !libc.exists() {
            eprintln!("skipped: no {}", libc.display());
            return;
        }
        let f = function(libc, "getpid").unwrap();
        assert!(f.offset > 0);
    }
}
