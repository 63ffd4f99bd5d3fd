//! The `stream` variant's configuration ([`crate::fused::stream`]).

use super::{option_err, pow2_in, tile_grid};
use crate::fused::plan::Residency;
use crate::fused::{loops, stream, Config, Matrix, Options, UnitTiles, Variant};
use crate::gpu::Gpu;
use crate::Result;

/// Entries per invocation of `fused.stream` when the caller leaves it open.
pub const STREAM_EPL: u32 = 4;

/// Invocations per workgroup of `fused.stream` when the caller leaves it open (at most the
/// adapter's). With [`STREAM_EPL`]: at 500k × 4,096 on an H100, 512 × 4 ran 0.155 ms where
/// 1,024 × 8 ran 0.195 at the same grid (BENCHMARKS.md, thirtieth measurements); `auto`
/// times the sizes.
const STREAM_WG: u32 = 512;

/// Workgroup-memory bytes per tile row: two row-sum and two factor buffers.
const ROW_BYTES: u64 = 4 * 4;

/// Workgroup-memory bytes per scratch slot (an invocation's, or with subgroups a subgroup's):
/// its chain of row heads and whether the chain ends in it.
const SLOT_BYTES: u64 = 4 * 2;

/// Workgroup-memory bytes of the fixed-point sums' bookkeeping: three slots of three maxima.
const FIXED_SLOT_BYTES: u64 = 4 * 9;

/// What a stream plan keeps in workgroup memory besides its tile rows and the copy of w.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Footprint {
    /// A copy of y too.
    pub y_shared: bool,
    /// w's copy as fixed-point sums: two words a column and the maxima's slots.
    pub fixed: bool,
    /// Row chains summed across subgroups: scratch slots per subgroup, not per invocation.
    pub segmented: bool,
    /// Copies of w (float sums only).
    pub copies: u32,
}

impl Footprint {
    /// The footprint of `config` (a stream configuration).
    pub(crate) fn of(config: &Config) -> Self {
        Footprint {
            y_shared: config.y_shared,
            fixed: config.wg_fixed,
            segmented: config.segmented,
            copies: config.wg_copies,
        }
    }
}

/// Scratch slots of a workgroup of `wg` (the kernel's chain arrays): one an invocation, or
/// with `segmented` one a subgroup, as many as the adapter's least subgroup size allows.
pub(crate) fn scratch_slots(gpu: &Gpu, wg: u32, segmented: bool) -> u32 {
    if segmented {
        wg.div_ceil(gpu.caps.subgroup_min_size.max(1))
    } else {
        wg
    }
}

/// Rows per tile at most: a tile's entries, and what workgroup memory leaves beside the copy
/// of w's `n` columns and the rest of `footprint` (0: not even one row).
pub(crate) fn rows_cap(gpu: &Gpu, n: usize, wg: u32, tile: u32, footprint: Footprint) -> u32 {
    // The one-dispatch ending's flag is reserved whether or not the plan takes it.
    let room = (gpu.caps.max_workgroup_storage_bytes as u64)
        .saturating_sub(besides_rows(gpu, n, wg, footprint) + super::FINISH_FLAG_BYTES);
    (room / ROW_BYTES).min(tile as u64).min(1 << 16) as u32
}

/// Workgroup-memory bytes besides the tile rows': the copies of w (two words a column and the
/// maxima's slots with fixed-point sums; and of y where shared) and the scratch slots.
fn besides_rows(gpu: &Gpu, n: usize, wg: u32, f: Footprint) -> u64 {
    let w_words = if f.fixed { 2 } else { u64::from(f.copies) };
    let y_words = u64::from(f.y_shared);
    let slots = if f.fixed { FIXED_SLOT_BYTES } else { 0 };
    let scratch = SLOT_BYTES * scratch_slots(gpu, wg, f.segmented) as u64;
    4 * (w_words + y_words) * n.max(1) as u64 + slots + scratch
}

/// Fewest rows a tile may be capped at (or the tile's entries, if fewer): below it the
/// variant does not apply, and y's copy is refused.
const ROWS_MIN: u32 = 32;

/// The `Stream` variant's configuration, or `None` where it does not apply (dense X, w beyond
/// workgroup memory or not wanted there, X's columns beyond a key, its copy beyond one storage
/// binding: the caller runs `Fused`). A workgroup size (the caller's or [`STREAM_WG`]), EPL
/// entries per invocation (the caller's or [`STREAM_EPL`]), one workgroup per resident slot
/// (tiles strided over the grid), rows longer than a tile (or the caller's threshold, at most
/// a tile) each taken whole by a workgroup of the same kernel.
pub(super) fn stream(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    vs: u32,
    native_atomics: bool,
) -> Result<Option<Config>> {
    let caps = &gpu.caps;
    let (m, n) = x.shape();
    let epl = match options.epl {
        None => STREAM_EPL,
        Some(e @ (4 | 8)) => e,
        Some(e) => {
            return Err(option_err(format!(
                "entries per invocation (--epl) = {e}: must be 4 or 8"
            )))
        }
    };
    let max_wg = caps.max_invocations_per_workgroup.min(1024);
    let wg = pow2_in(
        "workgroup size",
        options.workgroup.unwrap_or(STREAM_WG).min(max_wg),
        32,
        max_wg,
    )?;
    if options.rows_per_vector == Some(0) {
        return Err(option_err("rows per vector must be at least 1".into()));
    }
    if options.row_tile == Some(0) {
        return Err(option_err("rows per tile must be at least 1".into()));
    }
    if let Some(0) = options.long_row {
        return Err(option_err(
            "the long-row threshold must be at least 1".into(),
        ));
    }
    let Matrix::Sparse(s) = x else {
        return Ok(None);
    };
    // Row chains summed across subgroups: workgroups of whole subgroups.
    let segmented = options.subgroups && caps.subgroups && wg >= caps.subgroup_max_size;
    let unit = unit_lanes(gpu, options, wg, segmented)?;
    // Entries a workgroup tile holds (the long rows' bound), and a tile's.
    let wg_tile = epl * wg;
    let tile = if unit > 0 { epl * unit } else { wg_tile };
    let rows_min = ROWS_MIN.min(tile);
    // y's copy is opt-in: on the H200 its gathers from workgroup memory, beside the scatter's
    // compare-exchanges there, cost more than L1-cached global loads (0.27 against 0.165 ms at
    // 500k × 4,096).
    let wg_fixed = options.wg_fixed == Some(true);
    let copies = options.wg_copies.unwrap_or(1);
    if ![1, 2, 4, 8].contains(&copies) {
        return Err(option_err(format!(
            "copies of w (--wg-copies) = {copies}: must be 1, 2, 4 or 8"
        )));
    }
    if wg_fixed && copies > 1 {
        return Err(option_err(format!(
            "{copies} copies of w (--wg-copies): fixed-point sums keep one"
        )));
    }
    let footprint = |y_shared| Footprint {
        y_shared,
        fixed: wg_fixed,
        segmented,
        copies,
    };
    let y_shared =
        options.y_shared == Some(true) && rows_cap(gpu, n, wg, tile, footprint(true)) >= rows_min;
    let rows = rows_cap(gpu, n, wg, tile, footprint(y_shared));
    if wg_fixed && rows < rows_min {
        return Err(option_err(format!(
            "fixed-point sums of w: {n} columns at two words each leave a tile fewer than \
             {rows_min} rows of workgroup memory"
        )));
    }
    // Where one copy of w would leave room (the variant applies), more are the caller's error.
    let one_copy = Footprint {
        copies: 1,
        ..footprint(y_shared)
    };
    if copies > 1 && rows < rows_min && rows_cap(gpu, n, wg, tile, one_copy) >= rows_min {
        return Err(option_err(format!(
            "{copies} copies of w (--wg-copies): {n} columns each leave a tile fewer than \
             {rows_min} rows of workgroup memory"
        )));
    }
    // Padding adds at most 3 entries a row; keys and values are bound whole.
    let copy = 4 * (s.nnz() as u64 + 3 * m as u64);
    if options.workgroup_w == Some(false)
        || rows < rows_min
        || !stream::fits(n)
        || copy > caps.max_storage_binding_bytes
    {
        return Ok(None);
    }
    // 16-bit keys are opt-in: on an H100 they took 2.6% off at 500k × 1,024 and added 1.8%
    // at 500k × 4,096 (BENCHMARKS.md, twenty-first measurements).
    if options.key16 == Some(true) && !stream::fits16(n) {
        return Err(option_err(format!(
            "16-bit stream keys hold at most 32,767 columns (X has {n})"
        )));
    }
    let key16 = options.key16 == Some(true);
    if options.y_shared == Some(true) && !y_shared {
        return Err(option_err(format!(
            "y in workgroup memory: {n} columns twice leave a tile fewer than {rows_min} rows"
        )));
    }
    // The caller's cap on a tile's rows (less workgroup memory a workgroup, more resident).
    // Unit tiles keep no rows in workgroup memory: a tile's rows are at most its entries.
    let rows = if unit > 0 {
        tile
    } else {
        rows.min(options.row_tile.unwrap_or(u32::MAX))
    };
    let row_bytes = if unit > 0 { 0 } else { ROW_BYTES * rows as u64 };
    let shared = (besides_rows(gpu, n, wg, footprint(y_shared)) + row_bytes) as u32;
    let r = Residency::of(caps);
    let resident = r.units.saturating_mul(r.groups_resident(wg, shared));
    // Tiles a workgroup's invocations take at once: one, or one a unit.
    let at_once = wg.checked_div(unit).unwrap_or(1);
    let tiles_about = s
        .nnz()
        .div_ceil(tile as usize)
        .div_ceil(at_once as usize)
        .max(1);
    let max_groups = caps.max_workgroups_per_dimension as usize;
    let groups = options
        .groups
        .map_or(resident as usize, |g| g as usize)
        .min(tiles_about)
        .min(max_groups)
        .max(1);
    // Tiles end at row boundaries (and at `rows` rows): on a device with a loop budget,
    // enough workgroups that each takes few enough tiles.
    let mu = s.nnz() as f64 / m.max(1) as f64;
    let rows_per_tile = ((tile as f64 / mu.max(1.0)).ceil() as u64).min(rows as u64) as u32;
    let per_tile = if unit > 0 {
        loops::unit_tile(epl, caps.subgroup_max_size)
    } else {
        loops::stream_tile(epl, wg, rows_per_tile, rows)
    };
    let y_copy = if y_shared {
        n.div_ceil(wg as usize) as u64
    } else {
        0
    };
    // Fixed-point sums zero two words a column (and read both in the flush).
    let w_words = if wg_fixed { 2 * n } else { n };
    let fixed = loops::workgroup_w(w_words, wg) + 3 * (rows as u64).div_ceil(wg as u64) + y_copy;
    let full = s.nnz().div_ceil(tile as usize);
    let long_row = options.long_row.unwrap_or(tile).min(tile);
    // A long row costs a workgroup two passes over its entries (at most a tile's loop
    // iterations per tile of them) and its dot product's sum (less than one tile's more).
    let long_items: usize = (0..m)
        .map(|r| s.row_range(r).len())
        .filter(|&l| l > long_row as usize)
        .map(|l| l.div_ceil(wg_tile as usize) + 1)
        .sum();
    // An invocation's tiles: a workgroup's (a unit's, its share) and the long rows' passes.
    let tiles_max =
        (2 * full + m.div_ceil(rows.max(1) as usize)).div_ceil(at_once as usize) + long_items;
    let groups = tile_grid(caps, groups, tiles_max, tile, (per_tile, fixed))?;
    Ok(Some(Config {
        variant: Variant::Stream,
        dense: false,
        vs,
        workgroup: wg,
        rows_per_vector: 1,
        groups: groups as u32,
        tl: 1,
        rows_in_flight: 1,
        workgroup_w: true,
        hot_cols: 0,
        long_row,
        tile,
        native_atomics,
        wg_native_atomics: false,
        wg_fixed,
        // The row passes a caller runs on this plan (the logistic terms) reduce with VS.
        subgroup_reduce: options.subgroups && caps.subgroups && caps.shuffle_fits(vs),
        subgroup_wide: false,
        segmented,
        // The one-dispatch ending (long rows are in the same kernel).
        fold: super::fold_fits(gpu, options),
        regs: 0,
        prefetch: options.prefetch,
        row_tile: options.row_tile.map_or(0, |_| rows),
        key16,
        y_shared,
        wg_copies: copies,
        unit,
        panels: 1,
        xt_caller: false,
        reorder: false,
        diag: Default::default(),
    }))
}

/// Lanes a unit tile ([`Config::unit`]) where the caller asks for unit tiles, else 0: the
/// caller's count or the adapter's least subgroup size (a unit never spans two subgroups).
/// Refused without subgroup operations or workgroups of whole subgroups, with fixed-point
/// sums (they settle at each tile's barriers), with `prefetch` and with a cap on a tile's
/// rows (both of workgroup tiles).
fn unit_lanes(gpu: &Gpu, options: &Options, wg: u32, segmented: bool) -> Result<u32> {
    if options.unit_tiles == UnitTiles::Off {
        return Ok(0);
    }
    let refuse = |why: &str| Err(option_err(format!("unit tiles (--unit-tiles): {why}")));
    let sg = gpu.caps.subgroup_min_size;
    if !segmented || sg < 2 {
        return refuse(&format!(
            "need subgroup operations and workgroups of whole subgroups (here {wg} \
             invocations, subgroups of up to {})",
            gpu.caps.subgroup_max_size
        ));
    }
    let lanes = match options.unit_tiles {
        UnitTiles::Lanes(k) if !(k >= 2 && k.is_power_of_two() && k <= sg) => {
            return refuse(&format!(
                "{k} lanes a unit: must be a power of two from 2 to the least subgroup size, {sg}"
            ))
        }
        UnitTiles::Lanes(k) => k,
        _ => sg,
    };
    if options.wg_fixed == Some(true) {
        return refuse("fixed-point sums settle at every tile's barriers; unit tiles have none");
    }
    if options.prefetch {
        return refuse("--prefetch loads workgroup tiles ahead");
    }
    if options.row_tile.is_some() {
        return refuse("--row-tile caps workgroup tiles' rows in workgroup memory");
    }
    Ok(lanes)
}
