//! SVG plots of sweeps: time against panel width, one line per k-slice width.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use crate::sddmm::sweep::Sweep;
use crate::{Error, Result};

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Option(format!("plotting failed: {e}"))
}

/// Renders a sweep as SVG text: best time per (Tj, Tk) over the tile grid, Tj on a log axis,
/// the model's Tj marked, title naming the matrix and K.
pub fn sweep_svg(sweep: &Sweep, title: &str) -> Result<String> {
    // (tk → tj → best ms) over the (Tj, Tk) grid at the default vws / workgroup.
    let mut lines: BTreeMap<usize, BTreeMap<usize, f64>> = BTreeMap::new();
    for p in &sweep.points {
        let c = &p.config;
        let e = lines
            .entry(c.tk)
            .or_default()
            .entry(c.tj)
            .or_insert(f64::MAX);
        *e = e.min(p.ms);
    }
    let (tj_min, tj_max) = lines
        .values()
        .flat_map(|l| l.keys())
        .fold((usize::MAX, 0), |(lo, hi), &tj| (lo.min(tj), hi.max(tj)));
    // An empty sweep cannot reach here (Sweep always holds a best point); guard anyway.
    let tj_min = if tj_min == usize::MAX {
        1
    } else {
        tj_min.max(1)
    } as f64;
    let tj_max = tj_max.max(2) as f64;
    let ms_max = lines
        .values()
        .flat_map(|l| l.values())
        .fold(0.0, |a: f64, &b| a.max(b))
        * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (tj_min * 0.8..tj_max * 1.25).log_scale(),
                0.0..ms_max.max(1e-6),
            )
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_labels(8)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.2}"))
            .x_desc("panel width Tj (columns)")
            .y_desc("GPU time (ms, best over vws and workgroup)")
            .draw()
            .map_err(plot_err)?;
        for (i, (tk, points)) in lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let series: Vec<(f64, f64)> = points.iter().map(|(&tj, &ms)| (tj as f64, ms)).collect();
            chart
                .draw_series(LineSeries::new(series.clone(), color.stroke_width(2)))
                .map_err(plot_err)?
                .label(format!("Tk = {tk}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            chart
                .draw_series(
                    series
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(plot_err)?;
        }
        let model_tj = sweep.model.config.tj as f64;
        chart
            .draw_series(LineSeries::new(
                vec![(model_tj, 0.0), (model_tj, ms_max)],
                BLACK.stroke_width(1),
            ))
            .map_err(plot_err)?
            .label(format!("model Tj = {}", sweep.model.config.tj))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Writes [`sweep_svg`] to `path` atomically.
pub fn write_sweep_svg(path: &Path, sweep: &Sweep, title: &str) -> Result<()> {
    let svg = sweep_svg(sweep, title)?;
    crate::io::write_atomically(path, |w| {
        std::io::Write::write_all(w, svg.as_bytes()).map_err(|e| Error::io(path, e))
    })
}
