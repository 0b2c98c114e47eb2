//! The tracefs mount: finding or mounting it, and writing its control files safely.

use anyhow::{bail, Context, Result};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where tracefs is mounted (and where we mount it if absent).
pub const DEFAULT_ROOT: &str = "/sys/kernel/tracing";

/// A usable tracefs root with uprobe events.
#[derive(Debug, Clone)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// tracefs as if mounted at `root` (nothing is checked).
    pub(crate) fn at(root: &Path) -> Tracefs {
        Tracefs {
            root: root.to_owned(),
        }
    }

    /// The mounted tracefs, if any, without changing anything.
    pub fn find() -> Option<Tracefs> {
        [DEFAULT_ROOT, "/sys/kernel/debug/tracing"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.join("uprobe_events").exists())
            .map(|root| Tracefs { root })
    }

    /// Whether tracefs is mounted or could be (the kernel knows the filesystem).
    pub fn available() -> Result<()> {
        if Self::find().is_some() {
            return Ok(());
        }
        let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if fs.lines().any(|l| l.trim_end().ends_with("tracefs")) {
            return Ok(());
        }
        bail!("tracefs is not available: this kernel lacks CONFIG_FTRACE/tracefs; use a kernel with ftrace and uprobe events")
    }

    /// The mounted tracefs, mounting it at [`DEFAULT_ROOT`] if absent.
    pub fn mount_if_needed() -> Result<Tracefs> {
        if let Some(t) = Self::find() {
            return Ok(t);
        }
        nix::mount::mount(
            Some("nodev"),
            DEFAULT_ROOT,
            Some("tracefs"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .with_context(|| {
            format!("cannot mount tracefs at {DEFAULT_ROOT}: mount it with `mount -t tracefs nodev {DEFAULT_ROOT}`")
        })?;
        Self::find().with_context(|| {
            format!("tracefs mounted at {DEFAULT_ROOT} has no uprobe_events: the kernel needs CONFIG_UPROBE_EVENTS")
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// Appends one definition line to a global event list (`uprobe_events`, `dynamic_events`).
    /// Always O_APPEND: a truncating open would delete every other user's events.
    pub fn append_event(&self, file: &str, line: &str) -> Result<()> {
        let path = self.path(file);
        let mut f = OpenOptions::new()
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.write_all(format!("{line}\n").as_bytes())
            .map_err(|e| anyhow::anyhow!("{e}{}", self.last_error_hint()))
            .with_context(|| format!("tracefs rejected `{line}` in {}", path.display()))
    }

    /// Writes a value to a per-instance control file (these files are private to our instance).
    pub fn write(&self, rel: impl AsRef<Path>, value: &str) -> Result<()> {
        let path = self.path(rel);
        std::fs::write(&path, value)
            .map_err(|e| anyhow::anyhow!("{e}{}", self.last_error_hint()))
            .with_context(|| format!("cannot write `{value}` to {}", path.display()))
    }

    pub fn read(&self, rel: impl AsRef<Path>) -> Result<String> {
        let path = self.path(rel);
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    }

    /// The last line of tracefs' error_log, formatted as a hint (read only, never cleared).
    fn last_error_hint(&self) -> String {
        std::fs::read_to_string(self.path("error_log"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| format!(" (error_log: {})", l.trim()))
            })
            .unwrap_or_default()
    }
}
