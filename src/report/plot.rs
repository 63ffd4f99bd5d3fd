//! SVG plots of sweeps: time against one launch parameter, one line per setting of the
//! others, the model's choice marked. [`lines_svg`] draws; the sweeps' functions pick the
//! lines: SDDMM's time against panel width per k-slice width, the fused pattern's time
//! against rows per vector C per (variant, VS).

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use crate::sddmm::sweep::Sweep;
use crate::{Error, Result};

/// Ten distinguishable line colours (cycled beyond ten lines).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Option(format!("plotting failed: {e}"))
}

/// The model's choice on a chart: a vertical line at `x`, labelled, and a black ring at its
/// timed point.
pub struct Mark {
    /// The legend's label.
    pub label: String,
    /// The model's x.
    pub x: f64,
    /// (x, time) of the model's configuration where it was timed.
    pub point: Option<(f64, f64)>,
}

/// A chart of lines over a logarithmic x axis, each line's points in x order, and the model's
/// choice marked.
pub struct Lines {
    /// The caption.
    pub title: String,
    /// What x is (its unit in words).
    pub x_desc: String,
    /// What y is.
    pub y_desc: String,
    /// (legend label, points) per line.
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
    /// The model's choice.
    pub mark: Option<Mark>,
}

/// Renders `chart` as SVG text (900 × 560).
pub fn lines_svg(chart: &Lines) -> Result<String> {
    let xs = chart
        .lines
        .iter()
        .flat_map(|(_, l)| l.iter().map(|p| p.0))
        .chain(chart.mark.iter().map(|m| m.x))
        .filter(|x| x.is_finite() && *x > 0.0);
    let (x_min, x_max) = xs.fold((f64::MAX, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    // No positive x at all (an empty chart): any range draws.
    let (x_min, x_max) = if x_min > x_max {
        (1.0, 2.0)
    } else {
        (x_min, x_max.max(x_min * 2.0))
    };
    let y_max = chart
        .lines
        .iter()
        .flat_map(|(_, l)| l.iter().map(|p| p.1))
        .filter(|y| y.is_finite())
        .fold(0.0, f64::max)
        * 1.1;
    let y_max = y_max.max(1e-6);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(&chart.title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d((x_min * 0.8..x_max * 1.25).log_scale(), 0.0..y_max)
            .map_err(plot_err)?;
        c.configure_mesh()
            .light_line_style(WHITE)
            .x_labels(8)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.2}"))
            .x_desc(chart.x_desc.as_str())
            .y_desc(chart.y_desc.as_str())
            .draw()
            .map_err(plot_err)?;
        for (i, (label, points)) in chart.lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            c.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(plot_err)?
                .label(label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            c.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(plot_err)?;
        }
        if let Some(Mark { label, x, point }) = &chart.mark {
            c.draw_series(LineSeries::new(
                vec![(*x, 0.0), (*x, y_max)],
                BLACK.stroke_width(1),
            ))
            .map_err(plot_err)?
            .label(label.as_str())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
            if let Some(p) = point {
                c.draw_series(std::iter::once(Circle::new(*p, 7, BLACK.stroke_width(2))))
                    .map_err(plot_err)?;
            }
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Writes `svg` to `path` atomically.
pub fn write_svg(path: &Path, svg: &str) -> Result<()> {
    crate::io::write_atomically(path, |w| {
        std::io::Write::write_all(w, svg.as_bytes()).map_err(|e| Error::io(path, e))
    })
}

/// The points of each line in x order: the fastest time at each x.
fn fastest_per_x<K: Ord>(
    points: impl Iterator<Item = (K, f64, f64)>,
) -> BTreeMap<K, Vec<(f64, f64)>> {
    let mut lines: BTreeMap<K, BTreeMap<u64, (f64, f64)>> = BTreeMap::new();
    for (key, x, ms) in points {
        // Positive finite f64 values order as their bit patterns do.
        let e = lines
            .entry(key)
            .or_default()
            .entry(x.to_bits())
            .or_insert((x, f64::MAX));
        e.1 = e.1.min(ms);
    }
    lines
        .into_iter()
        .map(|(k, l)| (k, l.into_values().collect()))
        .collect()
}

/// An SDDMM sweep as SVG text: best time per (Tj, Tk) over the tile grid, Tj on a log axis,
/// the model's Tj marked, title naming the matrix and K.
pub fn sweep_svg(sweep: &Sweep, title: &str) -> Result<String> {
    let points = sweep
        .points
        .iter()
        .map(|p| (p.config.tk, p.config.tj as f64, p.ms));
    let lines = fastest_per_x(points)
        .into_iter()
        .map(|(tk, l)| (format!("Tk = {tk}"), l))
        .collect();
    let model = &sweep.model;
    lines_svg(&Lines {
        title: title.into(),
        x_desc: "panel width Tj (columns)".into(),
        y_desc: "GPU time (ms, best over vws and workgroup)".into(),
        lines,
        mark: Some(Mark {
            label: format!("model Tj = {}", model.config.tj),
            x: model.config.tj as f64,
            point: Some((model.config.tj as f64, model.ms)),
        }),
    })
}

/// A fused-pattern sweep as SVG text: time against rows per vector C (log axis), one line
/// per (variant, VS) with the fastest workgroup size at each C (a legend of a few lines, not
/// one per workgroup size), the model's C marked and its point ringed.
pub fn fused_sweep_svg(sweep: &crate::fused::bench::Sweep, title: &str) -> Result<String> {
    let points = sweep.points.iter().map(|p| {
        let c = &p.config;
        ((c.variant.name(), c.vs), c.rows_per_vector as f64, p.ms)
    });
    let lines = fastest_per_x(points)
        .into_iter()
        .map(|((variant, vs), l)| (format!("{variant}, VS {vs}"), l))
        .collect();
    let m = &sweep.model.config;
    let c = m.rows_per_vector as f64;
    lines_svg(&Lines {
        title: title.into(),
        x_desc: "rows per vector C".into(),
        y_desc: "GPU time (ms, fastest workgroup size at each C)".into(),
        lines,
        mark: Some(Mark {
            label: format!(
                "model: {}, VS {}, wg {}, C {}",
                m.variant.name(),
                m.vs,
                m.workgroup,
                m.rows_per_vector
            ),
            x: c,
            point: Some((c, sweep.model.ms)),
        }),
    })
}
