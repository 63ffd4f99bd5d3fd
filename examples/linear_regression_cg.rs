//! Linear regression by conjugate gradient on the fused pattern (Listing 1 of Ashari et al.):
//! each iteration computes q = Xᵀ(X·p) + λ·p in one pass over X, and only the two scalars CG
//! needs are read back. The weights are then checked against the f64 CPU twin.
//!
//! Run with `cargo run --release --example linear_regression_cg` (no data files needed; on a
//! machine with no GPU, Mesa's software Vulkan device, lavapipe, is enough).

use wgsparse::fused::linreg::{self, CgOptions};
use wgsparse::fused::{cpu, Matrix};
use wgsparse::{gen, Gpu};

fn main() -> wgsparse::Result<()> {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("linear_regression_cg example: cannot open a GPU: {e}");
            std::process::exit(1);
        }
    };
    // A power-law sparse design matrix with an intercept column, and labels from a planted
    // model plus noise.
    let x = gen::power_law(20_000, 200, 200_000, 1.1, 42)?;
    let b = linreg::synthetic_labels(Matrix::Sparse(&x), 7);
    let x = linreg::with_intercept_sparse(&x);
    let options = CgOptions {
        lambda: 0.01,
        ..Default::default()
    };
    // Plan once (X uploaded, launch configuration from the model), then solve.
    // The tuned configuration of `wgsparse fused --variant auto` (cached per adapter and shape).
    let plan = wgsparse::fused::tune::autotuned_plan(&gpu, Matrix::Sparse(&x), &options.fused)?;
    println!(
        "X: {}×{} with {} nonzeros on {}; kernel {}",
        x.nrows,
        x.ncols,
        x.nnz(),
        gpu.caps.adapter_name,
        plan.config.describe()
    );
    let report = linreg::linreg_cg(&gpu, &plan, &b, &options, |i, r| {
        if i % 5 == 0 {
            println!("iteration {i:>3}: ‖r‖ = {r:.3e}");
        }
    })?;
    let rmse = linreg::rmse(Matrix::Sparse(&x), &report.w, &b);
    println!(
        "{} iterations ({}), training rmse {rmse:.4} (label noise has rmse ≈ 0.058), {:.3} s",
        report.iterations,
        if report.converged {
            "converged"
        } else {
            "not converged"
        },
        report.seconds
    );
    let twin = cpu::linreg_cg(Matrix::Sparse(&x), &b, 0.01, options.tol, options.max_iter);
    let diff = linreg::weights_rel_diff(&report.w, &twin.w);
    println!(
        "f64 twin: {} iterations; GPU weights within {diff:.2e} of its largest",
        twin.iterations
    );
    if diff > 1e-3 {
        eprintln!("weights differ from the f64 twin");
        std::process::exit(1);
    }
    Ok(())
}
