//! What every experiment's result model offers whoever reads it: the header every result file
//! starts with (`experiment`, `tool_version`, `started_unix`, `environment`), the warnings
//! computed from the model, and the file's bytes.

use crate::events::EventsResult;
use crate::npt::NptResult;
use crate::rate::RateResult;
use crate::sweep::SweepResult;
use crate::usdt::UsdtResult;
use crate::{warnings, Environment, Warning};

/// A result model, whatever its experiment.
pub trait ResultModel: std::fmt::Debug + Send + Sync + 'static {
    /// The `experiment` field every file of this model carries: `usdt`, `cyclictest-sweep`.
    fn experiment(&self) -> &'static str;
    /// The version of rtrace-bench that measured it.
    fn tool_version(&self) -> &str;
    /// When the run began (seconds since the epoch).
    fn started_unix(&self) -> u64;
    /// The machine it was measured on.
    fn environment(&self) -> &Environment;
    /// Its warnings, computed from the model (files of older versions store none).
    fn warnings(&self) -> Vec<Warning>;
    /// The result file's bytes.
    fn file(&self) -> serde_json::Result<Vec<u8>>;
}

/// The header's accessors of a model whose fields carry its name.
macro_rules! header {
    ($experiment:expr) => {
        fn experiment(&self) -> &'static str {
            $experiment
        }
        fn tool_version(&self) -> &str {
            &self.tool_version
        }
        fn started_unix(&self) -> u64 {
            self.started_unix
        }
        fn environment(&self) -> &Environment {
            &self.environment
        }
    };
}

/// `experiment` of a usdt result file (`usdt --decompose` too).
pub const USDT: &str = "usdt";
/// `experiment` of a cyclictest-sweep result file.
pub const SWEEP: &str = "cyclictest-sweep";
/// `experiment` of a rate result file.
pub const RATE: &str = "rate";
/// `experiment` of an npt result file.
pub const NPT: &str = "npt";
/// `experiment` of an events result file.
pub const EVENTS: &str = "events";

impl ResultModel for UsdtResult {
    header!(USDT);
    fn warnings(&self) -> Vec<Warning> {
        warnings::usdt(self)
    }
    /// With the warnings stored in the file.
    fn file(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec_pretty(&UsdtResult {
            warnings: self.warnings(),
            ..self.clone()
        })
    }
}

impl ResultModel for SweepResult {
    header!(SWEEP);
    fn warnings(&self) -> Vec<Warning> {
        warnings::sweep(self)
    }
    /// With the warnings stored in the file.
    fn file(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec_pretty(&SweepResult {
            warnings: self.warnings(),
            ..self.clone()
        })
    }
}

impl ResultModel for RateResult {
    header!(RATE);
    fn warnings(&self) -> Vec<Warning> {
        warnings::environment(&self.environment, self.config.run.cpu)
    }
    fn file(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec_pretty(self)
    }
}

impl ResultModel for NptResult {
    header!(NPT);
    fn warnings(&self) -> Vec<Warning> {
        warnings::environment(&self.environment, self.config.run.cpu)
    }
    fn file(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec_pretty(self)
    }
}

impl ResultModel for EventsResult {
    header!(EVENTS);
    fn warnings(&self) -> Vec<Warning> {
        warnings::environment(&self.environment, self.config.run.cpu)
    }
    fn file(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec_pretty(self)
    }
}
