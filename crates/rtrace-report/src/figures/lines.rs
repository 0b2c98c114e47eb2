//! Line figures over binned histograms: the frequency polygon (thesis Fig 3.2, linear share) and
//! the histogram overlay with a logarithmic count axis (Fig 3.5).

use super::style;
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One line: legend label, colour, and (x, y) points in the figure's units.
pub struct Series {
    pub label: String,
    pub colour: RGBColor,
    pub points: Vec<(f64, f64)>,
}

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

/// Title on top, the note (units, binning) at the bottom; returns the plot area.
fn frame<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    note: &str,
) -> Result<DrawingArea<SVGBackend<'a>, Shift>> {
    root.fill(&WHITE)?;
    let body = root.titled(title, style::text(style::TITLE_PX))?;
    let (_, h) = body.dim_in_pixel();
    let (plot, key) = body.split_vertically(h - style::TITLE_PX * 2);
    let (w, _) = key.dim_in_pixel();
    key.draw(&Text::new(
        note.to_owned(),
        (w as i32 / 2, 0),
        style::muted(style::NOTE_PX).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    Ok(plot)
}

fn legend_line(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + SWATCH_PX, y)], c.stroke_width(3))
}

/// A frequency polygon: y linear from 0.
pub fn polygon(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    note: &str,
    series: &[Series],
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, style::SIZE).into_drawing_area();
        let plot = frame(&root, title, note)?;
        let (x0, x1) = extent(series, |p| p.0);
        let (_, y1) = extent(series, |p| p.1);
        let mut chart = ChartBuilder::on(&plot)
            .margin(style::MARGIN_PX)
            .x_label_area_size(style::X_AXIS_PX)
            .y_label_area_size(style::Y_AXIS_PX)
            .build_cartesian_2d(x0..x1, 0.0..y1 * HEADROOM)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| style::tick(*v))
            .y_label_formatter(&|v| style::tick(*v))
            .axis_desc_style(style::text(style::AXIS_PX))
            .label_style(style::text(style::LABEL_PX))
            .draw()?;
        for s in series {
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    s.colour.stroke_width(2),
                ))?
                .label(s.label.as_str())
                .legend(legend_line(s.colour));
        }
        legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}

/// Histograms as steps over a logarithmic count axis; `width` is the bin width in x units.
pub fn log_steps(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    note: &str,
    width: f64,
    series: &[Series],
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, style::SIZE).into_drawing_area();
        let plot = frame(&root, title, note)?;
        let (x0, x1) = extent(series, |p| p.0);
        let (_, y1) = extent(series, |p| p.1);
        let mut chart = ChartBuilder::on(&plot)
            .margin(style::MARGIN_PX)
            .x_label_area_size(style::X_AXIS_PX)
            .y_label_area_size(style::Y_AXIS_PX)
            .build_cartesian_2d(x0..x1 + width, (LOG_FLOOR..y1.max(1.0) * 2.0).log_scale())?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
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
            .axis_desc_style(style::text(style::AXIS_PX))
            .label_style(style::text(style::LABEL_PX))
            .draw()?;
        for s in series {
            let steps = s.points.iter().flat_map(|&(x, c)| {
                let y = c.max(LOG_FLOOR);
                [(x, y), (x + width, y)]
            });
            chart
                .draw_series(LineSeries::new(steps, s.colour.stroke_width(2)))?
                .label(s.label.as_str())
                .legend(legend_line(s.colour));
        }
        legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}

fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(0xbb, 0xbb, 0xbb))
        .label_font(style::text(style::LABEL_PX))
        .draw()?;
    Ok(())
}
