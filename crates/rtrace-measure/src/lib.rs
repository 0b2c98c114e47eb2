//! Measurement: spawns the workload pinned to the measured CPU, attaches a tracer during the
//! ready/go handshake, collects its histograms, and describes the environment. Never prints.

pub mod env;
pub mod model;
pub mod spawn;
pub mod summary;
pub mod usdt;

pub use env::Environment;
pub use model::{AccountingError, Events};
pub use spawn::{run_workload, Outcome, WorkloadError};
pub use summary::Summary;
