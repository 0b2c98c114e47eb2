//! The events suite's bar figure: per experiment (Gregg's number), each tracer's per-event cost
//! with its interval over rounds, on a log axis, with Piotrowski's bpftrace 0.17 number marked.

use super::style;
use anyhow::Result;
use plotters::prelude::*;
use rtrace_measure::events::{piotrowski, EventsResult, Workload};

/// Costs at or below this (ns) sit at the bottom of the log axis.
const FLOOR: f64 = 10.0;

pub fn figure(title: &str, r: &EventsResult, w: Workload) -> Result<String> {
    let features = crate::events::features(r);
    let tracers: Vec<_> = crate::events::tracers(r)
        .into_iter()
        .filter(|&t| {
            features
                .iter()
                .any(|&f| r.cell(w, f, t).and_then(|c| r.cost(c)).is_some())
        })
        .collect();
    let n = features.len().max(1) as f64;
    let top = features
        .iter()
        .flat_map(|&f| {
            tracers
                .iter()
                .filter_map(move |&t| r.cell(w, f, t).and_then(|c| r.cost(c)))
                .map(|c| c.per_event_ns.high.unwrap_or(c.per_event_ns.estimate))
                .chain(piotrowski(f).map(|p| p.0 as f64))
        })
        .fold(100.0f64, f64::max)
        * 2.0;
    style::svg(style::WIDE, |root| {
        let body = root.titled(title, style::text(style::TITLE_PX))?;
        let mut chart =
            style::chart(&body).build_cartesian_2d(-0.5..n - 0.5, (FLOOR..top).log_scale())?;
        let names: Vec<String> = features
            .iter()
            .map(|f| format!("{:02}", f.number()))
            .collect();
        style::mesh(&mut chart)
            .disable_x_mesh()
            .x_labels(features.len() + 1)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_desc("experiment (Gregg's numbering; names in the table)")
            .y_desc("cost per event (ns, log scale)")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        let width = 0.8 / tracers.len().max(1) as f64;
        for (k, &t) in tracers.iter().enumerate() {
            let look = style::look(t, 0);
            let bars: Vec<(f64, f64, Option<f64>, Option<f64>)> = features
                .iter()
                .enumerate()
                .filter_map(|(i, &f)| {
                    let c = r.cell(w, f, t).and_then(|c| r.cost(c))?;
                    let x = i as f64 - 0.4 + width * (k as f64 + 0.5);
                    let e = c.per_event_ns;
                    Some((x, e.estimate.max(FLOOR), e.low, e.high))
                })
                .collect();
            chart
                .draw_series(bars.iter().map(|&(x, v, _, _)| {
                    Rectangle::new(
                        [(x - width / 2.0 * 0.9, FLOOR), (x + width / 2.0 * 0.9, v)],
                        look.colour.mix(0.85).filled(),
                    )
                }))?
                .label(format!("{t}"))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 16, y + 6)], look.colour.filled())
                });
            chart.draw_series(bars.iter().filter_map(|&(x, _, lo, hi)| {
                let (lo, hi) = (lo?.max(FLOOR), hi?.max(FLOOR));
                Some(PathElement::new(
                    vec![(x, lo), (x, hi)],
                    BLACK.stroke_width(2),
                ))
            }))?;
        }
        chart
            .draw_series(features.iter().enumerate().filter_map(|(i, &f)| {
                let (ns, _) = piotrowski(f)?;
                (ns > 0).then(|| {
                    PathElement::new(
                        vec![(i as f64 - 0.45, ns as f64), (i as f64 + 0.45, ns as f64)],
                        BLACK.stroke_width(3),
                    )
                })
            }))?
            .label("Piotrowski: bpftrace 0.17, Xeon Gold 6226R")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(3)));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(0xcc, 0xcc, 0xcc))
            .label_font(style::text(style::LABEL_PX))
            .draw()?;
        Ok(())
    })
}
