//! Box plots (thesis Figs 3.1, 3.3, 3.4): one box per series, whiskers at 1.5 IQR, p99 as a
//! ring, and the maximum written above each box so the tail is never hidden.

use super::data::BoxStats;
use super::style::{self, Area};
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One box: its label under the axis, colour and statistics (ns).
pub struct BoxSeries {
    pub label: String,
    pub colour: RGBColor,
    pub stats: BoxStats,
}

/// Half the width of a box, in category units.
const HALF_BOX: f64 = 0.28;
/// Half the width of a whisker cap.
const HALF_CAP: f64 = 0.12;

/// What the marks mean, written under every box plot.
pub const KEY: &str =
    "box: p25–p75 · line: median · whiskers: 1.5 × IQR · ring: p99 (written on top when off the axis) · max on top";

/// Fewer boxes than this still get this many slots of width, so a lone box is not a slab.
const MIN_SLOTS: usize = 3;

/// An x axis of `n` categories at 0, 1, …, n−1 with ticks only there (boxes sit in between
/// fractional positions, so the coordinate stays `f64`).
struct Categories(usize);

impl Ranged for Categories {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let r = self.range();
        let f = (value - r.start) / (r.end - r.start);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _: Hint) -> Vec<f64> {
        (0..self.0).map(|i| i as f64).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        let pad = 0.5 + MIN_SLOTS.saturating_sub(self.0) as f64 / 2.0;
        -pad..(self.0.max(1) - 1) as f64 + pad
    }
}

/// The y range: the boxes and whiskers with room above for the labels; p99 only when it is
/// near (a far p99 is written above the box instead of squashing it).
fn y_range(series: &[BoxSeries], unit_ns: f64) -> (f64, f64) {
    let lo = series
        .iter()
        .map(|s| s.stats.low)
        .fold(f64::INFINITY, f64::min);
    let mut hi = series.iter().map(|s| s.stats.high).fold(0.0, f64::max);
    let span = |lo: f64, hi: f64| (hi - lo).max(hi * MIN_SPAN).max(1.0);
    for s in series {
        if s.stats.p99 <= hi + NEAR * span(lo, hi) {
            hi = hi.max(s.stats.p99);
        }
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let span = span(lo, hi);
    let bottom = (lo - BELOW * span).max(0.0);
    ((bottom / unit_ns), (hi + ABOVE * span) / unit_ns)
}

/// The smallest y span, as a fraction of the highest whisker: a tight distribution keeps
/// some context instead of being magnified into noise.
const MIN_SPAN: f64 = 0.2;
/// How far above the whiskers p99 may be (in whisker spans) and still set the axis.
const NEAR: f64 = 1.0;
/// Room below the lowest whisker and above the highest mark, in spans.
const BELOW: f64 = 0.1;
const ABOVE: f64 = 0.45;

/// A panel whose values span more than this factor gets a logarithmic y axis: on a linear one
/// the cheap series would be flattened into the floor.
pub const LOG_SPAN: f64 = 10.0;

/// More boxes than this: labels under the axis and max values above alternate between two
/// rows so that neighbours never overprint.
const ONE_ROW: usize = 4;

/// Height of one panel when panels are stacked (px).
const ROW_PX: u32 = 330;

/// The lowest whisker (at least 1 ns) and the highest of `series`.
fn whiskers(series: &[BoxSeries]) -> (f64, f64) {
    let lo = series.iter().map(|s| s.stats.low.max(1.0));
    let hi = series.iter().map(|s| s.stats.high);
    (lo.fold(f64::INFINITY, f64::min), hi.fold(0.0, f64::max))
}

/// Whether a panel of `series` needs a logarithmic axis (see [`LOG_SPAN`]).
pub fn needs_log(series: &[BoxSeries]) -> bool {
    let (lo, hi) = whiskers(series);
    lo.is_finite() && hi / lo > LOG_SPAN
}

/// Draws one box-plot panel on `area`, values shown divided by `unit_ns` (1 ns or 1000 for µs);
/// logarithmic when the boxes span more than [`LOG_SPAN`].
pub fn panel(
    area: &Area<'_>,
    title: &str,
    y_desc: &str,
    series: &[BoxSeries],
    unit_ns: f64,
) -> Result<()> {
    if !needs_log(series) {
        let (bottom, top) = y_range(series, unit_ns);
        let y = bottom..top;
        return draw(
            area,
            title,
            y_desc,
            series,
            unit_ns,
            y,
            top,
            bottom,
            style::tick,
        );
    }
    let (lo, hi) = whiskers(series);
    let (bottom, top) = (lo / unit_ns / 1.5, hi / unit_ns * 4.0);
    let y_desc = match y_desc {
        "" => "log scale".to_owned(),
        _ => format!("{y_desc}, log scale"),
    };
    let y = (bottom..top).log_scale();
    draw(area, title, &y_desc, series, unit_ns, y, top, bottom, |v| {
        style::log_label(v, style::grouped)
    })
}

#[allow(clippy::too_many_arguments)]
fn draw<Y>(
    area: &Area<'_>,
    title: &str,
    y_desc: &str,
    series: &[BoxSeries],
    unit_ns: f64,
    y: Y,
    top: f64,
    bottom: f64,
    y_label: impl Fn(f64) -> String,
) -> Result<()>
where
    Y: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    <Y as plotters::coord::ranged1d::AsRangedCoord>::CoordDescType:
        plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let n = series.len().max(1);
    let x_range = Categories(n);
    let mut chart = style::chart(area)
        .caption(title, style::text(style::PANEL_TITLE_PX))
        .build_cartesian_2d(x_range, y)?;
    style::mesh(&mut chart)
        .disable_x_mesh()
        .y_desc(y_desc)
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|v| y_label(*v))
        .draw()?;
    let two_rows = series.len() > ONE_ROW;
    let row = |i: usize, px: u32| {
        if two_rows && i % 2 == 1 {
            px as i32 + 2
        } else {
            0
        }
    };
    for (i, s) in series.iter().enumerate() {
        let x = i as f64;
        let b = &s.stats;
        let v = |ns: f64| (ns / unit_ns).max(bottom);
        let line = s.colour.stroke_width(2);
        // A horizontal line at `y`, `half` a category each side of the box's centre.
        let across = |y: f64, half: f64| vec![(x - half, v(y)), (x + half, v(y))];
        chart.draw_series([
            PathElement::new(vec![(x, v(b.q3)), (x, v(b.high))], line),
            PathElement::new(vec![(x, v(b.q1)), (x, v(b.low))], line),
            PathElement::new(across(b.high, HALF_CAP), line),
            PathElement::new(across(b.low, HALF_CAP), line),
        ])?;
        let corners = [(x - HALF_BOX, v(b.q1)), (x + HALF_BOX, v(b.q3))];
        chart.draw_series([
            Rectangle::new(corners, s.colour.mix(style::FILL_ALPHA).filled()),
            Rectangle::new(corners, line),
        ])?;
        let median = PathElement::new(across(b.median, HALF_BOX), style::TEXT.stroke_width(3));
        chart.draw_series([median])?;
        let note = style::muted(style::NOTE_PX).pos(Pos::new(HPos::Center, VPos::Top));
        let far_p99 = if b.p99 / unit_ns <= top {
            chart.draw_series([Circle::new((x, v(b.p99)), 5, s.colour.stroke_width(2))])?;
            String::new()
        } else {
            format!("p99 {} ↑", style::grouped(b.p99 / unit_ns))
        };
        let max_row = row(i, 2 * style::NOTE_PX);
        chart.draw_series([EmptyElement::at((x, top))
            + Text::new(
                format!("max {}", style::grouped(b.max / unit_ns)),
                (0, 2 + max_row),
                note.clone(),
            )
            + Text::new(far_p99, (0, 4 + style::NOTE_PX as i32 + max_row), note)])?;
        let label = style::text(style::LABEL_PX).pos(Pos::new(HPos::Center, VPos::Top));
        chart.draw_series([EmptyElement::at((x, bottom))
            + Text::new(s.label.clone(), (0, 8 + row(i, style::LABEL_PX)), label)])?;
    }
    Ok(())
}

/// A whole box-plot figure: title, one panel per group, and the key underneath.
pub fn figure(
    size: (u32, u32),
    title: &str,
    y_desc: &str,
    groups: &[(String, Vec<BoxSeries>)],
    unit_ns: f64,
) -> Result<String> {
    // Panels side by side while their boxes fit; else one panel per row, each full width.
    let crowded = groups.len() > 1 && groups.iter().any(|(_, s)| s.len() > ONE_ROW);
    let size = if crowded {
        (size.0, ROW_PX * groups.len() as u32 + style::TITLE_PX * 4)
    } else {
        size
    };
    style::svg(size, |root| {
        let (plots, key) = style::titled(root, title)?;
        let n = groups.len().max(1);
        let panels = plots.split_evenly(if crowded { (n, 1) } else { (1, n) });
        for (i, ((panel_title, series), area)) in groups.iter().zip(&panels).enumerate() {
            panel(
                area,
                panel_title,
                if i == 0 || crowded { y_desc } else { "" },
                series,
                unit_ns,
            )?;
        }
        style::key(&key, KEY)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axis_labels_only_one_two_five() {
        let shown: Vec<String> = [100.0, 200.0, 300.0, 500.0, 700.0, 900.0, 1000.0, 2000.0]
            .iter()
            .map(|v| style::log_label(*v, style::grouped))
            .filter(|s| !s.is_empty())
            .collect();
        assert_eq!(shown, ["100", "200", "500", "1000", "2000"]);
    }
}
