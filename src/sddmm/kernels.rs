//! Resolving options into a concrete configuration, uploading the per-variant arrays, and
//! recording the dispatches.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use serde::Serialize;

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::sddmm::{model, tiles, Options, Transpose, Variant};
use crate::sparse::{Csr, GpuDense};
use crate::{Error, Result};

/// A fully resolved SDDMM configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Config {
    /// The concrete kernel.
    pub variant: Variant,
    /// Column-panel / column-tile width (0 for the untiled kernels).
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
}

const COO_BINDINGS: [Binding; 7] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
];
const SM_L2_BINDINGS: [Binding; 10] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::Read,
];
const SM_SM_BINDINGS: [Binding; 8] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
];

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
        Variant::SmL2 => {
            let c = model::format_cost(options.compress);
            let cache = options.cache_bytes.unwrap_or(caps.l2_bytes);
            let tj = options
                .tj
                .unwrap_or_else(|| model::panel_width(cache, density, c))
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
            let side = (avail / (8 * tk)).clamp(1, 128);
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
    let block_nnz = match variant {
        Variant::SmL2 => options
            .block_nnz
            .unwrap_or_else(|| model::block_nonzeros(s.nnz(), workgroup, vws))
            .max(1),
        _ => 0,
    };
    if !vws.is_power_of_two() || vws > 32 || vws > workgroup {
        return Err(opt_err(format!(
            "vws {vws} must be a power of two ≤ min(32, workgroup size {workgroup})"
        )));
    }
    let shared = 4 * tk * (ti + if variant == Variant::SmSm { tj } else { 0 });
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
    })
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct CooParams {
    nnz: u32,
    stride4: u32,
    pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct PanelParams {
    n_blocks: u32,
    stride4: u32,
    n_slices: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct TileParams {
    n_blocks: u32,
    stride4: u32,
    n_slices: u32,
    a_rows: u32,
    b_rows: u32,
    pad: [u32; 3],
}

/// Device arrays of a prepared plan.
pub(crate) enum Prepared {
    Coo {
        kernel: Arc<Kernel>,
        params: wgpu::Buffer,
        rows: GpuBuffer<u32>,
        cols: GpuBuffer<u32>,
        vals: GpuBuffer<f32>,
        groups: u32,
    },
    Panels {
        kernel: Arc<Kernel>,
        params: wgpu::Buffer,
        n_blocks: u32,
        blocks: GpuBuffer<[u32; 8]>,
        active_rows: GpuBuffer<u32>,
        idx: GpuBuffer<u32>,
        cols: GpuBuffer<u32>,
        vals: GpuBuffer<f32>,
        perm: GpuBuffer<u32>,
    },
    Tiles {
        kernel: Arc<Kernel>,
        params: wgpu::Buffer,
        blocks: GpuBuffer<[u32; 4]>,
        idx: GpuBuffer<u32>,
        vals: GpuBuffer<f32>,
        perm: GpuBuffer<u32>,
        n_blocks: u32,
    },
}

fn spec_defines(config: &Config) -> Vec<&'static str> {
    let mut d = vec![];
    if config.subgroup_reduce {
        d.push("SUBGROUP");
    }
    if config.compress && config.variant == Variant::SmL2 {
        d.push("COMPRESS");
    }
    d
}

/// Builds the tiling (if any) and uploads everything the kernel reads besides A and B.
pub(crate) fn prepare(gpu: &Gpu, s: &Csr, config: &Config) -> Result<Prepared> {
    let stride4 = (config.stride / 4) as u32;
    let wg = config.workgroup as f64;
    let n_slices = config.stride.div_ceil(config.tk) as u32;
    let mut constants = vec![("WG", wg)];
    match config.variant {
        Variant::Naive | Variant::Warp => {
            let name = if config.variant == Variant::Naive {
                "sddmm/naive"
            } else {
                constants.push(("VWS", config.vws as f64));
                constants.push(("UNROLL", config.unroll as f64));
                "sddmm/warp"
            };
            let kernel = gpu.kernel(&KernelSpec {
                name,
                defines: spec_defines(config),
                constants,
                bindings: &COO_BINDINGS,
            })?;
            let per_group = (config.workgroup / config.vws.max(1) * config.unroll) as usize;
            let groups = s.nnz().div_ceil(per_group) as u32;
            Ok(Prepared::Coo {
                kernel,
                params: gpu.uniform(
                    "sddmm.params",
                    &CooParams {
                        nnz: s.nnz() as u32,
                        stride4,
                        pad: [0; 2],
                    },
                ),
                rows: GpuBuffer::upload(gpu, "sddmm.rows", &s.row_indices())?,
                cols: GpuBuffer::upload(gpu, "sddmm.cols", &s.col_idx)?,
                vals: GpuBuffer::upload(gpu, "sddmm.vals", &s.values)?,
                groups,
            })
        }
        Variant::SmL2 => {
            let (st, map) = oriented(s, config.transposed);
            let t = tiles::panels(
                &st,
                map.as_deref(),
                config.tj,
                config.ti,
                config.block_nnz,
                config.compress,
            );
            constants.extend([
                ("VWS", config.vws as f64),
                ("TI", config.ti as f64),
                ("TK", config.tk as f64),
                ("UNROLL", config.unroll as f64),
            ]);
            let kernel = gpu.kernel(&KernelSpec {
                name: "sddmm/sm_l2",
                defines: spec_defines(config),
                constants,
                bindings: if config.compress {
                    &SM_L2_BINDINGS[..9]
                } else {
                    &SM_L2_BINDINGS
                },
            })?;
            let n_blocks = t.blocks.len() as u32;
            let params = gpu.uniform(
                "sddmm.panels",
                &PanelParams {
                    n_blocks,
                    stride4,
                    n_slices,
                    pad: 0,
                },
            );
            Ok(Prepared::Panels {
                kernel,
                params,
                n_blocks,
                blocks: GpuBuffer::upload(gpu, "sddmm.blocks", &t.blocks)?,
                active_rows: GpuBuffer::upload(gpu, "sddmm.active_rows", &t.active_rows)?,
                idx: GpuBuffer::upload(gpu, "sddmm.idx", &t.idx)?,
                cols: GpuBuffer::upload(gpu, "sddmm.cols", &t.cols)?,
                vals: GpuBuffer::upload(gpu, "sddmm.vals", &t.vals)?,
                perm: GpuBuffer::upload(gpu, "sddmm.perm", &t.perm)?,
            })
        }
        Variant::SmSm => {
            let (st, map) = oriented(s, config.transposed);
            let t = tiles::tiles(&st, map.as_deref(), config.ti, config.tj);
            constants.extend([
                ("VWS", config.vws as f64),
                ("TI", config.ti as f64),
                ("TJ", config.tj as f64),
                ("TK", config.tk as f64),
            ]);
            let kernel = gpu.kernel(&KernelSpec {
                name: "sddmm/sm_sm",
                defines: spec_defines(config),
                constants,
                bindings: &SM_SM_BINDINGS,
            })?;
            let n_blocks = t.blocks.len() as u32;
            let p = TileParams {
                n_blocks,
                stride4,
                n_slices,
                a_rows: st.nrows as u32,
                b_rows: st.ncols as u32,
                pad: [0; 3],
            };
            Ok(Prepared::Tiles {
                kernel,
                params: gpu.uniform("sddmm.tiles", &p),
                blocks: GpuBuffer::upload(gpu, "sddmm.blocks", &t.blocks)?,
                idx: GpuBuffer::upload(gpu, "sddmm.idx", &t.idx)?,
                vals: GpuBuffer::upload(gpu, "sddmm.vals", &t.vals)?,
                perm: GpuBuffer::upload(gpu, "sddmm.perm", &t.perm)?,
                n_blocks,
            })
        }
        Variant::Auto => unreachable!("resolved before prepare"),
    }
}

/// S itself, or Sᵀ with the map from Sᵀ's CSR order to S's.
fn oriented(s: &Csr, transposed: bool) -> (std::borrow::Cow<'_, Csr>, Option<Vec<u32>>) {
    if transposed {
        let (t, map) = s.transpose_with_map();
        (std::borrow::Cow::Owned(t), Some(map))
    } else {
        (std::borrow::Cow::Borrowed(s), None)
    }
}

/// Records the dispatches of a prepared plan.
pub(crate) fn record(
    prepared: &Prepared,
    config: &Config,
    batch: &mut Batch,
    a: &GpuDense,
    b: &GpuDense,
    out: &GpuBuffer<f32>,
) -> Result<()> {
    let gpu = batch.gpu();
    let (a, b) = if config.transposed { (b, a) } else { (a, b) };
    let (ar, br, o) = (a.data.raw(), b.data.raw(), out.raw());
    match prepared {
        Prepared::Coo {
            kernel,
            params,
            rows,
            cols,
            vals,
            groups,
        } => {
            let bg = kernel.bind(
                gpu,
                &[params, rows.raw(), cols.raw(), vals.raw(), ar, br, o],
            )?;
            batch.dispatch(kernel, bg, gpu.grid(*groups)?)
        }
        Prepared::Panels {
            kernel,
            params,
            n_blocks,
            blocks,
            active_rows,
            idx,
            cols,
            vals,
            perm,
        } => {
            let mut list = vec![
                params,
                blocks.raw(),
                active_rows.raw(),
                idx.raw(),
                vals.raw(),
                perm.raw(),
                ar,
                br,
                o,
            ];
            if !config.compress {
                list.push(cols.raw());
            }
            let bg = kernel.bind(gpu, &list)?;
            batch.dispatch(kernel, bg, gpu.grid(*n_blocks)?)
        }
        Prepared::Tiles {
            kernel,
            params,
            blocks,
            idx,
            vals,
            perm,
            n_blocks,
        } => {
            let bg = kernel.bind(
                gpu,
                &[
                    params,
                    blocks.raw(),
                    idx.raw(),
                    vals.raw(),
                    perm.raw(),
                    ar,
                    br,
                    o,
                ],
            )?;
            batch.dispatch(kernel, bg, gpu.grid(*n_blocks)?)
        }
    }
}
