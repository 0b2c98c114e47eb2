//! What happens to a run's trace data once its events are counted: its size is recorded, and
//! unless the user keeps it (`--keep-traces`), the directory is removed: kept, one thesis job's
//! traces take over half a GB.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Which runs keep their trace data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeepTraces {
    /// None once its counts are verified (a run whose accounting fails keeps its data).
    #[default]
    None,
    /// Runs that lost events (and runs whose accounting fails).
    Lossy,
    /// Every run.
    All,
}

impl KeepTraces {
    pub fn name(self) -> &'static str {
        match self {
            KeepTraces::None => "none",
            KeepTraces::Lossy => "lossy",
            KeepTraces::All => "all",
        }
    }

    /// Whether a run keeps its data: `verified` when its accounting holds, `lossy` when it lost
    /// events.
    pub fn keeps(self, verified: bool, lossy: bool) -> bool {
        match self {
            KeepTraces::All => true,
            KeepTraces::Lossy => lossy || !verified,
            KeepTraces::None => !verified,
        }
    }
}

/// The trace data of a run (summed over its rounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TraceData {
    /// Bytes the tracer wrote.
    pub bytes: u64,
    /// Rounds that wrote trace data.
    pub rounds: u32,
    /// Of those, rounds whose data is still on disk.
    pub kept: u32,
}

impl TraceData {
    /// Measures `dir` and removes it unless `policy` keeps it.
    pub fn settle(
        dir: &Path,
        policy: KeepTraces,
        verified: bool,
        lossy: bool,
    ) -> std::io::Result<TraceData> {
        let bytes = dir_bytes(dir)?;
        let kept = policy.keeps(verified, lossy);
        if !kept && dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        Ok(TraceData {
            bytes,
            rounds: 1,
            kept: u32::from(kept),
        })
    }
}

/// Both runs' data (pooling rounds).
impl std::ops::Add for TraceData {
    type Output = TraceData;
    fn add(self, other: TraceData) -> TraceData {
        TraceData {
            bytes: self.bytes + other.bytes,
            rounds: self.rounds + other.rounds,
            kept: self.kept + other.kept,
        }
    }
}

/// Bytes of the regular files below `dir` (0 when it does not exist).
fn dir_bytes(dir: &Path) -> std::io::Result<u64> {
    if !dir.exists() {
        return Ok(0);
    }
    let mut total = 0;
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.map_err(std::io::Error::other)?;
        if entry.file_type().is_file() {
            total += entry.metadata().map_err(std::io::Error::other)?.len();
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_data_goes_unless_kept() {
        use KeepTraces::*;
        assert!(!None.keeps(true, false) && !None.keeps(true, true));
        assert!(
            None.keeps(false, false),
            "failed accounting keeps its evidence"
        );
        assert!(Lossy.keeps(true, true));
        assert!(!Lossy.keeps(true, false));
        assert!(All.keeps(true, false));
    }

    #[test]
    fn settling_measures_then_removes() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("ftrace-case1");
        std::fs::create_dir_all(dir.join("cpu1")).unwrap();
        std::fs::write(dir.join("cpu1/raw"), vec![0u8; 3000]).unwrap();
        std::fs::write(dir.join("stats"), b"12345").unwrap();
        let kept = TraceData::settle(&dir, KeepTraces::All, true, false).unwrap();
        assert_eq!(
            kept,
            TraceData {
                bytes: 3005,
                rounds: 1,
                kept: 1
            }
        );
        assert!(dir.exists());
        let gone = TraceData::settle(&dir, KeepTraces::None, true, false).unwrap();
        assert_eq!(gone.bytes, 3005);
        assert_eq!(gone.kept, 0);
        assert!(!dir.exists());
        assert_eq!((kept + gone).bytes, 6010);
    }
}
