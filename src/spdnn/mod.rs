//! Sparse DNN inference, the GraphChallenge network: L layers, each Y ← clamp(Y·W_l ⊕ b, 0, 32)
//! where the bias b is added only to the structural nonzeros of Z = Y·W_l (the entries
//! with Z ≠ 0, as the challenge's reference `Z + logical(Z)·b`), then values below 0 become 0
//! and values above 32 become 32. The answer ("categories") is the set of rows whose sum is
//! nonzero after the last layer. Rate: edges/s = rows · Σ_l nnz(W_l) / time
//! (= rows · 32 · N · L for the challenge's layers).
//!
//! Two GPU paths, both with multiply + bias + clamp fused in one kernel and the active set
//! rebuilt on the device after every layer (flags, [`ExclusiveScan`](crate::gpu::ExclusiveScan),
//! selection); the active count stays on the device, so all L layers are recorded with no
//! readback in between, and rows are split into chunks so that each chunk's dense Y fits one
//! storage binding:
//! - [`Approach::SlicedEll`] (`auto`, any N): W in sliced ELL (blocks of B = WG·T outputs,
//!   slices of S input columns that fit workgroup memory for R = 4·RV rows), each slice of
//!   the tile's rows staged once and used by all B outputs, T·R sums per invocation in
//!   registers; rows stay in place and only their ids are compacted (`spdnn.sliced`,
//!   `spdnn.select`). With [`Options::constant_rows`] each layer also records which rows
//!   came out as one value c over all N columns, and the next layer computes a tile of
//!   such rows as c·colsum(W) with no staging and no gather. With [`Options::scalar_rows`]
//!   a constant row whose next layers' column sums are each one value leaves the active
//!   list and is carried as one scalar per layer (`spdnn.select`, `spdnn.rejoin`).
//! - [`Approach::DenseRows`]: W_lᵀ in column-major ELL over all N, a workgroup's rows staged
//!   whole when they fit (small N), the surviving rows copied together after each layer
//!   (`spdnn.layer`, `spdnn.compact`).
//!
//! The thesis's approaches (CSR·ELL, CSR·CSR, CSC·CSC with 1D and 2D tiling, Y kept sparse,
//! a dense batch buffer, exact-size expand, DCSR pruning) are in [`thesis`].

pub mod cpu;
pub mod data;
mod kernels;
pub mod loops;
mod plan;
mod sliced;
mod sliced_ell;
mod survivors;
pub mod thesis;

use serde::Serialize;

use crate::gpu::{Batch, Gpu, GpuTime};
use crate::sparse::Csr;
use crate::{Error, Result};

pub use plan::Plan;
pub use sliced::{Tiling, MAX_RV, MAX_T, MAX_UNROLL};

/// Largest value an activation may take (the challenge's YMAX).
pub const YMAX: f32 = 32.0;

/// The challenge's bias for `n` neurons: −0.30 / −0.35 / −0.40 / −0.45 for 1,024 / 4,096 /
/// 16,384 / 65,536; other sizes take the bias of the nearest of those by log₂.
pub fn challenge_bias(n: usize) -> f32 {
    let table = [
        (1024usize, -0.30f32),
        (4096, -0.35),
        (16384, -0.40),
        (65536, -0.45),
    ];
    let lg = (n.max(1) as f64).log2();
    table
        .iter()
        .min_by(|a, b| {
            let da = ((a.0 as f64).log2() - lg).abs();
            let db = ((b.0 as f64).log2() - lg).abs();
            da.total_cmp(&db)
        })
        .map(|t| t.1)
        .unwrap_or(-0.3)
}

/// A sparse DNN: `L` square `n × n` layers and one bias shared by every neuron of every layer.
#[derive(Clone, Debug)]
pub struct Network {
    /// Neurons per layer.
    pub n: usize,
    /// The layers' weights W_l, each `n × n` (row i, column j: edge i → j).
    pub layers: Vec<Csr>,
    /// The bias added to the structural nonzeros of every layer's product.
    pub bias: f32,
}

impl Network {
    /// Validates that every layer is a valid `n × n` matrix with finite values and that the
    /// bias is finite; the error names the first bad layer (1-based, as the files).
    pub fn new(n: usize, layers: Vec<Csr>, bias: f32) -> Result<Self> {
        if !bias.is_finite() {
            return Err(Error::Option(format!("bias {bias} is not finite")));
        }
        if n == 0 {
            return Err(Error::Option("a network needs at least one neuron".into()));
        }
        for (l, w) in layers.iter().enumerate() {
            if w.nrows != n || w.ncols != n {
                return Err(Error::Shape(format!(
                    "layer {} is {}×{}, the network has {n} neurons",
                    l + 1,
                    w.nrows,
                    w.ncols
                )));
            }
            w.validate().map_err(|e| Error::Invalid {
                what: format!("layer {}", l + 1),
                message: e.to_string(),
            })?;
        }
        Ok(Network { n, layers, bias })
    }

    /// Σ_l nnz(W_l): the edges one input row crosses.
    pub fn edges(&self) -> usize {
        self.layers.iter().map(Csr::nnz).sum()
    }
}

/// What one inference produced, as read back from the device.
#[derive(Clone, Debug, Serialize)]
pub struct Inference {
    /// Rows with a nonzero sum after the last layer, 0-based, increasing.
    pub categories: Vec<u32>,
    /// GPU time of the whole inference (all layers and compactions), seconds.
    pub seconds: f64,
    /// Whether the time came from timestamp queries (else wall clock).
    pub from_timestamps: bool,
}

/// Which GPU path runs the layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approach {
    /// The fastest path for the shape: today [`Approach::SlicedEll`] for every N.
    Auto,
    /// W in sliced ELL, input slices staged in workgroup memory, register-tiled outputs,
    /// row ids compacted (`spdnn.sliced`).
    SlicedEll,
    /// W_lᵀ in ELL over all N, rows staged whole when they fit, surviving rows copied
    /// together (`spdnn.layer`).
    DenseRows,
}

impl Approach {
    /// The concrete path `auto` stands for.
    pub fn resolve(self) -> Approach {
        match self {
            Approach::Auto => Approach::SlicedEll,
            a => a,
        }
    }

    /// The name the CLI and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Approach::Auto => "auto",
            Approach::SlicedEll => "sliced-ell",
            Approach::DenseRows => "dense-rows",
        }
    }
}

/// Options of the GPU inference.
#[derive(Clone, Debug)]
pub struct Options {
    /// The GPU path.
    pub approach: Approach,
    /// Invocations per workgroup of the layer kernels; `None` takes the path's default on
    /// the device ([`Options::workgroup_on`]).
    pub workgroup: Option<u32>,
    /// Sliced ELL: outputs per invocation T (1..=[`MAX_T`]); a block is `workgroup · T`
    /// outputs.
    pub outputs_per_invocation: u32,
    /// Sliced ELL: vec4s of rows per workgroup RV (1..=[`MAX_RV`]): 4·RV rows share each
    /// weight loaded; T·RV ≤ 16.
    pub row_vecs: u32,
    /// Sliced ELL: input columns per slice; `None` takes the widest whose 4·RV rows fit
    /// workgroup memory (at most N).
    pub slice: Option<u32>,
    /// Sliced ELL: lanes per ELL group, each group padded to its longest lane (divides
    /// `workgroup`). 8 lanes of 4-byte words read one 32-byte sector per step; the
    /// subgroup's loop runs to its longest lane whatever the grouping, so smaller groups
    /// only save padding bytes.
    pub ell_lanes: u32,
    /// Sliced ELL: when every weight of every layer is one value per layer (the challenge's
    /// 1/16), drop the weights, pack two u16 positions per word and multiply each sum by the
    /// value at the end (the same f32 sums up to order; the product is exact when the value
    /// is a power of two).
    pub pack_uniform: bool,
    /// Sliced ELL: detect rows whose output is one value c over all N columns and, in the
    /// next layer, compute a tile whose rows are all constant as c·colsum(W) with no
    /// staging and no gather (exact algebra: y·W = c·1ᵀW; only the order of the f32 sums
    /// differs). Saturated networks (the challenge's) reach such rows after a few layers.
    /// The dense-rows path ignores it.
    pub constant_rows: bool,
    /// Sliced ELL with constant rows: a layer whose column sums are all one value s maps a
    /// constant row c·1 to f(c·s)·1, so a constant row whose next layer is such leaves the
    /// active list and is carried as one scalar per layer (no tile, no gather) until the
    /// first layer that is not, where it rejoins. Exact algebra (the same f32 as the
    /// constant-row fast path). Ignored without `constant_rows`.
    pub scalar_rows: bool,
    /// Sliced ELL: sum each (output, slice)'s gathers in registers of their own and add the
    /// sum to the output's accumulator once per slice, instead of adding each gather to the
    /// accumulator (indexed by output and row vector, which a compiler may keep in memory).
    /// The same sums up to the order of the f32 additions.
    pub slice_sums: bool,
    /// Sliced ELL: load the bounds of all T output segments of a slice up front and run one
    /// loop over the longest, each turn issuing one gather per output still within its
    /// segment (T loads in flight instead of one). Each output adds its gathers in the same
    /// order, so the same f32 sums as one segment after another. On by default (the H200's
    /// fastest at every N); refused together with `slice_sums`.
    pub segments_together: bool,
    /// Sliced ELL with `segments_together`: load the next slice's segment bounds before the
    /// barrier that ends a slice (slice 0's before its staging), so their round trip
    /// overlaps the barrier and the staging. The same sums; on by default (6% faster at
    /// N = 16,384 on the H200); no effect without `segments_together`.
    pub prefetch_bounds: bool,
    /// Sliced ELL: input columns each invocation stages per turn (1..=[`MAX_UNROLL`]): all
    /// their loads are issued before any store, U·4·RV loads in flight instead of 4·RV.
    /// 1 stages one column a turn. The same staged values, so the same sums.
    pub stage_unroll: u32,
    /// Dense rows: active rows per workgroup of `spdnn.layer` (1..=8): each weight slot
    /// loaded serves them all.
    pub rows_per_workgroup: u32,
    /// Dense rows: stage each workgroup's rows in workgroup memory: `None` stages when they
    /// fit.
    pub stage: Option<bool>,
    /// Most rows per chunk (each chunk's dense Y must fit one storage binding, which caps it
    /// further); `None` takes the binding's limit.
    pub chunk_rows: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            approach: Approach::Auto,
            workgroup: None,
            // The fastest tiling of the H200 sweep at N = 4,096 and 16,384 (BENCHMARKS.md):
            // 8 outputs per invocation over 4 rows, whose narrow staging leaves the widest slices.
            outputs_per_invocation: 8,
            row_vecs: 1,
            slice: None,
            ell_lanes: 8,
            pack_uniform: true,
            constant_rows: true,
            scalar_rows: true,
            slice_sums: false,
            segments_together: true,
            prefetch_bounds: true,
            stage_unroll: 1,
            rows_per_workgroup: 4,
            stage: None,
            chunk_rows: None,
        }
    }
}

impl Options {
    /// The invocations per workgroup a plan on `gpu` uses: the ones asked for, else 1,024
    /// for sliced ELL (the H200 sweep's fastest at N = 1,024 and 16,384, within 4% of the
    /// fastest at 4,096: wider blocks stage each input slice for fewer workgroups) and 256
    /// for dense rows, each at most the device's limit.
    pub fn workgroup_on(&self, gpu: &Gpu) -> u32 {
        let default = match self.approach.resolve() {
            Approach::DenseRows => 256,
            _ => 1024,
        };
        self.workgroup
            .unwrap_or_else(|| default.min(gpu.caps.max_invocations_per_workgroup))
    }
}

/// Rows whose entries are not all zero, 0-based, increasing (the categories of `y`).
pub fn nonzero_rows(y: &Csr) -> Vec<u32> {
    (0..y.nrows)
        .filter(|&i| y.row_range(i).any(|e| y.values[e] != 0.0))
        .map(|i| i as u32)
        .collect()
}

/// Edges per second of an inference of `rows` inputs through `net` in `seconds`.
pub fn edges_per_second(net: &Network, rows: usize, seconds: f64) -> f64 {
    rows as f64 * net.edges() as f64 / seconds
}

/// Runs the whole inference once on the GPU (plan, record, submit, read the categories).
pub fn infer(gpu: &Gpu, net: &Network, y0: &Csr, options: &Options) -> Result<Inference> {
    let plan = Plan::new(gpu, net, y0, options)?;
    let time: GpuTime = {
        let mut batch = Batch::new(gpu);
        plan.record(&mut batch)?;
        batch.submit_timed()?
    };
    Ok(Inference {
        categories: plan.categories(gpu)?,
        seconds: time.seconds,
        from_timestamps: time.from_timestamps,
    })
}
