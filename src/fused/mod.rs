//! The fused sparse/dense pattern of Ashari et al. (PPoPP 2015):
//! w = α·Xᵀ(v ⊙ (X·y)) + β·z with X m×n sparse (CSR) or dense (row-major), y, z, w ∈ ℝⁿ and
//! v ∈ ℝᵐ, and every instantiation of the paper's Table 1 ([`Pattern`]).
//!
//! One pass over X computes each row's dot product, scales it by v\[r\] and scatters the row back
//! into w while it is still on chip, so X is read once and Xᵀ is never built. Variants
//! ([`Variant`]): the fused kernel (w aggregated in workgroup memory when n fits, straight in
//! global memory otherwise), a deterministic two-pass form, and the unfused sequence of
//! separate dispatches kept as the honest baseline. A [`Plan`] uploads X and resolves the
//! launch model ([`plan`]) once; `record` / `run` reuse it with new vectors.
//!
//! On sparse X a plan may re-index the columns by descending entry count ([`reorder`],
//! [`Options::reorder`]): the hot columns of a power-law X become contiguous words of y and w,
//! every variant runs on the re-indexed X, and each run gathers y and z into that order and
//! scatters w back in the same batch.

mod bands;
pub mod bench;
mod cg_step;
mod config;
pub mod cpu;
mod dense;
mod describe;
mod device;
pub mod diag;
pub mod gather_tiles;
mod host_op;
pub mod hot;
mod kernels;
pub mod linreg;
pub mod logreg;
pub mod long;
pub mod loops;
mod options;
mod pattern;
pub mod plan;
pub mod reorder;
pub mod schedule;
pub mod split;
pub mod stream;
pub mod tiles;
mod timing;
pub mod transpose;
pub mod tune;
mod vectors;

use std::sync::Arc;

use serde::Serialize;

use crate::gpu::{Batch, Gpu, GpuBuffer};
use crate::sparse::{Csr, Dense};
use crate::{Error, Result};
use device::{DeviceX, Finish, Layouts, LongRows, SortedX, SplitX, StreamX};
use transpose::TransposeX;

pub use config::{
    GATHER_TILE_DEFAULT, GATHER_TILE_EPL, PANELS_MAX, SORTED_EPL_MAX, SPLIT_EPL, STREAM_EPL,
};
pub use cpu::HostOp;
pub use device::FINISH_COLUMNS;
pub use diag::Diag;
pub use host_op::DeviceOp;
pub use options::{Options, UnitTiles};
pub use pattern::Pattern;
pub use reorder::Reorder;

/// Which kernels compute the pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Variant {
    /// The fused kernel.
    Auto,
    /// The fused kernel: workgroup copy of w when n fits, else global adds.
    Fused,
    /// The fused kernel over column-sorted tiles of rows ([`tiles`]): the row dot products in
    /// workgroup memory, then the scatter reduced over runs of equal columns across the
    /// subgroup, one add per (run, column) to the workgroup copy of w (when n fits) or to
    /// global w. Sparse X with fewer than 2^(32 − log₂ tile) columns; dense X runs `Fused`.
    Sorted,
    /// The fused kernel writing per-workgroup partials, summed by a second pass in a fixed
    /// order: bit-identical run to run.
    TwoPass,
    /// Column split ([`split`]): p = α·v ⊙ (X·y) by CSR rows (also w = β·z), then Xᵀp from a
    /// copy of X in row tiles sorted by column, chunks of it over the workgroups, one add per
    /// run of a column in a subgroup (no workgroup copy of w, no per-entry compare-exchange).
    /// Sparse X within one storage binding and with at most 2^24 columns; otherwise (and on
    /// dense X) it runs `Fused`.
    Split,
    /// Row tiles streamed in CSR order ([`stream`]): each invocation loads its share of a
    /// tile's entries as whole `vec4`s, the row dot products are summed per row segment in
    /// workgroup memory, and the entries, still in registers, are scaled and added to the
    /// workgroup copy of w. Two barriers a tile; rows longer than a tile each taken whole by
    /// a workgroup of the same kernel. With [`Options::unit_tiles`] units of lanes within a
    /// subgroup take the tiles instead, with no barrier ([`Config::unit`]). Sparse X whose copy fits one storage binding and
    /// whose w fits workgroup memory; otherwise (and on dense X) it runs `Fused`.
    Stream,
    /// Xᵀ materialized at plan time ([`transpose`]): p = α·v ⊙ (X·y) by X's rows, then
    /// w = β·z + Xᵀp by Xᵀ's rows, both gathers (no add to w races another; the heaviest rows
    /// of either matrix in chunks over whole workgroups). X read twice, its transpose held
    /// beside it; for a large n, whose scatter would spread adds over all of w. Sparse X;
    /// dense X runs `Fused`.
    Transpose,
    /// Separate dispatches: β·z, SpMV (gemv on dense X), ⊙v, Xᵀp (a scatter on sparse X, a
    /// column-wise gemv on dense X).
    Unfused,
}

impl Variant {
    /// The concrete variants (`Sorted` runs as `Fused` on dense X).
    pub const CONCRETE: [Variant; 7] = [
        Variant::Fused,
        Variant::Sorted,
        Variant::Split,
        Variant::Stream,
        Variant::Transpose,
        Variant::TwoPass,
        Variant::Unfused,
    ];

    /// The variant's name (`fused`, `two-pass`, `unfused`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Auto => "auto",
            Variant::Fused => "fused",
            Variant::Sorted => "sorted",
            Variant::TwoPass => "two-pass",
            Variant::Split => "split",
            Variant::Stream => "stream",
            Variant::Transpose => "transpose",
            Variant::Unfused => "unfused",
        }
    }
}

/// How f32 atomic additions are made: in global memory ([`Options::atomics`]) or into
/// workgroup memory ([`Options::wg_atomics`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Atomics {
    /// Native when the device has them (global: `SHADER_FLOAT32_ATOMIC`; workgroup:
    /// [`crate::gpu::Caps::wg_f32_atomics`]), else compare-exchange. The tuner times the
    /// workgroup kinds against each other for its pick.
    Auto,
    /// Native f32 atomics (fails when the device lacks them).
    Native,
    /// Compare-exchange on the bit pattern.
    Cas,
}

/// The matrix X.
#[derive(Clone, Copy, Debug)]
pub enum Matrix<'a> {
    /// Sparse, CSR.
    Sparse(&'a Csr),
    /// Dense, row-major.
    Dense(&'a Dense),
}

impl Matrix<'_> {
    /// (m, n).
    pub fn shape(&self) -> (usize, usize) {
        match self {
            Matrix::Sparse(x) => (x.nrows, x.ncols),
            Matrix::Dense(x) => (x.nrows, x.ncols),
        }
    }

    /// Stored entries (m·n when dense).
    pub fn nnz(&self) -> usize {
        match self {
            Matrix::Sparse(x) => x.nnz(),
            Matrix::Dense(x) => x.nrows * x.ncols,
        }
    }

    /// The f64 twin's result and error magnitudes.
    pub fn reference(&self, op: &HostOp) -> (Vec<f64>, Vec<f64>) {
        match self {
            Matrix::Sparse(x) => cpu::sparse(x, op),
            Matrix::Dense(x) => cpu::dense(x, op),
        }
    }

    /// Roundings one element of w sees at most (the comparison's K).
    pub fn rounding_terms(&self) -> usize {
        match self {
            Matrix::Sparse(x) => cpu::rounding_terms_sparse(x),
            Matrix::Dense(x) => cpu::rounding_terms_dense(x),
        }
    }
}

/// The resolved configuration of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Config {
    /// The kernels (never `Auto`).
    pub variant: Variant,
    /// X is dense.
    pub dense: bool,
    /// Lanes per row.
    pub vs: u32,
    /// Invocations per workgroup.
    pub workgroup: u32,
    /// Rows per vector C.
    pub rows_per_vector: u32,
    /// Workgroups of the main dispatch.
    pub groups: u32,
    /// Dense: elements per lane.
    pub tl: u32,
    /// Dense: rows a vector loads before reducing them (a lane's TL loads of each in flight
    /// together); 1 for sparse X.
    pub rows_in_flight: u32,
    /// Sparse: w aggregated in workgroup memory.
    pub workgroup_w: bool,
    /// Sparse, w in global memory: hot columns aggregated in workgroup memory; with w in
    /// workgroup memory: hot columns copied per vector (0: none).
    pub hot_cols: u32,
    /// Sparse fused kernels: rows with more entries than this (a power-law X's heaviest rows,
    /// which one vector would take alone) go through the long-row path (chunks of X's entries
    /// over whole workgroups: partial dot products added per row, then the scatter; `Stream`:
    /// each such row taken whole by a workgroup of its one kernel);
    /// `u32::MAX`: none.
    pub long_row: u32,
    /// `Sorted`: entries per column-sorted tile (a multiple of the workgroup size, at most 8
    /// per invocation); `Stream`: entries per row tile (4 or 8 per invocation); 0 for the
    /// other variants.
    pub tile: u32,
    /// Global adds by native f32 atomics (else compare-exchange).
    pub native_atomics: bool,
    /// Adds into a workgroup copy of w by native f32 atomics (else compare-exchange loops).
    pub wg_native_atomics: bool,
    /// `Stream`: the workgroup copy of w holds exact integer sums in fixed point, two words a
    /// column, scaled by bounds the kernel takes from each tile (`shaders/shared/fixed_wg`):
    /// an integer add is one fast instruction where a float add into workgroup memory is a
    /// loop or a slow native add, and the sums do not depend on the order of the adds. At
    /// least 61 − 2·LN bits below the largest product a workgroup adds (LN: log₂ of the rows
    /// it takes), less 3 bits of headroom. Slower than native float adds on an H100 and an
    /// H200 so far (on an H100 at 500k × 1,024 1.26× in `full` at equal residency; at 4,096
    /// two words a column leave one workgroup an SM; BENCHMARKS.md), so opt-in and timed by
    /// the tuner.
    pub wg_fixed: bool,
    /// Row dot products reduced by subgroup operations (else workgroup memory).
    pub subgroup_reduce: bool,
    /// Dense: a vector spans several subgroups, reduced by subgroupAdd and then workgroup
    /// memory (with `subgroup_reduce`).
    pub subgroup_wide: bool,
    /// `Sorted`: the scatter reduced over runs of equal columns by subgroup operations (any
    /// subgroup size); else one add per entry.
    pub segmented: bool,
    /// Sparse `Fused` / `Sorted`: fewer dependent dispatches. With long rows, the long-row
    /// dot pre-pass stores per-chunk partials (nothing to zero first) and initialises
    /// w = β·z itself (no `axpy` before it), and the main kernel's workgroups take the
    /// long-row chunks after their rows or tiles (no scatter post-pass): 2 dispatches
    /// instead of 5 (`xty`: 2 instead of 3). Rows of more than [`long::FOLD_CHUNKS_MAX`]
    /// chunks keep the unfolded sequence. Without long rows, w in workgroup memory and n at
    /// most [`FINISH_COLUMNS`] per invocation: one dispatch, whose last workgroup writes
    /// w = β·z + the sum (no `axpy` before it). `Stream` takes its long rows in its one
    /// kernel, so only that ending applies to it. [`Plan::dispatches`] tells the count.
    pub fold: bool,
    /// Sparse `fused`: each lane's first `regs` entries of a row stay in registers from the
    /// dot product to the scatter (loaded together, not re-read); 0: none.
    pub regs: u32,
    /// Sparse `fused` with `regs`: the next row's entries in registers, its factor (v, y
    /// under `xty`) and the bounds of the row after it are loaded before this row's
    /// reduction and scatter (a software pipeline: more loads in flight per vector).
    /// `Stream`: the next tile's entries and row factors are loaded before this tile's work.
    /// `Transpose` in row tiles: resident workgroups take many tiles each, the next one's
    /// bounds, offsets and entries loaded during this one's gathers.
    pub prefetch: bool,
    /// `Split`: rows per row tile of the column-split layout ([`split`]); its chunks hold
    /// [`SPLIT_EPL`] × the workgroup size entries. `Stream`: the caller's cap on a tile's
    /// rows, where given (0: as many as workgroup memory holds). 0 for the other variants.
    pub row_tile: u32,
    /// `Split`: the scatter reads X's copy 16 bits per row offset beside each value, with a
    /// marker slot per run of a column in a chunk ([`split::build16`]: 6 bytes per entry
    /// instead of 8); else packed 32-bit keys ([`split::build`]). `Stream`: the tiles' keys
    /// are 16 bits each ([`stream::pack16`]: 6 bytes per entry instead of 8).
    pub key16: bool,
    /// `Stream`: y copied into workgroup memory beside w at the kernel's start, so the dot
    /// products' gathers read it there (the row cap leaves it room); false for the others.
    pub y_shared: bool,
    /// `Stream`: copies of w in workgroup memory (invocation slot mod copies adds to its
    /// own, the flush sums them): fewer invocations contend for a column's word where X has
    /// few columns; 1 for the others.
    pub wg_copies: u32,
    /// `Stream`: lanes a tile where units of them take the tiles with no barrier (the
    /// adapter's least subgroup size; the workgroup meets only around its long rows and the
    /// flush); 0: every tile taken by the whole workgroup. 0 for the others.
    pub unit: u32,
    /// `Transpose`: each gather summed over this many column panels of its matrix (X's
    /// columns, then Xᵀ's: X's rows), so it reads a slice of its vector (y, then p) at a time
    /// ([`crate::sparse::panels`]); 1 for the other variants.
    pub panels: u32,
    /// `Transpose` on re-indexed columns ([`Config::reorder`]): Xᵀ built with its rows in the
    /// caller's column order, so its pass writes the caller's w and a run gathers y alone
    /// (the plan's order runs the hot columns' long rows first); false otherwise.
    pub xt_caller: bool,
    /// Sparse: X's columns re-indexed by descending entry count ([`reorder`]); each run
    /// gathers y and z into that order and scatters w back.
    pub reorder: bool,
    /// Timing-only switches ([`Diag`]; none unless asked for).
    pub diag: Diag,
}

/// The operands of one run on the device: w = α·Xᵀ(v ⊙ (X·y)) + β·z (`xty`: y ∈ ℝᵐ is used
/// in place of X·y).
#[derive(Clone, Copy)]
pub struct Op<'a> {
    /// α.
    pub alpha: f32,
    /// y ∈ ℝⁿ (ℝᵐ when `xty`).
    pub y: &'a GpuBuffer<f32>,
    /// Optional v ∈ ℝᵐ.
    pub v: Option<&'a GpuBuffer<f32>>,
    /// β; 0 never reads z.
    pub beta: f32,
    /// z ∈ ℝⁿ, needed when β ≠ 0.
    pub z: Option<&'a GpuBuffer<f32>>,
    /// The α·Xᵀy instantiation.
    pub xty: bool,
}

/// A prepared pattern on one X: X uploaded, configuration resolved, scratch allocated.
pub struct Plan {
    /// Rows of X.
    pub m: usize,
    /// Columns of X.
    pub n: usize,
    /// Stored entries of X.
    pub nnz: usize,
    /// The resolved configuration.
    pub config: Config,
    x: Arc<DeviceX>,
    /// The hot columns' rewritten column indices and slot columns (`config.hot_cols > 0`),
    /// shared with plans of the same X and slot count.
    hot: Option<Arc<(GpuBuffer<u32>, GpuBuffer<u32>)>>,
    /// Columns of sparse X holding entries, when a configuration needed the count.
    used_cols: Option<usize>,
    /// Two-pass partials (groups × n; dense X: groups × bands × n) or the unfused p (m).
    scratch: Option<GpuBuffer<f32>>,
    /// The long-row path's chunks and per-row dot products (sparse fused kernels with rows
    /// above [`Config::long_row`]).
    long: Option<LongRows>,
    /// The `Sorted` variant's column-sorted tiles, shared with plans of the same X, tile size
    /// and long-row threshold.
    sorted: Option<Arc<SortedX>>,
    /// The `Split` variant's column-split copy of X.
    split: Option<Arc<SplitX>>,
    /// The `Stream` variant's row tiles and long rows, shared with plans of the same X,
    /// workgroup size, tile, long-row threshold and y copy (which sets the row cap).
    stream: Option<Arc<StreamX>>,
    /// The `Transpose` variant's Xᵀ and the grids of both gathers, shared with plans of the
    /// same X and grid ([`TransposeX::fits`]).
    transpose: Option<Arc<TransposeX>>,
    /// The one-dispatch ending ([`Config::fold`] without long rows): the accumulator the
    /// workgroups flush into and the count of finished workgroups, both zero between runs.
    finish: Option<Finish>,
    /// A 16-byte stand-in bound where an optional vector is absent (never read).
    dummy: Arc<GpuBuffer<f32>>,
    /// Re-indexed columns ([`Config::reorder`]): X's copy, the permutation and y', z', w'.
    reindex: Option<reorder::PlanReindex>,
    /// The top columns' share of X's entries, when `Auto` needed it ([`reorder::top_share`]).
    col_share: Option<f64>,
    /// Host seconds [`Plan::new`], [`Plan::new_like`] or [`Plan::with_config`] took.
    built_s: f64,
    /// The tuner's screened candidates, on a plan `auto` tuned in this process.
    tuning: Option<Arc<[tune::TuneStep]>>,
}

impl Plan {
    /// `Sorted` with the segmented scatter: (X's entries in tiles, the adds to w they take
    /// at the adapter's smallest subgroup size), counted on the host at plan time.
    pub fn sorted_adds(&self) -> Option<(usize, usize)> {
        self.sorted
            .as_ref()
            .filter(|_| self.config.segmented)
            .map(|t| t.adds)
    }

    /// `Split`: (X's entries, the adds of its scatter at the adapter's smallest subgroup size,
    /// chunks), counted on the host at plan time.
    pub fn split_adds(&self) -> Option<(usize, usize, usize)> {
        self.split
            .as_ref()
            .map(|t| (self.nnz, t.adds, t.nchunks as usize))
    }

    /// `Sorted` whose tiles carry wide keys (X's columns beyond a packed key: a column array
    /// beside the positions).
    pub fn sorted_wide(&self) -> bool {
        self.sorted.as_ref().is_some_and(|t| t.cols.is_some())
    }

    /// Chunks of the long-row path, the `Stream` kernel's long rows (each taken whole by a
    /// workgroup of the one kernel), or the `Transpose` variant's chunks of X's long rows;
    /// 0: none.
    pub fn long_chunks(&self) -> usize {
        match (&self.long, &self.stream, &self.transpose) {
            (Some(l), _, _) => l.nchunks as usize,
            (None, Some(t), _) => t.nlong as usize,
            (None, None, Some(t)) => t.x_chunks(),
            _ => 0,
        }
    }

    /// `Transpose`: Xᵀ's pass.
    pub fn transpose_pass(&self) -> Option<transpose::PassFacts> {
        self.transpose.as_ref().map(|t| t.transpose_pass())
    }

    /// `Stream`: the rows of its fullest tile (the kernel's per-tile row buffers in
    /// workgroup memory are sized to it).
    pub fn stream_rows_max(&self) -> Option<u32> {
        self.stream.as_ref().map(|t| t.rows_max)
    }

    /// `Transpose`: whether this plan and `other` gather over the same Xᵀ (and column
    /// panels) on the device, built once ([`Plan::new_like`] shares them where the panels and
    /// Xᵀ's row order match; the grids may differ).
    pub fn shares_transpose(&self, other: &Plan) -> bool {
        match (&self.transpose, &other.transpose) {
            (Some(a), Some(b)) => a.same_matrices(b),
            _ => false,
        }
    }

    /// `Transpose`: X's pass's row tiles (0: the row kernel).
    pub fn transpose_x_tiles(&self) -> Option<usize> {
        self.transpose.as_ref().map(|t| t.tiles().0)
    }

    /// Whether the main kernel's last workgroup writes w (one dispatch, [`Config::fold`]).
    pub fn finishes(&self) -> bool {
        self.finish.is_some()
    }

    /// Whether the long rows go through the folded sequence ([`Config::fold`]; false when
    /// there are none).
    pub fn long_folded(&self) -> bool {
        self.long.as_ref().is_some_and(|l| l.folded)
    }

    /// Compute dispatches [`Plan::record`] issues for `pattern` (operands as the pattern
    /// takes them: v for `xtvxy` and `full`), the count [`crate::gpu::Batch::dispatches`]
    /// shows after recording.
    pub fn dispatches(&self, pattern: Pattern) -> usize {
        kernels::dispatches(self, pattern) + reorder::dispatches(self, pattern)
    }

    /// Host seconds building this plan took (layouts shared with another plan cost none).
    pub fn build_seconds(&self) -> f64 {
        self.built_s
    }

    /// The candidates `auto`'s tuner screened before picking this plan, in the order timed
    /// (`None` unless tuned in this process: a plan from the tuning cache has none).
    pub fn tuning(&self) -> Option<&[tune::TuneStep]> {
        self.tuning.as_deref()
    }

    /// Validates X, resolves the configuration and uploads X.
    pub fn new(gpu: &Gpu, x: Matrix, options: &Options) -> Result<Plan> {
        let clock = std::time::Instant::now();
        match x {
            Matrix::Sparse(s) => s.validate()?,
            Matrix::Dense(d) => d.validate()?,
        }
        let (mut config, used) = kernels::resolve(gpu, x, options, None)?;
        let share = reorder::decide(x, options.reorder, &mut config, None)?;
        diag::apply(&mut config, options.diag)?;
        let mut plan = Self::with_config(gpu, x, config)?;
        (plan.used_cols, plan.col_share) = (used, share);
        plan.built_s = clock.elapsed().as_secs_f64();
        Ok(plan)
    }

    /// A plan with a given configuration (the sweep's candidates); X must be valid.
    pub fn with_config(gpu: &Gpu, x: Matrix, config: Config) -> Result<Plan> {
        let clock = std::time::Instant::now();
        let re = reorder::prepare(gpu, x, &config)?;
        let xr = re.as_ref().map_or(x, |r| Matrix::Sparse(&r.x));
        let dx = Arc::new(kernels::upload(gpu, xr)?);
        let order = re.as_ref().map(|r| &r.order[..]);
        let mut plan = Self::build(gpu, (xr, order), config, dx, Layouts::default())?;
        reorder::attach(gpu, &mut plan, re)?;
        plan.built_s = clock.elapsed().as_secs_f64();
        Ok(plan)
    }

    /// [`Plan::new`] for the X that `like` was built from (not re-validated), sharing its
    /// device copy of X: trying other configurations costs no upload.
    pub fn new_like(gpu: &Gpu, x: Matrix, options: &Options, like: &Plan) -> Result<Plan> {
        let clock = std::time::Instant::now();
        let same = x.shape() == (like.m, like.n) && x.nnz() == like.nnz;
        let (mut config, used) =
            kernels::resolve(gpu, x, options, like.used_cols.filter(|_| same))?;
        let share = reorder::decide(
            x,
            options.reorder,
            &mut config,
            like.col_share.filter(|_| same),
        )?;
        diag::apply(&mut config, options.diag)?;
        if !same || (config.dense, config.reorder) != (like.config.dense, like.config.reorder) {
            let mut plan = Self::with_config(gpu, x, config)?;
            (plan.used_cols, plan.col_share) = (used, share);
            plan.built_s = clock.elapsed().as_secs_f64();
            return Ok(plan);
        }
        // Same X, same columns: like's re-indexed X (when it has one) and its layouts.
        let re = like.reindex.as_ref().map(|r| r.shared());
        let xr = re.as_ref().map_or(x, |r| Matrix::Sparse(&r.x));
        let hot = like
            .hot
            .clone()
            .filter(|_| like.config.hot_cols == config.hot_cols);
        let sorted = like
            .sorted
            .clone()
            .filter(|_| (like.config.tile, like.config.long_row) == (config.tile, config.long_row));
        // The column-split copy depends on the row tile and the chunk (the workgroup size).
        let split = like.split.clone().filter(|_| {
            config.variant == Variant::Split
                && (
                    like.config.row_tile,
                    like.config.workgroup,
                    like.config.key16,
                ) == (config.row_tile, config.workgroup, config.key16)
        });
        // Fixed-point sums take more workgroup memory: a layout is shared where its tiles'
        // rows still fit beside them (unit tiles keep none there). Unit tiles are cut for a
        // unit's lanes, workgroup tiles for the workgroup's.
        let stream = like.stream.clone().filter(|s| {
            config.variant == Variant::Stream
                && (config.row_tile != 0
                    || config.unit > 0
                    || s.rows_max
                        <= config::stream_rows_cap(
                            gpu,
                            x.shape().1,
                            config.workgroup,
                            config.tile,
                            config::StreamFootprint::of(&config),
                        ))
                && (
                    like.config.workgroup,
                    like.config.tile,
                    like.config.long_row,
                    like.config.y_shared,
                    like.config.key16,
                    like.config.row_tile,
                    like.config.unit,
                ) == (
                    config.workgroup,
                    config.tile,
                    config.long_row,
                    config.y_shared,
                    config.key16,
                    config.row_tile,
                    config.unit,
                )
        });
        // Xᵀ and the panels where their cut and row order match (the grids are rebuilt where
        // the configuration's differ).
        let transpose = like
            .transpose
            .clone()
            .filter(|t| config.variant == Variant::Transpose && t.shares_matrices(&config));
        let shared = Layouts {
            hot,
            sorted,
            split,
            stream,
            transpose,
        };
        let order = re.as_ref().map(|r| &r.order[..]);
        let mut plan = Self::build(gpu, (xr, order), config, like.x.clone(), shared)?;
        reorder::attach(gpu, &mut plan, re)?;
        (plan.used_cols, plan.col_share) = (used, share);
        plan.built_s = clock.elapsed().as_secs_f64();
        Ok(plan)
    }

    fn check(&self, op: &Op, w: &GpuBuffer<f32>) -> Result<()> {
        let y_len = if op.xty { self.m } else { self.n };
        let shape = |what: &str, got: usize, want: usize| {
            if got == want {
                Ok(())
            } else {
                Err(Error::Shape(format!(
                    "fused pattern on X {}×{}: {what} has {got} elements, needs {want}",
                    self.m, self.n
                )))
            }
        };
        shape(
            if op.xty {
                "y (Xᵀy: y ∈ ℝᵐ)"
            } else {
                "y"
            },
            op.y.len(),
            y_len,
        )?;
        shape("w", w.len(), self.n)?;
        if let Some(v) = op.v {
            shape("v", v.len(), self.m)?;
        }
        if !op.alpha.is_finite() || !op.beta.is_finite() {
            return Err(Error::Option(format!(
                "α = {} and β = {} must be finite",
                op.alpha, op.beta
            )));
        }
        if op.beta != 0.0 {
            match op.z {
                Some(z) => shape("z", z.len(), self.n)?,
                None => return Err(Error::Option("β ≠ 0 needs z".into())),
            }
        }
        Ok(())
    }

    /// Records the pattern into `batch`, writing w (n elements; every element is written).
    pub fn record(&self, batch: &mut Batch, op: &Op, w: &GpuBuffer<f32>) -> Result<()> {
        self.check(op, w)?;
        reorder::record(self, batch, op, w, false)
    }

    /// Whether [`Plan::record_onto`] applies: the plan's kernels add α·Xᵀ(v ⊙ (X·y)) onto w
    /// after one `fused.axpy` pre-pass that writes w = β·z (`xty`: for the α·Xᵀy
    /// instantiation). False for `two-pass`, `split`, and sparse plans whose main kernel or
    /// long-row pass writes w itself.
    pub fn accumulates(&self, xty: bool) -> bool {
        kernels::accumulates(self, xty)
    }

    /// Records w += α·Xᵀ(v ⊙ (X·y)) onto the w already there (its caller wrote β·z, fused into
    /// a step of its own: one dispatch fewer); `op`'s β and z are ignored. Fails unless
    /// [`Plan::accumulates`].
    pub fn record_onto(&self, batch: &mut Batch, op: &Op, w: &GpuBuffer<f32>) -> Result<()> {
        if !self.accumulates(op.xty) {
            return Err(Error::Unsupported(format!(
                "{}: w is written by the plan's own kernels, not added onto",
                self.config.describe()
            )));
        }
        let op = Op {
            beta: 0.0,
            z: None,
            ..*op
        };
        self.check(&op, w)?;
        reorder::record(self, batch, &op, w, true)
    }

    /// Bytes the fused kernel must move at least: X once (values, and indices when sparse;
    /// dense X's m·n values, its rows stored unpadded), y, v, z and w. Sparse X counts as CSR
    /// (8 bytes an entry) whatever layout a variant reads, so a narrower layout (16-bit keys)
    /// shows as a higher effective bandwidth.
    pub fn min_bytes(&self, op_has_v: bool, op_has_z: bool) -> f64 {
        let x = match &*self.x {
            DeviceX::Sparse { .. } => self.nnz as f64 * 8.0 + (self.m as f64 + 1.0) * 4.0,
            DeviceX::Dense { .. } => self.nnz as f64 * 4.0,
        };
        let vecs = self.n as f64 * 4.0 * (2.0 + op_has_z as u8 as f64)
            + self.m as f64 * 4.0 * op_has_v as u8 as f64;
        x + vecs
    }

    /// Row bands X is bound as (X beyond one storage binding, sparse or dense; 1 otherwise).
    pub fn n_bands(&self) -> usize {
        self.x.n_bands()
    }

    /// The rows of each band X is bound as (one range, all of X's rows, when X fits).
    pub fn band_rows(&self) -> Vec<std::ops::Range<usize>> {
        match &*self.x {
            DeviceX::Dense { bands, .. } => bands.clone(),
            DeviceX::Sparse { bands, .. } => bands.iter().map(|b| b.rows.clone()).collect(),
        }
    }

    /// Floating-point operations of the pattern: 4 per stored entry (2 when `xty`).
    pub fn flops(&self, xty: bool) -> f64 {
        self.nnz as f64 * if xty { 2.0 } else { 4.0 }
    }
}
