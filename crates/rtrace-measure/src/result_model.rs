//! What every experiment's result model offers whoever reads it: the header every result file
//! starts with (`experiment`, `tool_version`, `started_unix`, `environment`), the warnings
//! computed from the model, and the file's bytes. Each model implements it in its own module.

use crate::{Environment, Warning};
use serde::{Deserialize, Serialize};

/// The fields every result file starts with (flattened into the model).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// Which experiment wrote the file: `usdt`, `cyclictest-sweep`.
    pub experiment: String,
    /// rtrace-bench version that wrote the file.
    pub tool_version: String,
    /// Seconds since the Unix epoch at start.
    pub started_unix: u64,
    /// The machine, including the preemption model of the running kernel.
    pub environment: Environment,
}

impl Header {
    /// The header of a run of `experiment` starting now; its environment is filled in once
    /// the run's CPUs are known.
    pub fn new(experiment: &str) -> Header {
        Header {
            experiment: experiment.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            started_unix: now_unix(),
            environment: Environment::default(),
        }
    }
}

/// Seconds since the Unix epoch, now (0 before it).
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A result model, whatever its experiment; its module's `EXPERIMENT` is its `experiment` field.
pub trait ResultModel: std::fmt::Debug + Send + Sync + 'static {
    /// Its header.
    fn header(&self) -> &Header;
    /// Its warnings, computed from the model (files of older versions store none).
    fn warnings(&self) -> Vec<Warning>;
    /// The result file's bytes.
    fn file(&self) -> serde_json::Result<Vec<u8>>;

    /// The `experiment` field.
    fn experiment(&self) -> &str {
        &self.header().experiment
    }
    /// The machine it was measured on.
    fn environment(&self) -> &Environment {
        &self.header().environment
    }
}

/// A model's `ResultModel`: `result_model!(RateResult)` for one whose warnings are its
/// machine's alone (`warnings::environment` for its measured CPU) and whose file is its JSON as
/// it stands; `result_model!(UsdtResult, warnings)` for one whose module's `warnings(&model)`
/// computes them and whose file stores them.
#[macro_export]
macro_rules! result_model {
    ($model:ty) => {
        impl $crate::ResultModel for $model {
            fn header(&self) -> &$crate::Header {
                &self.header
            }
            fn warnings(&self) -> Vec<$crate::Warning> {
                $crate::warnings::environment(&self.header.environment, self.config.run.cpu)
            }
            fn file(&self) -> serde_json::Result<Vec<u8>> {
                serde_json::to_vec_pretty(self)
            }
        }
    };
    ($model:ident, $warnings:ident) => {
        impl $crate::ResultModel for $model {
            fn header(&self) -> &$crate::Header {
                &self.header
            }
            fn warnings(&self) -> Vec<$crate::Warning> {
                $warnings(self)
            }
            fn file(&self) -> serde_json::Result<Vec<u8>> {
                serde_json::to_vec_pretty(&$model {
                    warnings: self.warnings(),
                    ..self.clone()
                })
            }
        }
    };
}
