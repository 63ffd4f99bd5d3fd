//! The `sorted` variant's configuration ([`crate::fused::tiles`]).

use super::{fold_fits, option_err, pow2_in, tile_grid};
use crate::fused::plan::Residency;
use crate::fused::{loops, Config, Matrix, Options, Variant};
use crate::gpu::Gpu;
use crate::{Error, Result};

/// Entries per invocation of the sorted kernel at most (its register arrays).
pub const SORTED_EPL_MAX: u32 = 8;

/// The `Sorted` variant's configuration: the model's VS, a workgroup size (the caller's or
/// 256), tiles of EPL·WG entries with EPL the largest of 8, 4, 2, 1 whose products array fits
/// workgroup memory beside the copy of w (w in global memory when even EPL = 1 leaves no room
/// for it, or when the caller says so), one workgroup per resident slot (tiles strided over
/// the grid) and rows above min(long-row threshold, tile) split as in `Fused` (by default,
/// rows longer than a tile).
pub(super) fn sorted(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    vs: u32,
    native_atomics: bool,
    used_hint: Option<usize>,
) -> Result<(Config, Option<usize>)> {
    let caps = &gpu.caps;
    let n = x.shape().1;
    let max_wg = caps.max_invocations_per_workgroup.min(1024);
    let wg_mem = caps.max_workgroup_storage_bytes as u64;
    let wg = pow2_in(
        "workgroup size",
        options.workgroup.unwrap_or(256).min(max_wg),
        vs.max(32),
        max_wg,
    )?;
    let shuffle = options.subgroups && caps.shuffle_fits(vs) && caps.subgroups;
    let scratch = if shuffle { 0 } else { 4 * wg as u64 };
    let w_bytes = 4 * n.max(1) as u64;
    let need = |epl: u32, on: bool| scratch + 4 * (epl * wg) as u64 + if on { w_bytes } else { 0 };
    let epl_for = |on: bool| {
        [8, 4, 2, 1]
            .into_iter()
            .find(|&e| e <= SORTED_EPL_MAX && need(e, on) <= wg_mem)
    };
    let (epl, on) = match options.workgroup_w {
        Some(true) => (
            epl_for(true).ok_or_else(|| Error::TooLarge {
                what: format!("the sorted kernel's workgroup copy of w (n = {n})"),
                needed: format!("{} bytes of workgroup memory", need(1, true)),
                limit: format!("{wg_mem} bytes on {}", caps.adapter_name),
            })?,
            true,
        ),
        want => match (want, epl_for(true)) {
            (None, Some(e)) => (e, true),
            _ => (
                epl_for(false).ok_or_else(|| {
                    option_err(format!(
                        "workgroup size {wg}: the sorted kernel's tile does not fit {wg_mem} \
                         bytes of workgroup memory"
                    ))
                })?,
                false,
            ),
        },
    };
    // X's columns beyond a packed key take wide keys (tiles.rs): no refusal.
    let tile = epl * wg;
    let r = Residency::of(caps);
    let resident = r
        .units
        .saturating_mul(r.groups_resident(wg, need(epl, on) as u32));
    let tiles_about = x.nnz().div_ceil(tile as usize).max(1);
    let max_groups = caps.max_workgroups_per_dimension as usize;
    let groups = (resident as usize).min(tiles_about).min(max_groups).max(1);
    let m = x.shape().0;
    let mu = if m == 0 {
        0.0
    } else {
        x.nnz() as f64 / m as f64
    };
    let per_tile = loops::sorted_tile(epl, wg, vs, mu);
    // Loops over n only with a workgroup copy of w.
    let fixed = if on { loops::workgroup_w(n, wg) } else { 1 };
    // Tiles end at row boundaries, so there are fewer than twice the full tiles.
    let groups = tile_grid(caps, groups, 2 * tiles_about, tile, (per_tile, fixed))?;
    let groups = groups as u32;
    // The sorted kernel walks tiles, not vectors of rows (C is 1), but a C of 0 is refused
    // here as by every other variant rather than run as something else.
    if options.rows_per_vector == Some(0) {
        return Err(option_err("rows per vector must be at least 1".into()));
    }
    // By default every row that fits a tile stays in the tiles: the long-row path reads its
    // rows twice (dot pre-pass, scatter post-pass) in two more dispatches, and on the H200
    // sparse-4096 (rows up to 4,096) at tiles of 8,192 the full pattern took 0.325 ms with
    // rows ≤ 8,192 tiled against 0.419 ms with rows above 1,024 split.
    let long_row = match options.long_row {
        Some(0) => {
            return Err(option_err(
                "the long-row threshold must be at least 1".into(),
            ))
        }
        Some(l) => l,
        None => tile,
    }
    .min(tile);
    Ok((
        Config {
            variant: Variant::Sorted,
            dense: false,
            vs,
            workgroup: wg,
            rows_per_vector: 1,
            groups,
            tl: 1,
            rows_in_flight: 1,
            workgroup_w: on,
            hot_cols: 0,
            long_row,
            tile,
            native_atomics,
            wg_native_atomics: false,
            wg_fixed: false,
            subgroup_reduce: shuffle,
            subgroup_wide: false,
            segmented: options.subgroups && caps.subgroups,
            fold: fold_fits(gpu, options),
            regs: 0,
            prefetch: false,
            row_tile: 0,
            key16: false,
            y_shared: false,
            wg_copies: 1,
            unit: 0,
            panels: 1,
            xt_caller: false,
            reorder: false,
            diag: Default::default(),
        },
        used_hint,
    ))
}
