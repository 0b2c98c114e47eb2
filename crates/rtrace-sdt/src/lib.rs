//! USDT probe discovery: parses `.note.stapsdt` of any ELF file (executables, PIE or not, and
//! shared libraries; 64- and 32-bit) into [`Probe`]s with the file offsets uprobes need.
//!
//! Address arithmetic follows libbpf's `usdt.c`:
//! - the note's `pc` is a virtual address; it is adjusted for prelinking with
//!   `address = pc + (addr(.stapsdt.base) - note.base)` (no adjustment without `.stapsdt.base`);
//! - `offset = address - p_vaddr + p_offset` of the executable `PT_LOAD` segment containing it;
//! - the semaphore address is *not* base-adjusted; its file offset comes from the writable
//!   `PT_LOAD` segment containing it.
//!
//! Argument specs (`-8@%rdx`, `4@-12(%rbp)`, `-4@$5`) are x86-64 (and i386) assembler operands;
//! [`Arg::ftrace_fetcharg`] translates them to ftrace uprobe fetch-args (`%dx:s64`,
//! `-12(%bp):u32`, `\5:s32`).
//!
//! [`probe_site`] reads the first instruction at a file offset and says how a uprobe there runs
//! (emulated, single-stepped, optimised or refused; `site.rs`).
//!
//! [`probes`] parses every argument and fails on the first spec it cannot represent; use
//! [`raw_probes`] to list probes whatever their arguments, and [`find`] to get one probe (only
//! its own arguments have to parse).

mod args;
mod elf;
mod note;
mod site;
mod symbols;

pub use site::{probe_site, Emulation, Mechanism, ProbeSite, ProbeSites};
pub use symbols::{function, functions, Function};

use serde::Serialize;
use std::path::{Path, PathBuf};

/// One USDT probe site, with its arguments parsed (`Vec<Arg>`) or, in a [`RawProbe`], as the
/// note wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe<A = Vec<Arg>> {
    /// Provider name (first argument of `DTRACE_PROBE`/`probe!`).
    pub provider: String,
    /// Probe name.
    pub name: String,
    /// Virtual address of the probe site (after the `.stapsdt.base` adjustment).
    pub address: u64,
    /// File offset of the probe site: what a uprobe is placed on.
    pub offset: u64,
    /// Virtual address of the semaphore (is-enabled counter), if the probe has one.
    pub semaphore_address: Option<u64>,
    /// File offset of the semaphore (uprobe `ref_ctr_offset`), if the probe has one.
    pub semaphore_offset: Option<u64>,
    /// Argument specs in note order (a [`RawProbe`]'s: space-separated, empty without
    /// arguments).
    pub args: A,
}

/// A probe site whose argument string is kept as written in the note (e.g. `"-4@%eax 8@%rdx"`).
///
/// Returned by [`raw_probes`]; use it to list probes whose arguments [`Arg::parse`] rejects.
pub type RawProbe = Probe<String>;

/// One argument spec such as `-8@%rdx`, `4@-12(%rbp)` or `-4@$5`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Arg {
    /// Size in bytes (1, 2, 4 or 8).
    pub size: u8,
    /// Whether the value is signed (negative size in the spec).
    pub signed: bool,
    /// Where the value lives.
    pub location: ArgLocation,
}

/// Where an argument's value lives at the probe site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ArgLocation {
    /// In a register, named as in the spec without `%` (e.g. `rdx`, `eax`, `r8d`).
    Register(String),
    /// In memory at `offset(base)`, base register named without `%`.
    Memory {
        /// Displacement in bytes.
        offset: i64,
        /// Base register, e.g. `rbp`.
        base: String,
    },
    /// An immediate constant.
    Constant(i64),
}

/// Errors a user can act on; each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum SdtError {
    #[error("{path} has no function `{name}`; list its functions with `rtrace-bench probes {path} --symbols PATTERN`")]
    NoSuchFunction { path: PathBuf, name: String },
    #[error("bad symbol pattern `{pattern}`: {reason} (use a glob such as `marker_*`)")]
    BadPattern { pattern: String, reason: String },
    /// The file cannot be read.
    #[error("cannot read {path}: {source} (check the path of the binary)")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The path is a directory, a device, a FIFO...: never read (a FIFO blocks, `/dev/zero`
    /// never ends).
    #[error("{path} is not a regular file: give the path of a compiled binary or shared library")]
    NotAFile { path: PathBuf },
    /// The file is not an ELF file, or its headers are truncated or corrupt.
    #[error("{path} is not an ELF file: {reason} (give the path of a compiled binary or shared library)")]
    NotElf { path: PathBuf, reason: String },
    /// [`find`] found no site of the probe.
    #[error("{path} has no USDT probe {provider}:{name}; list its probes with `rtrace-bench probes {path}`")]
    NoSuchProbe {
        path: PathBuf,
        provider: String,
        name: String,
    },
    /// A `.note.stapsdt` note cannot be decoded, or its addresses are outside the segments
    /// they must be in.
    #[error("malformed USDT note in {path}: {reason}")]
    BadNote { path: PathBuf, reason: String },
    /// A probe site's file offset lies past the end of the file.
    #[error("file offset {offset:#x} is past the end of {path} ({len} bytes): take offsets from `rtrace-bench probes {path}`")]
    OffsetOutsideFile {
        path: PathBuf,
        offset: u64,
        len: u64,
    },
    /// An argument spec cannot be parsed or has no ftrace fetch-arg form.
    #[error("cannot translate USDT argument `{spec}`: {reason}")]
    BadArg { spec: String, reason: String },
}

/// All USDT probe sites of an ELF file, in note order, with parsed arguments.
///
/// A valid ELF file without `.note.stapsdt` gives an empty list. Fails with
/// [`SdtError::BadArg`] if any probe has an argument [`Arg::parse`] rejects (see [`raw_probes`]).
pub fn probes(path: &Path) -> Result<Vec<Probe>, SdtError> {
    let data = read(path)?;
    probes_from_bytes(&data, path)
}

/// [`probes`] for an ELF image already in memory; `path` is only used in error messages.
pub fn probes_from_bytes(data: &[u8], path: &Path) -> Result<Vec<Probe>, SdtError> {
    raw_probes_from_bytes(data, path)?
        .into_iter()
        .map(RawProbe::parse_args)
        .collect()
}

/// All USDT probe sites of an ELF file, in note order, with the argument strings unparsed.
pub fn raw_probes(path: &Path) -> Result<Vec<RawProbe>, SdtError> {
    let data = read(path)?;
    raw_probes_from_bytes(&data, path)
}

/// [`raw_probes`] for an ELF image already in memory; `path` is only used in error messages.
pub fn raw_probes_from_bytes(data: &[u8], path: &Path) -> Result<Vec<RawProbe>, SdtError> {
    let layout = elf::Layout::parse(data).map_err(|reason| SdtError::NotElf {
        path: path.to_owned(),
        reason,
    })?;
    let bad_note = |reason: String| SdtError::BadNote {
        path: path.to_owned(),
        reason,
    };
    let mut out = Vec::new();
    for desc in layout.stapsdt_descs(data).map_err(bad_note)? {
        let n = note::Note::decode(desc, layout.is_64, layout.little_endian).map_err(bad_note)?;
        let at_probe = |e: String| bad_note(format!("probe {}:{}: {e}", n.provider, n.name));
        let address = layout.adjust_pc(n.pc, n.base);
        let offset = layout.code_offset(address).map_err(at_probe)?;
        let semaphore_address = (n.semaphore != 0).then_some(n.semaphore);
        let semaphore_offset = semaphore_address.map(|a| layout.semaphore_offset(a));
        let semaphore_offset = semaphore_offset.transpose().map_err(at_probe)?;
        out.push(RawProbe {
            provider: n.provider.to_owned(),
            name: n.name.to_owned(),
            address,
            offset,
            semaphore_address,
            semaphore_offset,
            args: n.args.to_owned(),
        });
    }
    Ok(out)
}

/// All sites of `provider:name` in `path` (a probe inlined in several places has several sites);
/// [`SdtError::NoSuchProbe`] if there is none. Only the arguments of these sites are parsed.
pub fn find(path: &Path, provider: &str, name: &str) -> Result<Vec<Probe>, SdtError> {
    let sites: Vec<Probe> = raw_probes(path)?
        .into_iter()
        .filter(|p| p.provider == provider && p.name == name)
        .map(RawProbe::parse_args)
        .collect::<Result<_, _>>()?;
    if sites.is_empty() {
        return Err(SdtError::NoSuchProbe {
            path: path.to_owned(),
            provider: provider.to_owned(),
            name: name.to_owned(),
        });
    }
    Ok(sites)
}

/// The bytes of the regular file `path`; its type is checked before it is opened.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, SdtError> {
    let io = |source| SdtError::Io {
        path: path.to_owned(),
        source,
    };
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(SdtError::NotAFile {
            path: path.to_owned(),
        });
    }
    std::fs::read(path).map_err(io)
}

impl RawProbe {
    /// Parses the argument string into a [`Probe`]; [`SdtError::BadArg`] names the probe.
    pub fn parse_args(self) -> Result<Probe, SdtError> {
        let args = args::parse_list(&self.args).map_err(|e| match e {
            SdtError::BadArg { spec, reason } => SdtError::BadArg {
                spec,
                reason: format!("{reason} (in probe {}:{})", self.provider, self.name),
            },
            other => other,
        })?;
        Ok(Probe {
            provider: self.provider,
            name: self.name,
            address: self.address,
            offset: self.offset,
            semaphore_address: self.semaphore_address,
            semaphore_offset: self.semaphore_offset,
            args,
        })
    }
}

impl Probe {
    /// Whether the probe has an is-enabled semaphore (a uprobe on it needs `ref_ctr_offset`).
    pub fn has_semaphore(&self) -> bool {
        self.semaphore_offset.is_some()
    }

    /// The probe point of an ftrace uprobe event on this site of `binary`:
    /// `/path:0xOFFSET`, or `/path:0xOFFSET(0xSEMAPHORE_OFFSET)` with a semaphore.
    pub fn ftrace_location(&self, binary: &Path) -> String {
        match self.semaphore_offset {
            Some(sem) => format!("{}:{:#x}({:#x})", binary.display(), self.offset, sem),
            None => format!("{}:{:#x}", binary.display(), self.offset),
        }
    }
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;
