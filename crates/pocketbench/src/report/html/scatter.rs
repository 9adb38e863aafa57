//! The one drawing routine every chart uses: plotters lays out the frame
//! (axes, ticks, grid, labels, budget and reference lines, legend) on its
//! SVG backend, and the data points are added as SVG circles of our own
//! at plotters' coordinates, each with a `<title>` tooltip (plotters' SVG
//! backend draws shapes without titles). Charts compute no statistics:
//! they receive finished numbers.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::escape;

/// Chart width and height in SVG pixels (scaled down on small screens by CSS).
pub const SIZE: (u32, u32) = (640, 400);

/// One point of a series.
#[derive(Debug, Clone)]
pub struct Point {
    /// Position in data units (already log10 where the axis is logarithmic).
    pub x: f64,
    /// Position in data units.
    pub y: f64,
    /// Radius in pixels.
    pub r: f64,
    /// Tooltip text (escaped when written).
    pub tip: String,
}

/// A marker style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle.
    Filled,
    /// A ring.
    Hollow,
}

/// A named set of points drawn alike.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text (our own words, never input).
    pub name: String,
    /// Colour.
    pub color: RGBColor,
    /// Marker.
    pub marker: Marker,
    /// Join the points (in the given order) with a line.
    pub line: bool,
    /// The points.
    pub points: Vec<Point>,
}

/// A horizontal or vertical reference line (a budget, y = x).
#[derive(Debug, Clone)]
pub enum Guide {
    /// y = value.
    Horizontal(f64, String),
    /// x = value.
    Vertical(f64, String),
    /// y = x, with a band of +- `band` (relative) around it.
    Diagonal(f64),
}

/// Everything one chart shows.
#[derive(Debug, Clone)]
pub struct Scatter {
    /// X axis label, with its unit.
    pub x_label: String,
    /// Y axis label, with its unit.
    pub y_label: String,
    /// X values are log10 of the data (tick labels show the data).
    pub x_log: bool,
    /// Y values are log10 of the data.
    pub y_log: bool,
    /// Data.
    pub series: Vec<Series>,
    /// Reference lines.
    pub guides: Vec<Guide>,
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo { (hi - lo) * 0.06 } else { lo.abs().max(1.0) * 0.1 };
    (lo - pad, hi + pad)
}

fn tick(v: f64, log: bool) -> String {
    let v = if log { 10f64.powf(v) } else { v };
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.0}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    }
}

/// The drawn range of `s`: its points and guides, square where it has the
/// `y = x` diagonal.
fn extent(s: &Scatter) -> (f64, f64, f64, f64) {
    let mut xs: Vec<f64> = s.series.iter().flat_map(|x| x.points.iter().map(|p| p.x)).collect();
    let mut ys: Vec<f64> = s.series.iter().flat_map(|x| x.points.iter().map(|p| p.y)).collect();
    for g in &s.guides {
        match g {
            Guide::Horizontal(v, _) => ys.push(*v),
            Guide::Vertical(v, _) => xs.push(*v),
            Guide::Diagonal(_) => {}
        }
    }
    let ((x0, x1), (y0, y1)) = (bounds(xs.into_iter()), bounds(ys.into_iter()));
    if s.guides.iter().any(|g| matches!(g, Guide::Diagonal(_))) {
        let (lo, hi) = (x0.min(y0), x1.max(y1));
        (lo, hi, lo, hi)
    } else {
        (x0, x1, y0, y1)
    }
}

/// The corner of the plot whose legend box would cover the fewest points
/// (upper right on a tie): a point is never hidden under the legend when a
/// corner is free. The box is sized from the legend's entries, in the
/// plot's fractions.
fn legend_corner(s: &Scatter, (x0, x1, y0, y1): (f64, f64, f64, f64)) -> SeriesLabelPosition {
    let labels: Vec<usize> = s
        .series
        .iter()
        .map(|x| x.name.len())
        .chain(s.guides.iter().map(|g| match g {
            Guide::Horizontal(_, l) | Guide::Vertical(_, l) => l.len(),
            Guide::Diagonal(_) => 20,
        }))
        .collect();
    let (plot_w, plot_h) = ((SIZE.0 - 64 - 24) as f64, (SIZE.1 - 42 - 24) as f64);
    let w = ((labels.iter().max().copied().unwrap_or(0) as f64 * 7.0 + 50.0) / plot_w).min(1.0);
    let h = ((labels.len() as f64 * 18.0 + 14.0) / plot_h).min(1.0);
    let (dx, dy) = ((x1 - x0).max(f64::MIN_POSITIVE), (y1 - y0).max(f64::MIN_POSITIVE));
    let covered = |right: bool, upper: bool| {
        s.series
            .iter()
            .flat_map(|x| x.points.iter())
            .filter(|p| {
                let (fx, fy) = ((p.x - x0) / dx, (p.y - y0) / dy);
                let in_x = if right { fx >= 1.0 - w } else { fx <= w };
                let in_y = if upper { fy >= 1.0 - h } else { fy <= h };
                in_x && in_y
            })
            .count()
    };
    [
        (SeriesLabelPosition::UpperRight, covered(true, true)),
        (SeriesLabelPosition::UpperLeft, covered(false, true)),
        (SeriesLabelPosition::LowerRight, covered(true, false)),
        (SeriesLabelPosition::LowerLeft, covered(false, false)),
    ]
    .into_iter()
    .min_by_key(|(_, n)| *n)
    .map_or(SeriesLabelPosition::UpperRight, |(p, _)| p)
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn err(e: &dyn std::fmt::Display) -> String {
    e.to_string()
}

/// The budget lines and the `y = x` band, each in the legend.
fn draw_guides(chart: &mut Chart, s: &Scatter, (x0, x1, y0, y1): (f64, f64, f64, f64)) -> Result<(), String> {
    let grey = RGBColor(120, 120, 120);
    for g in &s.guides {
        let (pts, label, color) = match g {
            Guide::Horizontal(v, l) => (vec![(x0, *v), (x1, *v)], l.clone(), RGBColor(200, 40, 40)),
            Guide::Vertical(v, l) => (vec![(*v, y0), (*v, y1)], l.clone(), RGBColor(200, 40, 40)),
            Guide::Diagonal(band) => {
                for f in [1.0 + band, 1.0 - band] {
                    chart
                        .draw_series(LineSeries::new(vec![(x0, x0 * f), (x1, x1 * f)], grey.mix(0.5).stroke_width(1)))
                        .map_err(|x| err(&x))?;
                }
                (vec![(x0, x0), (x1, x1)], format!("y = x, and +-{:.0}%", band * 100.0), grey)
            }
        };
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|x| err(&x))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
    }
    Ok(())
}

/// One series: its line, its legend entry, and its points as SVG circles
/// with a tooltip each, appended to `dots` (plotters draws no `<title>`).
fn draw_points(chart: &mut Chart, series: &Series, dots: &mut String) -> Result<(), String> {
    let c = series.color;
    if series.line && series.points.len() > 1 {
        let pts: Vec<(f64, f64)> = series.points.iter().map(|p| (p.x, p.y)).collect();
        chart.draw_series(LineSeries::new(pts, c.stroke_width(2))).map_err(|x| err(&x))?;
    }
    let filled = series.marker == Marker::Filled;
    chart
        .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
        .map_err(|x| err(&x))?
        .label(series.name.as_str())
        .legend(move |(x, y)| {
            let style = if filled { c.filled() } else { c.stroke_width(2) };
            Circle::new((x + 8, y), 5, style)
        });
    let (fill, stroke) = if filled {
        (format!("rgb({},{},{})", c.0, c.1, c.2), "none".to_string())
    } else {
        ("none".to_string(), format!("rgb({},{},{})", c.0, c.1, c.2))
    };
    dots.push_str(&format!(
        "<g class=\"pts\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\" fill-opacity=\"0.75\">"
    ));
    for p in &series.points {
        let (cx, cy) = chart.backend_coord(&(p.x, p.y));
        dots.push_str(&format!(
            "<circle cx=\"{cx}\" cy=\"{cy}\" r=\"{:.1}\"><title>{}</title></circle>",
            p.r,
            escape(&p.tip)
        ));
    }
    dots.push_str("</g>");
    Ok(())
}

/// Draw `s` as a standalone SVG element.
pub fn render(s: &Scatter) -> Result<String, String> {
    let (x0, x1, y0, y1) = extent(s);
    let mut buf = String::new();
    let mut dots = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|x| err(&x))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|x| err(&x))?;
        let (xl, yl) = (s.x_log, s.y_log);
        chart
            .configure_mesh()
            .x_desc(s.x_label.as_str())
            .y_desc(s.y_label.as_str())
            .x_label_formatter(&|v| tick(*v, xl))
            .y_label_formatter(&|v| tick(*v, yl))
            .light_line_style(RGBColor(235, 235, 235))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()
            .map_err(|x| err(&x))?;
        draw_guides(&mut chart, s, (x0, x1, y0, y1))?;
        for series in &s.series {
            draw_points(&mut chart, series, &mut dots)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 12))
            .position(legend_corner(s, (x0, x1, y0, y1)))
            .draw()
            .map_err(|x| err(&x))?;
        root.present().map_err(|x| err(&x))?;
    }
    let at = buf.rfind("</svg>").ok_or("plotters wrote no SVG")?;
    buf.insert_str(at, &dots);
    // Scale with the page: the drawing keeps its aspect ratio.
    let buf = buf.replacen(&format!("width=\"{}\" height=\"{}\"", SIZE.0, SIZE.1), "class=\"chart\" role=\"img\"", 1);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scatter(points: &[(f64, f64)]) -> Scatter {
        let points = points.iter().map(|&(x, y)| Point { x, y, r: 4.0, tip: String::new() }).collect();
        Scatter {
            x_label: "x".into(),
            y_label: "y".into(),
            x_log: false,
            y_log: false,
            series: vec![Series {
                name: "iphone-18-pro".into(),
                color: BLACK,
                marker: Marker::Filled,
                line: false,
                points,
            }],
            guides: vec![],
        }
    }

    #[test]
    fn the_legend_goes_to_a_corner_no_point_is_in() {
        // A point in each upper corner and the lower right: lower left is free.
        let s = scatter(&[(0.0, 10.0), (10.0, 10.0), (10.0, 0.0), (5.0, 5.0)]);
        assert!(matches!(legend_corner(&s, extent(&s)), SeriesLabelPosition::LowerLeft));
        // Nothing in the corners: the usual upper right.
        let s = scatter(&[(0.0, 5.0), (10.0, 5.0), (5.0, 0.0), (5.0, 10.0)]);
        assert!(matches!(legend_corner(&s, extent(&s)), SeriesLabelPosition::UpperRight));
    }
}
