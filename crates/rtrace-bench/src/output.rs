//! Result files and run directories: checked before anything runs, written atomically, never
//! shared by two live runs.

use anyhow::{Context, Result};
use rtrace_tracer::owner::{self, NamedLock};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An output path that cannot be used; one line naming the fix.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{option} {path}: {reason}")]
    Unusable {
        option: &'static str,
        path: String,
        reason: String,
    },
    #[error("{option} {path} is in use by another live run ({holder}): wait for it to end or pass another directory")]
    InUse {
        option: &'static str,
        path: String,
        holder: String,
    },
}

fn unusable(option: &'static str, path: &Path, reason: impl Into<String>) -> OutputError {
    OutputError::Unusable {
        option,
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// The directory a file `path` goes into (`.` for a bare file name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks that `path` (given with `option`, e.g. `--json`) can be written as a result file
/// without writing it: not an existing directory or special file, in an existing directory
/// where we may create files. Changes nothing.
pub fn check_file(option: &'static str, path: &Path) -> Result<(), OutputError> {
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err(unusable(
                option,
                path,
                "exists and is not a regular file: pass the path of a file to write",
            ));
        }
    }
    let dir = parent_of(path);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(unusable(
                option,
                path,
                format!(
                    "{} is not a directory: pass a path in a directory",
                    dir.display()
                ),
            ))
        }
        Err(_) => {
            return Err(unusable(
                option,
                path,
                format!(
                    "directory {} does not exist: create it first (mkdir -p) or pass another path",
                    dir.display()
                ),
            ))
        }
    }
    writable(option, path, dir)
}

/// Whether we may create files in `dir` (a temporary file, removed at once).
fn writable(option: &'static str, path: &Path, dir: &Path) -> Result<(), OutputError> {
    tempfile::Builder::new()
        .prefix(".rtrace-bench-check")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| {
            unusable(
                option,
                path,
                format!(
                    "cannot write in {} ({e}): pass a path where you may write",
                    dir.display()
                ),
            )
        })
}

/// Writes `bytes` to `path` atomically: into a temporary file of the same directory, synced,
/// then renamed over `path`. A crash or a full disk at any point leaves the previous complete
/// file (or none), never a truncated one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(parent_of(path))
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_data())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// A run's output directory, held against other live runs until dropped.
#[derive(Debug)]
pub struct RunDir {
    pub path: PathBuf,
    _lock: NamedLock,
}

/// Takes the output directory of a run. Given with `--out` (`given`), `path` may exist (a
/// directory) and is created otherwise; by default (`results/<experiment>-<seconds>`) it is
/// created exclusively, with a `-2`, `-3`... suffix when a run started in the same second took
/// it. Either way a live run holds it: a second run on the same directory is refused.
pub fn claim_dir(option: &'static str, path: &Path, given: bool) -> Result<RunDir> {
    if given {
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_dir() {
                return Err(unusable(
                    option,
                    path,
                    "exists and is not a directory: pass a directory path",
                )
                .into());
            }
        }
        std::fs::create_dir_all(path).map_err(|e| {
            unusable(
                option,
                path,
                format!("cannot create it ({e}): pass a path where you may write"),
            )
        })?;
        lock_dir(option, path.to_owned())
    } else {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                unusable(
                    option,
                    parent,
                    format!("cannot create it ({e}): pass --out DIR"),
                )
            })?;
        }
        for n in 1..1000 {
            let candidate = if n == 1 {
                path.to_owned()
            } else {
                PathBuf::from(format!("{}-{n}", path.display()))
            };
            match std::fs::create_dir(&candidate) {
                Ok(()) => return lock_dir(option, candidate),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(unusable(
                        option,
                        &candidate,
                        format!("cannot create it ({e}): pass --out DIR"),
                    )
                    .into())
                }
            }
        }
        Err(unusable(option, path, "taken 999 times over: pass --out DIR").into())
    }
}

/// Locks `path` (a directory) for this run; the lock is named after its canonical path.
fn lock_dir(option: &'static str, path: PathBuf) -> Result<RunDir> {
    use std::hash::{Hash, Hasher};
    let canonical = std::fs::canonicalize(&path)
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    writable(option, &path, &path)?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    canonical.hash(&mut h);
    match owner::try_lock(&format!("out-{:016x}", h.finish()))? {
        Ok(lock) => Ok(RunDir { path, _lock: lock }),
        Err(holder) => Err(OutputError::InUse {
            option,
            path: path.display().to_string(),
            holder,
        }
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_directories_are_never_shared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results/usdt-1700000000");
        let a = claim_dir("--out", &path, false).unwrap();
        let b = claim_dir("--out", &path, false).unwrap();
        assert_ne!(a.path, b.path);
        assert_eq!(b.path, dir.path().join("results/usdt-1700000000-2"));
        assert!(a.path.is_dir() && b.path.is_dir());
    }

    #[test]
    fn a_given_directory_is_held_by_one_live_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let held = claim_dir("--out", &path, true).unwrap();
        let e = claim_dir("--out", &path, true).unwrap_err().to_string();
        assert!(e.contains("in use by another live run"), "{e}");
        drop(held);
        claim_dir("--out", &path, true).unwrap();
    }

    #[test]
    fn bad_paths_name_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let e = claim_dir("--out", &file, true).unwrap_err().to_string();
        assert!(
            e.starts_with("--out ") && e.contains("not a directory"),
            "{e}"
        );
        for (path, want) in [
            (
                Path::new("/nonexistent/x.json"),
                "does not exist: create it first",
            ),
            (dir.path(), "not a regular file"),
            (&file.join("x.json"), "not a directory"),
        ] {
            let e = check_file("--json", path).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        check_file("--json", &dir.path().join("new.json")).unwrap();
        check_file("--json", &file).unwrap();
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 1, "nothing created");
    }

    #[test]
    fn atomic_writes_replace_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
        // A write that fails keeps the previous file.
        assert!(write_atomic(&dir.path().join("missing/r.json"), b"x").is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
    }
}
