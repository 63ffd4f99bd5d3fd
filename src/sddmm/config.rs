//! Resolving options into a concrete configuration: variant, tile sizes, lanes and
//! workgroup size from the model where the caller left them open, checked against the
//! adapter.

use serde::Serialize;

use crate::gpu::{loop_cap, Gpu};
use crate::sddmm::{model, trips, Options, Transpose, Variant};
use crate::sparse::{Csr, GpuDense};
use crate::{Error, Result};

/// A fully resolved SDDMM configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Config {
    /// The concrete kernel.
    pub variant: Variant,
    /// Column-panel / column-tile width (row runs: the panel width; 0 for naive and warp).
    pub tj: usize,
    /// k-slice width in floats (the padded K for the untiled kernels).
    pub tk: usize,
    /// Rows per workgroup (0 for the untiled kernels).
    pub ti: usize,
    /// SM-L2: most nonzeros one workgroup takes (heavier rows are split); 0 otherwise.
    pub block_nnz: usize,
    /// Lanes per nonzero.
    pub vws: u32,
    /// Nonzeros per virtual subgroup per step (warp, SM-L2; 1 elsewhere).
    pub unroll: u32,
    /// Invocations per workgroup.
    pub workgroup: u32,
    /// 16-bit tile-relative indices (SM-L2).
    pub compress: bool,
    /// Computed on Sᵀ with A and B swapped.
    pub transposed: bool,
    /// Reduction by subgroup shuffles (else workgroup memory).
    pub subgroup_reduce: bool,
    /// Padded row stride of A and B in floats.
    pub stride: usize,
    /// Parts of the plan built on the device (see [`Options::build_on_device`]).
    pub build_on_device: bool,
}

/// Floats of padding after every row staged by SM-SM (`ROW4` in `sm_sm.wgsl`): spreads
/// random rows over the memory banks.
const SM_SM_ROW_PAD: usize = 4;

impl Config {
    /// (rows, columns) of the matrix the kernel works on for an S of `nrows` × `ncols`:
    /// swapped when it computes on Sᵀ.
    pub(crate) fn oriented_shape(&self, nrows: usize, ncols: usize) -> (usize, usize) {
        if self.transposed {
            (ncols, nrows)
        } else {
            (nrows, ncols)
        }
    }
}

fn opt_err(msg: String) -> Error {
    Error::Option(msg)
}

/// Resolves `options` for S and K on this device, filling unset sizes from the model, and
/// keeps every invocation within a software device's loop budget ([`fit_loop_budget`]).
pub(crate) fn resolve(gpu: &Gpu, s: &Csr, k: usize, options: &Options) -> Result<Config> {
    let config = resolve_sizes(gpu, s, k, options)?;
    fit_loop_budget(gpu, s, k, options, config)
}

/// Under a loop cap ([`crate::gpu::loop_cap`]), sizes the model chose are made smaller where
/// an invocation would loop past the budget ([`trips`]): SM-L2 and row-run blocks take fewer
/// nonzeros (more workgroups), SM-SM tiles get shorter sides, and the tiled kernels' slice
/// width grows (fewer slices) when even that is not enough. Sizes the caller set are kept; a
/// configuration still over the budget is refused, naming the kernel, its iterations and
/// the cap. Without a cap `config` is returned unchanged.
fn fit_loop_budget(
    gpu: &Gpu,
    s: &Csr,
    k: usize,
    options: &Options,
    config: Config,
) -> Result<Config> {
    let Some(budget) = loop_cap::budget(gpu.caps.loop_cap) else {
        return Ok(config);
    };
    let over = |c: &Config| trips::per_invocation(c) > budget;
    if !over(&config) {
        return Ok(config);
    }
    let refuse = |c: &Config| {
        let sizes = match c.variant {
            Variant::Naive | Variant::Warp => format!("K = {k}"),
            Variant::RowRun => format!("K = {k}, runs of {} nonzeros", c.block_nnz),
            Variant::SmL2 => format!(
                "K = {k}, Tk = {}, Ti = {}, blocks of {} nonzeros",
                c.tk, c.ti, c.block_nnz
            ),
            Variant::SmSm => format!("K = {k}, Tk = {}, {}×{} tiles", c.tk, c.ti, c.tj),
            Variant::Auto => String::new(),
        };
        loop_cap::over_budget(
            &gpu.caps,
            &format!("{} ({sizes})", c.variant.name()),
            trips::per_invocation(c),
        )
    };
    // Slice widths to try: the resolved one, then (when the model chose it) wider ones.
    let widths = |c: &Config| -> Vec<usize> {
        let mut w = vec![c.tk];
        if options.tk.is_none() {
            let mut t = c.tk;
            while t < c.stride {
                t = (2 * t).min(c.stride);
                w.push(t);
            }
        }
        w
    };
    match config.variant {
        Variant::RowRun if options.block_nnz.is_none() => {
            let len = trips::row_run_max_len(config.stride, config.vws, budget);
            if len == 0 {
                return Err(refuse(&config));
            }
            Ok(Config {
                block_nnz: len.min(config.block_nnz),
                ..config
            })
        }
        Variant::SmL2 => {
            for tk in widths(&config) {
                let o = Options {
                    tk: Some(tk),
                    ..options.clone()
                };
                let Ok(mut c) = resolve_sizes(gpu, s, k, &o) else {
                    break;
                };
                if options.block_nnz.is_none() {
                    c.block_nnz = c.block_nnz.min(trips::sm_l2_max_block(&c, budget));
                }
                if c.block_nnz > 0 && !over(&c) {
                    return Ok(c);
                }
            }
            Err(refuse(&config))
        }
        Variant::SmSm => {
            for tk in widths(&config) {
                let o = Options {
                    tk: Some(tk),
                    ..options.clone()
                };
                let Ok(c) = resolve_sizes(gpu, s, k, &o) else {
                    break;
                };
                // Shorter sides for the tile dimensions the model chose.
                let mut side = c.ti.max(c.tj);
                loop {
                    let fit = Config {
                        ti: options.ti.unwrap_or(side.min(c.ti)),
                        tj: options.tj.unwrap_or(side.min(c.tj)),
                        ..c.clone()
                    };
                    if !over(&fit) {
                        return Ok(fit);
                    }
                    if side == 1 || (options.ti.is_some() && options.tj.is_some()) {
                        break;
                    }
                    side = (side * 3 / 4).max(1);
                }
            }
            Err(refuse(&config))
        }
        _ => Err(refuse(&config)),
    }
}

/// [`resolve`] without the loop budget: the model's sizes and the caller's, checked against
/// the adapter's limits.
fn resolve_sizes(gpu: &Gpu, s: &Csr, k: usize, options: &Options) -> Result<Config> {
    let caps = &gpu.caps;
    let stride = GpuDense::stride_for(k);
    let density = s.density();
    let variant = match options.variant {
        Variant::Auto if density > options.dense_threshold => Variant::SmSm,
        Variant::Auto => Variant::SmL2,
        v => v,
    };
    let tiled = matches!(variant, Variant::SmL2 | Variant::SmSm);
    let transposed = tiled
        && match options.transpose {
            Transpose::Auto => s.nrows > s.ncols,
            Transpose::Never => false,
            Transpose::Always => true,
        };
    let n = if transposed { s.nrows } else { s.ncols };
    // SM-L2 defaults to 128 invocations: the best of 128/256/512 in every H200 sweep at
    // K = 128 (NYTimes shape 3.94 vs 4.01 ms at 256; see BENCHMARKS.md).
    let workgroup = options
        .workgroup
        .unwrap_or(if variant == Variant::SmL2 { 128 } else { 256 });
    if !workgroup.is_power_of_two() || workgroup > caps.max_invocations_per_workgroup {
        return Err(opt_err(format!(
            "workgroup size {workgroup} must be a power of two ≤ {}",
            caps.max_invocations_per_workgroup
        )));
    }
    let round_tk = |t: usize| t.div_ceil(8).max(1) * 8;
    let vws_for = |tk: usize| {
        options.vws.unwrap_or(match variant {
            Variant::Naive => 1,
            Variant::RowRun => model::row_run_vws(stride),
            _ => model::default_vws(tk),
        })
    };
    // Workgroup memory that is not a tile: the block header and, without shuffles, the
    // reduction scratch.
    let reserve = |tk: usize| {
        16 + if caps.shuffle_fits(vws_for(tk)) {
            0
        } else {
            4 * workgroup
        }
    };
    let (tj, tk, ti, compress) = match variant {
        Variant::Naive | Variant::Warp => (0, stride, 0, false),
        Variant::RowRun => {
            let cache = options.cache_bytes.unwrap_or(caps.l2_bytes);
            let tj = options
                .tj
                .unwrap_or_else(|| model::row_run_panel_width(cache, stride, s.ncols))
                .clamp(1, s.ncols.max(1));
            (tj, stride, 0, false)
        }
        Variant::SmL2 => {
            let c = model::format_cost(options.compress);
            let cache = options.cache_bytes.unwrap_or(caps.l2_bytes);
            let tj = options
                .tj
                .unwrap_or_else(|| model::panel_width(cache, density, c, n))
                .clamp(1, n.max(1));
            let tk = round_tk(
                options
                    .tk
                    .unwrap_or_else(|| model::slice_width(tj, density, c, 32, stride)),
            )
            .min(stride);
            let ti = match options.ti {
                Some(t) => t,
                None => model::rows_per_block(
                    model::tile_budget_bytes(caps)
                        .min(caps.max_workgroup_storage_bytes.saturating_sub(reserve(tk))),
                    tk,
                    1024,
                ),
            };
            let compress = options.compress && tj <= 1 << 16 && ti <= 1 << 16;
            (tj, tk, ti, compress)
        }
        Variant::SmSm => {
            let tk = round_tk(options.tk.unwrap_or(32)).min(stride);
            let avail = caps.max_workgroup_storage_bytes.saturating_sub(reserve(tk)) as usize;
            let side = (avail / (8 * (tk + SM_SM_ROW_PAD))).clamp(1, 128);
            let ti = options.ti.unwrap_or(side);
            let tj = options.tj.unwrap_or(side);
            if ti > 1 << 16 || tj > 1 << 16 {
                return Err(opt_err(format!("SM-SM tiles {ti}×{tj} exceed 65536")));
            }
            (tj, tk, ti, true)
        }
        Variant::Auto => unreachable!("resolved above"),
    };
    if tiled && (ti == 0 || tj == 0) {
        return Err(opt_err("tile sizes must be positive".into()));
    }
    let vws = vws_for(tk);
    let unroll = match variant {
        Variant::Warp | Variant::SmL2 => options.unroll.unwrap_or(1),
        _ => 1,
    };
    if !(1..=4).contains(&unroll) {
        return Err(opt_err(format!("unroll {unroll} must be 1, 2, 3 or 4")));
    }
    if !vws.is_power_of_two() || vws > 32 || vws > workgroup {
        return Err(opt_err(format!(
            "vws {vws} must be a power of two ≤ min(32, workgroup size {workgroup})"
        )));
    }
    let block_nnz = match variant {
        Variant::SmL2 => options
            .block_nnz
            .unwrap_or_else(|| model::block_nonzeros(s.nnz(), workgroup, vws))
            .max(1),
        Variant::RowRun => {
            let regs = (stride / 4).div_ceil(vws as usize);
            if regs > model::ROW_RUN_MAX_REGS {
                return Err(opt_err(format!(
                    "row_run holds ⌈K/4 / vws⌉ = {regs} vec4s of A per lane, at most {}; \
                     use vws = 32 or another variant for K = {k}",
                    model::ROW_RUN_MAX_REGS
                )));
            }
            let len = options.block_nnz.unwrap_or(model::ROW_RUN_LEN).max(1);
            len.next_multiple_of(vws as usize)
        }
        _ => 0,
    };
    let shared = match variant {
        Variant::SmSm => 4 * (tk + SM_SM_ROW_PAD) * (ti + tj),
        _ => 4 * tk * ti,
    };
    let budget = caps.max_workgroup_storage_bytes as usize;
    let needed = shared + reserve(tk) as usize;
    if tiled && needed > budget {
        return Err(opt_err(format!(
            "{} with Ti = {ti}, Tj = {tj}, Tk = {tk} needs {needed} B of workgroup memory; \
             this adapter has {budget} B",
            variant.name()
        )));
    }
    Ok(Config {
        variant,
        tj,
        tk,
        ti,
        block_nnz,
        vws,
        unroll,
        workgroup,
        compress,
        transposed,
        subgroup_reduce: caps.shuffle_fits(vws) && variant != Variant::Naive,
        stride,
        build_on_device: options.build_on_device.unwrap_or(caps.device_type != "Cpu"),
    })
}
