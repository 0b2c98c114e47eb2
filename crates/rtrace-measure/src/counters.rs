//! Performance counters of a workload process (Gebai & Dagenais measured cycles, instructions
//! and cache misses per event): opened on the workload's pid once the tracer is attached,
//! inherited by its threads, read after it exits. Per hit, a traced run's count minus case 0's
//! count over the same number of iterations is what the tracer adds. Hardware events are
//! absent in many VMs (`perf_event_open` fails with ENOENT): each counter that cannot be opened
//! is recorded with the reason instead of a value. The software event `task-clock` (ns of CPU
//! time) is always counted: it exercises the same path where hardware counters are missing,
//! and its per-hit difference is a check on the TSC's.

use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Counter};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The events counted, by name.
const EVENTS: [&str; 4] = ["cycles", "instructions", "cache-misses", "task-clock"];

/// A counter of event `name` (one of [`EVENTS`]) on `pid` and the threads it creates.
fn counter(name: &str, pid: u32) -> std::io::Result<Counter> {
    let mut b = match name {
        "cycles" => Builder::new(Hardware::CPU_CYCLES),
        "instructions" => Builder::new(Hardware::INSTRUCTIONS),
        "cache-misses" => Builder::new(Hardware::CACHE_MISSES),
        _ => Builder::new(Software::TASK_CLOCK),
    };
    let mut c = b.observe_pid(pid as i32).inherit(true).build()?;
    c.enable()?;
    Ok(c)
}

/// What the counters of one workload process read, summed over the rounds of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Counter name → count (`task-clock` in ns).
    pub values: BTreeMap<String, u64>,
    /// Counter name → why it could not be counted (e.g. `No such file or directory (os error
    /// 2)`: no hardware counters in this VM).
    pub unavailable: BTreeMap<String, String>,
    /// Loop iterations the counts cover (timed and warm-up), over all rounds.
    pub iterations: u64,
}

impl Counts {
    /// Both processes' counts (pooling rounds).
    pub fn add(&mut self, other: &Counts) {
        for (k, v) in &other.values {
            *self.values.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.unavailable {
            self.unavailable
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        self.iterations += other.iterations;
    }

    /// `name` per iteration.
    pub fn per_iteration(&self, name: &str) -> Option<f64> {
        let v = *self.values.get(name)?;
        (self.iterations > 0).then(|| v as f64 / self.iterations as f64)
    }
}

/// Open counters on one process.
pub struct Counters {
    open: Vec<(&'static str, Counter)>,
    unavailable: BTreeMap<String, String>,
}

impl Counters {
    /// Opens and enables every counter on `pid` and the threads it creates; one that cannot be
    /// opened is kept with the reason.
    pub fn open(pid: u32) -> Counters {
        let mut open = Vec::new();
        let mut unavailable = BTreeMap::new();
        for name in EVENTS {
            match counter(name, pid) {
                Ok(c) => open.push((name, c)),
                Err(e) => {
                    unavailable.insert(name.to_owned(), e.to_string());
                }
            }
        }
        Counters { open, unavailable }
    }

    /// The counts (read after the process exited: inherited counts are final then).
    pub fn read(mut self, iterations: u64) -> Counts {
        let mut values = BTreeMap::new();
        for (name, c) in &mut self.open {
            match c.read() {
                Ok(v) => {
                    values.insert((*name).to_owned(), v);
                }
                Err(e) => {
                    self.unavailable.insert((*name).to_owned(), e.to_string());
                }
            }
        }
        Counts {
            values,
            unavailable: self.unavailable,
            iterations,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The software path, on a child that spins: task-clock counts its CPU time; hardware
    /// counters are either counted or listed with a reason, never silently missing.
    #[test]
    fn software_events_count_a_child_and_nothing_goes_missing() {
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "read x; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
            ])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let counters = Counters::open(child.id());
        drop(child.stdin.take());
        child.wait().unwrap();
        let counts = counters.read(20_000);
        if let Some(reason) = counts.unavailable.get("task-clock") {
            // perf_event_paranoid may forbid even software events to unprivileged users.
            eprintln!("skipped: task-clock unavailable: {reason}");
            return;
        }
        let ns = counts.values["task-clock"];
        assert!(
            ns > 1_000_000,
            "{counts:?}: 20000 shell loops take more than 1 ms"
        );
        for name in EVENTS {
            assert!(
                counts.values.contains_key(name) ^ counts.unavailable.contains_key(name),
                "{name}: {counts:?}"
            );
        }
        assert!(counts.per_iteration("task-clock").unwrap() > 50.0);
        let mut twice = counts.clone();
        twice.add(&counts);
        assert_eq!(twice.values["task-clock"], 2 * counts.values["task-clock"]);
        assert_eq!(twice.iterations, 40_000);
    }
}
