//! The fleet's figure: per hook kind, each tracer and mode's per-hit cost on every machine (a
//! group of bars per machine and repeat), on a log axis, whiskers the 95% interval.

use super::bars::{self, Axes, Bars};
use super::style;
use crate::fleet::Fleet;
use anyhow::Result;
use rtrace_measure::usdt::HookKind;

pub fn figure(title: &str, fleet: &Fleet, hook: HookKind) -> Result<String> {
    let series = fleet.series(hook);
    let looks = style::looks(series.iter().map(|(t, _, _)| *t));
    let series: Vec<Bars> = series
        .into_iter()
        .zip(looks)
        .map(|((_, label, values), look)| Bars {
            label,
            colour: look.colour,
            values,
        })
        .collect();
    let axes = Axes {
        x: "machine",
        y: "per-hit cost (ns, log scale)",
    };
    bars::figure(title, &fleet.row_names(), axes, &series, None)
}
