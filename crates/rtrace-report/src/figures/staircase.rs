//! The per-hit cost decomposition as a waterfall (`usdt --decompose`): one row per step, each
//! path's steps together (labelled with the path), a bar from the step below's height to this
//! step's, its interval as a whisker, and the increment written beside it.

use super::style;
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use rtrace_measure::decompose::Staircase;

/// Height of one step's row (px), and of the title, axis and key around the rows.
const ROW_PX: u32 = 34;
const FRAME_PX: u32 = 150;
/// Width of the step labels left of the plot (px): at least this, more for longer labels (an
/// upper estimate of a sans-serif character's width at `style::LABEL_PX`; plotters' SVG backend
/// cannot measure text without its font files).
const LABEL_AREA_PX: u32 = 300;
const LABEL_CHAR_PX: u32 = 8;
/// Half the height of a bar, in rows.
const HALF_BAR: f64 = 0.32;

/// What the marks mean.
pub const KEY: &str = "bar: from the step below to this step (extra ns per hit over case 0) · whisker: 95% interval of the step's height · number: the increment";

/// Room for the longest of `labels` left of the plot.
fn label_area(labels: &[String]) -> u32 {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    LABEL_AREA_PX.max(longest as u32 * LABEL_CHAR_PX + style::MARGIN_PX)
}

/// The waterfall of every staircase in `stairs` (one hook site).
pub fn figure(title: &str, stairs: &[Staircase]) -> Result<String> {
    let rows: Vec<(String, RGBColor, f64, f64, f64, f64, f64)> = stairs
        .iter()
        .flat_map(|s| {
            let colour = style::colour(s.tracer);
            let mut below = 0.0;
            s.steps
                .iter()
                .map(move |st| {
                    let h = st.height.estimate;
                    let row = (
                        format!("{}: {}", s.path, st.run),
                        colour,
                        below,
                        h,
                        st.height.low.unwrap_or(h),
                        st.height.high.unwrap_or(h),
                        st.increment.estimate,
                    );
                    below = h;
                    row
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let n = rows.len().max(1);
    let xmax = rows.iter().map(|r| r.3.max(r.5)).fold(1.0f64, f64::max) * 1.18;
    let xmin = rows
        .iter()
        .map(|r| r.2.min(r.3).min(r.4))
        .fold(0.0f64, f64::min);
    let size = (style::WIDE.0, FRAME_PX + ROW_PX * n as u32);
    style::svg(size, |root| {
        let (plot, key) = style::titled(root, title)?;
        // Row i at y = n - 1 - i: the first step on top.
        let y = |i: usize| (n - 1 - i) as f64;
        let labels: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
        let mut chart = style::chart(&plot)
            .y_label_area_size(label_area(&labels))
            .build_cartesian_2d(xmin..xmax, -0.5..(n as f64 - 0.5))?;
        style::mesh(&mut chart)
            .disable_y_mesh()
            .x_desc("extra ns per hit over case 0")
            .y_labels(n)
            .y_label_formatter(&|v| {
                let r = v.round();
                if (v - r).abs() > 1e-6 || r < 0.0 || r as usize >= n {
                    return String::new();
                }
                labels[n - 1 - r as usize].clone()
            })
            .x_label_formatter(&|v| style::grouped(*v))
            .draw()?;
        for (i, (_, colour, below, height, low, high, increment)) in rows.iter().enumerate() {
            let yc = y(i);
            let (a, b) = (below.min(*height), below.max(*height));
            let corners = [(a, yc - HALF_BAR), (b, yc + HALF_BAR)];
            chart.draw_series([
                Rectangle::new(corners, colour.mix(style::FILL_ALPHA + 0.25).filled()),
                Rectangle::new(corners, colour.stroke_width(2)),
            ])?;
            let ink = style::TEXT.stroke_width(2);
            chart.draw_series([
                PathElement::new(vec![(*low, yc), (*high, yc)], ink),
                PathElement::new(vec![(*low, yc - 0.15), (*low, yc + 0.15)], ink),
                PathElement::new(vec![(*high, yc - 0.15), (*high, yc + 0.15)], ink),
            ])?;
            let note = style::text(style::NOTE_PX).pos(Pos::new(HPos::Left, VPos::Center));
            chart.draw_series([EmptyElement::at((b.max(*high), yc))
                + Text::new(format!("{:+} ns", increment.round() + 0.0), (8, 0), note)])?;
        }
        style::key(&key, KEY)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_step_labels_get_room_and_short_ones_the_usual_width() {
        let long = "ring buffer: ebpf (record-wakeup, usdt-nop5) case 1".to_string();
        // DejaVu Sans at 15 px averages about 7 px per character of such a label.
        assert!(label_area(std::slice::from_ref(&long)) >= long.len() as u32 * 7 + 10);
        assert_eq!(label_area(&["ftrace (off) case 1".into()]), LABEL_AREA_PX);
    }
}
