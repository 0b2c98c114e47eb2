//! The loss curve of `rtrace-bench rate`: the share of events each tracer and buffer size lost
//! at each rate tried (log rate axis), with the highest lossless rate marked.

use super::style;
use anyhow::Result;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use rtrace_measure::rate::RateResult;

/// Where a run without loss sits on the log axis (%): below one event in a million.
const ZERO: f64 = 1e-5;

/// One search's curve: label, look, (rate, % lost) points, highest lossless rate.
type Curve = (String, style::Look, Vec<(f64, f64)>, Option<f64>);

/// The loss curve of every search of `r`.
pub fn figure(title: &str, r: &RateResult) -> Result<String> {
    let mut series: Vec<Curve> = Vec::new();
    let looks = style::looks(r.searches.iter().map(|s| s.tracer));
    for (s, look) in r.searches.iter().zip(looks) {
        let mut pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|p| {
                (
                    p.achieved_hz.max(1.0),
                    (100.0 * p.lost_fraction()).max(ZERO),
                )
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push((
            format!("{}, {} KiB", crate::rate::label(s), s.buffer_size_kb),
            look,
            pts,
            s.max_lossless_hz,
        ));
    }
    let xs = series.iter().flat_map(|s| s.2.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, 1.0f64), |(l, h), x| (l.min(x), h.max(x)));
    let lo = if lo.is_finite() { lo / 1.5 } else { 1.0 };
    let ymax = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * 3.0;
    style::svg(style::SIZE, |root| {
        let body = root.titled(title, style::text(style::TITLE_PX))?;
        let mut chart = style::chart(&body)
            .build_cartesian_2d((lo..hi * 1.5).log_scale(), (ZERO..ymax).log_scale())?;
        style::mesh(&mut chart)
            .x_desc("events per second fired")
            .y_desc("events lost (%, log scale; 0 at the bottom)")
            .x_label_formatter(&|v| style::log_label(*v, crate::rate::rate))
            .y_label_formatter(&|v| {
                if *v <= ZERO * 1.01 {
                    "0".into()
                } else if *v >= 1.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v}")
                }
            })
            .draw()?;
        for (label, look, pts, max) in &series {
            let (look, line) = (*look, look.colour.stroke_width(2));
            // A tracer's further searches (buffer sizes, poll periods) are shaded and dashed.
            let anno = match look.dash {
                None => chart.draw_series(LineSeries::new(pts.clone(), line))?,
                Some((d, g)) => {
                    chart.draw_series(DashedLineSeries::new(pts.clone(), d, g, line))?
                }
            };
            let (d, g) = look.dash.unwrap_or((24, 0));
            anno.label(label.clone()).legend(move |(x, y)| {
                DashedPathElement::new(vec![(x, y), (x + 24, y)], d, g, look.colour.stroke_width(3))
            });
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, look.colour.filled())))?;
            if let Some(m) = max {
                chart.draw_series([PathElement::new(
                    vec![(*m, ZERO), (*m, ZERO * 4.0)],
                    look.colour.stroke_width(4),
                )])?;
            }
        }
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
