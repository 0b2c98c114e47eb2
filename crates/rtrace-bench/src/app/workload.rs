//! The programs `app` times (placeholder until the workloads land): the trait and the user's
//! command.

use anyhow::Result;
use std::path::PathBuf;

/// A program `app` times: prepared once, reset before every run (untimed), run as one command.
pub trait AppWorkload {
    fn name(&self) -> &'static str;
    fn describe(&self) -> String;
    fn prepare(&mut self) -> Result<()>;
    fn reset(&mut self) -> Result<()>;
    fn command(&self) -> Timed;
    fn outcome(&mut self, stdout: &str, stderr: &str) -> Result<Outcome>;
    fn cpu_outside_ns(&self) -> Result<Option<u64>>;
    #[allow(dead_code)]
    fn usdt_binaries(&self) -> Vec<PathBuf>;
    fn ground_truth(&self, _outcome: &Outcome) -> Option<(String, u64)> {
        None
    }
}

/// The command timed.
#[derive(Debug, Clone)]
pub struct Timed {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub metrics: Vec<(String, f64)>,
}

/// The user's own command.
pub struct Command {
    pub argv: Vec<String>,
}

impl AppWorkload for Command {
    fn name(&self) -> &'static str {
        "command"
    }
    fn describe(&self) -> String {
        format!("the command `{}`", self.argv.join(" "))
    }
    fn prepare(&mut self) -> Result<()> {
        Ok(())
    }
    fn reset(&mut self) -> Result<()> {
        Ok(())
    }
    fn command(&self) -> Timed {
        Timed {
            argv: self.argv.clone(),
            env: Vec::new(),
            cwd: None,
        }
    }
    fn outcome(&mut self, _: &str, _: &str) -> Result<Outcome> {
        Ok(Outcome::default())
    }
    fn cpu_outside_ns(&self) -> Result<Option<u64>> {
        Ok(None)
    }
    fn usdt_binaries(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}
