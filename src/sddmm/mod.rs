//! SDDMM, P = S ∘ (A·Bᵀ): for every nonzero (i, j) of sparse S (M×N),
//! P_ij = S_ij · Σ_k A_ik·B_jk, with A dense M×K and B dense N×K. The output has S's pattern.
//!
//! Variants (cuSDDMM, Nisa et al.): [`Variant::Naive`] (one invocation per nonzero),
//! [`Variant::Warp`] (a virtual subgroup per nonzero), [`Variant::SmL2`] (column panels,
//! active rows of A in workgroup memory, B through L2) and [`Variant::SmSm`] (dense S: A and
//! B tiles both in workgroup memory), and [`Variant::RowRun`] (a virtual subgroup per run of
//! one row's nonzeros, that row of A held in registers). [`Variant::Auto`] picks by density and the tile-size
//! model ([`model`]). A [`Plan`] does the tiling once; `run` reuses it with new A and B.

mod arrays;
mod breakdown;
/// Row bands, shared with the other systems ([`crate::sparse::bands`]).
pub use crate::sparse::bands;
mod config;
pub mod cpu;
mod device_build;
mod kernels;
pub mod model;
pub mod multi;
mod multi_iter;
pub mod partition;
mod readback;
mod resident;
pub mod runs;
pub mod suite;
pub mod sweep;
pub mod tiles;
pub mod trips;
pub mod tune;

use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::gpu::{Batch, Gpu, GpuBuffer, GpuTime};
use crate::sparse::{Csr, Dense, GpuCsr, GpuDense};
use crate::{Error, Result};

pub use breakdown::Breakdown;
pub use config::Config;
pub use multi::MultiPlan;
pub use partition::Cut;
pub use readback::ReadMode;
pub use resident::{Resident, WriteMode};

/// Which kernel computes the SDDMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Variant {
    /// SM-SM above the density threshold, SM-L2 below, with model (or tuned) tile sizes.
    Auto,
    /// One invocation per nonzero.
    Naive,
    /// A virtual subgroup of `vws` lanes per nonzero.
    Warp,
    /// Column panels; A rows in workgroup memory, B through L2.
    SmL2,
    /// Row × column tiles; A and B slices in workgroup memory.
    SmSm,
    /// A virtual subgroup per run of one row's nonzeros; the row of A in registers, B
    /// streamed through L2.
    RowRun,
}

impl Variant {
    /// All concrete variants.
    pub const CONCRETE: [Variant; 5] = [
        Variant::Naive,
        Variant::Warp,
        Variant::SmL2,
        Variant::SmSm,
        Variant::RowRun,
    ];

    /// The kernel name (`sddmm.naive`, …).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Auto => "sddmm.auto",
            Variant::Naive => "sddmm.naive",
            Variant::Warp => "sddmm.warp",
            Variant::SmL2 => "sddmm.sm_l2",
            Variant::SmSm => "sddmm.sm_sm",
            Variant::RowRun => "sddmm.row_run",
        }
    }
}

/// Whether to compute on Sᵀ with the roles of A and B swapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Transpose {
    /// Stream along the smaller of M and N: transpose when M > N.
    Auto,
    /// Never transpose.
    Never,
    /// Always transpose.
    Always,
}

/// SDDMM options; `None` fields come from the model.
#[derive(Clone, Debug)]
pub struct Options {
    /// The kernel.
    pub variant: Variant,
    /// Column-panel width (SM-L2) or column-tile width (SM-SM).
    pub tj: Option<usize>,
    /// k-slice width (floats; rounded up to a multiple of 8).
    pub tk: Option<usize>,
    /// Rows per workgroup (SM-L2: active rows; SM-SM: row-panel height).
    pub ti: Option<usize>,
    /// SM-L2: most nonzeros per workgroup (heavier rows are split over workgroups).
    /// Row-run: most nonzeros per run (rounded up to a multiple of `vws`).
    pub block_nnz: Option<usize>,
    /// Lanes per nonzero (power of two, 1–32).
    pub vws: Option<u32>,
    /// Warp and SM-L2: nonzeros each virtual subgroup takes per step, 1–4 (default 1); their
    /// loads are issued together.
    pub unroll: Option<u32>,
    /// Invocations per workgroup.
    pub workgroup: Option<u32>,
    /// 16-bit tile-relative index compression for SM-L2 (when Tj and Ti fit 16 bits).
    pub compress: bool,
    /// Streaming direction.
    pub transpose: Transpose,
    /// Cache size C for the Tj model (bytes); default [`crate::Caps::l2_bytes`], the
    /// paper's L2.
    pub cache_bytes: Option<u64>,
    /// Density above which `Auto` takes SM-SM (the paper's 5%).
    pub dense_threshold: f64,
    /// Build the plan on the device instead of the host: the SM-L2 and SM-SM tilings
    /// (bucket counts and placement on the GPU, blocks cut on the host from the counts; no
    /// transpose of S is built) and the naive and warp kernels' row index per nonzero. A
    /// tiling with more buckets than about one per nonzero stays on the host. `None`: on the
    /// device unless it is a CPU, where the host's own code is faster.
    pub build_on_device: Option<bool>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            variant: Variant::Auto,
            tj: None,
            tk: None,
            ti: None,
            block_nnz: None,
            vws: None,
            unroll: None,
            workgroup: None,
            compress: true,
            transpose: Transpose::Auto,
            cache_bytes: None,
            dense_threshold: 0.05,
            build_on_device: None,
        }
    }
}

/// Checks that A is M×K and B is N×K for S M×N (`s` = (M, N, K)).
pub(crate) fn check_shapes(
    s: (usize, usize, usize),
    a: (usize, usize),
    b: (usize, usize),
) -> Result<()> {
    let (m, n, k) = s;
    if a != (m, k) || b != (n, k) {
        return Err(Error::Shape(format!(
            "SDDMM on S {m}×{n} with K = {k} needs A {m}×{k} and B {n}×{k}, got A {}×{} and B {}×{}",
            a.0, a.1, b.0, b.1
        )));
    }
    Ok(())
}

/// Device row offsets and column indices of S.
type PatternBuffers = (Arc<GpuBuffer<u32>>, Arc<GpuBuffer<u32>>);

/// A prepared SDDMM on one sparsity pattern: tiling and device arrays built once.
pub struct Plan {
    /// Rows of S (= rows of A).
    pub nrows: usize,
    /// Columns of S (= rows of B).
    pub ncols: usize,
    /// K, the inner dimension.
    pub k: usize,
    /// Nonzeros of S.
    pub nnz: usize,
    /// The resolved configuration.
    pub config: Config,
    bands: Vec<kernels::PreparedBand>,
    /// S's pattern on the host; uploaded on the first [`Plan::run_new`] only, so plans that
    /// write into caller buffers (every tuning candidate) never pay for it.
    host_pattern: Arc<(Vec<u32>, Vec<u32>)>,
    pattern: OnceLock<PatternBuffers>,
}

impl Plan {
    /// Validates `s`, resolves the variant and tile sizes, builds the tiling and uploads it.
    pub fn new(gpu: &Gpu, s: &Csr, k: usize, options: Options) -> Result<Plan> {
        s.validate()?;
        Self::build(gpu, s, k, options, None)
    }

    /// [`Plan::new`] for the same `s` that `like` was built from, reusing `like`'s device
    /// arrays when both lay S out alike: naive and warp plans share S's COO arrays, SM-L2
    /// plans with equal Tj, Ti, block size, compression and direction share one tiling, SM-SM
    /// plans with equal Ti, Tj and direction too. Trying other vws, unroll, workgroup sizes
    /// (or SM-SM slice widths) then costs no upload. `s` is not re-validated; a `like` of
    /// another shape is ignored (the plan is then built from scratch).
    pub fn new_like(gpu: &Gpu, s: &Csr, k: usize, options: Options, like: &Plan) -> Result<Plan> {
        if (like.nrows, like.ncols, like.nnz) != (s.nrows, s.ncols, s.nnz()) {
            return Self::new(gpu, s, k, options);
        }
        Self::build(gpu, s, k, options, Some(like))
    }

    /// [`Plan::new`] without validating `s` (the caller has), sharing what it can with
    /// `like`, a plan of the same `s` (see [`Plan::new_like`]; one of another shape is
    /// ignored).
    pub(crate) fn build(
        gpu: &Gpu,
        s: &Csr,
        k: usize,
        options: Options,
        like: Option<&Plan>,
    ) -> Result<Plan> {
        let like = like.filter(|l| (l.nrows, l.ncols, l.nnz) == (s.nrows, s.ncols, s.nnz()));
        let config = config::resolve(gpu, s, k, &options)?;
        let bands = kernels::prepare(gpu, s, &config, like)?;
        Ok(Plan {
            nrows: s.nrows,
            ncols: s.ncols,
            k,
            nnz: s.nnz(),
            config,
            bands,
            host_pattern: like.map_or_else(
                || Arc::new((s.row_ptr.clone(), s.col_idx.clone())),
                |l| l.host_pattern.clone(),
            ),
            pattern: OnceLock::new(),
        })
    }

    fn check_operands(&self, a: &GpuDense, b: &GpuDense, out: &GpuBuffer<f32>) -> Result<()> {
        check_shapes(
            (self.nrows, self.ncols, self.k),
            (a.nrows, a.ncols),
            (b.nrows, b.ncols),
        )?;
        if out.len() != self.nnz {
            return Err(Error::Shape(format!(
                "SDDMM output holds {} values, S has {} nonzeros",
                out.len(),
                self.nnz
            )));
        }
        Ok(())
    }

    /// Records the SDDMM into `batch`, writing P's values (CSR order of S) into `out`.
    pub fn record(
        &self,
        batch: &mut Batch,
        a: &GpuDense,
        b: &GpuDense,
        out: &GpuBuffer<f32>,
    ) -> Result<()> {
        self.check_operands(a, b, out)?;
        if self.nnz == 0 {
            return Ok(());
        }
        kernels::record(&self.bands, &self.config, batch, a, b, out)
    }

    /// Runs on device-resident operands into `out` and waits.
    pub fn run(&self, gpu: &Gpu, a: &GpuDense, b: &GpuDense, out: &GpuBuffer<f32>) -> Result<()> {
        let mut batch = Batch::new(gpu);
        self.record(&mut batch, a, b, out)?;
        batch.submit()
    }

    /// Runs and returns P as a new device CSR matrix sharing S's pattern (uploaded once,
    /// on the first call, and shared by every P this plan returns).
    pub fn run_new(&self, gpu: &Gpu, a: &GpuDense, b: &GpuDense) -> Result<GpuCsr> {
        let (row_ptr, col_idx) = match self.pattern.get() {
            Some(p) => p.clone(),
            None => {
                let (rp, ci) = &*self.host_pattern;
                let p = (
                    Arc::new(GpuBuffer::upload(gpu, "sddmm.row_ptr", rp)?),
                    Arc::new(GpuBuffer::upload(gpu, "sddmm.col_idx", ci)?),
                );
                self.pattern.get_or_init(|| p).clone()
            }
        };
        let values = GpuBuffer::zeroed(gpu, "sddmm.out", self.nnz)?;
        self.run(gpu, a, b, &values)?;
        Ok(GpuCsr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Uploads host operands, runs, and reads P's values back (CSR order of S).
    pub fn run_host(&self, gpu: &Gpu, a: &Dense, b: &Dense) -> Result<Vec<f32>> {
        let (ga, gb) = (GpuDense::upload(gpu, a)?, GpuDense::upload(gpu, b)?);
        let out = GpuBuffer::filled(gpu, "sddmm.out", self.nnz, f32::NAN)?;
        self.run(gpu, &ga, &gb, &out)?;
        out.read(gpu)
    }

    /// GPU time of one SDDMM: the median of `reps` timed submissions after a warm-up of
    /// [`crate::gpu::WARM_UP_SECONDS`] ([`crate::gpu::COLD_WARM_UP_SECONDS`] after idling;
    /// see [`crate::gpu::median_warm`]).
    pub fn time(
        &self,
        gpu: &Gpu,
        a: &GpuDense,
        b: &GpuDense,
        out: &GpuBuffer<f32>,
        reps: usize,
    ) -> Result<GpuTime> {
        crate::gpu::median_warm(gpu, reps, || {
            let mut batch = Batch::new(gpu);
            self.record(&mut batch, a, b, out)?;
            batch.submit_timed()
        })
    }

    /// Row bands the plan runs as (one dispatch each): 1 unless S's nonzeros or A exceed
    /// one storage binding (see [`bands`]).
    pub fn n_bands(&self) -> usize {
        self.bands.len()
    }

    /// Floating-point operations of one SDDMM as the paper counts them: 2·K·nnz.
    pub fn flops(&self) -> f64 {
        2.0 * self.k as f64 * self.nnz as f64
    }
}
