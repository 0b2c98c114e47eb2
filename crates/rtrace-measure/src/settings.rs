//! The settings every experiment shares, as a run applied them: one struct, flattened into each
//! result's `config` (its keys sit beside the experiment's own), filled in one place by the
//! harness from its validated common options.

use crate::trace_data::KeepTraces;
use rtrace_tracer::{RecordMode, TracerKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where and how an experiment ran: its CPUs, scheduling, rounds and tracer buffers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Measured CPU.
    pub cpu: usize,
    /// CPUs the harness and every consumer were confined to; empty in files of older versions
    /// that did not record them.
    #[serde(default)]
    pub harness_cpus: Vec<usize>,
    /// SCHED_FIFO priority of the measured thread; `None`: normal scheduling.
    pub priority: Option<i32>,
    /// `--rounds`: every entry of the plan ran this often, in alternating order; files of older
    /// versions without it: one round.
    #[serde(default = "one")]
    pub rounds: u32,
    /// Per-CPU buffer size handed to the tracers (KiB); `None`: each backend's own default.
    #[serde(default)]
    pub buffer_size_kb: Option<u64>,
    /// The trace buffer each tracer got, by tracer name, as its backend sized it from
    /// `buffer_size_kb`; empty in files of older versions.
    #[serde(default)]
    pub buffers: BTreeMap<String, String>,
    /// Conditions that could not be made equal between tracers, by tracer name.
    #[serde(default)]
    pub unequal: BTreeMap<String, String>,
    /// `--record`: how events were kept; absent in files of older versions (in
    /// `tracer_options.record` there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordMode>,
    /// `--keep-traces`: which runs kept their trace data (files of older versions kept all).
    #[serde(default)]
    pub keep_traces: Option<KeepTraces>,
    /// Backend options as given (`record`, `bpf_modes`, `lttng_event`, ...).
    #[serde(default)]
    pub tracer_options: serde_json::Value,
    /// Where the workload binaries came from (`--workload-dir`); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_dir: Option<String>,
}

impl RunSettings {
    /// The mode `tracer` ran in where a run names none: ftrace's and perf's recording mode (`--record`),
    /// the first LTTng event kind or BPF mode asked for (the only one of a run that takes one).
    pub fn mode(&self, tracer: TracerKind) -> Option<String> {
        let first = |key: &str| self.tracer_options[key].as_array()?.first()?.as_str();
        match tracer {
            TracerKind::Ebpf | TracerKind::Bpftrace => first("bpf_modes"),
            TracerKind::Lttng => first("lttng_event"),
            TracerKind::Ftrace | TracerKind::Perf => self.tracer_options["record"].as_str(),
            TracerKind::None | TracerKind::Strace => None,
        }
        .map(str::to_owned)
    }
}

fn one() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, Deserialize)]
    struct Config {
        loops: u64,
        #[serde(flatten)]
        run: RunSettings,
    }

    #[test]
    fn flattened_keys_sit_beside_the_experiment_s_and_old_files_load() {
        let old =
            r#"{"loops": 5, "cpu": 1, "priority": 99, "tracer_options": {"record": "stream"}}"#;
        let c: Config = serde_json::from_str(old).unwrap();
        assert_eq!((c.loops, c.run.cpu, c.run.priority), (5, 1, Some(99)));
        assert_eq!(c.run.rounds, 1);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["cpu"], 1);
        assert_eq!(v["loops"], 5);
        assert!(v.get("run").is_none(), "flattened: {v}");
    }

    #[test]
    fn a_tracer_s_mode_is_its_first_asked_for_or_ftrace_s_recording_mode() {
        let s = RunSettings {
            tracer_options: serde_json::json!({
                "bpf_modes": ["record", "aggregate"], "lttng_event": [], "record": "stream"
            }),
            ..Default::default()
        };
        assert_eq!(s.mode(TracerKind::Bpftrace).as_deref(), Some("record"));
        assert_eq!(s.mode(TracerKind::Ftrace).as_deref(), Some("stream"));
        assert_eq!(s.mode(TracerKind::Lttng), None);
        assert_eq!(RunSettings::default().mode(TracerKind::Ebpf), None);
    }
}
