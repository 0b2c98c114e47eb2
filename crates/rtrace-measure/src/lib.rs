//! Measurement: spawns the workload pinned to the measured CPU, attaches a tracer during the
//! ready/go handshake, collects its histograms, and describes the environment. Never prints.

pub mod app;
pub mod compare;
pub mod counters;
pub mod cyclictest;
pub mod decompose;
pub mod disturbed;
pub mod env;
pub mod events;
pub mod interval;
pub mod model;
pub mod npt;
pub mod pacing;
pub mod pool;
pub mod probe_cost;
pub mod rate;
pub mod result_model;
pub mod settings;
pub mod spawn;
pub mod summary;
pub mod sweep;
#[cfg(test)]
mod testing;
pub mod trace_data;
pub mod usdt;
pub mod warnings;

pub use env::Environment;
pub use model::{AccountingError, Events};
pub use pool::{Accounted, Pool};
pub use result_model::{Header, ResultModel};
pub use settings::RunSettings;
pub use spawn::{run_workload, run_workload_message, Outcome, WorkloadError};
pub use summary::Summary;
pub use warnings::Warning;
