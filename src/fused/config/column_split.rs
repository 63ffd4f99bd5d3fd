//! The column-split variant's configuration ([`crate::fused::split`]).

use super::{grid, loop_err, option_err, pow2_in};
use crate::fused::plan::{self, Residency};
use crate::fused::{loops, split, Config, Matrix, Options, Variant};
use crate::gpu::{loop_cap, Gpu};
use crate::Result;

/// Entries per invocation of `fused.split`: its chunks hold `SPLIT_EPL` × the workgroup size.
pub const SPLIT_EPL: u32 = 8;

/// The `Split` variant's configuration ([`crate::fused::split`]), or `None` where its layout
/// does not apply (more than 2^24 columns, X's entries beyond one storage binding, or on a
/// device with a loop cap a row too long for one vector: the caller runs `Fused`). The
/// model's VS for the row pass, a workgroup size (the caller's or 256), one row per vector
/// where the grid allows (or the caller's C), the row tile (the caller's or
/// [`split::default_row_tile`]).
pub(super) fn split(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    vs: u32,
    native_atomics: bool,
) -> Result<Option<Config>> {
    let caps = &gpu.caps;
    let (m, n) = x.shape();
    let Some(max_rt) = split::max_row_tile(n) else {
        return Ok(None);
    };
    // Keys and values are bound whole (no row bands).
    if 4 * x.nnz() as u64 > caps.max_storage_binding_bytes {
        return Ok(None);
    }
    let row_tile = match options.row_tile {
        Some(0) => return Err(option_err("the row tile must be at least 1 row".into())),
        Some(t) if t > max_rt => {
            return Err(option_err(format!(
                "row tile {t}: X's {n} columns leave key room for row tiles of at most \
                 {max_rt} rows"
            )))
        }
        Some(t) => t,
        None => split::default_row_tile(n).unwrap_or(max_rt),
    };
    let max_wg = caps.max_invocations_per_workgroup.min(1024);
    let wg = pow2_in(
        "workgroup size",
        options.workgroup.unwrap_or(256).min(max_wg),
        vs.max(32),
        max_wg,
    )?;
    let shuffle = options.subgroups && caps.shuffle_fits(vs);
    let scratch = if shuffle { 0 } else { 4 * wg };
    let nv = wg / vs;
    let mu = if m == 0 {
        0.0
    } else {
        x.nnz() as f64 / m as f64
    };
    let r = Residency::of(caps);
    // The row pass: rows as `fused.spmv`, then w = β·z over the grid (more workgroups where
    // a device's loop budget needs them for n). By default one row per vector where the grid
    // allows (not Eq. 5's C strided rows): on power-law X a vector walking C rows waits on
    // every long row it meets, while single rows leave the balancing to the hardware's
    // scheduling of workgroups (nothing is flushed per workgroup here). A caller's C (the
    // tuner tries Eq. 5's, [`split_model_c`]) goes through the launch model's checks.
    let per_row = loops::sparse_row(mu, vs, nv, false);
    let max_groups = caps.max_workgroups_per_dimension as usize;
    let options = Options {
        rows_per_vector: options
            .rows_per_vector
            .or(Some(m.div_ceil(nv as usize * max_groups).max(1) as u32)),
        ..options.clone()
    };
    let (c, mut groups) = grid(&options, m, nv, (&r, wg, scratch), caps, (per_row, 1))?;
    // The scatter's subgroups take consecutive entries in whole rounds: every subgroup full
    // (a workgroup of at least the largest subgroup size).
    let segmented = options.subgroups && caps.subgroups && wg >= caps.subgroup_max_size;
    // The 16-bit layout finds columns by subgroup ballots within each subgroup's slots (a
    // marker opens them: one fixed subgroup size), and holds 15-bit row offsets.
    let fits16 = segmented
        && caps.subgroup_min_size == caps.subgroup_max_size
        && row_tile <= split::MARKER16 as u32;
    let key16 = match options.key16 {
        Some(true) if !fits16 => {
            return Err(option_err(format!(
                "the 16-bit split layout needs subgroup operations of one size (a workgroup \
                 of whole subgroups) and row tiles of at most {} rows (here {row_tile})",
                split::MARKER16
            )))
        }
        Some(on) => on,
        None => fits16,
    };
    if let Some(b) = loop_cap::budget(caps.loop_cap) {
        // The row pass takes each row whole: a row past the budget in one vector runs `fused`,
        // whose long-row path spreads it over workgroups.
        if let Matrix::Sparse(s) = x {
            let longest = s.row_ptr.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            if c as u64 * per_row + (longest as u64).div_ceil(vs as u64) + vs as u64 > b {
                return Ok(None);
            }
        }
        let left = b.saturating_sub(c as u64 * per_row + 1).max(1);
        let need = (n as u64).div_ceil(wg as u64 * left);
        if need > caps.max_workgroups_per_dimension as u64 {
            return Err(loop_err(
                caps,
                format!("w = β·z over {n} columns"),
                n as u64,
            ));
        }
        groups = groups.max(need as u32);
    }
    Ok(Some(Config {
        variant: Variant::Split,
        dense: false,
        vs,
        workgroup: wg,
        rows_per_vector: c,
        groups,
        tl: 1,
        rows_in_flight: 1,
        workgroup_w: false,
        hot_cols: 0,
        long_row: u32::MAX,
        tile: 0,
        native_atomics,
        wg_native_atomics: false,
        wg_fixed: false,
        subgroup_reduce: shuffle,
        subgroup_wide: false,
        segmented,
        fold: false,
        regs: 0,
        prefetch: false,
        row_tile,
        key16,
        y_shared: false,
        wg_copies: 1,
        unit: 0,
        panels: 1,
        xt_caller: false,
        reorder: false,
        diag: Default::default(),
    }))
}

/// Eq. 5's rows per vector for the `Split` row pass at VS `vs` and `wg` invocations (the
/// tuner's alternative to one row per vector).
pub(crate) fn split_model_c(gpu: &Gpu, m: usize, vs: u32, wg: u32, subgroups: bool) -> u32 {
    let caps = &gpu.caps;
    let scratch = if subgroups && caps.shuffle_fits(vs) {
        0
    } else {
        4 * wg
    };
    let r = Residency::of(caps);
    let resident = r.units.saturating_mul(r.groups_resident(wg, scratch));
    let nv = (wg / vs.max(1)).max(1);
    plan::rows_per_vector(m, nv, resident, caps.max_workgroups_per_dimension).0
}
