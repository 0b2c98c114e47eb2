//! The events suite's bar figure: per experiment (Gregg's number), each tracer's per-event cost
//! with its interval over rounds, on a log axis, with Piotrowski's bpftrace 0.17 number marked.

use super::bars::{self, Axes, Bars, Mark};
use super::style;
use anyhow::Result;
use rtrace_measure::events::{piotrowski, EventsResult, Workload};

pub fn figure(title: &str, r: &EventsResult, w: Workload) -> Result<String> {
    let features = crate::events::features(r);
    let cost = |f, t| {
        r.cell(w, f, t)
            .and_then(|c| r.cost(c))
            .map(|c| c.per_event_ns)
    };
    let series: Vec<Bars> = crate::events::tracers(r)
        .into_iter()
        .filter(|&t| features.iter().any(|&f| cost(f, t).is_some()))
        .map(|t| Bars {
            label: t.to_string(),
            colour: style::look(t, 0).colour,
            values: features.iter().map(|&f| cost(f, t)).collect(),
        })
        .collect();
    let names: Vec<String> = features
        .iter()
        .map(|f| format!("{:02}", f.number()))
        .collect();
    let mark = Mark {
        label: "Piotrowski: bpftrace 0.17, Xeon Gold 6226R".into(),
        values: features
            .iter()
            .map(|&f| piotrowski(f).map(|p| p.0 as f64))
            .collect(),
    };
    let axes = Axes {
        x: "experiment (Gregg's numbering; names in the table)",
        y: "cost per event (ns, log scale)",
    };
    bars::figure(title, &names, axes, &series, Some(&mark))
}
