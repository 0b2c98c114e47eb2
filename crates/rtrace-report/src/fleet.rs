//! The fleet: results of several machines side by side. A machine is its name (`--machine`,
//! else the hostname), kernel and CPU model ([`Environment::machine_key`]); the same experiment
//! run twice on one machine is a repeat of it, not another machine. Per tracer a table with a
//! row per machine (and repeat) and each hook and mode's per-hit cost from plain `usdt` results
//! (the costs [`crate::consistency::sources`] reads, so that every number is the one the usdt
//! section shows), the sweep's shifts against `none` the same way, and what could not be
//! compared. Built when a report holds results of more than one machine.
//!
//! [`Environment::machine_key`]: rtrace_measure::Environment::machine_key

use crate::consistency::interval;
use crate::cost::{Cost, Experiment, Hook};
use crate::doc::{Block, Cell, Column, Group, Section, Table};
use crate::format::{int, listed, unique};
use crate::result::{Entry, Report};
use rtrace_measure::interval::Estimate;
use rtrace_measure::usdt::HookKind;
use rtrace_tracer::TracerKind;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// How to read the fleet's tables.
pub const NOTE: &str = "Each machine is its name (`--machine`, else the hostname), kernel and CPU model: the same host booted on another kernel is another row. Per-hit costs are plain `usdt`'s (case 1 minus case 0 by mean without disturbed samples, 95% interval over rounds), the numbers of each machine's usdt section; shifts are the sweep's (a configuration's median wake-up latency minus the untraced runs beside it). A machine's second result of the same experiment is a repeat: its own row, `run 2`, the spread between repeats is what the machine itself varies";

/// One machine of the fleet.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// As shown, unique in the fleet: the label (or hostname), with the kernel when one name
    /// has several kernels or CPUs.
    pub name: String,
    pub label: Option<String>,
    pub hostname: String,
    pub cpu_model: String,
    pub online_cpus: usize,
    pub kernel_release: String,
    pub preemption: String,
    /// `bare metal`, `virtual machine`, `emulated (QEMU TCG)`.
    pub platform: String,
    pub tracer_versions: BTreeMap<String, String>,
    /// rtrace-bench's versions of its results.
    pub tool_versions: Vec<String>,
    /// Its results' ids in the report.
    pub results: Vec<String>,
}

/// One cost of one machine's result.
#[derive(Debug, Clone, Serialize)]
pub struct FleetCost {
    /// The machine's name ([`Machine::name`]).
    pub machine: String,
    /// 1 for the machine's first result of this experiment, 2 for its repeat...
    pub run: usize,
    /// The result's id in the report.
    pub result: String,
    /// `usdt` (per-hit cost) or `sweep` (latency shift).
    pub experiment: &'static str,
    pub tracer: TracerKind,
    pub hook: &'static str,
    pub mode: Option<String>,
    pub site: Option<String>,
    /// The column it goes to in its tracer's table: hook, mode and site (usdt), or the sweep's
    /// configuration.
    pub column: String,
    /// Per hit (usdt) or shift (sweep), ns, with its interval over rounds.
    pub ns: Estimate,
}

/// The machines, their costs, and what could not be compared.
#[derive(Debug, Clone, Serialize)]
pub struct Fleet {
    pub machines: Vec<Machine>,
    pub costs: Vec<FleetCost>,
    /// Why a result or an experiment is not in the tables.
    pub not_compared: Vec<String>,
}

/// A row of a table: a machine's n-th run.
type RowKey = (String, usize);

/// The fleet of `report`'s results; `None` when they come from one machine.
pub fn of(report: &Report) -> Option<Fleet> {
    fn key(e: &Entry) -> (&str, &str, &str) {
        e.result.environment().machine_key()
    }
    let keys = unique(report.entries.iter().map(key));
    if keys.len() < 2 {
        return None;
    }
    let machine_of = |e: &Entry| keys.iter().position(|x| *x == key(e)).unwrap_or(0);
    let names = names(&keys);
    let version = common_version(report);
    let mut machines: Vec<Machine> = keys
        .iter()
        .zip(&names)
        .map(|(k, name)| {
            let first = report.entries.iter().find(|e| key(e) == *k);
            machine(name, first.map(|e| e.result.environment()))
        })
        .collect();
    let mut costs = Vec::new();
    let mut not_compared = Vec::new();
    // (experiment kind, machine) → runs so far.
    let mut runs: BTreeMap<(&str, usize), usize> = BTreeMap::new();
    for e in &report.entries {
        let m = machine_of(e);
        let kind = kind(e);
        let run = runs.entry((kind, m)).or_default();
        *run += 1;
        let v = e.result.header().tool_version.clone();
        if !machines[m].tool_versions.contains(&v) {
            machines[m].tool_versions.push(v.clone());
        }
        machines[m].results.push(e.id.clone());
        if v != version {
            not_compared.push(format!(
                "`{}` of {}: measured with rtrace-bench {v}, the others with {version}; its costs may be defined otherwise, not compared",
                e.id, names[m]
            ));
            continue;
        }
        let experiment = match e.result.model().cost_experiment() {
            Some(x @ (Experiment::Usdt | Experiment::Sweep)) => x,
            _ => continue,
        };
        for c in e.result.model().costs() {
            if c.experiment == experiment {
                costs.push(cost(&names[m], *run, e, &c));
            }
        }
    }
    not_compared.extend(alone(report, &names, machine_of));
    Some(Fleet {
        machines,
        costs,
        not_compared,
    })
}

/// The kind of experiment of an entry, for repeats: `usdt --decompose` apart from `usdt`.
fn kind(e: &Entry) -> &str {
    match e.result.is_decomposition() {
        true => "usdt --decompose",
        false => e.result.experiment(),
    }
}

/// Each machine's shown name: its name, with the kernel (and CPU model) where one name has
/// several.
fn names(keys: &[(&str, &str, &str)]) -> Vec<String> {
    keys.iter()
        .map(|&(name, kernel, cpu)| {
            let same: Vec<_> = keys.iter().filter(|k| k.0 == name).collect();
            if same.len() == 1 {
                name.to_owned()
            } else if same.iter().filter(|k| k.1 == kernel).count() == 1 {
                format!("{name} ({kernel})")
            } else {
                format!("{name} ({kernel}, {cpu})")
            }
        })
        .collect()
}

/// The rtrace-bench version most of the results were measured with (the first such in report
/// order on a tie).
fn common_version(report: &Report) -> String {
    let versions: Vec<&str> = report
        .entries
        .iter()
        .map(|e| e.result.header().tool_version.as_str())
        .collect();
    let count = |v: &&&str| versions.iter().filter(|x| x == v).count();
    // `max_by_key` keeps the last of equals: reversed, the first.
    let most = versions.iter().rev().max_by_key(count);
    most.map_or_else(String::new, |v| v.to_string())
}

fn machine(name: &str, env: Option<&rtrace_measure::Environment>) -> Machine {
    let env = env.cloned().unwrap_or_default();
    let platform = match (env.emulated, env.virtualized) {
        (true, _) => "emulated (QEMU TCG)",
        (false, true) => "virtual machine",
        (false, false) => "bare metal",
    };
    Machine {
        name: name.to_owned(),
        label: env.label.clone(),
        hostname: env.hostname.clone(),
        cpu_model: env.cpu_model.clone(),
        online_cpus: env.online_cpus,
        kernel_release: env.kernel_release.clone(),
        preemption: env.preemption.clone(),
        platform: platform.to_owned(),
        tracer_versions: env.tracer_versions.clone(),
        tool_versions: Vec::new(),
        results: Vec::new(),
    }
}

fn cost(machine: &str, run: usize, e: &Entry, c: &Cost) -> FleetCost {
    let column = match c.experiment {
        Experiment::Sweep => match c.source.as_str() {
            "sweep" => format!("{} {}", c.tracer, c.hook.name()),
            other => other.to_owned(),
        },
        _ => usdt_column(c),
    };
    FleetCost {
        machine: machine.to_owned(),
        run,
        result: e.id.clone(),
        experiment: c.experiment.name(),
        tracer: c.tracer,
        hook: c.hook.name(),
        mode: c.mode.clone(),
        site: c.site.clone(),
        column,
        ns: c.ns,
    }
}

/// `usdt, stream`, `uprobe, record, rtrace_marker_hit`: the site only when it is not the
/// hook's usual one.
fn usdt_column(c: &Cost) -> String {
    let usual = match c.hook {
        Hook::User(HookKind::Usdt) => Some("rtrace:event"),
        Hook::User(HookKind::UsdtNop5) => Some("rtrace:event_nop5"),
        Hook::User(HookKind::UsdtStepped) => Some("rtrace:event_stepped"),
        Hook::User(HookKind::Uprobe) | Hook::User(HookKind::Uretprobe) => Some("rtrace_marker_hit"),
        Hook::Kernel => None,
    };
    let mut parts = vec![c.hook.name().to_owned()];
    parts.extend(c.mode.clone());
    if let Some(site) = c.site.as_deref().filter(|s| Some(*s) != usual) {
        parts.push(site.to_owned());
    }
    parts.join(", ")
}

/// The experiments only one machine measured, and those the fleet does not set side by side.
fn alone(report: &Report, names: &[String], machine_of: impl Fn(&Entry) -> usize) -> Vec<String> {
    let mut out = Vec::new();
    for k in unique(report.entries.iter().map(kind)) {
        let mut on: Vec<usize> = report
            .entries
            .iter()
            .filter(|e| kind(e) == k)
            .map(&machine_of)
            .collect();
        on.sort_unstable();
        on.dedup();
        let compared = matches!(k, "usdt" | "cyclictest-sweep");
        let list: Vec<&str> = on.iter().map(|&m| names[m].as_str()).collect();
        if compared && on.len() == 1 {
            let others: Vec<&str> = names
                .iter()
                .map(|n| n.as_str())
                .filter(|n| *n != list[0])
                .collect();
            out.push(format!(
                "`{k}`: measured on {} only, nothing to set beside it (not on {})",
                list[0],
                others.join(", ")
            ));
        } else if !compared {
            out.push(format!(
                "`{k}` ({}): in its own section; the fleet sets usdt's per-hit costs and the sweep's shifts side by side",
                list.join(", ")
            ));
        }
    }
    out
}

impl Fleet {
    /// The rows of the tables: every machine's runs, in machine order.
    fn rows(&self, experiment: &str) -> Vec<RowKey> {
        let at = |name: &str| self.machines.iter().position(|m| m.name == name);
        let of = self.costs.iter().filter(|c| c.experiment == experiment);
        let rows: BTreeSet<_> = of.map(|c| (at(&c.machine), c.run, &c.machine)).collect();
        rows.into_iter()
            .map(|(_, run, m)| (m.clone(), run))
            .collect()
    }

    /// The columns of `tracer`'s costs of `experiment`, in the order of the first machine's
    /// (then the others').
    fn columns(&self, experiment: &str, tracer: Option<TracerKind>) -> Vec<String> {
        let of =
            |c: &&FleetCost| c.experiment == experiment && tracer.is_none_or(|t| c.tracer == t);
        unique(self.costs.iter().filter(of).map(|c| c.column.clone()))
    }

    /// The cost in `row` and `column` (of `tracer`: two tracers may share a column's name).
    fn find(
        &self,
        experiment: &str,
        tracer: Option<TracerKind>,
        row: &RowKey,
        column: &str,
    ) -> Option<&FleetCost> {
        self.costs.iter().find(|c| {
            c.experiment == experiment
                && tracer.is_none_or(|t| c.tracer == t)
                && c.machine == row.0
                && c.run == row.1
                && c.column == column
        })
    }

    /// The usdt costs of `hook` as figure series: per tracer and mode (site), the rows'
    /// estimates.
    pub fn series(&self, hook: HookKind) -> Vec<(TracerKind, String, Vec<Option<Estimate>>)> {
        let rows = self.rows("usdt");
        let mut out: Vec<(TracerKind, String, Vec<Option<Estimate>>)> = Vec::new();
        for t in TracerKind::ALL {
            for col in self.columns("usdt", Some(t)) {
                let first = self.costs.iter().find(|c| c.column == col && c.tracer == t);
                if first.is_none_or(|c| c.hook != hook.name()) {
                    continue;
                }
                let values = rows
                    .iter()
                    .map(|r| self.find("usdt", Some(t), r, &col).map(|c| c.ns))
                    .collect();
                out.push((t, format!("{t} ({col})"), values));
            }
        }
        out
    }

    /// The rows' names as the figure's categories: `lab-a`, `lab-a run 2`.
    pub fn row_names(&self) -> Vec<String> {
        self.rows("usdt").iter().map(row_name).collect()
    }

    /// The hook kinds the usdt costs cover, in `HookKind::ALL` order.
    pub fn hooks(&self) -> Vec<HookKind> {
        HookKind::ALL
            .into_iter()
            .filter(|h| {
                self.costs
                    .iter()
                    .any(|c| c.experiment == "usdt" && c.hook == h.name())
            })
            .collect()
    }
}

fn row_name((machine, run): &RowKey) -> String {
    match run {
        1 => machine.clone(),
        n => format!("{machine} run {n}"),
    }
}

/// The fleet section of `report`; `None` for results of one machine.
pub fn section(report: &Report) -> Option<Section> {
    let fleet = of(report)?;
    let mut s = Section {
        id: "fleet".into(),
        title: "the same measurement on several machines".into(),
        source: None,
        subtitle: format!("{NOTE}."),
        summary: summary(&fleet),
        blocks: Vec::new(),
        figures_at: None,
    };
    s.table("Machines", machines_table(&fleet));
    for t in TracerKind::ALL {
        if let Some(table) = cost_table(&fleet, "usdt", Some(t)) {
            s.table(format!("{t}: per-hit cost by machine"), table);
        }
    }
    if let Some(table) = cost_table(&fleet, "sweep", None) {
        s.table("cyclictest-sweep: median latency shift by machine", table);
    }
    if fleet.costs.is_empty() {
        s.push(Block::Paragraph(
            "No usdt or cyclictest-sweep result of these machines could be compared.".into(),
        ));
    }
    s.list("Not compared", crate::doc::items(fleet.not_compared));
    Some(s)
}

fn machines_table(f: &Fleet) -> Table {
    let names = [
        "machine",
        "hostname",
        "CPU",
        "CPUs",
        "kernel",
        "preemption",
        "platform",
        "tracers",
        "rtrace-bench",
        "results",
    ];
    let mut t = Table::new("machines", names.len(), crate::doc::columns(&names));
    for m in &f.machines {
        let tracers: Vec<String> = m.tracer_versions.values().cloned().collect();
        t.text_row(vec![
            m.name.clone(),
            m.hostname.clone(),
            m.cpu_model.clone(),
            m.online_cpus.to_string(),
            m.kernel_release.clone(),
            m.preemption.clone(),
            m.platform.clone(),
            listed(tracers, "; ", |l| l).unwrap_or_else(|| "not recorded".into()),
            m.tool_versions.join(", "),
            m.results.join(", "),
        ]);
    }
    t
}

/// A table with a row per machine run and, per column of `experiment` (of `tracer`), the cost
/// and its interval; `None` when nothing was measured.
fn cost_table(f: &Fleet, experiment: &str, tracer: Option<TracerKind>) -> Option<Table> {
    let cols = f.columns(experiment, tracer);
    if cols.is_empty() {
        return None;
    }
    let rows = f.rows(experiment);
    let mut columns = vec![Column::new("machine")];
    let mut groups = Vec::new();
    let what = match experiment {
        "sweep" => "shift",
        _ => "per hit",
    };
    for col in &cols {
        columns.push(Column::new(what).shown_unit("ns"));
        columns.push(Column::new("95% interval").unit("ns"));
        groups.push(Group {
            name: col.clone(),
            columns: 2,
        });
    }
    let id = match tracer {
        Some(t) => format!("{experiment}-{t}"),
        None => experiment.to_owned(),
    };
    let mut table = Table::new(id, 1, columns);
    table.groups = groups;
    table.rows = rows
        .iter()
        .map(|r| {
            let mut cells = vec![Cell::text(row_name(r))];
            for col in &cols {
                let e = f.find(experiment, tracer, r, col).map(|c| c.ns);
                cells.push(Cell::or_missing(e.as_ref(), |e| {
                    Cell::estimate(crate::doc::interval(e), 1.0, int(e.estimate))
                }));
                cells.push(Cell::or_missing(e.as_ref().and_then(interval), Cell::text));
            }
            cells
        })
        .collect();
    Some(table)
}

/// Per tracer, the first usdt column at least two machines measured: its cheapest and dearest
/// machine (first runs), and whether their intervals part.
fn summary(f: &Fleet) -> Vec<String> {
    let names: Vec<&str> = f.machines.iter().map(|m| m.name.as_str()).collect();
    let mut out = vec![format!(
        "{} machines: {}.",
        f.machines.len(),
        names.join(", ")
    )];
    for t in TracerKind::ALL {
        for col in f.columns("usdt", Some(t)) {
            let firsts: Vec<&FleetCost> = f
                .machines
                .iter()
                .filter_map(|m| f.find("usdt", Some(t), &(m.name.clone(), 1), &col))
                .collect();
            if firsts.len() < 2 {
                continue;
            }
            let by = |a: &&&FleetCost, b: &&&FleetCost| a.ns.estimate.total_cmp(&b.ns.estimate);
            let (lo, hi) = (firsts.iter().min_by(by), firsts.iter().max_by(by));
            let (Some(lo), Some(hi)) = (lo, hi) else {
                continue;
            };
            let apart = match (lo.ns.high, hi.ns.low) {
                (Some(a), Some(b)) if a < b => "their intervals apart",
                (Some(_), Some(_)) => "within their intervals",
                _ => "no interval",
            };
            let ratio = match lo.ns.estimate > 0.0 {
                true => format!("{:.2}×", hi.ns.estimate / lo.ns.estimate),
                false => "the cheapest at or below 0".into(),
            };
            out.push(format!(
                "{t} ({col}): {} ns on {} to {} ns on {}: {ratio}, {apart}.",
                int(lo.ns.estimate),
                lo.machine,
                int(hi.ns.estimate),
                hi.machine
            ));
            break;
        }
    }
    if !f.not_compared.is_empty() {
        out.push(format!("Not compared: {}.", f.not_compared.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::result::AnyResult;

    fn labelled(label: &str, started: u64) -> AnyResult {
        let mut u = fixtures::usdt();
        u.header.environment.label = Some(label.into());
        u.header.started_unix = started;
        AnyResult::from(u)
    }

    #[test]
    fn one_machine_has_no_fleet() {
        let r = Report::new([(None, labelled("a", 1)), (None, labelled("a", 2))]);
        assert!(of(&r).is_none());
    }

    #[test]
    fn machines_are_rows_and_repeats_are_runs() {
        use rtrace_measure::usdt::Case;
        let mut b = fixtures::usdt();
        b.header.environment.label = Some("b".into());
        b.runs = vec![fixtures::case(TracerKind::None, Case::Baseline, 15, 0)];
        for (case, centre) in [
            (Case::Traced, 400),
            (Case::Dormant, 16),
            (Case::Instrumented, 16),
        ] {
            b.runs
                .push(fixtures::case(TracerKind::Lttng, case, centre, 0));
        }
        let r = Report::new([
            (None, labelled("a", 1)),
            (None, AnyResult::from(b)),
            (None, labelled("a", 3)),
        ]);
        let f = of(&r).unwrap();
        let names: Vec<&str> = f.machines.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(f.machines[0].results, ["usdt", "usdt-3"]);
        assert_eq!(
            f.rows("usdt"),
            [("a".into(), 1), ("a".into(), 2), ("b".into(), 1)],
            "a machine's repeats under it"
        );
        // The fleet's numbers are the consistency sources' (the usdt section's).
        let expected = r.entries[0].result.model().costs();
        let a1: Vec<&FleetCost> = f
            .costs
            .iter()
            .filter(|c| c.machine == "a" && c.run == 1)
            .collect();
        assert_eq!(a1.len(), expected.len());
        assert!(a1.iter().zip(&expected).all(|(f, e)| f.ns == e.ns));
        let s = section(&r).unwrap();
        assert!(
            s.summary[0].starts_with("2 machines: a, b"),
            "{:?}",
            s.summary
        );
        let lttng = s.summary.iter().find(|l| l.starts_with("lttng")).unwrap();
        assert!(
            lttng.contains("on a to") && lttng.contains("ns on b: 2."),
            "{lttng}"
        );
        assert!(lttng.contains("their intervals apart"), "{lttng}");
    }

    #[test]
    fn other_versions_and_lone_experiments_are_named() {
        let mut old = fixtures::usdt();
        old.header.environment.label = Some("b".into());
        old.header.tool_version = "0.0.1".into();
        let mut sweep = fixtures::sweep("PREEMPT_RT", 1);
        sweep.header.environment.label = Some("a".into());
        let r = Report::new([
            (None, labelled("a", 1)),
            (None, labelled("a", 2)),
            (None, AnyResult::from(old)),
            (None, AnyResult::from(sweep)),
        ]);
        let f = of(&r).unwrap();
        let text = f.not_compared.join("\n");
        assert!(
            text.contains("`usdt-3` of b: measured with rtrace-bench 0.0.1"),
            "{text}"
        );
        assert!(
            text.contains("`cyclictest-sweep`: measured on a only"),
            "{text}"
        );
        assert!(f.costs.iter().all(|c| c.machine == "a"));
    }

    #[test]
    fn one_name_on_two_kernels_is_two_machines() {
        let mut other = fixtures::usdt();
        other.header.environment.label = Some("a".into());
        other.header.environment.kernel_release = "6.1.0-rt".into();
        let r = Report::new([(None, labelled("a", 1)), (None, AnyResult::from(other))]);
        let f = of(&r).unwrap();
        let names: Vec<&str> = f.machines.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["a (6.1.0-test)", "a (6.1.0-rt)"]);
    }
}
