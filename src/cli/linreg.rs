//! `wgsparse linreg`: linear regression by CG on the fused pattern.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use wgsparse::fused::bench::{self, Input};
use wgsparse::fused::linreg::{self, CgOptions};
use wgsparse::fused::{cpu, Matrix, Options};
use wgsparse::gpu::GpuBuffer;
use wgsparse::{io, Gpu, Result};

/// The training data of `linreg` and `logreg`.
#[derive(clap::Args)]
pub struct TrainData {
    /// Training data (LIBSVM: regression targets, or labels ±1 or 0/1).
    #[arg(long)]
    pub libsvm: Option<PathBuf>,
    /// Without --libsvm: a generated input (see `wgsparse fused --help`) with labels from a
    /// planted linear model plus noise (thresholded at 0 for `logreg`).
    #[arg(long, default_value = "demo", conflicts_with = "libsvm")]
    pub gen: String,
    /// Scale the generated input's rows by this factor in (0, 1].
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Seed of the generated input and labels.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl TrainData {
    /// (name, X, labels): the LIBSVM file's, or the generated input with planted labels.
    pub fn load(&self) -> Result<(String, Input, Vec<f32>)> {
        match &self.libsvm {
            Some(p) => {
                let d = io::read_libsvm(p)?;
                Ok((p.display().to_string(), Input::Sparse(d.features), d.labels))
            }
            None => {
                let input = bench::generate(&self.gen, self.scale, self.seed)?;
                let b = linreg::synthetic_labels(input.matrix(), self.seed + 5);
                Ok((self.gen.clone(), input, b))
            }
        }
    }
}

/// Arguments of `wgsparse linreg`.
#[derive(clap::Args)]
pub struct LinregArgs {
    #[command(flatten)]
    data: TrainData,
    /// Test data (LIBSVM) for a test RMSE.
    #[arg(long)]
    test: Option<PathBuf>,
    /// Ridge term λ.
    #[arg(long, default_value_t = 0.001)]
    lambda: f32,
    /// Append a column of ones (an intercept, regularized like the other weights).
    #[arg(long)]
    intercept: bool,
    /// Most CG iterations.
    #[arg(long, default_value_t = 100)]
    max_iter: usize,
    /// Stop when ‖r‖ ≤ tol·‖r₀‖.
    #[arg(long, default_value_t = 1e-6)]
    tol: f64,
    /// Also solve with the f64 CPU twin and fail when the weights differ by more than 1e-3
    /// of their largest magnitude.
    #[arg(long)]
    check: bool,
    /// Write X (raw) and the labels (v.f32) into this folder for `fused_peer.py --cg`.
    #[arg(long)]
    export: Option<PathBuf>,
    /// Solve this many times and report the median time: the first solve on a cold GPU, then
    /// (above 1) solves back to back on one workspace (allocated once) until the clocks settle
    /// (as the peers' warm-up), then this many timed ones.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Time each phase of the solve on the GPU (Xᵀb, the fused passes, the vector and scalar
    /// steps, the gates) and split the host's part (setup, recording, waiting): one compute
    /// pass per phase, so the timed solves run slightly slower.
    #[arg(long)]
    breakdown: bool,
    /// CG iterations recorded in the first submission (each later one records twice as
    /// many); iterations past convergence in a submission run gated and empty.
    #[arg(long, default_value_t = 4)]
    chunk: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `wgsparse linreg`.
pub fn run(a: LinregArgs) -> Result<ExitCode> {
    let gpu = Gpu::new()?;
    let (name, input, labels) = a.data.load()?;
    let input = if a.intercept {
        match input {
            Input::Sparse(s) => Input::Sparse(linreg::with_intercept_sparse(&s)),
            Input::Dense(d) => Input::Dense(linreg::with_intercept_dense(&d)),
        }
    } else {
        input
    };
    let x = input.matrix();
    if let Some(dir) = &a.export {
        super::fused::export_matrix(dir, &input)?;
        super::fused::write_f32(&dir.join("v.f32"), &labels)?;
    }
    let options = CgOptions {
        lambda: a.lambda,
        tol: a.tol,
        max_iter: a.max_iter,
        fused: Options::default(),
        chunk: a.chunk,
        breakdown: a.breakdown,
        ..Default::default()
    };
    // The configuration `fused --variant auto` picks (tuned once per adapter and shape).
    let plan = wgsparse::fused::tune::autotuned_plan(&gpu, x, &options.fused)?;
    // The first solve checks and uploads the labels; the repeats reuse the device copy, so
    // their time is the solve alone (X and b resident, as the PyTorch peer's).
    let mut report = linreg::linreg_cg(&gpu, &plan, &labels, &options, |i, r| {
        if !a.json {
            println!("iteration {i:>3}: ‖r‖ = {r:.6e}");
        }
    })?;
    // Above one run: solves back to back on one workspace (allocated, bound and recorded once,
    // as the plan; the first of them binds the labels' Xᵀb pass, the rest replay it) until
    // the clocks settle, then `runs` timed ones; the median run's time, its split into
    // recording and waiting, and its breakdown.
    if a.runs > 1 {
        let b = GpuBuffer::upload(&gpu, "linreg.b", &labels)?;
        let mut solver = linreg::CgSolver::new(&gpu, &plan, &options)?;
        let mut timed = vec![];
        wgsparse::gpu::median_warm(&gpu, a.runs, || {
            let r = solver.solve(&gpu, &b, |_, _| {})?;
            let t = wgsparse::gpu::GpuTime::wall(r.seconds);
            timed.push(r);
            Ok(t)
        })?;
        let mut timed = timed.split_off(timed.len() - a.runs);
        timed.sort_by(|x, y| x.seconds.total_cmp(&y.seconds));
        let median = timed.swap_remove(timed.len() / 2);
        report.seconds = median.seconds;
        report.record_seconds = median.record_seconds;
        report.wait_seconds = median.wait_seconds;
        report.breakdown = median.breakdown;
    }
    let train_rmse = linreg::rmse(x, &report.w, &labels);
    let test_rmse = match &a.test {
        Some(p) => {
            let n_features = plan.n - a.intercept as usize;
            let t = io::read_libsvm_with(p, Some(n_features))?;
            let tx = if a.intercept {
                linreg::with_intercept_sparse(&t.features)
            } else {
                t.features
            };
            Some(linreg::rmse(Matrix::Sparse(&tx), &report.w, &t.labels))
        }
        None => None,
    };
    let mut failed = false;
    let mut twin_diff = None;
    if a.check {
        let twin = cpu::linreg_cg(x, &labels, a.lambda as f64, a.tol, a.max_iter);
        // Converged, the weights must agree; otherwise (an ill-conditioned X stops at
        // max_iter on different f32 and f64 paths) the GPU weights must solve the normal
        // equations about as well as the twin's.
        let d = linreg::weights_rel_diff(&report.w, &twin.w);
        let r0 = twin.residuals[0].max(f64::MIN_POSITIVE);
        let res = cpu::linreg_residual(x, &report.w, &labels, a.lambda as f64) / r0;
        let twin_res = twin.residuals.last().copied().unwrap_or(0.0) / r0;
        failed = if report.converged && twin.iterations < a.max_iter {
            d > 1e-3
        } else {
            res.is_nan() || res > 10.0 * twin_res + 10.0 * a.tol
        };
        twin_diff = Some(d);
        if failed && !a.json {
            eprintln!(
                "check failed: weights {d:.3e} from the f64 twin's; relative normal-equation \
                 residual {res:.3e} (twin {twin_res:.3e})"
            );
        }
    }
    if a.json {
        println!(
            "{}",
            json!({
                "adapter": gpu.caps.adapter_name, "input": name,
                "m": plan.m, "n": plan.n, "nnz": plan.nnz, "config": plan.config,
                "iterations": report.iterations, "residuals": report.residuals,
                "converged": report.converged, "submissions": report.submissions,
                "readbacks": report.readbacks, "chunk": a.chunk,
                "record_seconds": report.record_seconds, "wait_seconds": report.wait_seconds,
                "rmse": train_rmse, "test_rmse": test_rmse, "breakdown": report.breakdown,
                "seconds": report.seconds, "twin_rel_diff": twin_diff, "ok": !failed,
            })
        );
    } else {
        println!(
            "linreg CG on {} — {name}: {}×{}, {} stored entries; {}",
            gpu.caps.adapter_name,
            plan.m,
            plan.n,
            plan.nnz,
            plan.config.describe()
        );
        println!(
            "{} iterations ({}), training rmse {train_rmse:.6}{}, {:.3} s",
            report.iterations,
            if report.converged {
                "converged"
            } else {
                "not converged"
            },
            test_rmse.map_or(String::new(), |t| format!(", test rmse {t:.6}")),
            report.seconds
        );
        if let Some(d) = twin_diff {
            println!("f64 twin: weights within {d:.2e} of its largest");
        }
        if let Some(b) = &report.breakdown {
            print_breakdown(b);
        }
    }
    if failed {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The breakdown as text lines.
fn print_breakdown(b: &linreg::CgBreakdown) {
    for p in &b.phases {
        println!(
            "  {:<9} {:>8.3} ms GPU in {} passes",
            p.name, p.ms, p.passes
        );
    }
    if b.timed {
        println!(
            "  GPU span {:.3} ms ({:.3} ms between passes)",
            b.gpu_ms, b.between_passes_ms
        );
    }
    println!(
        "  host: setup {:.3} ms, recording {:.3} ms, waiting {:.3} ms ({:.3} ms beyond the GPU span)",
        b.setup_ms, b.record_ms, b.wait_ms, b.wait_beyond_gpu_ms
    );
}
