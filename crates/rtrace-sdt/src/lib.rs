//! USDT probe discovery: parses `.note.stapsdt` of any ELF file (executables, PIE or not, and
//! shared libraries) into [`Probe`]s with the file offsets uprobes need.
//!
//! STUB: the parsing is being written; the types below are the agreed interface.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// One USDT probe site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
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
    /// Argument specs in note order.
    pub args: Vec<Arg>,
}

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
    Memory { offset: i64, base: String },
    /// An immediate constant.
    Constant(i64),
}

/// Errors a user can act on; each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum SdtError {
    #[error("cannot read {path}: {source} (check the path of the binary)")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not an ELF file: {reason} (give the path of a compiled binary or shared library)")]
    NotElf { path: PathBuf, reason: String },
    #[error("{path} has no USDT probe {provider}:{name}; list its probes with `rtrace-bench probes {path}`")]
    NoSuchProbe {
        path: PathBuf,
        provider: String,
        name: String,
    },
    #[error("malformed USDT note in {path}: {reason}")]
    BadNote { path: PathBuf, reason: String },
    #[error("cannot translate USDT argument `{spec}`: {reason}")]
    BadArg { spec: String, reason: String },
}

/// All USDT probe sites of an ELF file, in note order.
pub fn probes(_path: &Path) -> Result<Vec<Probe>, SdtError> {
    todo!("parse .note.stapsdt")
}

/// All sites of `provider:name` in `path` (a probe inlined in several places has several sites);
/// [`SdtError::NoSuchProbe`] if there is none.
pub fn find(path: &Path, provider: &str, name: &str) -> Result<Vec<Probe>, SdtError> {
    let sites: Vec<Probe> = probes(path)?
        .into_iter()
        .filter(|p| p.provider == provider && p.name == name)
        .collect();
    if sites.is_empty() {
        return Err(SdtError::NoSuchProbe {
            path: path.to_owned(),
            provider: provider.to_owned(),
            name: name.to_owned(),
        });
    }
    Ok(sites)
}

impl Arg {
    /// Parses one argument spec such as `-8@%rdx`.
    pub fn parse(_spec: &str) -> Result<Arg, SdtError> {
        todo!()
    }

    /// The ftrace uprobe fetch-arg for this argument, e.g. `%dx:s64`, `+-12(%bp):u32`, `\5:s32`.
    pub fn ftrace_fetcharg(&self) -> Result<String, SdtError> {
        todo!()
    }
}
