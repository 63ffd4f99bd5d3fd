//! Resolving options into a concrete configuration: variant, tile sizes, lanes and
//! workgroup size from the model where the caller left them open, checked against the
//! adapter.

use serde::Serialize;

use crate::gpu::Gpu;
use crate::sddmm::{model, Options, Transpose, Variant};
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

/// Resolves `options` for S and K on this device, filling unset sizes from the model.
pub(crate) fn resolve(gpu: &Gpu, s: &Csr, k: usize, options: &Options) -> Result<Config> {
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
