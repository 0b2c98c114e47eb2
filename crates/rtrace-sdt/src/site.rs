//! What a uprobe costs at a site: the first instruction at a file offset and how x86-64 Linux
//! runs it when a uprobe replaces it with `int3` (`arch_uprobe_analyze_insn`,
//! arch/x86/kernel/uprobes.c).
//!
//! The kernel **emulates** a few instructions (one `int3` trap: ~0.4 µs per hit with a counting
//! bpftrace program on this machine's 6.18 VM), **single-steps** every other one out of line
//! (`int3` plus a debug trap: ~14 µs), **optimises** a 5-byte NOP into a call to
//! `[uprobes-trampoline]` after its first hit (Linux ≥ 6.18: ~0.19 µs), and **refuses** some
//! (registration fails with ENOTSUPP, 524). The rules, as in the 6.18 source (read in
//! gregkh/linux at 663efc5: the version with the nop5 optimisation and before 8a5c6cbfe4a3,
//! "x86/insn,uprobes,alternative: Unify insn_is_nop()", merged for 6.19):
//!
//! 1. Refused: a lock or es/cs/ss/ds segment prefix (so also the kernel's own 9- to 11-byte
//!    NOPs, which carry `2e`), `mov` to `%ss`, and an opcode byte absent from `good_insns_64`
//!    (int3, int, into, iret, hlt, in/out/ins/outs, cli/sti, int1, far call/jmp, and the
//!    opcodes invalid in 64-bit mode). `0f` is in that table, so the two-byte table is never
//!    consulted: `syscall` and `ud2` are accepted and single-stepped.
//! 2. Emulated as a NOP: the exact bytes of the kernel's `x86_nops[len]` (`90`, `66 90`,
//!    `0f 1f 00`, `0f 1f 40 00`, `0f 1f 44 00 00`, `66 0f 1f 44 00 00`, `0f 1f 80 00 00 00 00`,
//!    `0f 1f 84 00 00 00 00 00`), and opcode `90` whatever its prefixes (`f3 90` pause and
//!    `41 90` xchg %eax,%r8d too). Other NOP encodings (`66 0f 1f 84 00 …`, `0f 1f 40 08`) are
//!    single-stepped.
//! 3. Emulated branches: `jmp` rel8/rel32 (`eb`, `e9`), `call` rel32 (`e8`), `jcc` rel8
//!    (`70`–`7f`) and rel32 (`0f 80`–`0f 8f`); one with a `66` prefix is refused.
//! 4. Emulated `push`: `50`–`57`, and `41 50`–`41 57` (r8–r15); `48 55` is single-stepped.
//! 5. A 5-byte instruction with opcode `90` or `0f 1f /0` that does not cross a page is
//!    optimised (`nop5`).
//!
//! The kernel decides on the opcode byte alone, which for a VEX/EVEX instruction is the byte
//! after the VEX prefix: `vmovdqu` (`c5 fa 6f`, "outs") is refused, and `vzeroupper`
//! (`c5 f8 77`, "ja") or `vpbroadcastb` (`c4 e2 79 78`, "js") is "emulated" as a conditional
//! jump, that is skipped (measured: the traced `vpbroadcastb` leaves its destination unchanged).
//! This module reproduces that too.
//!
//! The rules were checked on this machine (Linux 6.18.44) with a C program whose functions
//! start with each instruction: its cost per call under bpftrace's `uprobe:…{ @ = count(); }`,
//! or the errno of enabling a tracefs uprobe; from the source only: `int`, in/out, cli/sti,
//! iret, `jmp` rel32, the page-crossing limit of nop5. From 6.19 on, `insn_is_nop()` replaces
//! rule 2: it also emulates `0f 1f /0` with any operand, `mov %reg,%reg` and `lea 0(%reg),%reg`
//! of native size, and `jmp +0`, but no longer `f3 90` or a REX.B `90`. Later, the optimisation
//! moved from nop5 to the 10-byte `66 2e 0f 1f 84 00 00 00 00 00` (`lea -0x80(%rsp),%rsp; call`,
//! as the nop5's `call` clobbered the red zone: 554ba38456da "uprobes/x86: Move optimized
//! uprobe from nop5 to nop10", tip perf/urgent, July 2026, with libbpf's combo becoming
//! `nop; nop10`); a kernel with that change emulates a nop5 and optimises the nop10 this module
//! calls refused.
//!
//! Only x86-64 ELF files are classified: a site of another machine is [`Mechanism::Unknown`].

use crate::elf::Layout;
use crate::SdtError;
use goblin::elf::header::EM_X86_64;
use iced_x86::{Decoder, DecoderError, DecoderOptions, Formatter, GasFormatter, Instruction};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// The longest x86 instruction.
const MAX_INSN: usize = 15;
/// The page size a nop5 must not cross (x86-64 base pages).
const PAGE: u64 = 4096;
/// libbpf's USDT `nop; nop5` site (`has_nop_combo` in usdt.c, libbpf 1.6 and 1.7).
const NOP_NOP5: [u8; 6] = [0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00];

/// The instruction at a probe site and how a uprobe there runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSite {
    /// The instruction in GNU assembler syntax, e.g. `cmpb $0,0x1d3e4d(%rip)`; `(bad)` if the
    /// bytes do not decode.
    pub instruction: String,
    /// Its bytes in hex, e.g. `80 3d 4d 3e 1d 00 00`.
    pub bytes: String,
    /// How the kernel runs it on every hit.
    pub mechanism: Mechanism,
    /// Whether a function symbol starts here: the probe then traps inside a called function,
    /// whose `ret` follows the trap (measured on this machine: ~300 ns dearer than the same
    /// `nop` probed inline, nothing extra when the function returns by `jmp`). `None` when the
    /// file has no `.symtab` (stripped) and the site is no dynamic symbol: not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_entry: Option<bool>,
}

/// How x86-64 Linux runs the instruction a uprobe replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Mechanism {
    /// The kernel does what the instruction would have done: one `int3` trap per hit.
    Emulated { op: Emulation },
    /// A 5-byte NOP that Linux ≥ 6.18 rewrites, after the first hit, into a call to
    /// `[uprobes-trampoline]` and the `uprobe` syscall (no trap); older kernels emulate it.
    Nop5,
    /// Executed out of line in the XOL area: an `int3` and a debug trap per hit.
    SingleStepped {
        /// With a RIP-relative operand, rewritten to go through a scratch register.
        rip_relative: bool,
    },
    /// The kernel will not probe it: attaching fails with ENOTSUPP.
    Refused { reason: String },
    /// Not classified (bytes that do not decode, or not an x86-64 file).
    Unknown { reason: String },
}

/// What an emulated instruction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Emulation {
    Nop,
    Push,
    Jmp,
    Call,
    Jcc,
}

impl Mechanism {
    /// One line for people: `emulated (push)`, `single-stepped out of line (RIP-relative)`.
    pub fn label(&self) -> String {
        match self {
            Mechanism::Emulated { op } => format!("emulated ({op})"),
            Mechanism::Nop5 => "nop5: optimizable".into(),
            Mechanism::SingleStepped {
                rip_relative: false,
            } => "single-stepped out of line".into(),
            Mechanism::SingleStepped { rip_relative: true } => {
                "single-stepped out of line (RIP-relative)".into()
            }
            Mechanism::Refused { reason } => format!("refused by the kernel ({reason})"),
            Mechanism::Unknown { reason } => format!("unknown ({reason})"),
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

impl fmt::Display for Emulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Emulation::Nop => "nop",
            Emulation::Push => "push",
            Emulation::Jmp => "jmp",
            Emulation::Call => "call",
            Emulation::Jcc => "jcc",
        })
    }
}

/// The probe site at `file_offset` of the ELF file `path` (a [`crate::Probe`]'s or
/// [`crate::Function`]'s `offset`).
pub fn probe_site(path: &Path, file_offset: u64) -> Result<ProbeSite, SdtError> {
    ProbeSites::read(path)?.at(file_offset)
}

/// An ELF file read once, for the probe sites at many of its offsets.
pub struct ProbeSites {
    path: PathBuf,
    data: Vec<u8>,
    layout: Layout,
    /// File offsets where a function symbol starts, sorted.
    entries: Vec<u64>,
    /// Whether the file keeps its full symbol table (`.symtab`).
    has_symtab: bool,
}

impl ProbeSites {
    pub fn read(path: &Path) -> Result<ProbeSites, SdtError> {
        let data = crate::read(path)?;
        let layout = Layout::parse(&data).map_err(|reason| SdtError::NotElf {
            path: path.to_owned(),
            reason,
        })?;
        let (entries, has_symtab) = crate::symbols::entry_offsets(&data, &layout);
        Ok(ProbeSites {
            path: path.to_owned(),
            data,
            layout,
            entries,
            has_symtab,
        })
    }

    /// The probe site at `file_offset`; [`SdtError::OffsetOutsideFile`] past the end.
    pub fn at(&self, file_offset: u64) -> Result<ProbeSite, SdtError> {
        let start = usize::try_from(file_offset)
            .ok()
            .filter(|&s| s < self.data.len())
            .ok_or_else(|| SdtError::OffsetOutsideFile {
                path: self.path.clone(),
                offset: file_offset,
                len: self.data.len() as u64,
            })?;
        let bytes = &self.data[start..self.data.len().min(start + MAX_INSN)];
        if self.layout.machine != EM_X86_64 || !self.layout.is_64 {
            let reason = format!(
                "not an x86-64 ELF file: e_machine {}, {}-bit",
                self.layout.machine,
                if self.layout.is_64 { 64 } else { 32 }
            );
            return Ok(undecoded(bytes, "(not decoded)", reason));
        }
        let ip = self.layout.code_address(file_offset).unwrap_or(file_offset);
        // A mapping keeps a file offset's place in its page (p_offset ≡ p_vaddr mod page).
        let mut site = classify(bytes, ip, file_offset % PAGE);
        site.function_entry = self.function_entry(file_offset);
        Ok(site)
    }

    /// Whether a function starts at `file_offset`; `None` when a stripped file does not say.
    fn function_entry(&self, file_offset: u64) -> Option<bool> {
        let found = self.entries.binary_search(&file_offset).is_ok();
        (found || self.has_symtab).then_some(found)
    }

    /// Where libbpf attaches instead for a USDT probe whose note gives `note_offset`: at the
    /// nop5 one byte on, if the site is `nop; nop5` and the kernel has the uprobe syscall
    /// (Linux ≥ 6.18). Tools that attach at the note's address (ftrace, bpftrace 0.17) hit
    /// the `nop`.
    pub fn libbpf_usdt_nop5(&self, note_offset: u64) -> Option<u64> {
        let start = usize::try_from(note_offset).ok()?;
        let bytes = self.data.get(start..start.checked_add(NOP_NOP5.len())?)?;
        (bytes == NOP_NOP5).then_some(note_offset + 1)
    }
}

/// The site whose first instruction starts `bytes` (up to 15 of them), at virtual address `ip`
/// and `page_offset` bytes into its page.
fn classify(bytes: &[u8], ip: u64, page_offset: u64) -> ProbeSite {
    let mut decoder = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
    let insn = decoder.decode();
    if insn.is_invalid() {
        let reason = match decoder.last_error() {
            DecoderError::NoMoreBytes => "the file ends inside the instruction",
            _ => "the bytes are not a valid x86-64 instruction",
        };
        return undecoded(bytes, "(bad)", reason.into());
    }
    let bytes = &bytes[..insn.len()];
    ProbeSite {
        instruction: gas(&insn),
        bytes: hex(bytes),
        mechanism: mechanism(&insn, bytes, page_offset),
        function_entry: None,
    }
}

fn undecoded(bytes: &[u8], instruction: &str, reason: String) -> ProbeSite {
    ProbeSite {
        instruction: instruction.into(),
        bytes: hex(bytes),
        mechanism: Mechanism::Unknown { reason },
        function_entry: None,
    }
}

fn gas(insn: &Instruction) -> String {
    let mut formatter = GasFormatter::new();
    let options = formatter.options_mut();
    options.set_rip_relative_addresses(true);
    options.set_uppercase_hex(false);
    options.set_branch_leading_zeros(false);
    let mut out = String::new();
    formatter.format(insn, &mut out);
    out
}

fn hex(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.join(" ")
}

/// `arch_uprobe_analyze_insn` on the instruction `bytes` (valid, decoded as `insn`).
fn mechanism(insn: &Instruction, bytes: &[u8], page_offset: u64) -> Mechanism {
    let k = KernelView::of(bytes);
    let refused = |reason: String| Mechanism::Refused { reason };
    // uprobe_init_insn: is_prefix_bad, insn_masking_exception, good_insns_64.
    if let Some(p) = k.prefixes.iter().find_map(|&p| bad_prefix(p)) {
        return refused(format!("{p} prefix"));
    }
    let opcode = k.opcode.first().copied().unwrap_or_default();
    if k.opcode == [0x8e] && k.modrm_reg == Some(2) {
        return refused("mov to %ss".into());
    }
    if NOT_GOOD_64.contains(&opcode) {
        return refused(format!("opcode {opcode:#04x} is not in good_insns_64"));
    }
    // can_optimize: a 5-byte nop or nopl that does not cross a page.
    let nop_or_nopl = k.opcode == [0x90] || (k.opcode == [0x0f, 0x1f] && k.modrm_reg == Some(0));
    let optimizable = bytes.len() == 5 && nop_or_nopl && PAGE - page_offset >= 5;
    let analysed = match branch(&k, bytes) {
        Branch::Emulated(op) => Mechanism::Emulated { op },
        Branch::Refused(reason) => return refused(reason.into()),
        Branch::Other if is_emulated_push(&k, bytes) => Mechanism::Emulated {
            op: Emulation::Push,
        },
        Branch::Other => Mechanism::SingleStepped {
            rip_relative: insn.is_ip_rel_memory_operand(),
        },
    };
    match optimizable {
        true => Mechanism::Nop5,
        false => analysed,
    }
}

/// The fields of an instruction the kernel's decoder (arch/x86/lib/insn.c) hands the analysis.
struct KernelView<'a> {
    /// Legacy prefixes (`66`, `f3`, `2e`, `f0`...).
    prefixes: &'a [u8],
    /// The REX prefix, if any.
    rex: Option<u8>,
    /// Opcode bytes: `0f`-escaped ones whole (`0f 1f`, `0f 38 xx`); after a VEX or EVEX prefix
    /// only the byte that follows it.
    opcode: &'a [u8],
    /// The reg field of the byte after the opcode (meaningful where there is a ModRM byte).
    modrm_reg: Option<u8>,
}

impl<'a> KernelView<'a> {
    fn of(bytes: &'a [u8]) -> KernelView<'a> {
        let legacy = |b: u8| {
            matches!(
                b,
                0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0x66 | 0x67 | 0xf0 | 0xf2 | 0xf3
            )
        };
        let n_prefixes = bytes.iter().take_while(|&&b| legacy(b)).count();
        let n_rex = bytes[n_prefixes..]
            .iter()
            .take_while(|&&b| (0x40..=0x4f).contains(&b))
            .count();
        let at = n_prefixes + n_rex;
        let (start, len) = match bytes.get(at) {
            Some(0xc5) => (at + 2, 1),
            Some(0xc4) => (at + 3, 1),
            Some(0x62) => (at + 4, 1),
            Some(0x0f) if matches!(bytes.get(at + 1), Some(0x38 | 0x3a)) => (at, 3),
            Some(0x0f) => (at, 2),
            _ => (at, 1),
        };
        let end = bytes.len().min(start + len);
        KernelView {
            prefixes: &bytes[..n_prefixes],
            rex: n_rex.checked_sub(1).map(|last| bytes[n_prefixes + last]),
            opcode: &bytes[start.min(end)..end],
            modrm_reg: bytes.get(end).map(|m| (m >> 3) & 7),
        }
    }
}

/// The prefixes `is_prefix_bad` rejects, named.
fn bad_prefix(p: u8) -> Option<&'static str> {
    match p {
        0x26 => Some("es segment"),
        0x2e => Some("cs segment"),
        0x36 => Some("ss segment"),
        0x3e => Some("ds segment"),
        0xf0 => Some("lock"),
        _ => None,
    }
}

/// The opcode bytes `good_insns_64` leaves out.
const NOT_GOOD_64: [u8; 40] = [
    0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x60, 0x61, 0x62, 0x6c, 0x6d,
    0x6e, 0x6f, 0x82, 0x9a, 0xcc, 0xcd, 0xce, 0xcf, 0xd4, 0xd5, 0xd6, 0xe4, 0xe5, 0xe6, 0xe7, 0xea,
    0xec, 0xed, 0xee, 0xef, 0xf1, 0xf4, 0xfa, 0xfb,
];

/// The kernel's `x86_nops[1..=8]` (64-bit); 9 to 11 carry a cs prefix and are refused first.
const X86_NOPS: [&[u8]; 8] = [
    &[0x90],
    &[0x66, 0x90],
    &[0x0f, 0x1f, 0x00],
    &[0x0f, 0x1f, 0x40, 0x00],
    &[0x0f, 0x1f, 0x44, 0x00, 0x00],
    &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
    &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
    &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
];

/// What `branch_setup_xol_ops` makes of an instruction.
enum Branch {
    Emulated(Emulation),
    Refused(&'static str),
    /// Not one it handles (-ENOSYS): `push_setup_xol_ops` is asked next.
    Other,
}

fn branch(k: &KernelView, bytes: &[u8]) -> Branch {
    let jcc = |op: u8| (0x70..=0x7f).contains(&op);
    if X86_NOPS.contains(&bytes) {
        return Branch::Emulated(Emulation::Nop);
    }
    let op = match *k.opcode {
        [0x90] => return Branch::Emulated(Emulation::Nop),
        [0xeb] | [0xe9] => Emulation::Jmp,
        [0xe8] => Emulation::Call,
        [0x0f, second] if jcc(second.wrapping_sub(0x10)) => Emulation::Jcc,
        [op] if jcc(op) => Emulation::Jcc,
        _ => return Branch::Other,
    };
    match k.prefixes.contains(&0x66) {
        true => Branch::Refused("0x66-prefixed branch"),
        false => Branch::Emulated(op),
    }
}

/// `push_setup_xol_ops`: `push reg`, alone or after REX.B (`41`) only.
fn is_emulated_push(k: &KernelView, bytes: &[u8]) -> bool {
    let push = matches!(*k.opcode, [0x50..=0x57]);
    push && (bytes.len() == 1 || (bytes.len() == 2 && k.rex == Some(0x41)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::gcc;
    use Emulation::*;
    use Mechanism::*;

    /// Mid-page, so that no 5-byte instruction crosses a page.
    fn site(bytes: &[u8]) -> ProbeSite {
        classify(bytes, 0x1000, 0x100)
    }

    fn of(bytes: &[u8]) -> Mechanism {
        site(bytes).mechanism
    }

    const fn emulated(op: Emulation) -> Mechanism {
        Emulated { op }
    }

    const SINGLE: Mechanism = SingleStepped {
        rip_relative: false,
    };

    /// The brief's cases: nop, nop5, push, ret, RIP-relative cmpb, endbr64, int3, call.
    #[test]
    fn the_common_first_instructions() {
        assert_eq!(of(&[0x90]), emulated(Nop));
        assert_eq!(of(&[0x0f, 0x1f, 0x44, 0x00, 0x00]), Nop5);
        assert_eq!(of(&[0x55]), emulated(Push));
        assert_eq!(of(&[0x41, 0x57]), emulated(Push));
        assert_eq!(of(&[0xc3]), SINGLE);
        let read = site(&[0x80, 0x3d, 0x4d, 0x3e, 0x1d, 0x00, 0x00, 0x75]);
        assert_eq!(read.mechanism, SingleStepped { rip_relative: true });
        assert_eq!(read.instruction, "cmpb $0,0x1d3e4d(%rip)");
        assert_eq!(read.bytes, "80 3d 4d 3e 1d 00 00");
        assert_eq!(of(&[0xf3, 0x0f, 0x1e, 0xfa]), SINGLE);
        assert!(matches!(of(&[0xcc]), Refused { .. }));
        let call = site(&[0xe8, 0x10, 0x00, 0x00, 0x00]);
        assert_eq!(call.mechanism, emulated(Call));
        assert_eq!(call.instruction, "call 0x1015");
    }

    /// Every case measured on Linux 6.18.44 (see the module documentation): emulated ones cost
    /// ~0.4 µs per hit under bpftrace, single-stepped ones ~14 µs, nop5 ~0.19 µs; refused ones
    /// fail to enable with ENOTSUPP.
    #[test]
    fn as_measured_on_linux_6_18() {
        let cases: &[(&[u8], Mechanism)] = &[
            (&[0x66, 0x90], emulated(Nop)),
            (&[0xf3, 0x90], emulated(Nop)),
            (&[0x41, 0x90], emulated(Nop)),
            (&[0x0f, 0x1f, 0x00], emulated(Nop)),
            (&[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00], emulated(Nop)),
            (&[0x66, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0], SINGLE),
            (&[0x0f, 0x1f, 0x40, 0x08], SINGLE),
            (&[0x48, 0x89, 0xc0], SINGLE),
            (&[0x48, 0x89, 0xf8], SINGLE),
            (&[0x48, 0x83, 0xec, 0x08], SINGLE),
            (&[0x48, 0x55], SINGLE),
            (&[0x0f, 0x31], SINGLE),
            (&[0x0f, 0x05], SINGLE),
            (&[0x0f, 0x0b], SINGLE),
            (&[0x0f, 0xa2], SINGLE),
            (&[0xf3, 0x0f, 0x6f, 0x04, 0x24], SINGLE),
            (&[0xeb, 0x00], emulated(Jmp)),
            (&[0x74, 0x00], emulated(Jcc)),
            (&[0x0f, 0x84, 0, 0, 0, 0], emulated(Jcc)),
            (&[0xc5, 0xf8, 0x77], emulated(Jcc)),
            (&[0xc4, 0xe2, 0x79, 0x78, 0xc1], emulated(Jcc)),
            (&[0xc5, 0xf8, 0x58, 0xc1], SINGLE),
        ];
        for (bytes, expected) in cases {
            assert_eq!(&of(bytes), expected, "{}", site(bytes).instruction);
        }
        let refused: &[&[u8]] = &[
            &[0x66, 0xeb, 0x00],
            &[0x66, 0xe8, 0x00, 0x00, 0x00, 0x00],
            &[0xf0, 0xff, 0x05, 0, 0, 0, 0],
            &[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0],
            &[0x2e, 0x48, 0x89, 0xf8],
            &[0xf4],
            &[0x8e, 0xd0],
            &[0xc5, 0xfa, 0x6f, 0x04, 0x24],
            &[0xc5, 0xf9, 0xef, 0xc0],
            &[0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x04, 0x24],
        ];
        for bytes in refused {
            let s = site(bytes);
            assert!(matches!(s.mechanism, Refused { .. }), "{s:?}");
        }
    }

    #[test]
    fn from_the_source_only() {
        assert_eq!(of(&[0xe9, 0, 0, 0, 0]), emulated(Jmp));
        assert_eq!(of(&[0x7f, 0x10]), emulated(Jcc));
        assert_eq!(of(&[0x50]), emulated(Push));
        assert_eq!(of(&[0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0]), emulated(Nop));
        for bytes in [&[0xcd, 0x80][..], &[0xec], &[0xfa], &[0xfb], &[0x48, 0xcf]] {
            assert!(matches!(of(bytes), Refused { .. }), "{bytes:02x?}");
        }
        // A nop5 across a page boundary is not optimised: emulated as the nop it is.
        let nop5 = [0x0f, 0x1f, 0x44, 0x00, 0x00];
        assert_eq!(classify(&nop5, 0x1ffc, 0xffc).mechanism, emulated(Nop));
        assert_eq!(classify(&nop5, 0x1ffb, 0xffb).mechanism, Nop5);
        // A 5-byte nopl that is not x86_nops[5] is optimised too.
        assert_eq!(of(&[0x66, 0x0f, 0x1f, 0x40, 0x00]), Nop5);
    }

    #[test]
    fn bytes_that_do_not_decode() {
        let cut = site(&[0xe8, 0x00]);
        assert_eq!(cut.instruction, "(bad)");
        assert_eq!(cut.bytes, "e8 00");
        assert!(cut.mechanism.label().contains("ends inside"), "{cut:?}");
        let invalid = site(&[0x06]);
        assert!(matches!(invalid.mechanism, Unknown { .. }), "{invalid:?}");
    }

    #[test]
    fn labels_and_json() {
        assert_eq!(emulated(Push).label(), "emulated (push)");
        assert_eq!(Nop5.label(), "nop5: optimizable");
        let rip = SingleStepped { rip_relative: true };
        assert_eq!(rip.label(), "single-stepped out of line (RIP-relative)");
        assert!(of(&[0xf0, 0xff, 0x00])
            .label()
            .starts_with("refused by the kernel (lock"));
        let json = |m: &Mechanism| serde_json::to_string(m).unwrap();
        assert_eq!(json(&emulated(Jcc)), r#"{"kind":"emulated","op":"jcc"}"#);
        assert_eq!(json(&Nop5), r#"{"kind":"nop5"}"#);
        assert_eq!(
            json(&rip),
            r#"{"kind":"single-stepped","rip_relative":true}"#
        );
        let s = site(&[0x55]);
        let back: ProbeSite = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    /// Through an ELF file: symbol offsets, the address a call's target is shown at, an i386
    /// file not classified, an offset past the end.
    #[test]
    fn sites_of_an_elf_file() {
        let src = r#"
__asm__(".globl f_push\n.type f_push,@function\nf_push: push %rbp\npop %rbp\nret\n.size f_push,.-f_push\n"
        ".globl f_call\n.type f_call,@function\nf_call: call f_push\nret\n.size f_call,.-f_call\n"
        ".globl f_combo\n.type f_combo,@function\nf_combo: nop\n.byte 0x0f,0x1f,0x44,0,0\nret\n.size f_combo,.-f_combo\n");
int main(void) { return 0; }
"#;
        let (_dir, bin, _) = gcc(&[src], "-Wl,--section-start=.text=0x10000");
        let push = crate::function(&bin, "f_push").unwrap();
        assert_ne!(push.address, push.offset);
        assert_eq!(
            probe_site(&bin, push.offset).unwrap(),
            ProbeSite {
                instruction: "push %rbp".into(),
                bytes: "55".into(),
                mechanism: emulated(Push),
                function_entry: Some(true),
            }
        );
        // One byte into f_push: inside the function, no entry.
        assert_eq!(
            probe_site(&bin, push.offset + 1).unwrap().function_entry,
            Some(false)
        );
        let call = crate::function(&bin, "f_call").unwrap();
        let site = probe_site(&bin, call.offset).unwrap();
        assert_eq!(site.mechanism, emulated(Call));
        assert_eq!(site.instruction, format!("call {:#x}", push.address));
        let sites = ProbeSites::read(&bin).unwrap();
        let combo = crate::function(&bin, "f_combo").unwrap().offset;
        assert_eq!(sites.libbpf_usdt_nop5(combo), Some(combo + 1));
        assert_eq!(sites.at(combo + 1).unwrap().mechanism, Nop5);
        assert_eq!(sites.libbpf_usdt_nop5(push.offset), None);
        assert_eq!(sites.libbpf_usdt_nop5(u64::MAX), None);
        let len = std::fs::metadata(&bin).unwrap().len();
        let past = probe_site(&bin, len);
        assert!(
            matches!(past, Err(SdtError::OffsetOutsideFile { .. })),
            "{past:?}"
        );

        let flags = "-m32 -nostdlib -static";
        let (_dir32, bin32, _) = gcc(&["void _start(void) { for (;;); }"], flags);
        let start = crate::function(&bin32, "_start").unwrap();
        let site = probe_site(&bin32, start.offset).unwrap();
        assert!(site.mechanism.label().contains("not an x86-64"), "{site:?}");
    }
}
