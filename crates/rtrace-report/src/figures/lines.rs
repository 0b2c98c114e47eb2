//! Line figures over binned histograms: the frequency polygon (thesis Fig 3.2, linear share) and
//! the histogram overlay with a logarithmic count axis (Fig 3.5).

use super::data::bins;
use super::style::{self, Area};
use super::US;
use anyhow::Result;
use hdrhistogram::Histogram;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One line: legend label, look (colour and dash), and (x, y) points in the figure's units.
pub struct Series {
    pub label: String,
    pub look: style::Look,
    pub points: Vec<(f64, f64)>,
}

/// Width of the legend column right of the plot (px): the legend never covers data.
const LEGEND_PX: u32 = 300;
/// Height of one legend entry (px).
const LEGEND_ROW_PX: i32 = 22;

/// Headroom above the highest point.
const HEADROOM: f64 = 1.1;
/// Where zero counts sit on the log axis (below 1, the smallest count).
const LOG_FLOOR: f64 = 0.5;
/// Legend swatch length (px).
const SWATCH_PX: i32 = 22;

fn extent(series: &[Series], f: impl Fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let vals = series.iter().flat_map(|s| s.points.iter().map(&f));
    let (lo, hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo.is_finite() && hi > lo {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

/// Title on top, the note (units, binning) at the bottom, the legend of `series` in a column on
/// the right; returns the plot area.
fn frame<'a>(root: &Area<'a>, title: &str, note: &str, series: &[Series]) -> Result<Area<'a>> {
    let (main, key) = style::titled(root, title)?;
    style::key(&key, note)?;
    let (w, _) = main.dim_in_pixel();
    let (plot, legend) = main.split_horizontally(w - LEGEND_PX);
    for (i, s) in series.iter().enumerate() {
        let y = style::MARGIN_PX as i32 * 2 + i as i32 * LEGEND_ROW_PX;
        let x = style::MARGIN_PX as i32;
        swatch(&legend, vec![(x, y), (x + SWATCH_PX, y)], s.look)?;
        legend.draw(&Text::new(
            s.label.clone(),
            (x + SWATCH_PX + 8, y),
            style::text(style::LABEL_PX).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(plot)
}

/// Draws `points` (pixel coordinates of the legend) in `look`: solid or dashed.
fn swatch(area: &Area<'_>, points: Vec<(i32, i32)>, look: style::Look) -> Result<()> {
    let stroke = look.colour.stroke_width(3);
    match look.dash {
        None => area.draw(&PathElement::new(points, stroke))?,
        Some((d, g)) => area.draw(&DashedPathElement::new(points, d, g, stroke))?,
    }
    Ok(())
}

/// Draws a series in its look.
fn draw_line<'a, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    points: Vec<(f64, f64)>,
    look: style::Look,
) -> Result<()> {
    let stroke = look.colour.stroke_width(2);
    match look.dash {
        None => {
            chart.draw_series(LineSeries::new(points, stroke))?;
        }
        Some((d, g)) => {
            chart.draw_series(DashedLineSeries::new(points, d, g, stroke))?;
        }
    }
    Ok(())
}

/// A frequency polygon: y linear from 0.
pub fn polygon(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    note: &str,
    series: &[Series],
) -> Result<String> {
    style::svg(style::LEGEND_SIZE, |root| {
        let plot = frame(root, title, note, series)?;
        let (x0, x1) = extent(series, |p| p.0);
        let (_, y1) = extent(series, |p| p.1);
        let mut chart = style::chart(&plot).build_cartesian_2d(x0..x1, 0.0..y1 * HEADROOM)?;
        style::mesh(&mut chart)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| style::tick(*v))
            .y_label_formatter(&|v| style::tick(*v))
            .draw()?;
        for s in series {
            draw_line(&mut chart, s.points.clone(), s.look)?;
        }
        Ok(())
    })
}

/// Histograms in µs, in bins of `width` ns up to the one of `hi` ns, as steps over a
/// logarithmic count axis; `per` names what they count (`gaps`), `note` says what the figure
/// shows given the samples beyond the x axis (`None`: every one is shown).
pub fn log_steps(
    title: &str,
    x_desc: &str,
    per: &str,
    hists: &[(String, style::Look, Histogram<u64>)],
    (hi, width): (u64, u64),
    note: impl Fn(Option<String>) -> String,
) -> Result<String> {
    let n = (hi / width + 1) as usize;
    let end = n as u64 * width;
    let beyond: Vec<String> = hists
        .iter()
        .map(|(label, _, h)| (label, h.count_between(end, h.max().max(end))))
        .filter(|(_, k)| *k > 0)
        .map(|(label, k)| format!("{label} {k}"))
        .collect();
    let note = &note((!beyond.is_empty()).then(|| beyond.join(", ")));
    let series = &hists
        .iter()
        .map(|(label, look, h)| {
            let points = bins(h, 0, width, n).into_iter();
            let points = points.map(|(x, k)| (x as f64 / US, k as f64)).collect();
            Series {
                label: label.clone(),
                look: *look,
                points,
            }
        })
        .collect::<Vec<_>>();
    let width = width as f64 / US;
    let y_desc = &format!("{per} per {} µs bin (log scale)", style::tick(width));
    style::svg(style::LEGEND_SIZE, |root| {
        let plot = frame(root, title, note, series)?;
        let (x0, x1) = extent(series, |p| p.0);
        let (_, y1) = extent(series, |p| p.1);
        let mut chart = style::chart(&plot)
            .build_cartesian_2d(x0..x1 + width, (LOG_FLOOR..y1.max(1.0) * 2.0).log_scale())?;
        style::mesh(&mut chart)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| style::tick(*v))
            .y_label_formatter(&|v| {
                if *v < 1.0 {
                    String::new()
                } else {
                    format!("{v:.0}")
                }
            })
            .draw()?;
        for s in series {
            let steps = s.points.iter().flat_map(|&(x, c)| {
                let y = c.max(LOG_FLOOR);
                [(x, y), (x + width, y)]
            });
            draw_line(&mut chart, steps.collect(), s.look)?;
        }
        Ok(())
    })
}
