//! Measuring SDDMM configurations (shared by the sweep), the autotuner and its per-adapter
//! cache of the variant, Tk, vws, unroll and workgroup size.

use std::path::PathBuf;

use serde::Serialize;

use crate::gpu::{Gpu, GpuBuffer};
use crate::sddmm::{cpu, Config, Options, Plan, Variant};
use crate::sparse::{Csr, Dense, GpuDense};
use crate::tune::{Finalists, TuneCache};
use crate::{Error, Result};

/// Device operands reused across measurements, with their host copies for checking.
pub struct Operands {
    /// Host A (M×K).
    pub a_host: Dense,
    /// Host B (N×K).
    pub b_host: Dense,
    /// Device A.
    pub a: GpuDense,
    /// Device B.
    pub b: GpuDense,
    /// Output, one value per nonzero.
    pub out: GpuBuffer<f32>,
}

impl Operands {
    /// Random A and B (uniform in ±1, seeded) for S and K, uploaded, and an output buffer.
    pub fn random(gpu: &Gpu, s: &Csr, k: usize, seed: u64) -> Result<Self> {
        Self::check_fits(gpu, s.nrows, s.ncols, s.nnz(), k)?;
        let a_host = crate::gen::dense_uniform(s.nrows, k, seed);
        let b_host = crate::gen::dense_uniform(s.ncols, k, seed ^ 0x9e37_79b9);
        Ok(Operands {
            a: GpuDense::upload(gpu, &a_host)?,
            b: GpuDense::upload(gpu, &b_host)?,
            out: GpuBuffer::zeroed(gpu, "sddmm.out", s.nnz())?,
            a_host,
            b_host,
        })
    }
}

impl Operands {
    /// Fails with [`Error::TooLarge`] or [`Error::HostMemory`] when A (M×K), B (N×K) or the
    /// output for an M×N S with `nnz` nonzeros would not fit the device's buffers or the host
    /// budget: checked before anything is allocated, from the sizes alone (a Matrix Market
    /// size line is enough, see [`crate::io::read_matrix_market_size`]).
    pub fn check_fits(gpu: &Gpu, nrows: usize, ncols: usize, nnz: usize, k: usize) -> Result<()> {
        let stride = crate::sparse::GpuDense::stride_for(k);
        for (name, rows) in [("A", nrows), ("B", ncols)] {
            let what = format!("dense {name} ({rows}×{k})");
            let len = rows.checked_mul(stride).ok_or_else(|| Error::TooLarge {
                what: what.clone(),
                needed: format!("{rows}×{stride} floats"),
                limit: "usize::MAX elements".into(),
            })?;
            GpuBuffer::<f32>::check_fits(gpu, &what, len)?;
            // The host copy and its padded twin for the upload.
            let host = crate::limits::bytes_of::<f32>(&what, len)?;
            crate::limits::check_host(&what, host.saturating_mul(2))?;
        }
        // One operand is bound whole (only S and the other are split into bands): B, or A
        // when S is transposed, so the smaller of the two must fit one binding.
        let whole = (nrows.min(ncols) as u64).saturating_mul(stride as u64 * 4);
        let binding = gpu.caps.max_storage_binding_bytes;
        if whole > binding {
            return Err(Error::TooLarge {
                what: format!(
                    "the operand bound whole (the smaller of A and B, {}×{k})",
                    nrows.min(ncols)
                ),
                needed: format!("{whole} bytes in one storage binding"),
                limit: format!("{binding} bytes on {}", gpu.caps.adapter_name),
            });
        }
        GpuBuffer::<f32>::check_fits(gpu, "SDDMM output (one value per nonzero)", nnz)
    }
}

/// The twin's values at a sample of nonzeros (all of them when `max` ≥ nnz).
pub struct Reference {
    idx: Vec<usize>,
    want: Vec<f64>,
    mag: Vec<f64>,
    k: usize,
}

impl Reference {
    /// Computes the f64 twin at up to `max` nonzeros spread evenly over S.
    pub fn sampled(s: &Csr, ops: &Operands, max: usize) -> Self {
        let nnz = s.nnz();
        let step = nnz.div_ceil(max.max(1)).max(1);
        let k = ops.a_host.ncols;
        let (mut idx, mut want, mut mag) = (vec![], vec![], vec![]);
        for e in (0..nnz).step_by(step) {
            let i = s.row_ptr.partition_point(|&p| p as usize <= e) - 1;
            let j = s.col_idx[e] as usize;
            let (dot, abs) = cpu::dot_and_magnitude(ops.a_host.row(i), ops.b_host.row(j));
            let v = s.values[e] as f64;
            idx.push(e);
            want.push(v * dot);
            mag.push(v.abs() * abs);
        }
        Reference { idx, want, mag, k }
    }

    /// Compares a full output with the sampled reference.
    pub fn compare(&self, got: &[f32]) -> cpu::Comparison {
        let picked: Vec<f32> = self.idx.iter().map(|&e| got[e]).collect();
        cpu::compare(&picked, &self.want, &self.mag, self.k)
    }
}

/// One timed configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    /// Kernel name.
    pub kernel: &'static str,
    /// The configuration that ran.
    pub config: Config,
    /// Median GPU time, milliseconds.
    pub ms: f64,
    /// 2·K·nnz / time, GFLOP/s.
    pub gflops: f64,
    /// Effective bandwidth, GB/s: (A and B read once, (M+N)·stride·4 bytes, plus 16 bytes
    /// per nonzero for its index words, value and output) / time.
    pub gbps: f64,
    /// Timing source.
    pub timing: &'static str,
    /// Max error relative to |S|Σ|A·B| against the twin, when checked.
    pub max_rel_error: Option<f64>,
    /// Plan (tiling + upload) time on the host, milliseconds.
    pub plan_ms: f64,
    /// Row bands (dispatches) the plan runs as.
    pub bands: usize,
}

/// Builds a plan for `options`, times it (median of `reps`) and optionally checks it. A
/// failed check is an [`Error::Check`]: a wrong kernel is never reported as fast.
pub fn measure(
    gpu: &Gpu,
    s: &Csr,
    ops: &Operands,
    options: &Options,
    reps: usize,
    reference: Option<&Reference>,
) -> Result<Measurement> {
    s.validate()?;
    Ok(measure_valid(gpu, s, ops, options, reps, reference, None)?.0)
}

/// [`measure`] on an `s` the caller has validated (the sweep measures dozens of plans of
/// one S), sharing `like`'s arrays where the layouts agree (see [`Plan::new_like`]); returns
/// the plan too.
pub(crate) fn measure_valid(
    gpu: &Gpu,
    s: &Csr,
    ops: &Operands,
    options: &Options,
    reps: usize,
    reference: Option<&Reference>,
    like: Option<&Plan>,
) -> Result<(Measurement, Plan)> {
    let k = ops.a.ncols;
    let t0 = std::time::Instant::now();
    let plan = Plan::build(gpu, s, k, options.clone(), like)?;
    let plan_ms = t0.elapsed().as_secs_f64() * 1e3;
    let m = measure_plan(gpu, s, &plan, ops, reps, reference, plan_ms)?;
    Ok((m, plan))
}

pub(crate) fn measure_plan(
    gpu: &Gpu,
    s: &Csr,
    plan: &Plan,
    ops: &Operands,
    reps: usize,
    reference: Option<&Reference>,
    plan_ms: f64,
) -> Result<Measurement> {
    let mut max_rel_error = None;
    if let Some(r) = reference {
        ops.out.fill(gpu, f32::NAN)?;
        plan.run(gpu, &ops.a, &ops.b, &ops.out)?;
        let cmp = r.compare(&ops.out.read(gpu)?);
        if !cmp.ok() {
            return Err(Error::Check {
                kernel: plan.config.variant.name().into(),
                message: format!(
                    "config {:?}: max relative error {:.3e} above {:.3e}",
                    plan.config, cmp.max_rel_error, cmp.tolerance
                ),
            });
        }
        max_rel_error = Some(cmp.max_rel_error);
    }
    let t = plan.time(gpu, &ops.a, &ops.b, &ops.out, reps)?;
    let k_bytes = (s.nrows + s.ncols) as f64 * plan.config.stride as f64 * 4.0;
    let s_bytes = s.nnz() as f64 * 16.0;
    Ok(Measurement {
        kernel: plan.config.variant.name(),
        config: plan.config.clone(),
        ms: t.ms(),
        gflops: plan.flops() / t.seconds / 1e9,
        gbps: (k_bytes + s_bytes) / t.seconds / 1e9,
        timing: t.source(),
        max_rel_error,
        plan_ms,
        bands: plan.n_bands(),
    })
}

/// SDDMM's autotune cache (`sddmm-tune.json`, see [`TuneCache`]).
pub fn cache() -> Option<TuneCache> {
    TuneCache::named("sddmm-tune.json")
}

/// Where tuned configurations are kept: `$WGSPARSE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/wgsparse`, else `~/.cache/wgsparse`.
pub fn cache_path() -> Option<PathBuf> {
    cache().map(|c| c.path().to_path_buf())
}

/// The cache key: adapter, variant and a shape bucket (log₂ of M, N, nnz; K exactly).
fn cache_key(gpu: &Gpu, variant: Variant, s: &Csr, k: usize) -> String {
    let lg = |x: usize| usize::BITS - x.max(1).leading_zeros();
    format!(
        "{}|{}|m{}|n{}|nnz{}|k{}",
        gpu.caps.adapter_name,
        variant.name(),
        lg(s.nrows),
        lg(s.ncols),
        lg(s.nnz()),
        k
    )
}

#[derive(Clone, Copy, Debug, serde::Deserialize, Serialize)]
struct Tuned {
    variant: Variant,
    tk: usize,
    vws: u32,
    #[serde(default = "one")]
    unroll: u32,
    workgroup: u32,
    /// Row-run: most nonzeros per run (absent for the other variants).
    #[serde(default)]
    run_len: Option<usize>,
    /// Row-run: the column-panel width.
    #[serde(default)]
    run_tj: Option<usize>,
}

fn one() -> u32 {
    1
}

/// The candidates the autotuner times: for `Auto`, the model's tiled variant over Tk × vws
/// plus the untiled kernels (whichever is fastest on this adapter and shape wins); for a
/// concrete variant, its own Tk × vws. Options the caller set are kept.
fn candidates(
    options: &Options,
    tiled: Variant,
    k: usize,
    ncols: usize,
    caps_l2: u64,
) -> Vec<Options> {
    let keep = |o: Options| Options {
        tk: options.tk.or(o.tk),
        vws: options.vws.or(o.vws),
        ..o
    };
    // Each tiled candidate re-tiles S (seconds on large matrices), so the tiled variant is
    // timed at the model's Tk and at one slice of the whole padded K, with the default vws.
    let mut out = Vec::new();
    let tiled_variant = if options.variant == Variant::Auto {
        tiled
    } else {
        options.variant
    };
    let stride = crate::sparse::GpuDense::stride_for(k);
    if tiled_variant != Variant::RowRun {
        for tk in [None, Some(stride)] {
            out.push(keep(Options {
                variant: tiled_variant,
                tk,
                ..options.clone()
            }));
        }
    }
    // Row runs over lane counts (those that would hold too much of A per lane are skipped),
    // in the model's column panels, in panels half as wide and in one panel.
    if matches!(options.variant, Variant::Auto | Variant::RowRun) {
        let model_tj = crate::sddmm::model::row_run_panel_width(
            options.cache_bytes.unwrap_or(caps_l2),
            stride,
            ncols,
        );
        let half = (model_tj / 2).max(1);
        for tj in [options.tj, Some(half), Some(usize::MAX)] {
            for vws in [4u32, 8, 16] {
                out.push(keep(Options {
                    variant: Variant::RowRun,
                    tj,
                    vws: Some(vws),
                    ..options.clone()
                }));
            }
        }
    }
    if options.variant == Variant::Auto {
        out.push(Options {
            variant: Variant::Naive,
            ..options.clone()
        });
        for vws in [2u32, 4, 8, 16, 32] {
            out.push(keep(Options {
                variant: Variant::Warp,
                vws: Some(vws),
                ..options.clone()
            }));
        }
    }
    out
}

/// The candidates [`tune`] times for `options` on S and K, in the order it times them.
pub fn candidate_options(gpu: &Gpu, s: &Csr, k: usize, options: &Options) -> Result<Vec<Options>> {
    let tiled = crate::sddmm::config::resolve(gpu, s, k, options)?.variant;
    Ok(candidates(options, tiled, k, s.ncols, gpu.caps.l2_bytes))
}

/// Times the autotuner's candidates for `options` (see [`autotuned_plan`]) on `ops` and
/// returns the fastest with its measurement. S is validated once, and each candidate shares
/// the arrays of the one before when their layouts agree (naive and warp one upload of S;
/// SM-SM one tiling for both slice widths), so tuning costs kernel runs, not uploads.
///
/// Each candidate is first timed on its own (screening); the fastest few are then timed again
/// in turn ([`Finalists::decide`]), and the lowest median of those runs wins.
pub fn tune(
    gpu: &Gpu,
    s: &Csr,
    k: usize,
    options: &Options,
    ops: &Operands,
) -> Result<(Measurement, Plan)> {
    s.validate()?;
    let tiled = crate::sddmm::config::resolve(gpu, s, k, options)?.variant;
    // The fastest candidates so far, fastest first.
    let mut finalists: Finalists<(Measurement, Plan)> = Finalists::default();
    // The plan built last when it is not a finalist.
    let mut last: Option<Plan> = None;
    for o in candidates(options, tiled, k, s.ncols, gpu.caps.l2_bytes) {
        let like = last.as_ref().or(finalists.first().map(|(_, p)| p));
        let t0 = std::time::Instant::now();
        let plan = match Plan::build(gpu, s, k, o, like) {
            Ok(p) => p,
            Err(Error::Option(_)) => continue,
            Err(e) => return Err(e),
        };
        let plan_ms = t0.elapsed().as_secs_f64() * 1e3;
        let m = measure_plan(gpu, s, &plan, ops, 3, None, plan_ms)?;
        last = finalists.offer(m.ms, (m, plan)).map(|(_, p)| p);
    }
    let ((mut m, plan), seconds) = finalists
        .decide(gpu, |(_, plan)| {
            let mut batch = crate::gpu::Batch::new(gpu);
            plan.record(&mut batch, &ops.a, &ops.b, &ops.out)?;
            batch.submit_timed()
        })?
        .ok_or_else(|| Error::Option("no configuration fits this adapter".into()))?;
    let scale = m.ms / (seconds * 1e3);
    m.ms = seconds * 1e3;
    m.gflops *= scale;
    m.gbps *= scale;
    Ok((m, plan))
}

/// A plan for `options` tuned on this adapter: the variant (for `Auto`), Tk, vws and the
/// workgroup size come from the autotune cache for this adapter and shape bucket; on a miss
/// the candidates are timed on random operands (model Tj), the winner's configuration is
/// stored atomically and the winning plan returned.
pub fn autotuned_plan(gpu: &Gpu, s: &Csr, k: usize, options: &Options) -> Result<Plan> {
    autotuned_plan_with(gpu, s, k, options, None)
}

/// [`autotuned_plan`] timing the candidates on the caller's operands when given (saves
/// uploading random ones).
pub fn autotuned_plan_with(
    gpu: &Gpu,
    s: &Csr,
    k: usize,
    options: &Options,
    operands: Option<&Operands>,
) -> Result<Plan> {
    if options.variant == Variant::Naive || s.nnz() == 0 {
        return Plan::new(gpu, s, k, options.clone());
    }
    let key = cache_key(gpu, options.variant, s, k);
    let cache = cache();
    let tuned = match cache.as_ref().and_then(|c| c.get::<Tuned>(&key)) {
        Some(t) => t,
        None => {
            let own;
            let ops = match operands {
                Some(ops) => ops,
                None => {
                    own = Operands::random(gpu, s, k, 0x5eed)?;
                    &own
                }
            };
            let (b, plan) = tune(gpu, s, k, options, ops)?;
            let t = Tuned {
                variant: b.config.variant,
                tk: b.config.tk,
                vws: b.config.vws,
                unroll: b.config.unroll,
                workgroup: b.config.workgroup,
                run_len: (b.config.variant == Variant::RowRun).then_some(b.config.block_nnz),
                run_tj: (b.config.variant == Variant::RowRun).then_some(b.config.tj),
            };
            // A cache that cannot be written costs a re-tune next time, not this run.
            if let Some(Err(e)) = cache.map(|c| c.insert(&key, &t)) {
                eprintln!("wgsparse: warning: the tuned configuration was not cached: {e}");
            }
            return Ok(plan);
        }
    };
    let untiled = matches!(
        tuned.variant,
        Variant::Naive | Variant::Warp | Variant::RowRun
    );
    Plan::new(
        gpu,
        s,
        k,
        Options {
            variant: tuned.variant,
            tk: if untiled {
                None
            } else {
                options.tk.or(Some(tuned.tk))
            },
            vws: options.vws.or(Some(tuned.vws)),
            unroll: options.unroll.or(Some(tuned.unroll)),
            workgroup: options.workgroup.or(Some(tuned.workgroup)),
            block_nnz: options.block_nnz.or(tuned.run_len),
            tj: options.tj.or(tuned.run_tj),
            ..options.clone()
        },
    )
}
