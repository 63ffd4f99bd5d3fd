//! The exhaustive SM-L2 / SM-SM search (the paper's Fig. 8): every (Tj, Tk), then lanes,
//! workgroup size and unroll at the best tile and at the model's, and how far the model's
//! panel width lands from the best. For row runs: run length × lanes × workgroup size, and
//! how far the default configuration lands from the best.

use serde::Serialize;

use crate::gpu::Gpu;
use crate::sddmm::tune::{measure_valid, Measurement, Operands, Reference};
use crate::sddmm::{model, Options, Variant};
use crate::sparse::Csr;
use crate::{Error, Result};

/// The sweep's findings.
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    /// Every configuration measured.
    pub points: Vec<Measurement>,
    /// The fastest.
    pub best: Measurement,
    /// The best point at the model's Tj, Tk and the rest tuned (the paper's "model" bar).
    pub model: Measurement,
    /// model time / best time − 1 (0.05 = the model is 5% slower than the best).
    pub model_gap: f64,
}

/// Panel-width candidates: the model's, a quarter, half and twice it, and N/32 … N
/// (multiples of 5000 above 5000).
fn tj_candidates(n: usize, model_tj: usize) -> Vec<usize> {
    let mut v: Vec<usize> = [32, 16, 8, 4, 2, 1]
        .iter()
        .map(|d| n.div_ceil(*d))
        .map(|t| if t > 5000 { t.div_ceil(5000) * 5000 } else { t })
        .chain([model_tj / 4, model_tj / 2, model_tj, model_tj * 2])
        .map(|t| t.clamp(1, n.max(1)))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Exhaustive SM-L2 (or SM-SM) search over (Tj, Tk), then vws × workgroup (and unroll 2)
/// at the best (Tj, Tk) and at the model's Tj with its best Tk; reports how far the model's
/// Tj, with everything else tuned, lands from the best. `progress` is told each point.
pub fn sweep(
    gpu: &Gpu,
    s: &Csr,
    ops: &Operands,
    base: &Options,
    reps: usize,
    reference: Option<&Reference>,
    mut progress: impl FnMut(&Measurement),
) -> Result<Sweep> {
    let k = ops.a.ncols;
    s.validate()?;
    let model = crate::sddmm::config::resolve(gpu, s, k, base)?;
    let variant = model.variant;
    if !matches!(variant, Variant::SmL2 | Variant::SmSm | Variant::RowRun) {
        return Err(Error::Option(
            "--sweep needs a tiled variant (auto, sm-l2 or sm-sm) or row-run".into(),
        ));
    }
    let n = model.oriented_shape(s.nrows, s.ncols).1;
    let model_tj = model.tj;
    let tjs = if variant == Variant::SmSm {
        vec![16, 32, 64, 96, 128]
    } else {
        tj_candidates(n, model_tj)
    };
    let tks = model::slice_candidates(crate::sparse::GpuDense::stride_for(k), 32);
    let mut points = Vec::new();
    // The plan measured last: the next point shares its tiling when the layouts agree
    // (SM-SM across Tk, every point of the lanes × workgroup stage).
    let mut last: Option<crate::sddmm::Plan> = None;
    let mut try_point = |o: Options, points: &mut Vec<Measurement>| match measure_valid(
        gpu,
        s,
        ops,
        &o,
        reps,
        reference,
        last.as_ref(),
    ) {
        Ok((m, plan)) => {
            progress(&m);
            points.push(m);
            last = Some(plan);
            Ok(())
        }
        // Configurations that do not fit this adapter are skipped, not fatal.
        Err(Error::Option(_)) => Ok(()),
        Err(e) => Err(e),
    };
    if variant == Variant::RowRun {
        // Panel widths around the model's (and one panel); lanes, run lengths and the
        // workgroup size at each.
        let mut panel_widths = vec![model.tj / 2, model.tj, model.tj * 2, s.ncols];
        panel_widths
            .iter_mut()
            .for_each(|t| *t = (*t).clamp(1, s.ncols.max(1)));
        panel_widths.sort_unstable();
        panel_widths.dedup();
        for &tj in &panel_widths {
            for run in [64, 128, 256] {
                for vws in [4u32, 8, 16] {
                    for wg in [128, 256] {
                        let o = Options {
                            variant,
                            tj: Some(tj),
                            block_nnz: Some(run),
                            vws: Some(vws),
                            workgroup: Some(wg),
                            ..base.clone()
                        };
                        try_point(o, &mut points)?;
                    }
                }
            }
        }
        let by_time = |p: &&Measurement, q: &&Measurement| p.ms.total_cmp(&q.ms);
        let best = points
            .iter()
            .min_by(by_time)
            .cloned()
            .ok_or_else(|| Error::Option("no sweep configuration fits this adapter".into()))?;
        let default = points
            .iter()
            .find(|p| {
                let c = &p.config;
                (c.tj, c.block_nnz, c.vws, c.workgroup)
                    == (model.tj, model.block_nnz, model.vws, model.workgroup)
            })
            .cloned()
            .unwrap_or_else(|| best.clone());
        let model_gap = default.ms / best.ms - 1.0;
        return Ok(Sweep {
            points,
            best,
            model: default,
            model_gap,
        });
    }
    for &tj in &tjs {
        for &tk in &tks {
            let o = Options {
                variant,
                tj: Some(tj),
                tk: Some(tk),
                ti: if variant == Variant::SmSm {
                    Some(tj)
                } else {
                    base.ti
                },
                ..base.clone()
            };
            try_point(o, &mut points)?;
        }
    }
    let by_time = |p: &&Measurement, q: &&Measurement| p.ms.total_cmp(&q.ms);
    let model_tj = model_tj.min(n).max(1);
    let best_tile = points
        .iter()
        .min_by(by_time)
        .cloned()
        .ok_or_else(|| Error::Option("no sweep configuration fits this adapter".into()))?;
    // The model fixes Tj only; Tk, vws, the workgroup size and unroll are tuned, so they
    // are tuned at the model's Tj as well as at the best tile.
    let model_tile = points
        .iter()
        .filter(|p| p.config.tj == model_tj)
        .min_by(by_time)
        .cloned();
    let mut tiles = vec![best_tile];
    tiles.extend(model_tile.filter(|m| m.config.tj != tiles[0].config.tj));
    for tile in tiles {
        let at = |vws: u32, workgroup: u32, unroll: u32| Options {
            variant,
            tj: Some(tile.config.tj),
            tk: Some(tile.config.tk),
            ti: if variant == Variant::SmSm {
                Some(tile.config.ti)
            } else {
                base.ti
            },
            vws: Some(vws),
            workgroup: Some(workgroup),
            unroll: Some(unroll),
            ..base.clone()
        };
        for wg in [128, 256, 512] {
            for vws in [2u32, 4, 8, 16] {
                if wg > gpu.caps.max_invocations_per_workgroup || vws > wg {
                    continue;
                }
                try_point(at(vws, wg, 1), &mut points)?;
            }
        }
        if variant == Variant::SmL2 {
            let b = points
                .iter()
                .filter(|p| p.config.tj == tile.config.tj && p.config.tk == tile.config.tk)
                .min_by(by_time)
                .cloned()
                .expect("the tile itself was measured");
            try_point(at(b.config.vws, b.config.workgroup, 2), &mut points)?;
        }
    }
    let best = points
        .iter()
        .min_by(by_time)
        .cloned()
        .expect("points is not empty");
    let model = points
        .iter()
        .filter(|p| p.config.tj == model_tj && base.vws.is_none_or(|v| v == p.config.vws))
        .min_by(by_time)
        .cloned()
        .unwrap_or_else(|| best.clone());
    let model_gap = model.ms / best.ms - 1.0;
    Ok(Sweep {
        points,
        best,
        model,
        model_gap,
    })
}
