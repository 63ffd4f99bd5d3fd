//! The per-nonzero device arrays a band's kernel reads besides A and B, by layout (COO for
//! the naive and warp kernels, row runs, an SM-L2 or SM-SM tiling), built on the host or on the device,
//! and shared between plans of one S that lay it out alike.

use std::borrow::Cow;
use std::sync::Arc;

use crate::gpu::{Gpu, GpuBuffer};
use crate::sddmm::device_build::{self, expand_rows};
use crate::sddmm::{runs, tiles, Config, Variant};
use crate::sparse::Csr;
use crate::Result;

/// The SM-L2 kernel's arrays (see [`tiles::PanelTiling`]), on the device.
pub(crate) struct PanelArrays {
    pub n_blocks: u32,
    pub blocks: GpuBuffer<[u32; 8]>,
    pub active_rows: GpuBuffer<u32>,
    pub idx: GpuBuffer<u32>,
    /// Global columns (empty when compressed).
    pub cols: GpuBuffer<u32>,
    pub vals: GpuBuffer<f32>,
    pub perm: GpuBuffer<u32>,
}

/// The SM-SM kernel's arrays (see [`tiles::TileTiling`]), on the device.
pub(crate) struct TileArrays {
    pub n_blocks: u32,
    pub blocks: GpuBuffer<[u32; 4]>,
    pub idx: GpuBuffer<u32>,
    pub vals: GpuBuffer<f32>,
    pub perm: GpuBuffer<u32>,
}

/// Row, column and value of every nonzero of a band (CSR order): what the naive and warp
/// kernels read.
pub(crate) struct CooArrays {
    pub rows: GpuBuffer<u32>,
    pub cols: GpuBuffer<u32>,
    pub vals: GpuBuffer<f32>,
}

/// The row-run kernel's arrays: the runs (see [`runs::row_runs`]), panel after panel, and
/// S's columns and values in CSR order.
pub(crate) struct RunArrays {
    pub n_runs: u32,
    pub runs: GpuBuffer<[u32; 4]>,
    pub cols: GpuBuffer<u32>,
    pub vals: GpuBuffer<f32>,
}

/// What a band's per-nonzero arrays depend on besides S: plans of one S with equal layouts
/// share them (the tuner and the sweep try many kernels on one tiling).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Layout {
    Coo,
    Runs {
        max_len: usize,
        tj: usize,
    },
    Panels {
        tj: usize,
        ti: usize,
        block_nnz: usize,
        compress: bool,
        transposed: bool,
    },
    Tiles {
        tj: usize,
        ti: usize,
        transposed: bool,
    },
}

impl Layout {
    pub(crate) fn of(c: &Config) -> Layout {
        match c.variant {
            Variant::SmL2 => Layout::Panels {
                tj: c.tj,
                ti: c.ti,
                block_nnz: c.block_nnz,
                compress: c.compress,
                transposed: c.transposed,
            },
            Variant::SmSm => Layout::Tiles {
                tj: c.tj,
                ti: c.ti,
                transposed: c.transposed,
            },
            Variant::RowRun => Layout::Runs {
                max_len: c.block_nnz,
                tj: c.tj,
            },
            _ => Layout::Coo,
        }
    }
}

/// A band's per-nonzero device arrays, shareable between plans of the same layout.
#[derive(Clone)]
pub(crate) enum Arrays {
    Coo(Arc<CooArrays>),
    Runs(Arc<RunArrays>),
    Panels(Arc<PanelArrays>),
    Tiles(Arc<TileArrays>),
}

/// The per-nonzero arrays of one band for `config`'s layout, built on the device when the
/// configuration says so and it pays, else on the host.
pub(crate) fn build_arrays(gpu: &Gpu, s: &Csr, config: &Config) -> Result<Arrays> {
    let on_device = config.build_on_device;
    Ok(match config.variant {
        Variant::Naive | Variant::Warp => Arrays::Coo(Arc::new(CooArrays {
            rows: if on_device {
                expand_rows(gpu, s)?
            } else {
                GpuBuffer::upload(gpu, "sddmm.rows", &s.row_indices())?
            },
            cols: GpuBuffer::upload(gpu, "sddmm.cols", &s.col_idx)?,
            vals: GpuBuffer::upload(gpu, "sddmm.vals", &s.values)?,
        })),
        Variant::RowRun => {
            let runs = runs::row_runs(&s.row_ptr, &s.col_idx, config.block_nnz, config.tj);
            Arrays::Runs(Arc::new(RunArrays {
                n_runs: runs.len() as u32,
                runs: GpuBuffer::upload(gpu, "sddmm.runs", &runs)?,
                cols: GpuBuffer::upload(gpu, "sddmm.cols", &s.col_idx)?,
                vals: GpuBuffer::upload(gpu, "sddmm.vals", &s.values)?,
            }))
        }
        Variant::SmL2 => {
            let built = if on_device {
                device_build::panels(gpu, s, config)?
            } else {
                None
            };
            Arrays::Panels(Arc::new(match built {
                Some(arrays) => arrays,
                None => host_panels(gpu, s, config)?,
            }))
        }
        Variant::SmSm => {
            let built = if on_device {
                device_build::tiles(gpu, s, config)?
            } else {
                None
            };
            Arrays::Tiles(Arc::new(match built {
                Some(arrays) => arrays,
                None => host_tiles(gpu, s, config)?,
            }))
        }
        Variant::Auto => unreachable!("resolved before prepare"),
    })
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
fn oriented(s: &Csr, transposed: bool) -> (Cow<'_, Csr>, Option<Vec<u32>>) {
    if transposed {
        let (t, map) = s.transpose_with_map();
        (Cow::Owned(t), Some(map))
    } else {
        (Cow::Borrowed(s), None)
    }
}
