//! The solvers on the fused pattern against their f64 CPU twins on small problems.

mod common;

use wgsparse::fused::linreg::{self, CgOptions};
use wgsparse::fused::{cpu, Atomics, Matrix, Options, Plan, Variant};
use wgsparse::gen;
use wgsparse::sparse::Csr;
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
        // Sparse X also by two gathers over column panels (the tuner's pick at the KDD2010
        // shape).
        let panels = matches!(x, Matrix::Sparse(_)).then_some((Variant::Transpose, Some(3)));
        let plans = [(Variant::Fused, None), (Variant::TwoPass, None)];
        for (variant, panels) in plans.into_iter().chain(panels) {
            let options = CgOptions {
                lambda: 0.01,
                fused: Options {
                    variant,
                    atomics: Atomics::Cas,
                    panels,
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

#[test]
fn logreg_tron_matches_twin() {
    use wgsparse::fused::logreg::{self, TronOps, TronOptions};
    let gpu = common::gpu();
    let x = gen::power_law(800, 30, 8_000, 1.1, 7).unwrap();
    // Labels from a planted model (0/1), so the fit has signal.
    let labels: Vec<f32> = linreg::synthetic_labels(Matrix::Sparse(&x), 4)
        .iter()
        .map(|&v| (v > 0.0) as u8 as f32)
        .collect();
    // CG on the device: the same Newton and CG iterations as the twin, and the same CG runs
    // ended on the trust region's boundary (some must: X scaled by 0.05 at a small λ makes the
    // Hessian small, so Newton steps outgrow the first radius ‖∇f(0)‖), also with CG cut at 3.
    let mut boundary = 0;
    let small = Csr {
        values: x.values.iter().map(|v| 0.05 * v).collect(),
        ..x.clone()
    };
    for (atomics, lambda, max_cg, x) in [
        (Atomics::Native, 0.5, 100, &x),
        (Atomics::Cas, 0.5, 100, &x),
        (Atomics::Auto, 0.05, 3, &x),
        (Atomics::Auto, 0.001, 100, &small),
    ] {
        let o = Options {
            atomics,
            ..Default::default()
        };
        let plan = Plan::new(gpu, Matrix::Sparse(x), &o).unwrap();
        let options = TronOptions {
            lambda,
            max_cg,
            ..Default::default()
        };
        let got = logreg::logreg_tron(gpu, &plan, &labels, &options, |_, _| {}).unwrap();
        let mut twin = cpu::LogregTwin::new(x, &labels, options.lambda);
        let (tw, iters, losses, cg, bounds) = logreg::tron(&mut twin, &options, |_, _| {}).unwrap();
        let tw = tw.into_inner();
        assert_eq!(
            (got.iterations, got.cg_iterations, got.boundary_steps),
            (iters, cg, bounds),
            "(Newton, CG, boundary) against the twin's, λ {lambda}, CG ≤ {max_cg}"
        );
        boundary += bounds;
        let (f_gpu, f_twin) = (*got.losses.last().unwrap(), *losses.last().unwrap());
        assert!(
            (f_gpu - f_twin).abs() <= 1e-4 * f_twin,
            "objective {f_gpu} vs twin {f_twin} ({} vs {iters} iterations)",
            got.iterations
        );
        assert!((got.losses[0] - losses[0]).abs() <= 1e-5 * losses[0]);
        let diff = linreg::weights_rel_diff(&got.w, &tw);
        assert!(diff <= 1e-2, "weights {diff:.3e} from the twin's");
        // The GPU weights are a stationary point in f64 too.
        let w64 = std::cell::RefCell::new(got.w.iter().map(|&v| v as f64).collect::<Vec<_>>());
        let g = twin.zeros("g").unwrap();
        twin.fun(&w64).unwrap();
        twin.grad(&w64, &g).unwrap();
        let gnorm = twin.dot(&g, &g).unwrap().sqrt();
        let mut t0 = cpu::LogregTwin::new(x, &labels, options.lambda);
        let zero = t0.zeros("w0").unwrap();
        let g0 = t0.zeros("g0").unwrap();
        t0.fun(&zero).unwrap();
        t0.grad(&zero, &g0).unwrap();
        let gnorm0 = t0.dot(&g0, &g0).unwrap().sqrt();
        assert!(
            gnorm <= 10.0 * options.eps * gnorm0,
            "‖∇f‖ {gnorm} vs ‖∇f(0)‖ {gnorm0}"
        );
        let (logloss, auc) = logreg::evaluate(x, &labels, &got.w);
        assert!(auc > 0.8 && logloss < 0.6, "auc {auc}, logloss {logloss}");
    }
    assert!(boundary > 0, "no CG run reached the boundary");
}

#[test]
fn logistic_row_terms_match_twin() {
    use wgsparse::fused::logreg;
    let x = gen::power_law(700, 50, 7_000, 1.1, 8).unwrap();
    let w: Vec<f32> = gen::dense_uniform(1, 50, 3)
        .data
        .iter()
        .map(|v| 2.0 * v)
        .collect();
    let labels: Vec<f32> = gen::dense_uniform(1, 700, 4)
        .data
        .iter()
        .map(|&v| (v > 0.0) as u8 as f32)
        .collect();
    let y: Vec<f64> = logreg::signed_labels(&labels)
        .iter()
        .map(|&v| v as f64)
        .collect();
    let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let want = cpu::logistic(&x, &w64, &y);
    // |t| ≤ Σ|x·w|: each term's f32 error is a few ε of that (σ and log are 1-Lipschitz).
    let mag: Vec<f64> = (0..x.nrows)
        .map(|r| {
            x.row_range(r)
                .map(|e| (x.values[e] as f64 * w64[x.col_idx[e] as usize]).abs())
                .sum::<f64>()
                + 1.0
        })
        .collect();
    // Sorted and stream plans walk tiles, not rows: the row pass takes its own grid. A
    // transpose plan over column panels keeps X whole for it.
    let plans = [
        (Variant::Auto, None),
        (Variant::Sorted, None),
        (Variant::Stream, None),
        (Variant::Transpose, Some(3)),
    ];
    for (gpu, (variant, panels)) in [common::gpu(), common::gpu_plain()]
        .into_iter()
        .flat_map(|g| plans.map(|v| (g, v)))
    {
        let o = Options {
            variant,
            panels,
            ..Default::default()
        };
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        let got = logreg::row_terms(gpu, &plan, &w, &labels).unwrap();
        for (k, name) in ["loss", "coef", "dd"].iter().enumerate() {
            for r in 0..x.nrows {
                let err = (got[k][r] as f64 - want[k][r]).abs();
                assert!(
                    err <= 64.0 * f32::EPSILON as f64 * mag[r],
                    "{name}[{r}] = {} want {}",
                    got[k][r],
                    want[k][r]
                );
            }
        }
    }
}

#[test]
fn logreg_bad_input() {
    use wgsparse::fused::logreg::{self, TronOptions};
    let gpu = common::gpu();
    let x = gen::power_law(50, 10, 200, 1.1, 1).unwrap();
    let plan = Plan::new(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    let o = TronOptions::default();
    assert!(matches!(
        logreg::logreg_tron(gpu, &plan, &[1.0; 3], &o, |_, _| {}),
        Err(Error::Shape(_))
    ));
    let zero = TronOptions { lambda: 0.0, ..o };
    assert!(matches!(
        logreg::logreg_tron(gpu, &plan, &[1.0; 50], &zero, |_, _| {}),
        Err(Error::Option(_))
    ));
    let d = gen::dense_uniform(20, 5, 1);
    let dplan = Plan::new(gpu, Matrix::Dense(&d), &Options::default()).unwrap();
    assert!(matches!(
        logreg::logreg_tron(gpu, &dplan, &[1.0; 20], &TronOptions::default(), |_, _| {}),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn linreg_cg_device_scalars_freeze_after_the_stop() {
    // CG's scalars live on the device and iterations past the stop run empty grids: however
    // many iterations one submission records, the result is the same bits (two-pass X is
    // bit-reproducible), and one submission suffices when it records them all.
    let gpu = common::gpu();
    let s = gen::power_law(500, 30, 5_000, 1.1, 12).unwrap();
    let x = Matrix::Sparse(&s);
    let b = labels(x, 6);
    let fused = Options {
        variant: Variant::TwoPass,
        ..Default::default()
    };
    let plan = Plan::new(gpu, x, &fused).unwrap();
    let solve_staged = |chunk: usize, max_iter: usize, stage_w_max: usize| {
        let o = CgOptions {
            lambda: 0.01,
            chunk,
            max_iter,
            stage_w_max,
            fused: fused.clone(),
            ..Default::default()
        };
        let mut seen = vec![];
        let rep = linreg::linreg_cg(gpu, &plan, &b, &o, |i, r| seen.push((i, r))).unwrap();
        assert_eq!(seen.len(), rep.iterations);
        assert_eq!(rep.residuals.len(), rep.iterations + 1);
        // One wait per submission, w staged behind it; one more when w is read alone.
        let extra = (s.ncols > stage_w_max) as usize;
        assert_eq!(rep.readbacks, rep.submissions + extra);
        rep
    };
    let solve = |chunk: usize, max_iter: usize| solve_staged(chunk, max_iter, 1 << 20);
    let one = solve(1, 100);
    assert!(one.converged && one.iterations > 3, "{}", one.iterations);
    let twin = cpu::linreg_cg(x, &b, 0.01, 1e-6, 100);
    assert!(linreg::weights_rel_diff(&one.w, &twin.w) <= 1e-3);
    for chunk in [2, 5, 1_000] {
        let r = solve(chunk, 100);
        assert_eq!(r.iterations, one.iterations, "chunk {chunk}");
        assert_eq!(r.residuals, one.residuals, "chunk {chunk}");
        let bits = |w: &[f32]| w.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&r.w), bits(&one.w), "chunk {chunk}");
        if chunk >= 100 {
            assert_eq!(r.submissions, 1);
        }
    }
    // w read after the last submission instead of staged behind each: the same bits.
    let alone = solve_staged(2, 100, 0);
    assert_eq!(alone.residuals, one.residuals);
    assert_eq!(
        alone.w.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        one.w.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // Out of iterations: stops at max_iter, not converged, same first steps.
    let short = solve(1, 3);
    assert_eq!((short.iterations, short.converged), (3, false));
    assert_eq!(short.residuals[..], one.residuals[..4]);
    // No iterations at all: w = 0.
    let none = solve(4, 0);
    assert_eq!(none.iterations, 0);
    assert!(none.w.iter().all(|&v| v == 0.0));
    let bad = CgOptions {
        chunk: 0,
        ..Default::default()
    };
    assert!(matches!(
        linreg::linreg_cg(gpu, &plan, &b, &bad, |_, _| {}),
        Err(Error::Option(_))
    ));
}
