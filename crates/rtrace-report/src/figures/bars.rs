//! Grouped bars on a log axis, with whiskers for each bar's 95% interval and an optional
//! reference mark per category: the events suite's per-event costs (a group per experiment) and
//! the fleet's per-hit costs (a group per machine).

use super::style;
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use rtrace_measure::interval::Estimate;

/// Width of the legend column right of the plot (px): the legend never covers a bar.
const LEGEND_PX: u32 = 330;
/// Height of one legend entry (px).
const LEGEND_ROW_PX: i32 = 22;

/// Values at or below this (ns) sit at the bottom of the log axis.
pub const FLOOR: f64 = 10.0;

/// One series: a bar per category where it has a value.
pub struct Bars {
    pub label: String,
    pub colour: RGBColor,
    pub values: Vec<Option<Estimate>>,
}

/// A thick black line per category at a reference value (a published number).
pub struct Mark {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

/// The axes' texts.
pub struct Axes<'a> {
    /// Under the categories.
    pub x: &'a str,
    /// Beside the log axis.
    pub y: &'a str,
}

/// Draws `series` over `categories` on a log axis from [`FLOOR`].
pub fn figure(
    title: &str,
    categories: &[String],
    axes: Axes,
    series: &[Bars],
    mark: Option<&Mark>,
) -> Result<String> {
    figure_in(
        (style::WIDE, LEGEND_PX),
        title,
        categories,
        axes,
        series,
        mark,
    )
}

/// [`figure`] on a plot of `size` px with a legend column `legend_px` wide beside it.
pub fn figure_in(
    (size, legend_px): ((u32, u32), u32),
    title: &str,
    categories: &[String],
    axes: Axes,
    series: &[Bars],
    mark: Option<&Mark>,
) -> Result<String> {
    let n = categories.len().max(1) as f64;
    let marks = mark.iter().flat_map(|m| m.values.iter().flatten().copied());
    let top = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .map(|e| e.high.unwrap_or(e.estimate))
        .chain(marks)
        .fold(100.0f64, f64::max)
        * 2.0;
    let (w, h) = size;
    style::svg((w + legend_px, h), |root| {
        let body = root.titled(title, style::text(style::TITLE_PX))?;
        let (bw, _) = body.dim_in_pixel();
        let (plot, legend) = body.split_horizontally(bw - legend_px);
        let entries = series
            .iter()
            .map(|s| (s.label.as_str(), Some(s.colour)))
            .chain(mark.map(|m| (m.label.as_str(), None)));
        for (i, (label, colour)) in entries.enumerate() {
            let y = style::MARGIN_PX as i32 * 2 + i as i32 * LEGEND_ROW_PX;
            let x = style::MARGIN_PX as i32;
            match colour {
                Some(c) => {
                    legend.draw(&Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.filled()))?
                }
                None => legend.draw(&PathElement::new(
                    vec![(x, y), (x + 18, y)],
                    BLACK.stroke_width(3),
                ))?,
            }
            legend.draw(&Text::new(
                label.to_owned(),
                (x + 26, y),
                style::text(style::LABEL_PX).pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
        let mut chart =
            style::chart(&plot).build_cartesian_2d(-0.5..n - 0.5, (FLOOR..top).log_scale())?;
        style::mesh(&mut chart)
            .disable_x_mesh()
            .x_labels(categories.len() + 1)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    categories.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_desc(axes.x)
            .y_desc(axes.y)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        let width = 0.8 / series.len().max(1) as f64;
        for (k, s) in series.iter().enumerate() {
            let bars: Vec<(f64, f64, Option<f64>, Option<f64>)> = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    let e = e.as_ref()?;
                    let x = i as f64 - 0.4 + width * (k as f64 + 0.5);
                    Some((x, e.estimate.max(FLOOR), e.low, e.high))
                })
                .collect();
            chart.draw_series(bars.iter().map(|&(x, v, _, _)| {
                Rectangle::new(
                    [(x - width / 2.0 * 0.9, FLOOR), (x + width / 2.0 * 0.9, v)],
                    s.colour.mix(0.85).filled(),
                )
            }))?;
            chart.draw_series(bars.iter().filter_map(|&(x, _, lo, hi)| {
                let (lo, hi) = (lo?.max(FLOOR), hi?.max(FLOOR));
                Some(PathElement::new(
                    vec![(x, lo), (x, hi)],
                    BLACK.stroke_width(2),
                ))
            }))?;
        }
        if let Some(m) = mark {
            chart.draw_series(m.values.iter().enumerate().filter_map(|(i, v)| {
                let v = (*v)?;
                (v > 0.0).then(|| {
                    PathElement::new(
                        vec![(i as f64 - 0.45, v), (i as f64 + 0.45, v)],
                        BLACK.stroke_width(3),
                    )
                })
            }))?;
        }
        Ok(())
    })
}
