//! One look for every figure: sizes, fonts, and a colour per tracer that is the same everywhere.

use anyhow::Result;
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontFamily, RGBColor, TextStyle};
use rtrace_measure::sweep::{Configuration, Space};
use rtrace_tracer::TracerKind;

/// Width and height of a one-panel figure (px).
pub const SIZE: (u32, u32) = (960, 540);
/// Width and height of a line figure with its legend in a column right of the plot.
pub const LEGEND_SIZE: (u32, u32) = (1260, 540);
/// Width and height of a figure with a panel per case.
pub const WIDE: (u32, u32) = (1300, 520);
pub const FONT: FontFamily<'static> = FontFamily::SansSerif;
pub const TITLE_PX: u32 = 24;
pub const PANEL_TITLE_PX: u32 = 18;
pub const AXIS_PX: u32 = 17;
pub const LABEL_PX: u32 = 15;
pub const NOTE_PX: u32 = 13;
pub const MARGIN_PX: u32 = 16;
/// Space for the tick labels and axis description.
pub const X_AXIS_PX: u32 = 56;
pub const Y_AXIS_PX: u32 = 84;
pub const TEXT: RGBColor = RGBColor(0x22, 0x22, 0x22);
pub const MUTED: RGBColor = RGBColor(0x66, 0x66, 0x66);

/// The colour of a tracer (Tableau 10), the same in every figure.
pub fn colour(t: TracerKind) -> RGBColor {
    match t {
        TracerKind::None => RGBColor(0x7f, 0x7f, 0x7f),
        TracerKind::Ftrace => RGBColor(0x1f, 0x77, 0xb4),
        TracerKind::Ebpf => RGBColor(0xff, 0x7f, 0x0e),
        TracerKind::Lttng => RGBColor(0x2c, 0xa0, 0x2c),
        TracerKind::Bpftrace => RGBColor(0x94, 0x67, 0xbd),
        TracerKind::Perf => RGBColor(0x8c, 0x56, 0x4b),
        TracerKind::Strace => RGBColor(0xe3, 0x77, 0xc2),
    }
}

/// How one series of a figure looks: colour, and the dash of its lines (`None`: solid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    pub colour: RGBColor,
    pub dash: Option<(u32, u32)>,
}

/// Shades and dashes of a tracer's further series (its modes, event kinds), in order.
/// Six: a decomposition measures eBPF in five modes.
const VARIANTS: [(f64, Option<(u32, u32)>); 6] = [
    (1.0, None),
    (0.55, Some((9, 5))),
    (-0.45, Some((2, 4))),
    (0.3, Some((16, 4))),
    (0.78, Some((5, 2))),
    (-0.7, Some((12, 8))),
];

/// The look of the `variant`-th series (0-based) of tracer `t` in one figure: the tracer's
/// colour, then darker or lighter shades with their own dash, so no two series of a figure
/// share colour and style.
pub fn look(t: TracerKind, variant: usize) -> Look {
    let RGBColor(r, g, b) = colour(t);
    let (shade, dash) = VARIANTS[variant % VARIANTS.len()];
    let f = |v: u8| {
        let v = f64::from(v);
        if shade >= 0.0 {
            (v * shade) as u8
        } else {
            (v + (255.0 - v) * -shade) as u8
        }
    };
    Look {
        colour: RGBColor(f(r), f(g), f(b)),
        dash,
    }
}

/// The looks of series of `tracers`, in order: a tracer's first series in its colour, its
/// further ones (modes, event kinds) shaded and dashed ([`look`]).
pub fn looks(tracers: impl IntoIterator<Item = TracerKind>) -> Vec<Look> {
    let mut seen = Vec::new();
    tracers
        .into_iter()
        .map(|t| {
            let nth = seen.iter().filter(|&&s| s == t).count();
            seen.push(t);
            look(t, nth)
        })
        .collect()
}

/// The colour of a sweep configuration: its tracer's, darker for kernel-space tracing.
pub fn config_colour(c: Configuration) -> RGBColor {
    let RGBColor(r, g, b) = colour(c.tracer());
    if c.space() == Space::Kernel {
        let dark = |v: u8| (v as f64 * KERNEL_SHADE) as u8;
        RGBColor(dark(r), dark(g), dark(b))
    } else {
        RGBColor(r, g, b)
    }
}

/// Brightness of kernel-space configurations relative to their tracer's colour.
const KERNEL_SHADE: f64 = 0.55;

/// Colours of series that are not tracers (runs of different kernels).
pub const SERIES: [RGBColor; 6] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// A part of an SVG figure.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// An SVG of `size` pixels, drawn by `draw` on its white root.
pub fn svg(size: (u32, u32), draw: impl FnOnce(&Area) -> Result<()>) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(svg)
}

/// `area` under `title`, split into the plot and a strip for the key underneath.
pub fn titled<'a>(area: &Area<'a>, title: &str) -> Result<(Area<'a>, Area<'a>)> {
    let body = area.titled(title, text(TITLE_PX))?;
    let (_, h) = body.dim_in_pixel();
    Ok(body.split_vertically(h - TITLE_PX * 2))
}

/// `note` centred at the top of the key strip.
pub fn key(key: &Area, note: &str) -> Result<()> {
    let (w, _) = key.dim_in_pixel();
    let centred = muted(NOTE_PX).pos(Pos::new(HPos::Center, VPos::Top));
    key.draw(&Text::new(note.to_owned(), (w as i32 / 2, 0), centred))?;
    Ok(())
}

/// A chart on `area` with the usual margin and axis room.
pub fn chart<'a, 'b>(area: &'a Area<'b>) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut chart = ChartBuilder::on(area);
    chart
        .margin(MARGIN_PX)
        .x_label_area_size(X_AXIS_PX)
        .y_label_area_size(Y_AXIS_PX);
    chart
}

/// The mesh of `chart` in the usual look: light grid, axis fonts.
pub fn mesh<'a, 'b, 's, X, Y>(
    chart: &'b mut ChartContext<'a, SVGBackend<'s>, Cartesian2d<X, Y>>,
) -> MeshStyle<'a, 'b, X, Y, SVGBackend<'s>>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
{
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(WHITE)
        .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
        .axis_desc_style(text(AXIS_PX))
        .label_style(text(LABEL_PX));
    mesh
}

pub fn text(px: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, px)).color(&TEXT)
}

pub fn muted(px: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, px)).color(&MUTED)
}

/// A tick label: whole numbers without decimals, else at most two decimals.
pub fn tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A large value with thousands separators: `10,313,727`; small ones as [`tick`].
pub fn grouped(v: f64) -> String {
    if v.abs() < 10_000.0 {
        return tick(v);
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// Opacity of filled boxes and areas.
pub const FILL_ALPHA: f64 = 0.35;

/// `label(v)` where `v` is 1, 2 or 5 × 10ⁿ, else nothing: the only values a log axis labels
/// (plotters puts a grid line at every multiple, and near a decade their labels overprint).
pub fn log_label(v: f64, label: impl Fn(f64) -> String) -> String {
    let mantissa = v / 10f64.powf(v.log10().floor());
    let labelled = v > 0.0
        && [1.0, 2.0, 5.0, 10.0]
            .iter()
            .any(|m| (mantissa - m).abs() < 1e-6);
    match labelled {
        true => label(v),
        false => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_of_a_tracer_look_different() {
        let looks: Vec<Look> = (0..VARIANTS.len())
            .map(|i| look(TracerKind::Ebpf, i))
            .collect();
        for (i, a) in looks.iter().enumerate() {
            for b in &looks[i + 1..] {
                assert_ne!((a.colour, a.dash), (b.colour, b.dash));
            }
        }
        assert_eq!(
            look(TracerKind::Ftrace, 0).colour,
            colour(TracerKind::Ftrace)
        );
    }

    #[test]
    fn labels() {
        assert_eq!(tick(35.0), "35");
        assert_eq!(tick(2.5), "2.50");
        assert_eq!(tick(12.25), "12.2");
        assert_eq!(grouped(10_313_727.0), "10,313,727");
        assert_eq!(grouped(2195.0), "2195");
        assert_eq!(grouped(123_456.0), "123,456");
    }
}
