//! The solvers on the fused pattern against their f64 CPU twins on small problems.

mod common;

use wgsparse::fused::linreg::{self, CgOptions};
use wgsparse::fused::{cpu, Atomics, Matrix, Options, Plan, Variant};
use wgsparse::gen;
use wgsparse::Error;

fn check_cg(x: Matrix, b: &[f32], options: &CgOptions) {
    let gpu = common::gpu();
    let plan = Plan::new(gpu, x, &options.fused).unwrap();
    let mut seen = vec![];
    let got = linreg::linreg_cg(gpu, &plan, b, options, |i, r| seen.push((i, r))).unwrap();
    let twin = cpu::linreg_cg(x, b, options.lambda as f64, options.tol, options.max_iter);
    let diff = linreg::weights_rel_diff(&got.w, &twin.w);
    assert!(
        diff <= 1e-3,
        "{}: weights {diff:.3e} (relative) from the twin's; iterations {} vs {}",
        plan.config.describe(),
        got.iterations,
        twin.iterations
    );
    assert_eq!(seen.len(), got.iterations);
    assert!(got.iterations.abs_diff(twin.iterations) <= 3 + twin.iterations / 5);
    // Residuals fall as the twin's do (first within f32 rounding).
    let (r0, t0) = (got.residuals[0], twin.residuals[0]);
    assert!((r0 - t0).abs() <= 1e-4 * t0, "‖r₀‖ {r0} vs {t0}");
    // The solution fits: training RMSE close to the twin's.
    let tw: Vec<f32> = twin.w.iter().map(|&v| v as f32).collect();
    let (e_gpu, e_twin) = (linreg::rmse(x, &got.w, b), linreg::rmse(x, &tw, b));
    assert!(e_gpu <= e_twin * 1.001 + 1e-6, "rmse {e_gpu} vs {e_twin}");
}

fn labels(x: Matrix, seed: u64) -> Vec<f32> {
    linreg::synthetic_labels(x, seed)
}

#[test]
fn linreg_cg_matches_twin_sparse_and_dense() {
    let s = gen::power_law(600, 40, 6_000, 1.1, 3).unwrap();
    let d = gen::dense_uniform(500, 12, 4);
    for x in [Matrix::Sparse(&s), Matrix::Dense(&d)] {
        let b = labels(x, 9);
        for variant in [Variant::Fused, Variant::TwoPass] {
            let options = CgOptions {
                lambda: 0.01,
                fused: Options {
                    variant,
                    atomics: Atomics::Cas,
                    ..Default::default()
                },
                ..Default::default()
            };
            check_cg(x, &b, &options);
        }
    }
}

#[test]
fn linreg_cg_with_intercept() {
    let s = gen::power_law(400, 25, 3_000, 1.1, 5).unwrap();
    let si = linreg::with_intercept_sparse(&s);
    si.validate().unwrap();
    let b: Vec<f32> = labels(Matrix::Sparse(&s), 2)
        .iter()
        .map(|v| v + 3.0)
        .collect();
    check_cg(Matrix::Sparse(&si), &b, &CgOptions::default());
    let d = gen::dense_uniform(300, 6, 6);
    let di = linreg::with_intercept_dense(&d);
    let b: Vec<f32> = labels(Matrix::Dense(&d), 3)
        .iter()
        .map(|v| v - 2.0)
        .collect();
    check_cg(Matrix::Dense(&di), &b, &CgOptions::default());
}

#[test]
fn linreg_bad_input() {
    let gpu = common::gpu();
    let s = gen::power_law(50, 10, 200, 1.1, 1).unwrap();
    let plan = Plan::new(gpu, Matrix::Sparse(&s), &Options::default()).unwrap();
    let run = |b: &[f32], lambda: f32| {
        let o = CgOptions {
            lambda,
            ..Default::default()
        };
        linreg::linreg_cg(gpu, &plan, b, &o, |_, _| {})
    };
    assert!(matches!(run(&[1.0; 49], 0.1), Err(Error::Shape(_))));
    let mut b = vec![1.0; 50];
    b[7] = f32::NAN;
    assert!(matches!(run(&b, 0.1), Err(Error::Invalid { .. })));
    assert!(matches!(run(&[1.0; 50], -1.0), Err(Error::Option(_))));
}
