//! Which costs face which: per tracer and hook, every cost whose mode another experiment
//! measured too, and every cost of an experiment that shares no mode with another on that hook
//! (events' empty programs); each against plain `usdt`'s cost of the same tracer, mode and hook,
//! else the first cost of that mode, and one whose mode no other experiment measured against the
//! hook's first cost (in [`Experiment`] order: hot loops first).

use crate::cost::{Cost, Experiment, Hook};
use rtrace_measure::usdt::HookKind;
use rtrace_tracer::TracerKind;

/// A cost and the one it is compared with (itself: it is the reference).
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub cost: &'a Cost,
    pub reference: &'a Cost,
}

impl Row<'_> {
    pub fn is_reference(&self) -> bool {
        std::ptr::eq(self.cost, self.reference)
    }
}

/// What the costs compared with each other share besides the tracer: the kind of hook site.
/// Where the results record the probed instruction, its traps per hit and whether the return
/// is hooked too (an emulated `nop` and an emulated `push` are one kind, a single-stepped
/// function entry another, whatever experiment placed it); else the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Site { traps: u8, ret: bool },
    Hook(Hook),
}

fn kind(c: &Cost) -> Kind {
    match c.class.as_ref().and_then(|s| s.mechanism.traps()) {
        Some(traps) => Kind::Site {
            traps,
            ret: c.hook == Hook::User(HookKind::Uretprobe),
        },
        None => Kind::Hook(c.hook),
    }
}

/// The rows of `costs`, per tracer ([`TracerKind::ALL`] order) and kind of hook site; within a
/// kind a block per mode (the reference's first), in [`Experiment`] order.
pub fn rows(costs: &[Cost]) -> Vec<Row<'_>> {
    let mut sorted: Vec<&Cost> = costs.iter().collect();
    let tracer_at = |t: TracerKind| TracerKind::ALL.iter().position(|&x| x == t);
    // Within an experiment the hot loop comes first: a mode's reference is plain usdt's.
    let order = |c: &Cost| (kind(c), c.experiment, c.spacing.apart(), c.hook);
    sorted.sort_by_key(|c| (tracer_at(c.tracer), order(c)));
    let same_kind = |a: &&Cost, b: &&Cost| (a.tracer, kind(a)) == (b.tracer, kind(b));
    sorted.chunk_by(same_kind).flat_map(hook_rows).collect()
}

/// The rows of one tracer's costs on one hook, sorted by experiment.
fn hook_rows<'a>(group: &[&'a Cost]) -> Vec<Row<'a>> {
    let shared = |c: &Cost| {
        group
            .iter()
            .any(|o| o.experiment != c.experiment && o.mode == c.mode)
    };
    let shares = |e: Experiment| group.iter().any(|c| c.experiment == e && shared(c));
    // The group is in experiment order: a mode's first cost is plain usdt's when it has one.
    let reference = |c: &Cost| -> &'a Cost {
        let first_of_mode = group.iter().find(|o| o.mode == c.mode);
        match shared(c) {
            true => first_of_mode.copied().unwrap_or(group[0]),
            false => group[0],
        }
    };
    let shown: Vec<&Cost> = group
        .iter()
        .copied()
        .filter(|c| shared(c) || !shares(c.experiment))
        .collect();
    if group.iter().all(|c| c.experiment == group[0].experiment) || shown.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Row<'a>> = Vec::new();
    for mode in crate::format::unique(group.iter().map(|c| &c.mode)) {
        for &c in group.iter().filter(|c| &c.mode == mode) {
            let referenced = shown.iter().any(|s| std::ptr::eq(reference(s), c));
            if shown.iter().any(|s| std::ptr::eq(*s, c)) || referenced {
                out.push(Row {
                    cost: c,
                    reference: reference(c),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consistency::tests::cost;
    use crate::cost::EMPTY_ACTION;
    use Experiment::{Decompose, Events, Sweep, Usdt};

    /// (row, its reference) by source.
    fn pairs(costs: &[Cost]) -> Vec<(String, String)> {
        rows(costs)
            .iter()
            .map(|r| (r.cost.source.clone(), r.reference.source.clone()))
            .collect()
    }

    fn pair(row: &str, reference: &str) -> (String, String) {
        (row.into(), reference.into())
    }

    #[test]
    fn a_cost_faces_usdt_s_of_its_mode_else_the_hook_s_first() {
        let costs = [
            cost(Usdt, "record", 480.0),
            cost(Usdt, "aggregate", 400.0),
            cost(Usdt, "record-wakeup", 9100.0),
            cost(Sweep, "record", 650.0),
            cost(Events, EMPTY_ACTION, 13900.0),
        ];
        // usdt's other modes: no other experiment measured them.
        let want = [
            pair("Usdt record", "Usdt record"),
            pair("Sweep record", "Usdt record"),
            pair("Events empty action", "Usdt record"),
        ];
        assert_eq!(pairs(&costs), want);
        assert!(rows(&costs)[0].is_reference() && !rows(&costs)[1].is_reference());
        let one_experiment = [cost(Usdt, "record", 1.0), cost(Usdt, "aggregate", 2.0)];
        assert!(rows(&one_experiment).is_empty());
    }

    #[test]
    fn without_plain_usdt_a_cost_faces_the_first_of_its_mode() {
        let costs = [
            cost(Decompose, "floor", 370.0),
            cost(Decompose, "record", 460.0),
            cost(Sweep, "record", 650.0),
        ];
        let want = [
            pair("Decompose record", "Decompose record"),
            pair("Sweep record", "Decompose record"),
        ];
        assert_eq!(pairs(&costs), want);
    }
}
