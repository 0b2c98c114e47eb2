//! `usdt --decompose`: the per-hit cost decomposition is a plan of the `usdt` experiment. Every
//! tracer runs in the modes whose steps make its staircases (`rtrace_measure::decompose`): eBPF
//! floor / count / aggregate / record / record-wakeup, ftrace off / overwrite / stream, LTTng
//! tracepoint and tracef, bpftrace aggregate and record, perf overwrite and stream; on the usdt and usdt-nop5 sites; cases 0
//! and 1, and case 3 for LTTng only (its dormant tracepoint is the first step of its staircase).

use crate::options::{BpfMode, TracerChoice};
use crate::usdt::Options;
use rtrace_measure::usdt::{Case, HookKind};
use rtrace_tracer::RecordMode;

/// Turns `o` into the decomposition's plan.
pub fn apply(o: &mut Options) {
    o.tracers = TracerChoice::AllAvailable;
    o.cases = vec![Case::Baseline, Case::Traced, Case::Instrumented];
    o.hooks = vec![HookKind::Usdt, HookKind::UsdtNop5];
    o.decompose = true;
    let t = &mut o.common.tracer;
    t.bpf_modes = vec![
        BpfMode::Floor,
        BpfMode::Count,
        BpfMode::Aggregate,
        BpfMode::Record,
        BpfMode::RecordWakeup,
    ];
    t.ftrace_modes = vec![
        rtrace_ftrace::FtraceMode::Off,
        rtrace_ftrace::FtraceMode::Overwrite,
        rtrace_ftrace::FtraceMode::Stream,
    ];
    t.perf_modes = vec![RecordMode::Overwrite, RecordMode::Stream];
    t.lttng_events = vec![
        rtrace_lttng::EventKind::Tracepoint,
        rtrace_lttng::EventKind::Tracef,
    ];
}

/// Whether column `kind` runs its quiet cases (2, 3) in a decomposition: LTTng only.
pub fn quiet_cases(decompose: bool, kind: rtrace_tracer::TracerKind) -> bool {
    !decompose || kind == rtrace_tracer::TracerKind::Lttng
}
