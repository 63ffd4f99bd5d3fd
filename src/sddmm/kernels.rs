//! Preparing a resolved configuration row band by row band (kernel, parameters and the
//! band's arrays, see [`super::arrays`]) and recording the dispatches.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::sddmm::arrays::{build_arrays, Arrays, Layout};
use crate::sddmm::{Config, Plan, Variant};
use crate::sparse::bands;
use crate::sparse::{Csr, GpuDense};
use crate::{Error, Result};
use bytemuck::{Pod, Zeroable};

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

/// Parameters of the naive and warp kernels; the row-run kernel's first word is its run count.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct CooParams {
    nnz: u32,
    stride4: u32,
    out_base: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct PanelParams {
    n_blocks: u32,
    stride4: u32,
    n_slices: u32,
    out_base: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct TileParams {
    n_blocks: u32,
    stride4: u32,
    n_slices: u32,
    a_rows: u32,
    b_rows: u32,
    out_base: u32,
    pad: [u32; 2],
}

/// A band's kernel, parameters and arrays.
pub(crate) struct Prepared {
    kernel: Arc<Kernel>,
    params: wgpu::Buffer,
    groups: u32,
    arrays: Arrays,
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

/// A prepared row band of S: its rows (of S and A), the byte window of `out` it writes,
/// and its device arrays.
pub(crate) struct PreparedBand {
    rows: Range<usize>,
    out_window: Range<u64>,
    /// The band is all of S: bind A and `out` whole.
    whole: bool,
    prepared: Prepared,
}

/// Cuts S into row bands that each fit one storage binding (one band when S does), builds
/// each band's tiling and uploads its arrays. B is bound whole and must fit one binding.
/// With `like`, a plan of S prepared before, a configuration of the same layout (COO for
/// naive and warp; the same tiling for SM-L2 or SM-SM) reuses its arrays instead of building
/// its own.
pub(crate) fn prepare(
    gpu: &Gpu,
    s: &Csr,
    config: &Config,
    like: Option<&Plan>,
) -> Result<Vec<PreparedBand>> {
    let caps = &gpu.caps;
    let binding = caps.max_storage_binding_bytes;
    let b_bytes = (s.ncols * config.stride * 4) as u64;
    if b_bytes > binding {
        return Err(Error::TooLarge {
            what: format!(
                "B ({} rows × {} padded floats; only S and A are split into bands)",
                s.ncols, config.stride
            ),
            needed: format!("{b_bytes} bytes in one storage binding"),
            limit: format!("{binding} bytes on {}", caps.adapter_name),
        });
    }
    let align = caps.storage_offset_alignment.max(4) as u64;
    // Row runs: at most one per nonzero, and one per (row, panel) plus one per full run.
    let panels = s.ncols.div_ceil(config.tj.max(1));
    let run_bytes = |rows: usize, nnz: usize| {
        let runs = nnz.min(rows * panels + nnz / config.block_nnz.max(1));
        16 * runs as u64
    };
    let no_runs = |_: usize, _: usize| 0;
    let array_bytes: &dyn Fn(usize, usize) -> u64 = if config.variant == Variant::RowRun {
        &run_bytes
    } else {
        &no_runs
    };
    let bands = bands::row_bands_with(s, config.stride, binding, align, array_bytes)?;
    let whole = bands.len() == 1 && bands[0].rows == (0..s.nrows);
    // `like`'s arrays for band `i`, when it has this layout and was cut into the same bands.
    let like = like
        .filter(|l| Layout::of(&l.config) == Layout::of(config) && l.bands.len() == bands.len());
    let shared = |i: usize, rows: &Range<usize>| {
        like.map(|l| &l.bands[i])
            .filter(|b| b.rows == *rows)
            .map(|b| b.prepared.arrays.clone())
    };
    bands
        .iter()
        .enumerate()
        .map(|(i, band)| {
            // The band's own CSR arrays, copied only when its arrays are not shared.
            let sub = || {
                if whole {
                    Cow::Borrowed(s)
                } else {
                    Cow::Owned(s.row_band(band.rows.clone()))
                }
            };
            let shape = (band.rows.len(), s.ncols, band.nnz.len());
            let window = band.window(align);
            let out_base = (band.nnz.start - window.start) as u32;
            Ok(PreparedBand {
                rows: band.rows.clone(),
                out_window: window.start as u64 * 4..window.end as u64 * 4,
                whole,
                prepared: prepare_band(gpu, shape, sub, config, out_base, shared(i, &band.rows))?,
            })
        })
        .collect()
}

/// Builds the tiling (if any) of one band of `(rows, columns, nonzeros)` and uploads
/// everything its kernel reads besides A and B, unless `shared` (a plan of the same layout's
/// arrays) is given; `band` yields the band's CSR when needed. The kernel writes nonzero `e`
/// of the band to `out[out_base + e]`.
fn prepare_band<'s>(
    gpu: &Gpu,
    (nrows, ncols, nnz): (usize, usize, usize),
    band: impl FnOnce() -> Cow<'s, Csr>,
    config: &Config,
    out_base: u32,
    shared: Option<Arrays>,
) -> Result<Prepared> {
    let stride4 = (config.stride / 4) as u32;
    let n_slices = config.stride.div_ceil(config.tk) as u32;
    let mut constants = vec![("WG", config.workgroup as f64)];
    let (name, bindings): (&str, &[Binding]) = match config.variant {
        Variant::Naive => ("sddmm/naive", &COO_BINDINGS),
        Variant::Warp => {
            constants.extend([("VWS", config.vws as f64), ("UNROLL", config.unroll as f64)]);
            ("sddmm/warp", &COO_BINDINGS)
        }
        Variant::RowRun => {
            let regs = (stride4 as usize).div_ceil(config.vws as usize);
            constants.extend([("VWS", config.vws as f64), ("REGS", regs as f64)]);
            // Same binding kinds as COO: uniform, runs, columns, values, A, B, out.
            ("sddmm/row_run", &COO_BINDINGS)
        }
        Variant::SmL2 => {
            constants.extend([
                ("VWS", config.vws as f64),
                ("TI", config.ti as f64),
                ("TK", config.tk as f64),
                ("UNROLL", config.unroll as f64),
            ]);
            let n = if config.compress { 9 } else { 10 };
            ("sddmm/sm_l2", &SM_L2_BINDINGS[..n])
        }
        Variant::SmSm => {
            constants.extend([
                ("VWS", config.vws as f64),
                ("TI", config.ti as f64),
                ("TJ", config.tj as f64),
                ("TK", config.tk as f64),
            ]);
            ("sddmm/sm_sm", &SM_SM_BINDINGS)
        }
        Variant::Auto => unreachable!("resolved before prepare"),
    };
    let kernel = gpu.kernel(&KernelSpec {
        name,
        defines: spec_defines(config),
        constants,
        bindings,
    })?;
    let arrays = match shared {
        Some(arrays) => arrays,
        None => build_arrays(gpu, &band(), config)?,
    };
    let (params, groups) = match &arrays {
        Arrays::Coo(_) => {
            let per_group = (config.workgroup / config.vws.max(1) * config.unroll) as usize;
            let p = CooParams {
                nnz: nnz as u32,
                stride4,
                out_base,
                pad: 0,
            };
            (
                gpu.uniform("sddmm.params", &p),
                nnz.div_ceil(per_group) as u32,
            )
        }
        Arrays::Runs(t) => {
            let p = CooParams {
                nnz: t.n_runs,
                stride4,
                out_base,
                pad: 0,
            };
            let per_group = config.workgroup / config.vws;
            (
                gpu.uniform("sddmm.params", &p),
                t.n_runs.div_ceil(per_group),
            )
        }
        Arrays::Panels(t) => {
            let p = PanelParams {
                n_blocks: t.n_blocks,
                stride4,
                n_slices,
                out_base,
            };
            (gpu.uniform("sddmm.panels", &p), t.n_blocks)
        }
        Arrays::Tiles(t) => {
            let (a_rows, b_rows) = config.oriented_shape(nrows, ncols);
            let p = TileParams {
                n_blocks: t.n_blocks,
                stride4,
                n_slices,
                a_rows: a_rows as u32,
                b_rows: b_rows as u32,
                out_base,
                pad: [0; 2],
            };
            (gpu.uniform("sddmm.tiles", &p), t.n_blocks)
        }
    };
    Ok(Prepared {
        kernel,
        params,
        groups,
        arrays,
    })
}

/// Records the dispatches of a prepared plan: one per band.
pub(crate) fn record(
    bands: &[PreparedBand],
    config: &Config,
    batch: &mut Batch,
    a: &GpuDense,
    b: &GpuDense,
    out: &GpuBuffer<f32>,
) -> Result<()> {
    let row_bytes = (config.stride * 4) as u64;
    for band in bands {
        let (a_range, out_range) = if band.whole {
            (whole(a.data.raw()), whole(out.raw()))
        } else {
            (
                range(
                    a.data.raw(),
                    band.rows.start as u64 * row_bytes..band.rows.end as u64 * row_bytes,
                ),
                range(out.raw(), band.out_window.clone()),
            )
        };
        let b_range = whole(b.data.raw());
        let (a_range, b_range) = if config.transposed {
            (b_range, a_range)
        } else {
            (a_range, b_range)
        };
        record_band(&band.prepared, config, batch, a_range, b_range, out_range)?;
    }
    Ok(())
}

/// All of `buffer` as a binding.
fn whole(buffer: &wgpu::Buffer) -> wgpu::BufferBinding<'_> {
    buffer.as_entire_buffer_binding()
}

/// `bytes` of `buffer` as a binding.
fn range(buffer: &wgpu::Buffer, bytes: Range<u64>) -> wgpu::BufferBinding<'_> {
    wgpu::BufferBinding {
        buffer,
        offset: bytes.start,
        size: std::num::NonZeroU64::new(bytes.end - bytes.start),
    }
}

fn record_band(
    prepared: &Prepared,
    config: &Config,
    batch: &mut Batch,
    a: wgpu::BufferBinding<'_>,
    b: wgpu::BufferBinding<'_>,
    out: wgpu::BufferBinding<'_>,
) -> Result<()> {
    let gpu = batch.gpu();
    let params = whole(&prepared.params);
    let list = match &prepared.arrays {
        Arrays::Coo(t) => vec![
            params,
            whole(t.rows.raw()),
            whole(t.cols.raw()),
            whole(t.vals.raw()),
            a,
            b,
            out,
        ],
        Arrays::Runs(t) => vec![
            params,
            whole(t.runs.raw()),
            whole(t.cols.raw()),
            whole(t.vals.raw()),
            a,
            b,
            out,
        ],
        Arrays::Panels(t) => {
            let mut list = vec![
                params,
                whole(t.blocks.raw()),
                whole(t.active_rows.raw()),
                whole(t.idx.raw()),
                whole(t.vals.raw()),
                whole(t.perm.raw()),
                a,
                b,
                out,
            ];
            if !config.compress {
                list.push(whole(t.cols.raw()));
            }
            list
        }
        Arrays::Tiles(t) => vec![
            params,
            whole(t.blocks.raw()),
            whole(t.idx.raw()),
            whole(t.vals.raw()),
            whole(t.perm.raw()),
            a,
            b,
            out,
        ],
    };
    let bg = prepared.kernel.bind_ranges(gpu, &list)?;
    batch.dispatch(&prepared.kernel, bg, gpu.grid(prepared.groups)?)
}
