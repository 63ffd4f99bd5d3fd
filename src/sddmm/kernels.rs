//! Uploading the per-variant arrays of a resolved configuration (row band by row band) and
//! recording the dispatches.

use std::ops::Range;
use std::sync::Arc;

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::sddmm::device_build::{self, expand_rows, PanelArrays, TileArrays};
use crate::sddmm::{bands, tiles, Config, Variant};
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

/// Row, column and value of every nonzero of a band (CSR order): what the naive and warp
/// kernels read. Shared by plans of those kernels built from one another on the same S.
pub(crate) struct CooArrays {
    rows: GpuBuffer<u32>,
    cols: GpuBuffer<u32>,
    vals: GpuBuffer<f32>,
}

/// Device arrays of a prepared plan.
pub(crate) enum Prepared {
    Coo {
        kernel: Arc<Kernel>,
        params: wgpu::Buffer,
        arrays: Arc<CooArrays>,
        groups: u32,
    },
    Panels {
        kernel: Arc<Kernel>,
        params: wgpu::Buffer,
        arrays: PanelArrays,
    },
    Tiles {
        kernel: Arc<Kernel>,
        params: wgpu::Buffer,
        arrays: TileArrays,
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
/// With `like`, a plan of S prepared before, naive and warp configurations reuse its COO
/// arrays instead of uploading their own.
pub(crate) fn prepare(
    gpu: &Gpu,
    s: &Csr,
    config: &Config,
    like: Option<&[PreparedBand]>,
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
    let bands = bands::row_bands(s, config.stride, binding, align)?;
    let whole = bands.len() == 1 && bands[0].rows == (0..s.nrows);
    // `like`'s COO arrays for band `i`, when it was cut into the same bands.
    let like = like.filter(|l| l.len() == bands.len());
    let shared = |i: usize, rows: &Range<usize>| match like.map(|l| &l[i]) {
        Some(PreparedBand {
            rows: r,
            prepared: Prepared::Coo { arrays, .. },
            ..
        }) if r == rows => Some(arrays.clone()),
        _ => None,
    };
    bands
        .iter()
        .enumerate()
        .map(|(i, band)| {
            let sub = if whole {
                std::borrow::Cow::Borrowed(s)
            } else {
                std::borrow::Cow::Owned(s.row_band(band.rows.clone()))
            };
            let first = band.nnz.start as u64 * 4;
            let out_start = first / align * align;
            let out_base = ((first - out_start) / 4) as u32;
            Ok(PreparedBand {
                rows: band.rows.clone(),
                out_window: out_start..band.nnz.end as u64 * 4,
                whole,
                prepared: prepare_band(gpu, &sub, config, out_base, shared(i, &band.rows))?,
            })
        })
        .collect()
}

/// Builds the tiling (if any) of one band and uploads everything its kernel reads besides
/// A and B (naive and warp take `coo` when given); the kernel writes nonzero `e` of the band
/// to `out[out_base + e]`.
fn prepare_band(
    gpu: &Gpu,
    s: &Csr,
    config: &Config,
    out_base: u32,
    coo: Option<Arc<CooArrays>>,
) -> Result<Prepared> {
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
                        out_base,
                        pad: 0,
                    },
                ),
                arrays: match coo {
                    Some(arrays) => arrays,
                    None => Arc::new(CooArrays {
                        rows: if config.build_on_device {
                            expand_rows(gpu, s)?
                        } else {
                            GpuBuffer::upload(gpu, "sddmm.rows", &s.row_indices())?
                        },
                        cols: GpuBuffer::upload(gpu, "sddmm.cols", &s.col_idx)?,
                        vals: GpuBuffer::upload(gpu, "sddmm.vals", &s.values)?,
                    }),
                },
                groups,
            })
        }
        Variant::SmL2 => {
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
            let on_device = if config.build_on_device {
                device_build::panels(gpu, s, config)?
            } else {
                None
            };
            let arrays = match on_device {
                Some(arrays) => arrays,
                None => host_panels(gpu, s, config)?,
            };
            let params = gpu.uniform(
                "sddmm.panels",
                &PanelParams {
                    n_blocks: arrays.n_blocks,
                    stride4,
                    n_slices,
                    out_base,
                },
            );
            Ok(Prepared::Panels {
                kernel,
                params,
                arrays,
            })
        }
        Variant::SmSm => {
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
            let on_device = if config.build_on_device {
                device_build::tiles(gpu, s, config)?
            } else {
                None
            };
            let arrays = match on_device {
                Some(arrays) => arrays,
                None => host_tiles(gpu, s, config)?,
            };
            let (a_rows, b_rows) = if config.transposed {
                (s.ncols, s.nrows)
            } else {
                (s.nrows, s.ncols)
            };
            let p = TileParams {
                n_blocks: arrays.n_blocks,
                stride4,
                n_slices,
                a_rows: a_rows as u32,
                b_rows: b_rows as u32,
                out_base,
                pad: [0; 2],
            };
            Ok(Prepared::Tiles {
                kernel,
                params: gpu.uniform("sddmm.tiles", &p),
                arrays,
            })
        }
        Variant::Auto => unreachable!("resolved before prepare"),
    }
}

/// The SM-L2 tiling built on the host and uploaded.
fn host_panels(gpu: &Gpu, s: &Csr, config: &Config) -> Result<PanelArrays> {
    let (st, map) = oriented(s, config.transposed);
    let t = tiles::panels(
        &st,
        map.as_deref(),
        config.tj,
        config.ti,
        config.block_nnz,
        config.compress,
    );
    Ok(PanelArrays {
        n_blocks: t.blocks.len() as u32,
        blocks: GpuBuffer::upload(gpu, "sddmm.blocks", &t.blocks)?,
        active_rows: GpuBuffer::upload(gpu, "sddmm.active_rows", &t.active_rows)?,
        idx: GpuBuffer::upload(gpu, "sddmm.idx", &t.idx)?,
        cols: GpuBuffer::upload(gpu, "sddmm.cols", &t.cols)?,
        vals: GpuBuffer::upload(gpu, "sddmm.vals", &t.vals)?,
        perm: GpuBuffer::upload(gpu, "sddmm.perm", &t.perm)?,
    })
}

/// The SM-SM tiling built on the host and uploaded.
fn host_tiles(gpu: &Gpu, s: &Csr, config: &Config) -> Result<TileArrays> {
    let (st, map) = oriented(s, config.transposed);
    let t = tiles::tiles(&st, map.as_deref(), config.ti, config.tj);
    Ok(TileArrays {
        n_blocks: t.blocks.len() as u32,
        blocks: GpuBuffer::upload(gpu, "sddmm.blocks", &t.blocks)?,
        idx: GpuBuffer::upload(gpu, "sddmm.idx", &t.idx)?,
        vals: GpuBuffer::upload(gpu, "sddmm.vals", &t.vals)?,
        perm: GpuBuffer::upload(gpu, "sddmm.perm", &t.perm)?,
    })
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
    match prepared {
        Prepared::Coo {
            kernel,
            params,
            arrays,
            groups,
        } => {
            let bg = kernel.bind_ranges(
                gpu,
                &[
                    whole(params),
                    whole(arrays.rows.raw()),
                    whole(arrays.cols.raw()),
                    whole(arrays.vals.raw()),
                    a,
                    b,
                    out,
                ],
            )?;
            batch.dispatch(kernel, bg, gpu.grid(*groups)?)
        }
        Prepared::Panels {
            kernel,
            params,
            arrays: t,
        } => {
            let mut list = vec![
                whole(params),
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
            let bg = kernel.bind_ranges(gpu, &list)?;
            batch.dispatch(kernel, bg, gpu.grid(t.n_blocks)?)
        }
        Prepared::Tiles {
            kernel,
            params,
            arrays: t,
        } => {
            let bg = kernel.bind_ranges(
                gpu,
                &[
                    whole(params),
                    whole(t.blocks.raw()),
                    whole(t.idx.raw()),
                    whole(t.vals.raw()),
                    whole(t.perm.raw()),
                    a,
                    b,
                    out,
                ],
            )?;
            batch.dispatch(kernel, bg, gpu.grid(t.n_blocks)?)
        }
    }
}
