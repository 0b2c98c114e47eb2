//! The parts of an ELF file USDT discovery needs: `PT_LOAD` segments (to turn virtual addresses
//! into file offsets), the `.stapsdt.base` address and the `.note.stapsdt` notes. Only headers
//! are parsed (no symbol tables), so stripped or unusual binaries work too.

use goblin::container::{Container, Ctx};
use goblin::elf::note::NoteDataIterator;
use goblin::elf::program_header::{ProgramHeader, PF_W, PF_X, PT_LOAD};
use goblin::elf::section_header::{SectionHeader, SHN_XINDEX, SHT_NOTE};
use goblin::elf::Elf;

/// Note type of sys/sdt.h notes (`NT_STAPSDT`).
pub(crate) const NT_STAPSDT: u32 = 3;
/// Note owner name of sys/sdt.h notes.
pub(crate) const STAPSDT_NAME: &str = "stapsdt";

/// A `PT_LOAD` segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    vaddr: u64,
    offset: u64,
    filesz: u64,
    memsz: u64,
    flags: u32,
}

impl Segment {
    fn contains_in_file(&self, addr: u64) -> bool {
        addr >= self.vaddr && addr - self.vaddr < self.filesz
    }
    fn contains_in_memory(&self, addr: u64) -> bool {
        addr >= self.vaddr && addr - self.vaddr < self.memsz
    }
    fn file_offset(&self, addr: u64) -> u64 {
        addr - self.vaddr + self.offset
    }
}

/// Segments and note locations of one ELF file.
#[derive(Debug)]
pub(crate) struct Layout {
    pub is_64: bool,
    pub little_endian: bool,
    /// `e_machine` (`EM_X86_64` = 62).
    pub machine: u16,
    ctx: Ctx,
    loads: Vec<Segment>,
    /// `sh_addr` of `.stapsdt.base`, if the section exists with a non-zero address.
    stapsdt_base: Option<u64>,
    /// `.note.stapsdt` sections: file offset, size, alignment.
    note_sections: Vec<(usize, usize, usize)>,
}

impl Layout {
    /// Parses the ELF header, program headers and section headers. The error is a reason
    /// suitable for [`crate::SdtError::NotElf`].
    pub fn parse(data: &[u8]) -> Result<Layout, String> {
        if !data.starts_with(b"\x7fELF") {
            let head: Vec<String> = data.iter().take(4).map(|b| format!("{b:02x}")).collect();
            return Err(format!(
                "no ELF magic 7f 45 4c 46 (the file starts with [{}])",
                head.join(" ")
            ));
        }
        let corrupt =
            |what: &str, e: goblin::error::Error| format!("truncated or corrupt ELF {what}: {e}");
        let header = Elf::parse_header(data).map_err(|e| corrupt("header", e))?;
        let container = header.container().map_err(|e| corrupt("header", e))?;
        let endian = header.endianness().map_err(|e| corrupt("header", e))?;
        let ctx = Ctx::new(container, endian);
        let phdrs =
            ProgramHeader::parse(data, header.e_phoff as usize, header.e_phnum as usize, ctx)
                .map_err(|e| corrupt("program headers", e))?;
        let shdrs =
            SectionHeader::parse(data, header.e_shoff as usize, header.e_shnum as usize, ctx)
                .map_err(|e| corrupt("section headers", e))?;
        let loads = phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .map(|p| Segment {
                vaddr: p.p_vaddr,
                offset: p.p_offset,
                filesz: p.p_filesz,
                memsz: p.p_memsz,
                flags: p.p_flags,
            })
            .collect();

        let shstrndx = match header.e_shstrndx as u32 {
            SHN_XINDEX => shdrs.first().map_or(0, |s| s.sh_link as usize),
            i => i as usize,
        };
        let names = shdrs
            .get(shstrndx)
            .and_then(|s| section_bytes(data, s).ok());
        let name_of = |s: &SectionHeader| -> Option<&[u8]> {
            let rest = names?.get(s.sh_name..)?;
            Some(&rest[..rest.iter().position(|&b| b == 0)?])
        };
        let mut stapsdt_base = None;
        let mut note_sections = Vec::new();
        for s in &shdrs {
            match name_of(s) {
                Some(b".stapsdt.base") if s.sh_addr != 0 => stapsdt_base = Some(s.sh_addr),
                Some(b".note.stapsdt") if s.sh_type == SHT_NOTE => {
                    section_bytes(data, s)?;
                    note_sections.push((
                        s.sh_offset as usize,
                        s.sh_size as usize,
                        s.sh_addralign as usize,
                    ));
                }
                _ => {}
            }
        }
        Ok(Layout {
            is_64: container == Container::Big,
            little_endian: endian.is_little(),
            machine: header.e_machine,
            ctx,
            loads,
            stapsdt_base,
            note_sections,
        })
    }

    /// The descriptors of all `stapsdt` notes (type 3) in `.note.stapsdt`, in file order.
    pub fn stapsdt_descs<'a>(&self, data: &'a [u8]) -> Result<Vec<&'a [u8]>, String> {
        let mut out = Vec::new();
        for &(offset, size, align) in &self.note_sections {
            let end = offset + size;
            let notes = NoteDataIterator {
                data: &data[..end],
                size: end,
                offset,
                ctx: (align, self.ctx),
            };
            for note in notes {
                let note = note.map_err(|e| {
                    format!(
                        "cannot parse .note.stapsdt at file offset {offset:#x}: {e} (the file \
                         is truncated or corrupt; rebuild it)"
                    )
                })?;
                if note.n_type == NT_STAPSDT && note.name == STAPSDT_NAME {
                    out.push(note.desc);
                }
            }
        }
        Ok(out)
    }

    /// Applies the prelink adjustment: `pc + (addr(.stapsdt.base) - note.base)`, or `pc`
    /// unchanged without `.stapsdt.base` (as libbpf does).
    pub fn adjust_pc(&self, pc: u64, note_base: u64) -> u64 {
        let abs = match self.stapsdt_base {
            Some(base) => pc.wrapping_add(base.wrapping_sub(note_base)),
            None => pc,
        };
        if self.is_64 {
            abs
        } else {
            abs & 0xffff_ffff
        }
    }

    /// File offset of a probe site, through the executable `PT_LOAD` segment containing it.
    pub fn code_offset(&self, addr: u64) -> Result<u64, String> {
        self.no_loads_error()?;
        if let Some(offset) = self.map(addr, PF_X, Segment::contains_in_file) {
            return Ok(offset);
        }
        let place = if self.loads.iter().any(|s| s.contains_in_memory(addr)) {
            "not in an executable PT_LOAD segment"
        } else {
            "outside every PT_LOAD segment"
        };
        Err(format!(
            "site {addr:#x} is {place} (the note does not match the code, e.g. after \
             post-processing the binary; rebuild it)"
        ))
    }

    /// File offset of a semaphore, through the writable `PT_LOAD` segment containing it. The
    /// address is used as is (not base-adjusted), as libbpf does.
    pub fn semaphore_offset(&self, addr: u64) -> Result<u64, String> {
        self.no_loads_error()?;
        let offset = self.map(addr, PF_W, Segment::contains_in_memory);
        offset.ok_or_else(|| {
            format!(
                "semaphore {addr:#x} is not in a writable PT_LOAD segment (declare it as \
                 `unsigned short PROVIDER_NAME_semaphore __attribute__((section(\".probes\")))`, \
                 or rebuild the binary)"
            )
        })
    }

    /// Virtual address of the code at file offset `offset`, through the executable `PT_LOAD`
    /// segment whose file data contains it (the inverse of [`Layout::code_offset`]).
    pub fn code_address(&self, offset: u64) -> Option<u64> {
        let mut loads = self.loads.iter();
        let seg = loads
            .find(|s| s.flags & PF_X != 0 && offset >= s.offset && offset - s.offset < s.filesz)?;
        Some(offset - seg.offset + seg.vaddr)
    }

    /// File offset of `addr` through the first `PT_LOAD` segment with `flag` that `contains` it.
    fn map(&self, addr: u64, flag: u32, contains: fn(&Segment, u64) -> bool) -> Option<u64> {
        let mut loads = self.loads.iter();
        let seg = loads.find(|s| s.flags & flag != 0 && contains(s, addr))?;
        Some(seg.file_offset(addr))
    }

    fn no_loads_error(&self) -> Result<(), String> {
        if self.loads.is_empty() {
            return Err(
                "the file has no PT_LOAD segments (an object file?); link it into an \
                        executable or shared library first"
                    .to_owned(),
            );
        }
        Ok(())
    }
}

/// The file bytes of a section, or an error if it lies outside the file.
fn section_bytes<'a>(data: &'a [u8], s: &SectionHeader) -> Result<&'a [u8], String> {
    let start = usize::try_from(s.sh_offset).ok();
    let end = start.and_then(|st| st.checked_add(usize::try_from(s.sh_size).ok()?));
    match (start, end) {
        (Some(start), Some(end)) if end <= data.len() => Ok(&data[start..end]),
        _ => Err(format!(
            "section at file offset {:#x} of {:#x} bytes extends past the end of the {}-byte file \
             (truncated file?)",
            s.sh_offset,
            s.sh_size,
            data.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(loads: Vec<Segment>, stapsdt_base: Option<u64>, is_64: bool) -> Layout {
        Layout {
            is_64,
            little_endian: true,
            machine: goblin::elf::header::EM_X86_64,
            ctx: Ctx::default(),
            loads,
            stapsdt_base,
            note_sections: vec![],
        }
    }

    fn seg(vaddr: u64, offset: u64, filesz: u64, memsz: u64, flags: u32) -> Segment {
        Segment {
            vaddr,
            offset,
            filesz,
            memsz,
            flags,
        }
    }

    const R: u32 = 4;
    const RX: u32 = 5;
    const RW: u32 = 6;

    /// The layout of the PIE built with `--section-start=.text=0x10000` (readelf -l): two
    /// executable segments, the second one at vaddr != offset.
    fn pie_with_moved_text() -> Layout {
        layout(
            vec![
                seg(0, 0, 0x650, 0x650, R),
                seg(0x1000, 0x1000, 0x48, 0x48, RX),
                seg(0x10000, 0x2000, 0x135, 0x135, RX),
                seg(0x11000, 0x3000, 0xdc, 0xdc, R),
                seg(0x12dd0, 0x3dd0, 0x248, 0x250, RW),
            ],
            Some(0x11004),
            true,
        )
    }

    #[test]
    fn code_offset_uses_the_executable_segment_containing_the_site() {
        let l = pie_with_moved_text();
        assert_eq!(l.code_offset(0x1002e), Ok(0x202e));
        assert_eq!(l.code_offset(0x1010), Ok(0x1010));
        // In a read-only segment: an error, not a bogus offset.
        let e = l.code_offset(0x11004).unwrap_err();
        assert!(e.contains("not in an executable PT_LOAD segment"), "{e}");
        let e = l.code_offset(0x9_0000).unwrap_err();
        assert!(e.contains("outside every PT_LOAD segment"), "{e}");
        // One past the end of the segment's file data.
        assert!(l.code_offset(0x10135).is_err());
        assert_eq!(l.code_offset(0x10134), Ok(0x2134));
        // And back.
        assert_eq!(l.code_address(0x202e), Some(0x1002e));
        assert_eq!(l.code_address(0x1010), Some(0x1010));
        assert_eq!(l.code_address(0x3004), None, "read-only segment");
    }

    #[test]
    fn semaphore_offset_uses_the_writable_segment() {
        let l = pie_with_moved_text();
        assert_eq!(l.semaphore_offset(0x12dd0), Ok(0x3dd0));
        assert_eq!(l.semaphore_offset(0x13010), Ok(0x4010));
        // .bss part of the segment (memsz > filesz) still maps, like libbpf.
        assert_eq!(l.semaphore_offset(0x1301e), Ok(0x401e));
        assert!(l.semaphore_offset(0x13020).is_err());
        let e = l.semaphore_offset(0x1002e).unwrap_err();
        assert!(e.contains("not in a writable PT_LOAD segment"), "{e}");
    }

    #[test]
    fn no_segments_means_object_file() {
        let l = layout(vec![], None, true);
        for e in [l.code_offset(0x10), l.semaphore_offset(0x10)] {
            assert!(e.unwrap_err().contains("object file"));
        }
    }

    #[test]
    fn prelink_adjustment() {
        let l = pie_with_moved_text();
        // Unmoved: pc unchanged.
        assert_eq!(l.adjust_pc(0x1002e, 0x11004), 0x1002e);
        // The library was moved by +0x5000 after linking: .stapsdt.base moved, the note not.
        let moved = layout(vec![], Some(0x16004), true);
        assert_eq!(moved.adjust_pc(0x1002e, 0x11004), 0x1502e);
        // Moved down.
        let down = layout(vec![], Some(0x1004), true);
        assert_eq!(down.adjust_pc(0x1002e, 0x11004), 0x2e);
        // No .stapsdt.base: no adjustment.
        let none = layout(vec![], None, true);
        assert_eq!(none.adjust_pc(0x1002e, 0x11004), 0x1002e);
        // 32-bit arithmetic wraps at 32 bits.
        let l32 = layout(vec![], Some(0x0800_0000), false);
        assert_eq!(l32.adjust_pc(0x0804_901a, 0x0804_a000), 0x07ff_f01a);
        let l32 = layout(vec![], Some(0x0804_a000), false);
        assert_eq!(l32.adjust_pc(0x0804_901a, 0x0800_0000), 0x0809_301a);
    }

    #[test]
    fn rejects_non_elf_and_truncated_files() {
        let e = Layout::parse(b"#!/bin/sh\necho hi\n").unwrap_err();
        assert!(e.contains("no ELF magic"), "{e}");
        assert!(e.contains("[23 21 2f 62]"), "{e}");
        assert!(Layout::parse(b"").unwrap_err().contains("[]"));
        let e = Layout::parse(b"\x7fELF\x02\x01\x01").unwrap_err();
        assert!(e.contains("truncated or corrupt ELF header"), "{e}");
    }
}
