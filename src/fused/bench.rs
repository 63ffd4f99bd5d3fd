//! Measuring the pattern: the benchmark inputs of the issue (generated, so the NVIDIA machine
//! needs no data files), random operands, one timed and optionally checked measurement, and
//! the launch-configuration sweep that reports the model's distance to the best.

use serde::Serialize;

use crate::fused::{Config, HostOp, Matrix, Op, Options, Pattern, Plan, Variant};
use crate::gen;
use crate::gpu::{Gpu, GpuBuffer, WarmUp};
use crate::sparse::{Csr, Dense};
use crate::{Error, Result};

/// A benchmark input: sparse or dense X.
pub enum Input {
    /// Sparse X.
    Sparse(Csr),
    /// Dense X.
    Dense(Dense),
}

impl Input {
    /// X as a [`Matrix`].
    pub fn matrix(&self) -> Matrix<'_> {
        match self {
            Input::Sparse(x) => Matrix::Sparse(x),
            Input::Dense(x) => Matrix::Dense(x),
        }
    }
}

/// The named inputs: `sparse-200`, `sparse-1024`, `sparse-4096` (500,000 rows at density
/// 0.01, power-law rows and columns), `kdd2010` (15,009,374 × 29,890,095 with 423,865,484
/// power-law nonzeros), `dense-32`, `dense-200`, `dense-1000`, `dense-2000` (500,000 rows),
/// `higgs` (11,000,000 × 28 dense) and `demo` (20,000 × 500 at 1%). `scale` multiplies the
/// number of rows (and nonzeros).
pub const NAMES: [&str; 10] = [
    "sparse-200",
    "sparse-1024",
    "sparse-4096",
    "kdd2010",
    "dense-32",
    "dense-200",
    "dense-1000",
    "dense-2000",
    "higgs",
    "demo",
];

/// Generates the named input (see [`NAMES`]) with rows scaled by `scale`.
pub fn generate(name: &str, scale: f64, seed: u64) -> Result<Input> {
    if !(scale > 0.0 && scale <= 1.0) {
        return Err(Error::Option(format!("scale {scale} must be in (0, 1]")));
    }
    let rows = |m: usize| ((m as f64 * scale).round() as usize).max(1);
    let sparse = |m: usize, n: usize, nnz: usize| -> Result<Input> {
        let m = rows(m);
        let nnz = ((nnz as f64 * scale).round() as usize).clamp(1, m * n);
        Ok(Input::Sparse(gen::power_law(m, n, nnz, 1.1, seed)?))
    };
    let dense = |m: usize, n: usize| Input::Dense(gen::dense_uniform(rows(m), n, seed));
    match name {
        "sparse-200" => sparse(500_000, 200, 1_000_000),
        "sparse-1024" => sparse(500_000, 1024, 5_120_000),
        "sparse-4096" => sparse(500_000, 4096, 20_480_000),
        "kdd2010" => sparse(15_009_374, 29_890_095, 423_865_484),
        "dense-32" => Ok(dense(500_000, 32)),
        "dense-200" => Ok(dense(500_000, 200)),
        "dense-1000" => Ok(dense(500_000, 1000)),
        "dense-2000" => Ok(dense(500_000, 2000)),
        "higgs" => Ok(dense(11_000_000, 28)),
        "demo" => sparse(20_000, 500, 100_000),
        _ => Err(Error::Option(format!(
            "unknown input {name:?}; one of {}",
            NAMES.join(", ")
        ))),
    }
}

/// Random operands of one pattern on an m×n X, on the host and the device, and the output w.
pub struct Operands {
    /// The instantiation.
    pub pattern: Pattern,
    /// α (−0.75 for the patterns that scale, else 1).
    pub alpha: f32,
    /// β (1.25 for the patterns with z, else 0).
    pub beta: f32,
    host: [Vec<f32>; 3],
    y: GpuBuffer<f32>,
    v: GpuBuffer<f32>,
    z: GpuBuffer<f32>,
    /// The output, n elements.
    pub w: GpuBuffer<f32>,
}

impl Operands {
    /// Random y, v, z (uniform in [−1, 1], seeded) for `pattern` on an m×n X.
    pub fn random(gpu: &Gpu, m: usize, n: usize, pattern: Pattern, seed: u64) -> Result<Self> {
        let xty = pattern == Pattern::Xty;
        // Checked before they are drawn: n follows from the input (a LIBSVM index of 4·10⁹).
        GpuBuffer::<f32>::check_binding(gpu, "fused vector over X's columns", n)?;
        let y = gen::dense_uniform(1, if xty { m } else { n }, seed).data;
        let v = gen::dense_uniform(1, m, seed + 1).data;
        let z = gen::dense_uniform(1, n, seed + 2).data;
        Ok(Operands {
            pattern,
            alpha: if matches!(pattern, Pattern::Xty | Pattern::Full) {
                -0.75
            } else {
                1.0
            },
            beta: if pattern.has_z() { 1.25 } else { 0.0 },
            y: GpuBuffer::upload(gpu, "fused.y", &y)?,
            v: GpuBuffer::upload(gpu, "fused.v", &v)?,
            z: GpuBuffer::upload(gpu, "fused.z", &z)?,
            w: GpuBuffer::filled(gpu, "fused.w", n, f32::NAN)?,
            host: [y, v, z],
        })
    }

    /// The device operands.
    pub fn op(&self) -> Op<'_> {
        Op {
            alpha: self.alpha,
            y: &self.y,
            v: self.pattern.has_v().then_some(&self.v),
            beta: self.beta,
            z: self.pattern.has_z().then_some(&self.z),
            xty: self.pattern == Pattern::Xty,
        }
    }

    /// The host operands (for the CPU twin).
    pub fn host_op(&self) -> HostOp<'_> {
        HostOp {
            alpha: self.alpha,
            y: &self.host[0],
            v: self.pattern.has_v().then_some(&self.host[1][..]),
            beta: self.beta,
            z: self.pattern.has_z().then_some(&self.host[2][..]),
            xty: self.pattern == Pattern::Xty,
        }
    }

    /// (y, v, z) on the host.
    pub fn host_vectors(&self) -> (&[f32], &[f32], &[f32]) {
        (&self.host[0], &self.host[1], &self.host[2])
    }
}

/// The twin's result on X for some operands.
pub struct Reference {
    want: Vec<f64>,
    magnitude: Vec<f64>,
    terms: usize,
}

impl Reference {
    /// Computes the f64 twin.
    pub fn new(x: Matrix, ops: &Operands) -> Self {
        let (want, magnitude) = x.reference(&ops.host_op());
        Reference {
            want,
            magnitude,
            terms: x.rounding_terms(),
        }
    }
}

/// One measured configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    /// Kernel name (`fused.sparse`, `fused.dense`, `fused.unfused`, with `+two-pass`).
    pub kernel: String,
    /// The configuration.
    pub config: Config,
    /// Median GPU time, milliseconds.
    pub ms: f64,
    /// Least bytes the pattern moves (X once, the vectors) / time, GB/s.
    pub gbps: f64,
    /// Flops / time, GFLOP/s.
    pub gflops: f64,
    /// Largest error relative to the twin's magnitude bound, when checked.
    pub max_rel_error: Option<f64>,
    /// Timing source.
    pub timing: &'static str,
    /// The fastest and slowest timed runs, milliseconds.
    pub ms_range: (f64, f64),
    /// What the warm-up before the timed runs did (a ramp from its first run to its last is
    /// the clocks rising; a slow plan with no ramp is slow at full clocks).
    pub warm_up: WarmUp,
    /// Runs back to back in each timed submission ([`Plan::time_report`]; 1 unless asked).
    pub runs_per_submit: usize,
}

/// The kernel name of a configuration.
pub fn kernel_name(c: &Config) -> String {
    match (c.variant, c.dense) {
        (Variant::Unfused, _) => "fused.unfused".into(),
        (Variant::TwoPass, false) => "fused.sparse+two-pass".into(),
        (Variant::TwoPass, true) => "fused.dense+two-pass".into(),
        (Variant::Sorted, false) => "fused.sorted".into(),
        (Variant::Split, false) => "fused.split".into(),
        (Variant::Stream, false) => "fused.stream".into(),
        (Variant::Transpose, false) => "fused.transpose".into(),
        (_, false) => "fused.sparse".into(),
        (_, true) => "fused.dense".into(),
    }
}

/// Runs `plan` once into a poisoned w and checks it (with `reference`), then times `reps`
/// runs after warm-up and checks the last one's w too (state a plan keeps between runs, such
/// as the one-dispatch ending's accumulator, must leave every run exact). A check failure is
/// [`Error::Check`].
pub fn measure(
    gpu: &Gpu,
    plan: &Plan,
    ops: &Operands,
    reps: usize,
    reference: Option<&Reference>,
) -> Result<Measurement> {
    measure_runs(gpu, plan, ops, reps, reference, 1)
}

/// [`measure`] with `runs` runs back to back in each timed submission, the GPU kept busy
/// between them (the time per run is the submission's over `runs`).
pub fn measure_runs(
    gpu: &Gpu,
    plan: &Plan,
    ops: &Operands,
    reps: usize,
    reference: Option<&Reference>,
    runs: usize,
) -> Result<Measurement> {
    let op = ops.op();
    let kernel = kernel_name(&plan.config);
    let check = |when: &str| -> Result<f64> {
        let Some(r) = reference else { return Ok(0.0) };
        let got = ops.w.read(gpu)?;
        let cmp = crate::sddmm::cpu::compare(&got, &r.want, &r.magnitude, r.terms);
        match cmp.first_bad {
            Some(e) => Err(Error::Check {
                kernel: kernel.clone(),
                message: format!(
                    "{} ({when}): w[{e}] = {} but the f64 twin gives {} (bound {:.1e} relative \
                     to {:.3e})",
                    plan.config.describe(),
                    got[e],
                    r.want[e],
                    cmp.tolerance,
                    r.magnitude[e]
                ),
            }),
            None => Ok(cmp.max_rel_error),
        }
    };
    let mut max_rel_error = None;
    if reference.is_some() {
        ops.w.fill(gpu, f32::NAN)?;
        plan.run(gpu, &op, &ops.w)?;
        max_rel_error = Some(check("first run")?);
    }
    let runs = runs.max(1);
    let (times, warm_up) = plan.time_report(gpu, &op, &ops.w, reps.max(1), runs)?;
    let t = times[times.len() / 2];
    if reference.is_some() {
        let last = check("last timed run")?;
        max_rel_error = max_rel_error.map(|e| e.max(last));
    }
    let xty = ops.pattern == Pattern::Xty;
    Ok(Measurement {
        kernel,
        config: plan.config,
        ms: t.ms(),
        gbps: plan.min_bytes(ops.pattern.has_v(), ops.pattern.has_z()) / t.seconds / 1e9,
        gflops: plan.flops(xty) / t.seconds / 1e9,
        max_rel_error,
        timing: t.source(),
        ms_range: (times[0].ms(), times[times.len() - 1].ms()),
        warm_up,
        runs_per_submit: runs,
    })
}

/// The sweep's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    /// Every configuration measured.
    pub points: Vec<Measurement>,
    /// The fastest.
    pub best: Measurement,
    /// The launch model's configuration.
    pub model: Measurement,
    /// (model − best) / best.
    pub model_gap: f64,
}

/// Times the model's configuration and every (VS, workgroup size, C) around it (C from a
/// quarter to four times the model's; dense: TL from the VS) for the fused variant, on sparse
/// X also the column split ([`Variant::Split`]) at four workgroup sizes and the tuner's row
/// tiles, and reports the model's distance to the best. Configurations the device refuses
/// are skipped.
pub fn sweep(
    gpu: &Gpu,
    x: Matrix,
    ops: &Operands,
    base: &Options,
    reps: usize,
    mut progress: impl FnMut(&Measurement),
) -> Result<Sweep> {
    let fused = Options {
        variant: if base.variant == Variant::TwoPass {
            Variant::TwoPass
        } else {
            Variant::Fused
        },
        vs: None,
        workgroup: None,
        rows_per_vector: None,
        tl: None,
        ..base.clone()
    };
    let model_plan = Plan::new(gpu, x, &fused)?;
    let model = measure(gpu, &model_plan, ops, reps, None)?;
    progress(&model);
    let mc = model_plan.config;
    let (_, n) = x.shape();
    let max_wg = gpu.caps.max_invocations_per_workgroup.min(1024);
    let mut points = vec![model.clone()];
    let vss: Vec<u32> = if mc.dense {
        (0..=10)
            .map(|i| 1u32 << i)
            .filter(|&vs| vs <= max_wg && vs as usize * 16 >= n)
            .collect()
    } else {
        vec![1, 2, 4, 8, 16, 32]
    };
    for vs in vss {
        let mut wg = 32u32;
        while wg <= max_wg {
            if wg >= vs {
                for f in [0.25, 0.5, 1.0, 2.0, 4.0] {
                    // C scaled from the model's at this VS and workgroup size.
                    let opts = Options {
                        vs: Some(vs),
                        workgroup: Some(wg),
                        tl: mc.dense.then(|| n.div_ceil(vs as usize).max(1) as u32),
                        ..fused.clone()
                    };
                    let Ok(at) = Plan::new_like(gpu, x, &opts, &model_plan) else {
                        continue;
                    };
                    let c = ((at.config.rows_per_vector as f64 * f).round() as u32).max(1);
                    if f != 1.0 && c == at.config.rows_per_vector {
                        continue;
                    }
                    let opts = Options {
                        rows_per_vector: Some(c),
                        ..opts
                    };
                    let Ok(plan) = Plan::new_like(gpu, x, &opts, &model_plan) else {
                        continue;
                    };
                    if plan.config == mc {
                        continue;
                    }
                    let m = measure(gpu, &plan, ops, reps, None)?;
                    progress(&m);
                    points.push(m);
                }
            }
            wg *= 2;
        }
    }
    // The column split beside them (sparse X, not two-pass): workgroup sizes × row tiles.
    if !mc.dense && fused.variant == Variant::Fused {
        let max_rt = crate::fused::split::max_row_tile(n).unwrap_or(0);
        for wg in [128, 256, 512, 1024].into_iter().filter(|&w| w <= max_wg) {
            for rt in crate::fused::split::TUNE_ROW_TILES {
                let opts = Options {
                    variant: Variant::Split,
                    workgroup: Some(wg),
                    row_tile: Some(rt.min(max_rt)),
                    ..fused.clone()
                };
                let Ok(plan) = Plan::new_like(gpu, x, &opts, &model_plan) else {
                    continue;
                };
                if plan.config.variant != Variant::Split {
                    continue;
                }
                let m = measure(gpu, &plan, ops, reps, None)?;
                progress(&m);
                points.push(m);
            }
        }
    }
    let best = points
        .iter()
        .min_by(|a, b| a.ms.total_cmp(&b.ms))
        .cloned()
        .expect("the model's point");
    Ok(Sweep {
        model_gap: (model.ms - best.ms) / best.ms,
        points,
        best,
        model,
    })
}

/// The fused rows of `wgsparse demo`: the full pattern on a small power-law X by every
/// variant and on a small dense X, each checked against the twin, then both solvers against
/// theirs.
pub fn demo(
    gpu: &Gpu,
    progress: &mut impl FnMut(&str),
) -> Result<Vec<crate::report::demo::DemoRow>> {
    use crate::fused::{cpu, linreg, logreg};
    use crate::report::demo::DemoRow;
    let mut rows = vec![];
    let sparse = Input::Sparse(gen::power_law(5_000, 300, 40_000, 1.1, 2026)?);
    let dense = Input::Dense(gen::dense_uniform(2_000, 64, 2026));
    for (input, variants) in [
        (&sparse, &Variant::CONCRETE[..]),
        (&dense, &[Variant::Fused, Variant::TwoPass][..]),
    ] {
        let x = input.matrix();
        let (m, n) = x.shape();
        let ops = Operands::random(gpu, m, n, Pattern::Full, 7)?;
        let reference = Reference::new(x, &ops);
        for &variant in variants {
            progress(&format!("fused {} {m}×{n}", variant.name()));
            let plan = Plan::new(
                gpu,
                x,
                &Options {
                    variant,
                    ..Default::default()
                },
            )?;
            let detail = format!("{m}×{n} nnz {} full {}", x.nnz(), plan.config.describe());
            rows.push(match measure(gpu, &plan, &ops, 5, Some(&reference)) {
                Ok(meas) => DemoRow {
                    system: "fused",
                    kernel: meas.kernel,
                    detail,
                    ms: meas.ms,
                    gflops: meas.gflops,
                    max_rel_error: meas.max_rel_error.unwrap_or(f64::NAN),
                    ok: true,
                },
                Err(Error::Check { kernel, message }) => DemoRow {
                    system: "fused",
                    kernel,
                    detail: message,
                    ms: f64::NAN,
                    gflops: f64::NAN,
                    max_rel_error: f64::NAN,
                    ok: false,
                },
                Err(e) => return Err(e),
            });
        }
    }
    // Linear regression by CG on a well-conditioned X, against the f64 twin's weights.
    progress("fused linreg CG");
    let Input::Sparse(xs) = &sparse else {
        unreachable!()
    };
    let xl = gen::power_law(3_000, 60, 30_000, 1.1, 11)?;
    let b = linreg::synthetic_labels(Matrix::Sparse(&xl), 3);
    let cg = linreg::CgOptions {
        lambda: 0.01,
        ..Default::default()
    };
    let plan = Plan::new(gpu, Matrix::Sparse(&xl), &cg.fused)?;
    let got = linreg::linreg_cg(gpu, &plan, &b, &cg, |_, _| {})?;
    let twin = cpu::linreg_cg(Matrix::Sparse(&xl), &b, 0.01, cg.tol, cg.max_iter);
    let diff = linreg::weights_rel_diff(&got.w, &twin.w);
    rows.push(DemoRow {
        system: "fused",
        kernel: "linreg.cg".into(),
        detail: format!(
            "3000×60 λ=0.01: {} iterations (twin {}), rmse {:.4}",
            got.iterations,
            twin.iterations,
            linreg::rmse(Matrix::Sparse(&xl), &got.w, &b)
        ),
        ms: got.seconds * 1e3,
        gflops: f64::NAN,
        max_rel_error: diff,
        ok: diff <= 1e-3,
    });
    // Logistic regression by TRON, against the twin's objective.
    progress("fused logreg TRON");
    let labels: Vec<f32> = linreg::synthetic_labels(Matrix::Sparse(xs), 5)
        .iter()
        .map(|&v| (v > 0.0) as u8 as f32)
        .collect();
    let tron = logreg::TronOptions::default();
    let plan = Plan::new(gpu, Matrix::Sparse(xs), &Options::default())?;
    let got = logreg::logreg_tron(gpu, &plan, &labels, &tron, |_, _| {})?;
    let mut twin = cpu::LogregTwin::new(xs, &labels, tron.lambda);
    let (_, _, losses, _, _) = logreg::tron(&mut twin, &tron, |_, _| {})?;
    let (f, t) = (
        *got.losses.last().unwrap_or(&f64::NAN),
        *losses.last().unwrap_or(&f64::NAN),
    );
    let rel = (f - t).abs() / t.abs().max(f64::MIN_POSITIVE);
    let (logloss, auc) = logreg::evaluate(xs, &labels, &got.w);
    rows.push(DemoRow {
        system: "fused",
        kernel: "logreg.tron".into(),
        detail: format!(
            "5000×300: {} iterations, logloss {logloss:.4}, auc {auc:.4}",
            got.iterations
        ),
        ms: got.seconds * 1e3,
        gflops: f64::NAN,
        max_rel_error: rel,
        ok: rel <= 1e-4,
    });
    Ok(rows)
}
