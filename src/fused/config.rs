//! Options → configuration: the launch model ([`super::plan`]) fills what the options leave
//! open, checked against the device's limits.

use crate::fused::dense::x_stride;
use crate::fused::plan::{self, Residency, TL_MAX};
use crate::fused::{hot, loops, schedule, transpose};
use crate::fused::{Atomics, Config, Matrix, Options, Variant};
use crate::gpu::{loop_cap, Gpu, GpuBuffer};
use crate::sparse::bands::row_step;
use crate::{Error, Result};

mod column_split;
mod grid;
mod sorted;
mod stream;
use column_split::split;
pub(crate) use column_split::split_model_c;
pub use column_split::SPLIT_EPL;
pub(crate) use grid::grid;
use grid::{loop_err, tile_grid};
use sorted::sorted;
pub use sorted::SORTED_EPL_MAX;
use stream::stream;
pub use stream::STREAM_EPL;
pub(crate) use stream::{
    rows_cap as stream_rows_cap, scratch_slots as stream_scratch_slots,
    Footprint as StreamFootprint,
};

fn option_err(msg: String) -> Error {
    Error::Option(msg)
}

fn pow2_in(what: &str, v: u32, lo: u32, hi: u32) -> Result<u32> {
    if v.is_power_of_two() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(option_err(format!(
            "{what} = {v}: must be a power of two in {lo}..={hi}"
        )))
    }
}

/// The launch model's long-row threshold is never below this many entries (shorter rows are
/// cheaper in one vector than in the two-dispatch long-row path).
pub(crate) const LONG_ROW_MIN: u64 = 1024;

/// Whether f32 adds of the `kind` asked for are native, the device having them or not
/// (`has`); `Native` without them is refused, naming `what`.
fn native(kind: Atomics, has: bool, what: &str, caps: &crate::Caps) -> Result<bool> {
    match kind {
        Atomics::Auto => Ok(has),
        Atomics::Cas => Ok(false),
        Atomics::Native if has => Ok(true),
        Atomics::Native => Err(Error::Unsupported(format!(
            "{what} on {}",
            caps.adapter_name
        ))),
    }
}

/// The configuration for `x` under `options`: the launch model fills what they leave open.
/// Also returns how many columns of a sparse X hold entries when it was needed (for the hot
/// columns; `used_hint` passes it in when known, since counting costs a pass over X).
pub(crate) fn resolve(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    used_hint: Option<usize>,
) -> Result<(Config, Option<usize>)> {
    let caps = &gpu.caps;
    let wg_native = native(
        options.wg_atomics,
        caps.wg_f32_atomics,
        "native f32 adds in workgroup memory (Vulkan's shaderSharedFloat32AtomicAdd)",
        caps,
    )?;
    let (mut config, used) = resolve_open(gpu, x, options, used_hint)?;
    if let Some(p) = options.panels.filter(|&p| p != 1) {
        if config.variant != Variant::Transpose {
            return Err(Error::Option(format!(
                "{p} column panels: the transpose variant on sparse X only (this plan: {})",
                config.describe()
            )));
        }
        if !(1..=PANELS_MAX).contains(&p) {
            return Err(option_err(format!(
                "{p} column panels: the transpose variant takes 1 to {PANELS_MAX}"
            )));
        }
        config.panels = p;
    }
    if options.xt_caller == Some(true) && config.variant != Variant::Transpose {
        return Err(Error::Option(format!(
            "Xᵀ in the caller's column order: the transpose variant only (this plan: {})",
            config.describe()
        )));
    }
    // The caller's order unless the plan's is asked for; kept only where the columns are
    // re-indexed ([`reorder::decide`]).
    config.xt_caller = config.variant == Variant::Transpose && options.xt_caller != Some(false);
    if options.wg_fixed == Some(true) && !config.wg_fixed {
        return Err(Error::Option(format!(
            "fixed-point sums of w: the stream kernel only (this plan: {})",
            config.describe()
        )));
    }
    // The sparse kernels that add into workgroup memory as floats: w's copy, or the hot
    // columns'.
    config.wg_native_atomics = wg_native
        && !config.wg_fixed
        && !config.dense
        && (config.workgroup_w || config.hot_cols > 0)
        && matches!(
            config.variant,
            Variant::Fused | Variant::Sorted | Variant::Stream
        );
    Ok((config, used))
}

/// [`resolve`] but for the workgroup adds' kind.
fn resolve_open(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    used_hint: Option<usize>,
) -> Result<(Config, Option<usize>)> {
    // w (and y, z) hold one value per column of X and are bound whole: a LIBSVM index in the
    // billions is refused here, before any per-column work on the host.
    GpuBuffer::<f32>::check_binding(gpu, "fused vector over X's columns", x.shape().1)?;
    let caps = &gpu.caps;
    let (m, n) = x.shape();
    let dense = matches!(x, Matrix::Dense(_));
    let variant = match options.variant {
        Variant::Auto => Variant::Fused,
        // Dense X has no scatter to privatize or sort.
        Variant::Sorted | Variant::Split | Variant::Stream | Variant::Transpose if dense => {
            Variant::Fused
        }
        v => v,
    };
    match options.groups {
        Some(0) => return Err(option_err("a grid of at least 1 workgroup".into())),
        Some(g) if variant != Variant::Stream => {
            return Err(option_err(format!(
                "a grid of {g} workgroups: only the stream variant (on sparse X) takes one"
            )))
        }
        _ => {}
    }
    let native_atomics = native(
        options.atomics,
        caps.f32_atomics,
        "native f32 atomics (SHADER_FLOAT32_ATOMIC)",
        caps,
    )?;
    let max_wg = caps.max_invocations_per_workgroup.min(1024);
    let wg_mem = caps.max_workgroup_storage_bytes;
    let r = Residency::of(caps);
    let scratch = |vs: u32, wg: u32| {
        if options.subgroups && caps.shuffle_fits(vs) {
            0
        } else {
            4 * wg
        }
    };
    let w_bytes = 4 * n.max(1) as u64;
    if dense {
        let bs = pow2_in(
            "workgroup size",
            options
                .workgroup
                .unwrap_or(plan::dense_workgroup(n))
                .min(max_wg),
            32,
            max_wg,
        )?;
        let (tl, vs) = match (options.vs, options.tl) {
            (None, None) => plan::dense_tl_vs(n, max_wg).ok_or_else(|| {
                Error::Unsupported(format!(
                    "dense fused kernel with n = {n}: a row needs more than {max_wg} lanes × \
                     {TL_MAX} elements"
                ))
            })?,
            (vs, tl) => {
                let vs = pow2_in("vs", vs.unwrap_or(32), 1, max_wg)?;
                let tl = tl.unwrap_or(n.div_ceil(vs as usize).max(1) as u32);
                (tl, vs)
            }
        };
        if tl == 0 || tl > TL_MAX || (vs as usize) * (tl as usize) < n {
            return Err(option_err(format!(
                "dense tl = {tl}, vs = {vs}: need 1 ≤ tl ≤ {TL_MAX} and vs·tl ≥ n = {n}"
            )));
        }
        let wg = bs.max(vs);
        let shuffle = options.subgroups && caps.shuffle_fits(vs);
        // A vector of whole subgroups of one fixed size (NVIDIA: 32).
        let sg = caps.subgroup_min_size;
        let wide = options.subgroups
            && caps.subgroups
            && !shuffle
            && sg == caps.subgroup_max_size
            && vs > sg
            && vs.is_multiple_of(sg);
        let shared = w_bytes + scratch(vs, wg) as u64;
        if shared > wg_mem as u64 {
            return Err(Error::TooLarge {
                what: format!("dense fused kernel's workgroup copy of w (n = {n})"),
                needed: format!("{shared} bytes of workgroup memory"),
                limit: format!("{wg_mem} bytes on {}", caps.adapter_name),
            });
        }
        let rif = pow2_in(
            "rows in flight",
            options.rows_in_flight.unwrap_or(1),
            1,
            RIF_MAX,
        )?;
        let rows = dense_band_rows(gpu, n)?.min(m);
        let nv = wg / vs;
        // Steps of RIF rows: a last one past C runs up to RIF − 1 masked rows more.
        let per_row = loops::dense_row(tl, vs, rif);
        let iters = (
            per_row,
            loops::workgroup_w(n, wg) + nv as u64 * tl as u64 + (rif as u64 - 1) * per_row,
        );
        let (c, groups) = grid(options, rows, nv, (&r, wg, shared as u32), caps, iters)?;
        return Ok((
            Config {
                variant,
                dense,
                vs,
                workgroup: wg,
                rows_per_vector: c,
                groups,
                tl,
                rows_in_flight: rif,
                workgroup_w: true,
                hot_cols: 0,
                long_row: u32::MAX,
                tile: 0,
                native_atomics,
                wg_native_atomics: false,
                wg_fixed: false,
                subgroup_reduce: shuffle || wide,
                subgroup_wide: wide,
                segmented: false,
                fold: false,
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
            None,
        ));
    }
    let nnz = x.nnz();
    let mu = if m == 0 { 0.0 } else { nnz as f64 / m as f64 };
    let model_vs = match variant {
        Variant::Transpose => transpose::gather_vs(mu),
        // The rule refitted on the fused kernel's sweeps; the others keep Eq. 4.
        Variant::Fused | Variant::TwoPass => plan::fused_vs(mu),
        _ => plan::sparse_vs(mu),
    };
    let vs = pow2_in("vs", options.vs.unwrap_or(model_vs), 1, 32)?;
    if variant == Variant::Sorted {
        return sorted(gpu, x, options, vs, native_atomics, used_hint);
    }
    if variant == Variant::Split {
        if let Some(c) = split(gpu, x, options, vs, native_atomics)? {
            return Ok((c, used_hint));
        }
    }
    if variant == Variant::Stream {
        if let Some(c) = stream(gpu, x, options, vs, native_atomics)? {
            return Ok((c, used_hint));
        }
    }
    // Split and Stream where their layouts do not apply run `Fused`.
    let variant = if matches!(variant, Variant::Split | Variant::Stream) {
        Variant::Fused
    } else {
        variant
    };
    let fits = |wg: u32| w_bytes + scratch(vs, wg) as u64 <= wg_mem as u64;
    let shared_of = |on: bool, wg: u32| {
        if on {
            w_bytes as u32 + scratch(vs, wg)
        } else {
            scratch(vs, wg)
        }
    };
    let pick_wg = |on: bool| match options.workgroup {
        Some(wg) => pow2_in("workgroup size", wg, vs.max(32), max_wg),
        // Two-pass vectors take turns scattering (a barrier each): at most 8 per workgroup.
        None if variant == Variant::TwoPass => Ok((8 * vs).clamp(32, max_wg)),
        // The row tiles' own size (the row kernel's grid follows the launch model).
        None if variant == Variant::Transpose && options.epl != Some(0) => {
            Ok(GATHER_TILE_DEFAULT.1.clamp(32, max_wg).max(vs))
        }
        None => {
            // The fused kernel aims for FUSED_VECTORS vectors a workgroup where residency
            // allows; the unfused kernels keep the largest size.
            let least = match variant {
                Variant::Fused => plan::FUSED_VECTORS.saturating_mul(vs),
                _ => u32::MAX,
            };
            Ok(plan::best_workgroup(&r, max_wg, least, |wg| shared_of(on, wg)).max(vs))
        }
    };
    let wants_w = match (variant, options.workgroup_w) {
        (Variant::Unfused | Variant::Transpose, _) => false,
        (Variant::TwoPass, Some(false)) => {
            return Err(option_err(
                "the two-pass variant aggregates w in workgroup memory".into(),
            ))
        }
        (Variant::TwoPass, _) => true,
        (_, Some(on)) => on,
        (_, None) => fits(pick_wg(true)?),
    };
    let wg = pick_wg(wants_w)?;
    let used = || used_hint.unwrap_or_else(|| hot::column_degrees_used(x));
    let mut used_cols = used_hint;
    if wants_w && !fits(wg) {
        return Err(Error::TooLarge {
            what: format!("a workgroup copy of w (n = {n})"),
            needed: format!("{} bytes of workgroup memory", shared_of(true, wg)),
            limit: format!(
                "{wg_mem} bytes on {} (the fused variant adds to global memory instead)",
                caps.adapter_name
            ),
        });
    }
    let hot_cols = match (variant, wants_w) {
        (Variant::Fused, false) => {
            let cap = (wg_mem.saturating_sub(scratch(vs, wg)) / 4) as usize;
            let used = *used_cols.get_or_insert_with(used);
            match options.hot_cols {
                Some(h) if h as usize > cap => {
                    return Err(Error::TooLarge {
                        what: format!("a cache of {h} hot columns"),
                        needed: format!("{} bytes of workgroup memory", 4 * h + scratch(vs, wg)),
                        limit: format!("{wg_mem} bytes on {}", caps.adapter_name),
                    })
                }
                Some(h) => (h as usize).min(used),
                None => cap.min(used),
            }
        }
        // Hot copies: copies of the hot slots beside the copy of w, only when asked for
        // (`auto` tunes it).
        (Variant::Fused, true) => match options.hot_cols {
            None | Some(0) => 0,
            Some(h) => {
                let room = hot_room(wg_mem, n, scratch(vs, wg));
                if h as u64 * 4 > room {
                    return Err(Error::TooLarge {
                        what: format!("a copy of {h} hot columns"),
                        needed: format!("{} bytes of workgroup memory beside the copy of w", 4 * h),
                        limit: format!("{room} bytes left on {}", caps.adapter_name),
                    });
                }
                (h as usize).min(*used_cols.get_or_insert_with(used))
            }
        },
        _ => 0,
    } as u32;
    // Slots are marked by the top bit of a column index.
    let hot_cols = if n as u64 >= hot::HOT_BIT as u64 {
        0
    } else {
        hot_cols
    };
    let nv = wg / vs;
    let copies = if wants_w {
        hot_copies(hot_cols, nv, hot_room(wg_mem, n, scratch(vs, wg)))
    } else {
        1
    };
    let shared = shared_of(wants_w, wg) + 4 * hot_cols * copies;
    let fixed = match (wants_w, hot_cols) {
        // Hot copies: zeroed with w, each slot summed over the copies at the flush.
        (true, h) => {
            loops::workgroup_w(n + (h * copies) as usize, wg)
                + (h as u64).div_ceil(wg as u64) * copies as u64
        }
        (false, 0) => 1,
        (false, h) => loops::workgroup_w(h as usize, wg),
    };
    let regs = match (variant, options.regs) {
        (_, None | Some(0)) => 0,
        (Variant::Fused, Some(k)) if k <= REGS_MAX => k,
        (Variant::Fused, Some(k)) => {
            return Err(option_err(format!(
                "regs = {k}: entries per lane in registers are 1 to {REGS_MAX}"
            )))
        }
        // The other variants read their entries as they go.
        _ => 0,
    };
    if options.prefetch && regs == 0 && variant == Variant::Fused {
        return Err(option_err(
            "prefetch: the row pipeline holds the next row's entries in registers, so it \
             needs regs (sparse `fused`)"
                .into(),
        ));
    }
    let two_pass = variant == Variant::TwoPass;
    // REGS: two loops of `regs` trips per row more.
    let iters = (
        loops::sparse_row(mu, vs, nv, two_pass) + 2 * regs as u64,
        fixed,
    );
    let (c, groups) = grid(options, m, nv, (&r, wg, shared), caps, iters)?;
    let resident = r.units.saturating_mul(r.groups_resident(wg, shared));
    // Eq. 5's C weighed on X's own rows (power-law rows favour a second wave).
    let (c, groups) = match (variant, options.rows_per_vector, x) {
        (Variant::Fused, None, Matrix::Sparse(csr)) => {
            let long_row = |c: u32| options.long_row.unwrap_or_else(|| fused_long_row(c, mu));
            let grid = schedule::RowGrid {
                vs,
                nv,
                resident,
                fixed: iters.1,
                long_row: &long_row,
            };
            let c_max =
                loops::max_per_invocation(loop_cap::budget(caps.loop_cap), iters.0, iters.1);
            schedule::rows_per_vector(csr, &grid, c, c_max, caps.max_workgroups_per_dimension)
        }
        _ => (c, groups),
    };
    // fused/reduce_parts sums the G workgroups' partials of a column in one invocation.
    if let (true, Some(b)) = (two_pass, loop_cap::budget(caps.loop_cap)) {
        if groups as u64 > b {
            return Err(loop_err(
                caps,
                format!("two-pass over {groups} workgroups"),
                groups as u64,
            ));
        }
    }
    // A vector takes about C·μ entries; a row much longer than that would hold its vector (and
    // the whole dispatch) long after the others finish, so it is split over workgroups.
    let long_row = match variant {
        Variant::Fused | Variant::Transpose => match options.long_row {
            Some(0) => {
                return Err(option_err(
                    "the long-row threshold must be at least 1".into(),
                ))
            }
            Some(l) => l,
            None if variant == Variant::Transpose => {
                transpose::long_row(nnz, resident as u64 * nv as u64)
            }
            None => fused_long_row(c, mu),
        },
        _ => u32::MAX,
    };
    let tile = transpose_tile(gpu, variant, options.epl, wg)?;
    let config = Config {
        variant,
        dense,
        vs,
        workgroup: wg,
        rows_per_vector: c,
        groups,
        tl: 1,
        rows_in_flight: 1,
        workgroup_w: wants_w,
        hot_cols,
        long_row,
        tile,
        native_atomics,
        wg_native_atomics: false,
        wg_fixed: false,
        subgroup_reduce: options.subgroups && caps.shuffle_fits(vs),
        subgroup_wide: false,
        segmented: false,
        fold: variant == Variant::Fused && fold_fits(gpu, options),
        regs,
        // `transpose`: the row tiles' pipeline (the row kernel has none).
        prefetch: options.prefetch && (regs > 0 || (variant == Variant::Transpose && tile > 0)),
        row_tile: 0,
        key16: false,
        y_shared: false,
        wg_copies: 1,
        unit: 0,
        panels: 1,
        xt_caller: false,
        reorder: false,
        diag: Default::default(),
    };
    Ok((config, used_cols))
}

/// Entries per invocation the `transpose` variant's row tiles take (`--epl`; 0 asks for the
/// row kernel).
pub const GATHER_TILE_EPL: [u32; 4] = [1, 2, 4, 8];

/// The `transpose` variant's row tiles by default: (entries per invocation, workgroup size).
/// On the H200 tiles of 4 × 256 entries took 6.81 ms at KDD2010 (rows: 9.30) and 0.222 ms at
/// 500k × 4,096 (rows: 0.372); 8 × 256, 4 × 512 and 2 × 1,024 were slower.
pub const GATHER_TILE_DEFAULT: (u32, u32) = (4, 256);

/// `transpose` with entries per invocation `epl` (`None`: [`GATHER_TILE_DEFAULT`]'s, 0: the
/// row kernel): its gathers in row tiles of `epl` × `wg` entries (`fused.gather_tiles`: the
/// products, the rows' offsets and the reduction's scratch in workgroup memory, checked
/// here); 0 (the row kernel) for the others.
fn transpose_tile(gpu: &Gpu, variant: Variant, epl: Option<u32>, wg: u32) -> Result<u32> {
    let epl = match (variant, epl.unwrap_or(GATHER_TILE_DEFAULT.0)) {
        (Variant::Transpose, 0) => return Ok(0),
        (Variant::Transpose, e) if GATHER_TILE_EPL.contains(&e) => e,
        (Variant::Transpose, e) => {
            return Err(option_err(format!(
                "entries per invocation (--epl) = {e}: the transpose variant's row tiles take \
                 1, 2, 4 or 8 (0: the row kernel)"
            )))
        }
        _ => return Ok(0),
    };
    let caps = &gpu.caps;
    let bytes = 4 * (epl as u64 * wg as u64 + wg as u64 + 1) + 4 * wg as u64;
    if bytes > caps.max_workgroup_storage_bytes as u64 {
        return Err(Error::TooLarge {
            what: format!("row tiles of {epl} × {wg} entries"),
            needed: format!("{bytes} bytes of workgroup memory"),
            limit: format!(
                "{} bytes on {}",
                caps.max_workgroup_storage_bytes, caps.adapter_name
            ),
        });
    }
    Ok(epl * wg)
}

/// Column panels of the `transpose` variant at most ([`Config::panels`]; checked and set
/// in `resolve`).
pub const PANELS_MAX: u32 = 64;

/// Dense: rows in flight per vector at most (`fused.dense`'s RIF_MAX).
pub const RIF_MAX: u32 = 4;

/// Entries per lane held in registers at most (`fused.sparse` with REGS: its arrays).
pub const REGS_MAX: u32 = 4;

/// Copies of the hot columns at most (sparse fused, w in workgroup memory): enough that few
/// vectors share one.
const HOT_COPIES_MAX: u32 = 32;

/// Workgroup memory the one-dispatch ending (FINISH) adds to a main kernel: its
/// `finish_last` flag.
pub(crate) const FINISH_FLAG_BYTES: u64 = 4;

/// Workgroup memory left for the hot copies beside the copy of w (n columns), the reduction
/// scratch and the one-dispatch ending's flag.
fn hot_room(wg_mem: u32, n: usize, scratch: u32) -> u64 {
    (wg_mem as u64).saturating_sub(4 * n.max(1) as u64 + scratch as u64 + FINISH_FLAG_BYTES)
}

/// Copies of `h` hot columns for `nv` vectors within `room` bytes: one per vector up to
/// [`HOT_COPIES_MAX`] and what fits (at least one; the caller checked one fits).
fn hot_copies(h: u32, nv: u32, room: u64) -> u32 {
    let fit = (room / (4 * h.max(1) as u64)).max(1);
    nv.min(HOT_COPIES_MAX).min(fit as u32).max(1)
}

impl Config {
    /// Hot copies by plain index: with the columns re-indexed by entry count the hot columns
    /// are the first `hot_cols`, so `fused.sparse` copies that prefix (HOT_PREFIX) and X's
    /// column indices need no rewriting (no hot-column list, no extra load per entry).
    pub fn hot_prefix(&self) -> bool {
        self.reorder && self.workgroup_w && self.hot_cols > 0 && self.variant == Variant::Fused
    }

    /// `Stream`: the invocations that share a tile (a unit's lanes, or the workgroup).
    pub fn tile_lanes(&self) -> u32 {
        if self.unit > 0 {
            self.unit
        } else {
            self.workgroup
        }
    }
}

/// The hot copies of a resolved sparse configuration with w in workgroup memory (1 without
/// hot columns): what `fused.sparse` declares (HOT_R) and the plan's memory checks count.
pub(crate) fn hot_copies_of(config: &Config, n: usize, wg_mem: u32) -> u32 {
    if !config.workgroup_w || config.hot_cols == 0 {
        return 1;
    }
    let scratch = if config.subgroup_reduce {
        0
    } else {
        4 * config.workgroup
    };
    hot_copies(
        config.hot_cols,
        config.workgroup / config.vs,
        hot_room(wg_mem, n, scratch),
    )
}

/// Storage bindings of the folded main kernels at most (`fused.sorted` with FINISH: its
/// column stand-in, the counter, z and w).
const FOLD_STORAGE_BINDINGS: u32 = 11;

/// The folded sequence when asked for and the adapter binds its main kernels' buffers.
fn fold_fits(gpu: &Gpu, options: &Options) -> bool {
    options.fold && gpu.caps.max_storage_buffers_per_stage >= FOLD_STORAGE_BINDINGS
}

/// The fused kernel's long-row threshold at C rows per vector: a vector takes about C·μ
/// entries, and a row much longer would hold it (and the dispatch) long after the others.
fn fused_long_row(c: u32, mu: f64) -> u32 {
    ((c as f64 * mu.max(1.0)).ceil() as u64).clamp(LONG_ROW_MIN, u32::MAX as u64) as u32
}

/// Rows of a dense band: as many as fit one storage binding, a multiple of the rows that keep
/// every band's first byte at a multiple of the storage-offset alignment (rows are
/// [`x_stride`] floats, not a power of two in bytes in general: [`row_step`]). An error when
/// even one step of rows is beyond one binding.
pub(crate) fn dense_band_rows(gpu: &Gpu, n: usize) -> Result<usize> {
    let caps = &gpu.caps;
    let row_bytes = x_stride(n) as u64 * 4;
    let step = row_step(row_bytes, caps.storage_offset_alignment.max(4) as u64);
    let rows = (caps.max_storage_binding_bytes / row_bytes) as usize / step * step;
    if rows == 0 {
        return Err(Error::TooLarge {
            what: format!("{step} rows of dense X (n = {n}, aligned band starts)"),
            needed: format!("{} bytes in one storage binding", step as u64 * row_bytes),
            limit: format!(
                "{} bytes on {}",
                caps.max_storage_binding_bytes, caps.adapter_name
            ),
        });
    }
    Ok(rows)
}
