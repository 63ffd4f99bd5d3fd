//! The `transpose` variant ([`crate::fused::Variant::Transpose`]): Xᵀ materialized at plan
//! time as a CSR matrix of its own, so the pattern runs as two gathers by rows and no add to
//! w races another: p = α·v ⊙ (X·y) by X's rows, then w += Xᵀp by Xᵀ's rows (w = β·z first,
//! `fused.axpy`; `xty` skips the first pass and gathers y). X is read twice and its copy
//! doubles X's memory; what it saves is the scatter, which on a large n (the KDD2010 shape:
//! 29.9M columns, w of 120 MB beyond L2) adds to words spread over all of w. Each pass is
//! `fused.gather_rows` (VS lanes per row, C rows per vector, Eq. 4 and 5 on that matrix) and,
//! for the rows longer than its threshold (a power-law X's heaviest rows and columns),
//! `fused.gather_chunks`: chunks of consecutive entries over whole workgroups, one atomic add
//! per chunk. With [`Config::tile`] set (the default, [`crate::fused::GATHER_TILE_DEFAULT`]),
//! each pass is `fused.gather_tiles` instead of the row kernel: runs of short rows cut into
//! tiles whose entries a workgroup loads at consecutive positions
//! ([`crate::fused::gather_tiles`]), rows longer than a tile to the chunks. Both matrices are
//! bound in row bands when they exceed one binding (`fused::bands`). With
//! [`Config::panels`] each pass runs once per column panel of its matrix (copies of its
//! entries by column range, [`crate::sparse::panels`]), so it gathers one slice of its vector
//! at a time: X's first panel writes p and the others add onto it; Xᵀ's all add onto w.

use std::sync::Arc;

use crate::fused::bands::{self, SparseBand};
use crate::fused::config::LONG_ROW_MIN;
use crate::fused::device::DeviceX;
use crate::fused::kernels::{upload, whole};
use crate::fused::vectors::scale;
use crate::fused::{plan, Config, Matrix, Op, Plan};
use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::sparse::panels::panel_bounds;
use crate::sparse::Csr;
use crate::{limits, Error, Result};

mod row_pass;
use row_pass::{BandPass, RowPass};

use Binding::{Read, ReadWrite, Uniform};

const BINDINGS: [Binding; 7] = [Uniform, Read, Read, Read, Read, Read, ReadWrite];
/// `fused.gather_tiles`: the tiles' first rows before the row offsets.
const TILE_BINDINGS: [Binding; 8] = [Uniform, Read, Read, Read, Read, Read, Read, ReadWrite];

/// Entries a lane of `fused.gather_rows` takes per trip (`fused/csr_row4`'s UNROLL_ROW).
pub const GATHER_UNROLL: u32 = 4;

/// Lanes per row of the gathers: Eq. 4 on the mean row length over [`GATHER_UNROLL`] entries
/// per lane, so a typical row takes one trip.
pub fn gather_vs(mu: f64) -> u32 {
    plan::sparse_vs(mu / GATHER_UNROLL as f64)
}

/// The gathers' long-row threshold: a row holding more entries than one resident vector's
/// share of all `nnz` (at least `LONG_ROW_MIN`) would end its pass late, so it goes to
/// chunks over whole workgroups (on the H200: 500k × 4,096's transpose has 4,096 rows of
/// ≈ 5,000 entries, too few rows to fill the device one vector each).
pub fn long_row(nnz: usize, resident_vectors: u64) -> u32 {
    (nnz as u64)
        .div_ceil(resident_vectors.max(1))
        .clamp(LONG_ROW_MIN, u32::MAX as u64) as u32
}

/// What a plan reports of one gather pass.
#[derive(Clone, Copy, Debug)]
pub struct PassFacts {
    /// Lanes per row of the row kernel.
    pub vs: u32,
    /// Rows with more entries go to the long-row chunks.
    pub long_row: u32,
    /// Long-row chunks.
    pub long_chunks: usize,
    /// Row tiles of `fused.gather_tiles` (0: the row kernel).
    pub tiles: usize,
}

/// One column panel of a gather's matrix ([`Config::panels`]) on the device, with the host
/// row offsets its pass's grids are cut from.
struct PanelData {
    entries: DeviceX,
    row_ptr: Vec<u32>,
}

impl PanelData {
    /// The row bands the panel was uploaded in.
    fn bands(&self) -> &[SparseBand] {
        let DeviceX::Sparse { bands, .. } = &self.entries else {
            unreachable!("a CSR matrix uploads as sparse X")
        };
        bands
    }
}

/// The gathers' matrices on the device: what the host transpose and the uploads built, shared
/// by plans whose passes differ only in their grids (VS, workgroup size, tiles, pipeline,
/// long-row threshold), so the tuner's candidates transpose X once per (panels, row order).
/// Keeps each panel's host row offsets (4 bytes a row: 120 MB for Xᵀ at the KDD2010 shape).
struct GatherData {
    /// X's column panels (copies: the plan keeps X, which the logistic loss reads,
    /// [`crate::fused::kernels`]); empty with one panel (the plan's X, taken whole).
    x_panels: Vec<PanelData>,
    /// Xᵀ whole, or its column panels (ranges of X's rows).
    xt_panels: Vec<PanelData>,
    /// Xᵀ's rows in the caller's column order ([`Config::xt_caller`]).
    caller_order: bool,
    /// [`Config::panels`] it was cut for.
    panels: u32,
}

impl GatherData {
    /// Transposes `x` on the host (host memory checked first) and uploads it (with `panels`
    /// above 1, X's and Xᵀ's column panels instead). With `caller_order` (X's columns
    /// re-indexed, this new → old permutation), Xᵀ's rows are put back in the caller's order.
    fn build(gpu: &Gpu, x: &Csr, panels: u32, caller_order: Option<&[u32]>) -> Result<GatherData> {
        // The transpose, its entry map and the counting sort's buckets; with panels, one
        // panel's copy at a time (at most all the entries) and the row offsets kept.
        let entries = limits::bytes_of::<u32>("X's transpose", x.nnz())?;
        let mut bytes = entries
            .saturating_mul(4)
            .saturating_add(limits::bytes_of::<u32>("X's transpose", x.ncols + 1)?);
        let panels = panels.max(1);
        if panels > 1 {
            let offsets = limits::bytes_of::<u32>("a column panel", x.nrows + x.ncols + 2)?;
            bytes = bytes
                .saturating_add(entries.saturating_mul(2))
                .saturating_add(offsets.saturating_mul(panels as u64));
        }
        limits::check_host("X's transpose", bytes)?;
        let xt = match caller_order {
            Some(old_of) => x.transpose_by(|c| old_of[c as usize] as usize),
            None => x.transpose(),
        };
        let x_panels = if panels > 1 {
            uploaded(gpu, x, panels)?
        } else {
            vec![]
        };
        let xt_panels = if panels > 1 {
            uploaded(gpu, &xt, panels)?
        } else {
            vec![panel_data(gpu, xt)?]
        };
        Ok(GatherData {
            x_panels,
            xt_panels,
            caller_order: caller_order.is_some(),
            panels,
        })
    }
}

/// The configuration's part the passes depend on.
type PassKey = (u32, u32, u32, bool, u32, bool, u32, bool);

fn key_of(config: &Config) -> PassKey {
    (
        config.vs,
        config.workgroup,
        config.long_row,
        config.subgroup_reduce,
        config.tile,
        config.prefetch,
        config.panels,
        config.xt_caller,
    )
}

/// X's materialized transpose on the device ([`GatherData`]) and both passes' grids.
pub(crate) struct TransposeX {
    data: Arc<GatherData>,
    /// X's pass per panel of [`GatherData::x_panels`] (one, over the plan's X, without
    /// panels).
    x_passes: Vec<RowPass>,
    /// Xᵀ's pass per panel.
    xt_passes: Vec<RowPass>,
    /// The configuration the grids were built for (a plan of another configuration builds
    /// its own).
    key: PassKey,
}

impl TransposeX {
    /// [`GatherData::build`], then both passes' grids ([`TransposeX::with_data`]).
    pub(crate) fn build(
        gpu: &Gpu,
        x: &Csr,
        x_bands: &[SparseBand],
        config: &Config,
        caller_order: Option<&[u32]>,
    ) -> Result<TransposeX> {
        let data = GatherData::build(gpu, x, config.panels, caller_order)?;
        Self::with_data(gpu, x, x_bands, config, Arc::new(data))
    }

    /// Whether a plan of `config` on the same X and column order may share these matrices
    /// (its grids built again by [`TransposeX::regrid`] where they differ).
    pub(crate) fn shares_matrices(&self, config: &Config) -> bool {
        (self.data.panels, self.data.caller_order) == (config.panels.max(1), config.xt_caller)
    }

    /// Whether `other` gathers over the same matrices on the device.
    pub(crate) fn same_matrices(&self, other: &TransposeX) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }

    /// The grids of `config` on these matrices (`x` and `x_bands` the plan's X, as at
    /// [`TransposeX::build`]): no transpose and no upload of entries.
    pub(crate) fn regrid(
        &self,
        gpu: &Gpu,
        x: &Csr,
        x_bands: &[SparseBand],
        config: &Config,
    ) -> Result<TransposeX> {
        Self::with_data(gpu, x, x_bands, config, self.data.clone())
    }

    /// X's pass at the configuration's VS, workgroup size and long-row threshold, Xᵀ's at
    /// [`gather_vs`] on its own mean row length (a panel's) and [`long_row`], over `data`.
    fn with_data(
        gpu: &Gpu,
        x: &Csr,
        x_bands: &[SparseBand],
        config: &Config,
        data: Arc<GatherData>,
    ) -> Result<TransposeX> {
        let caps = &gpu.caps;
        // Tiles: the rows' sums reduced by shuffles where the caller left subgroups on, at
        // most as many lanes per row as the smallest subgroup holds.
        let wg = config.workgroup;
        let sub_tiles = caps.subgroups && (config.subgroup_reduce || !caps.shuffle_fits(config.vs));
        let tiled = (config.tile > 0).then(|| {
            let tpr_max = if sub_tiles {
                caps.subgroup_min_size.min(32)
            } else {
                32
            };
            (config.tile / wg, tpr_max.min(wg))
        });
        let sub_x = if tiled.is_some() {
            sub_tiles
        } else {
            config.subgroup_reduce
        };
        let x_pass = |rows: &[u32], bands: &[SparseBand]| {
            RowPass::build(
                gpu,
                rows,
                bands,
                (config.vs, wg, sub_x),
                Some(config.long_row),
                (tiled, config.prefetch),
            )
        };
        let xt_pass = |rows: &[u32], bands: &[SparseBand]| {
            let vs_t = gather_vs(mean_row_len(rows)).min(wg);
            // Subgroups where the caller left them on (the configuration's reduction, or X's
            // VS too wide for shuffles) and Xᵀ's vectors fit them.
            let sub_t = match tiled {
                Some(_) => sub_tiles,
                None => {
                    (config.subgroup_reduce || !caps.shuffle_fits(config.vs))
                        && caps.shuffle_fits(vs_t)
                }
            };
            RowPass::build(
                gpu,
                rows,
                bands,
                (vs_t, wg, sub_t),
                None,
                (tiled, config.prefetch),
            )
        };
        let x_passes = if data.x_panels.is_empty() {
            vec![x_pass(&x.row_ptr, x_bands)?]
        } else {
            let panels = data.x_panels.iter();
            panels
                .map(|p| x_pass(&p.row_ptr, p.bands()))
                .collect::<Result<_>>()?
        };
        let xt_passes = data
            .xt_panels
            .iter()
            .map(|p| xt_pass(&p.row_ptr, p.bands()))
            .collect::<Result<_>>()?;
        Ok(TransposeX {
            data,
            x_passes,
            xt_passes,
            key: key_of(config),
        })
    }

    /// Whether Xᵀ's rows are in the caller's column order (its pass writes the caller's w).
    pub fn caller_order(&self) -> bool {
        self.data.caller_order
    }

    /// Whether a plan of `config` may share these grids.
    pub(crate) fn fits(&self, config: &Config) -> bool {
        self.key == key_of(config)
    }

    /// Xᵀ's pass (X's are the plan's configuration, [`TransposeX::x_chunks`] and
    /// [`TransposeX::tiles`]); with panels, the first panel's lanes per row and threshold,
    /// and the chunks and tiles of all.
    pub fn transpose_pass(&self) -> PassFacts {
        let first = &self.xt_passes[0];
        PassFacts {
            vs: first.vs,
            long_row: first.long_len,
            long_chunks: total(&self.xt_passes, RowPass::chunks),
            tiles: total(&self.xt_passes, RowPass::tiles),
        }
    }

    /// X's long-row chunks (over its panels).
    pub fn x_chunks(&self) -> usize {
        total(&self.x_passes, RowPass::chunks)
    }

    /// Row tiles of X's and Xᵀ's passes (0, 0 for the row kernel).
    pub fn tiles(&self) -> (usize, usize) {
        (
            total(&self.x_passes, RowPass::tiles),
            total(&self.xt_passes, RowPass::tiles),
        )
    }

    /// Dispatches after `fused.axpy`: X's pass (none under `xty`; there a `fused.scale` when
    /// v is given), then Xᵀ's, each over its panels.
    pub(crate) fn dispatches(&self, xty: bool, has_v: bool) -> usize {
        let first = if xty {
            usize::from(has_v)
        } else {
            total(&self.x_passes, RowPass::dispatches)
        };
        first + total(&self.xt_passes, RowPass::dispatches)
    }

    /// X's panels with their passes (`None`: the plan's X whole).
    fn x_panels(&self) -> impl Iterator<Item = (Option<&DeviceX>, &RowPass)> {
        let entries = self.data.x_panels.iter().map(|p| Some(&p.entries));
        let whole = self.data.x_panels.is_empty().then_some(None);
        whole.into_iter().chain(entries).zip(&self.x_passes)
    }

    /// Xᵀ's panels with their passes.
    fn xt_panels(&self) -> impl Iterator<Item = (Option<&DeviceX>, &RowPass)> {
        let entries = self.data.xt_panels.iter().map(|p| Some(&p.entries));
        entries.zip(&self.xt_passes)
    }
}

/// Entries of the matrix whose CSR row offsets are `rows`.
fn offsets_nnz(rows: &[u32]) -> usize {
    rows.last().map_or(0, |&e| e as usize)
}

/// Mean entries a row of the matrix whose CSR row offsets are `rows` (0 without rows).
fn mean_row_len(rows: &[u32]) -> f64 {
    offsets_nnz(rows) as f64 / rows.len().saturating_sub(1).max(1) as f64
}

/// `count` of each pass, summed.
fn total(passes: &[RowPass], count: fn(&RowPass) -> usize) -> usize {
    passes.iter().map(count).sum()
}

/// `part` uploaded (in row bands where it exceeds a binding) and dropped on the host but for
/// its row offsets.
fn panel_data(gpu: &Gpu, part: Csr) -> Result<PanelData> {
    Ok(PanelData {
        entries: upload(gpu, Matrix::Sparse(&part))?,
        row_ptr: part.row_ptr,
    })
}

/// `a`'s `count` column panels, each built and uploaded in turn ([`panel_data`]).
fn uploaded(gpu: &Gpu, a: &Csr, count: u32) -> Result<Vec<PanelData>> {
    panel_bounds(a.ncols, count as usize)
        .into_iter()
        .map(|cut| panel_data(gpu, a.column_panel(cut)))
        .collect()
}

/// Records both passes (w already holds β·z): p = α·v ⊙ (X·y), then w += Xᵀp, each over its
/// panels (X's first panel writes p, the others add onto it). Under `xty`, Xᵀ's pass gathers
/// α·y (α·v ⊙ y, copied into p first, when v is given).
pub(crate) fn record(
    plan: &Plan,
    t: &TransposeX,
    batch: &mut Batch,
    op: &Op,
    w: &GpuBuffer<f32>,
) -> Result<()> {
    if !matches!(&*plan.x, DeviceX::Sparse { .. }) {
        return Err(Error::Unsupported(
            "the transpose variant takes sparse X".into(),
        ));
    }
    let p = plan.scratch.as_ref().expect("the transpose variant's p");
    let native = plan.config.native_atomics;
    // A panel's gather over its bands (`None`: the plan's X); `accum`: added onto out.
    let pass = |(entries, grid): (Option<&DeviceX>, &RowPass),
                batch: &mut Batch,
                vectors,
                alpha,
                accum|
     -> Result<()> {
        let DeviceX::Sparse {
            col_idx,
            values,
            bands,
        } = entries.unwrap_or(&plan.x)
        else {
            unreachable!("sparse X and its panels are uploaded as sparse X")
        };
        for (band, band_pass) in bands.iter().zip(&grid.bands) {
            let a = Operand {
                entries: (col_idx, values),
                band,
                pass: band_pass,
                grid,
            };
            gather(plan, batch, &a, vectors, alpha, (accum, native))?;
        }
        Ok(())
    };
    let (q, alpha) = match (op.xty, op.v) {
        (false, v) => {
            for (i, panel) in t.x_panels().enumerate() {
                pass(panel, batch, (op.y, v, p), op.alpha, i > 0)?;
            }
            (p, 1.0)
        }
        (true, Some(v)) => {
            batch.copy(op.y.raw(), p.raw(), plan.m as u64 * 4);
            scale(batch, plan.m, v, p)?;
            (p, op.alpha)
        }
        (true, None) => (op.y, op.alpha),
    };
    for panel in t.xt_panels() {
        pass(panel, batch, (q, None, w), alpha, true)?;
    }
    Ok(())
}

/// One band of a gather's matrix.
struct Operand<'a> {
    entries: (&'a GpuBuffer<u32>, &'a GpuBuffer<f32>),
    band: &'a SparseBand,
    pass: &'a BandPass,
    grid: &'a RowPass,
}

/// Records `fused.gather_rows` on one band, then `fused.gather_chunks` when it has long rows:
/// out = α·(v ⊙) A·y over the band's rows, added onto out with `accum`.
fn gather(
    plan: &Plan,
    batch: &mut Batch,
    a: &Operand,
    (y, v, out): (&GpuBuffer<f32>, Option<&GpuBuffer<f32>>, &GpuBuffer<f32>),
    alpha: f32,
    (accum, native): (bool, bool),
) -> Result<()> {
    let gpu = batch.gpu();
    let g = a.grid;
    let row_v = v.is_some().then_some("ROW_V");
    let v = v.unwrap_or(&plan.dummy);
    let defs = [
        g.subgroups.then_some("SUBGROUP"),
        row_v,
        accum.then_some("ACCUM"),
        g.pipe.then_some("PIPE"),
    ];
    if let Some((epl, tpr_max)) = g.tiled {
        let tiles = gpu.kernel(&KernelSpec {
            name: "fused/gather_tiles",
            defines: defs.into_iter().flatten().collect(),
            constants: vec![
                ("WG", g.workgroup as f64),
                ("EPL", epl as f64),
                ("TPR_MAX", tpr_max as f64),
            ],
            bindings: &TILE_BINDINGS,
        })?;
        let params = gpu.uniform(
            "fused.gather_tiles.params",
            &[
                a.pass.ntiles,
                a.band.rows.start as u32,
                g.long_len,
                alpha.to_bits(),
            ],
        );
        let [p, _, rest @ ..] = bindings([&params, a.band.row_ptr.raw()], a, (y, v, out));
        let [c, x, y, v, o] = rest;
        let bound = [
            p,
            a.pass.tiles.raw().as_entire_buffer_binding(),
            a.band.row_ptr.raw().as_entire_buffer_binding(),
            c,
            x,
            y,
            v,
            o,
        ];
        let bg = tiles.bind_ranges(gpu, &bound)?;
        batch.dispatch(&tiles, bg, [a.pass.groups, 1, 1])?;
    } else {
        let rows = gpu.kernel(&KernelSpec {
            name: "fused/gather_rows",
            defines: defs.into_iter().flatten().collect(),
            constants: vec![("WG", g.workgroup as f64), ("VS", g.vs as f64)],
            bindings: &BINDINGS,
        })?;
        let params = gpu.uniform(
            "fused.gather_rows.params",
            &[
                a.band.rows.len() as u32,
                a.pass.c,
                a.band.rows.start as u32,
                g.long_len,
                alpha.to_bits(),
                0,
                0,
                0,
            ],
        );
        let bg = rows.bind_ranges(
            gpu,
            &bindings([&params, a.band.row_ptr.raw()], a, (y, v, out)),
        )?;
        batch.dispatch(&rows, bg, [a.pass.groups, 1, 1])?;
    }
    if a.pass.nchunks == 0 {
        return Ok(());
    }
    let chunks = gpu.kernel(&KernelSpec {
        name: "fused/gather_chunks",
        defines: [row_v, native.then_some("F32_ATOMIC")]
            .into_iter()
            .flatten()
            .collect(),
        constants: vec![("WG", g.workgroup as f64)],
        bindings: &BINDINGS,
    })?;
    let params = gpu.uniform(
        "fused.gather_chunks.params",
        &[a.pass.nchunks, alpha.to_bits(), 0, 0],
    );
    let bg = chunks.bind_ranges(
        gpu,
        &bindings([&params, a.pass.chunks.raw()], a, (y, v, out)),
    )?;
    batch.dispatch(&chunks, bg, [a.pass.chunk_groups, 1, 1])
}

/// What both gather kernels bind: their parameters and index records (row offsets or
/// chunks), then the band's entries, y, v and out.
fn bindings<'a>(
    [params, index]: [&'a wgpu::Buffer; 2],
    a: &Operand<'a>,
    (y, v, out): (&'a GpuBuffer<f32>, &'a GpuBuffer<f32>, &'a GpuBuffer<f32>),
) -> [wgpu::BufferBinding<'a>; 7] {
    let (col_idx, values) = a.entries;
    [
        params.as_entire_buffer_binding(),
        index.as_entire_buffer_binding(),
        bands::window(col_idx, a.band),
        bands::window(values, a.band),
        whole(y),
        whole(v),
        whole(out),
    ]
}
