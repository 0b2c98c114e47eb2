//! A private tracefs instance: its own buffer and enable switches, removed on drop.

use crate::stats::CpuStats;
use crate::tracefs::Tracefs;
use anyhow::{Context, Result};
use std::path::PathBuf;

pub struct Instance {
    fs: Tracefs,
    name: String,
    removed: bool,
}

impl Instance {
    /// Creates `instances/NAME`; fails if it exists (names are run-unique).
    pub fn create(fs: &Tracefs, name: &str) -> Result<Instance> {
        let path = fs.path(format!("instances/{name}"));
        std::fs::create_dir(&path)
            .with_context(|| format!("cannot create tracefs instance {}", path.display()))?;
        Ok(Instance {
            fs: fs.clone(),
            name: name.to_owned(),
            removed: false,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn rel(&self, file: &str) -> PathBuf {
        PathBuf::from(format!("instances/{}/{file}", self.name))
    }

    pub fn write(&self, file: &str, value: &str) -> Result<()> {
        self.fs.write(self.rel(file), value)
    }

    /// Writes each control file in order; a `trace_clock` written is read back and must select
    /// the clock written (see [`crate::instance_setup`]).
    pub fn configure(&self, files: &[(&'static str, String)]) -> Result<()> {
        for (file, value) in files {
            self.write(file, value)?;
            if *file == "trace_clock" {
                crate::clock::verify(&self.fs.read(self.rel(file))?, value)?;
            }
        }
        Ok(())
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.fs.path(self.rel(file))
    }

    /// Enables or disables `events/GROUP/EVENT` in this instance only.
    pub fn set_enabled(&self, group: &str, event: &str, on: bool) -> Result<()> {
        self.write(
            &format!("events/{group}/{event}/enable"),
            if on { "1" } else { "0" },
        )
    }

    /// CPU numbers that have a buffer in this instance.
    pub fn cpus(&self) -> Result<Vec<usize>> {
        let dir = self.path("per_cpu");
        let mut cpus: Vec<usize> = std::fs::read_dir(&dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        Ok(cpus)
    }

    pub fn stats(&self) -> Result<Vec<CpuStats>> {
        self.cpus()?
            .into_iter()
            .map(|c| {
                Ok(CpuStats::parse(
                    &self.fs.read(self.rel(&format!("per_cpu/cpu{c}/stats")))?,
                ))
            })
            .collect()
    }

    /// Removes the instance (which disables everything enabled in it).
    pub fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        let path = self.fs.path(format!("instances/{}", self.name));
        std::fs::remove_dir(&path)
            .with_context(|| format!("cannot remove tracefs instance {}", path.display()))?;
        self.removed = true;
        Ok(())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}
