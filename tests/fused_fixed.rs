//! Fixed-point accumulation in the workgroup copy of w (`WgAccum::Fixed`): every pattern
//! against the f64 twin (w poisoned with NaN before each run), a hot column, y = 0, v of mixed
//! signs over twelve decades, NaN and ∞ propagating as with compare-exchange, runs
//! bit-identical with one workgroup, the refused combinations, the tuner's candidate and the
//! CLI flag.

mod common;

use common::fused::{check, check_op, host_op, opts, sparse_x, vectors, with_hot_columns};
use wgsparse::fused::{
    cpu, fixed, tune, HostOp, Matrix, Options, Pattern, Plan, Reorder, Variant, WgAccum,
};
use wgsparse::gen;
use wgsparse::gpu::{Batch, GpuBuffer};
use wgsparse::sddmm::cpu::compare;
use wgsparse::Error;

fn fixed_opts() -> Options {
    Options {
        wg_accum: Some(WgAccum::Fixed),
        ..opts(Variant::Fused)
    }
}

#[test]
fn every_pattern_against_the_twin() {
    let x = sparse_x(700, 300, 9_000, 1);
    for gpu in [common::gpu(), common::gpu_plain()] {
        for p in Pattern::ALL {
            let (_, plan) = check(gpu, Matrix::Sparse(&x), &fixed_opts(), p, 7);
            assert_eq!(plan.config.wg_accum, WgAccum::Fixed);
            assert!(plan.config.describe().contains(" fixed"));
        }
    }
}

#[test]
fn edge_shapes() {
    let gpu = common::gpu();
    for (m, n, nnz) in [(300, 7, 900), (1, 50, 20), (40, 1, 30), (1, 1, 1)] {
        let x = sparse_x(m, n, nnz, 9);
        for p in [Pattern::Full, Pattern::Xty] {
            check(gpu, Matrix::Sparse(&x), &fixed_opts(), p, 2);
        }
    }
    // An all-empty matrix: w = β·z.
    let empty = wgsparse::sparse::Csr::empty(10, 6);
    check(gpu, Matrix::Sparse(&empty), &fixed_opts(), Pattern::Full, 3);
}

#[test]
fn hot_column_and_long_rows() {
    let gpu = common::gpu();
    // Two columns in 6 of every 7 rows: hundreds of entries of each in every workgroup.
    let x = with_hot_columns(&sparse_x(3_000, 256, 30_000, 3), &[5, 77], 4);
    for (long_row, c) in [(None, None), (Some(24), None), (None, Some(64))] {
        let o = Options {
            long_row,
            rows_per_vector: c,
            ..fixed_opts()
        };
        for p in [Pattern::Full, Pattern::Xty] {
            let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, p, 8);
            // Fixed point keeps the long rows out of the workgroup copy.
            assert!(!plan.long_folded());
            if long_row.is_some() {
                assert!(plan.long_chunks() > 0);
            }
        }
    }
}

#[test]
fn bands_and_reindexed_columns() {
    // 8 KiB bindings: X in several row bands, each its own dispatch and workgroup partials.
    let gpu = common::gpu_small_bindings();
    let x = with_hot_columns(&sparse_x(1_500, 200, 12_000, 19), &[4], 20);
    let (_, plan) = check(gpu, Matrix::Sparse(&x), &fixed_opts(), Pattern::Full, 9);
    assert!(plan.n_bands() > 1);
    let o = Options {
        reorder: Reorder::On,
        ..fixed_opts()
    };
    for p in [Pattern::Full, Pattern::Xty] {
        let (_, plan) = check(common::gpu(), Matrix::Sparse(&x), &o, p, 10);
        assert!(plan.config.reorder);
    }
}

#[test]
fn worst_case_sums_stay_in_range() {
    // Every term of one sign and at its bound (x = 1, y = 1, v = 1): each workgroup's partial
    // of a column is its bound exactly, as close to 2^31 as the scale lets it come. Values
    // are small integers: the twin's result is exact, and so must w be.
    let gpu = common::gpu();
    let mut x = with_hot_columns(&sparse_x(2_000, 128, 16_000, 21), &[0, 1], 22);
    x.values.iter_mut().for_each(|v| *v = 1.0);
    for p in [Pattern::Full, Pattern::Xty] {
        let vy = common::fused::Vectors {
            y: vec![1.0; if p == Pattern::Xty { 2_000 } else { 128 }],
            v: vec![1.0; 2_000],
            z: vec![0.0; 128],
        };
        let op = host_op(p, &vy, 1.0, 0.0);
        let (got, _) = check_op(gpu, Matrix::Sparse(&x), &fixed_opts(), &op);
        let (want, _) = cpu::sparse(&x, &op);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(*g as f64, *w, "{p:?}");
        }
    }
}

#[test]
fn dispatch_count_matches_the_recording() {
    let gpu = common::gpu();
    let x = sparse_x(500, 200, 5_000, 5);
    let plan = Plan::new(gpu, Matrix::Sparse(&x), &fixed_opts()).unwrap();
    let cas = Plan::new(gpu, Matrix::Sparse(&x), &opts(Variant::Fused)).unwrap();
    for p in Pattern::ALL {
        let vecs = vectors(500, 200, p == Pattern::Xty, 2);
        let op = host_op(p, &vecs, 0.5, 1.5);
        let y = GpuBuffer::upload(gpu, "y", op.y).unwrap();
        let v = GpuBuffer::upload(gpu, "v", &vecs.v).unwrap();
        let z = GpuBuffer::upload(gpu, "z", &vecs.z).unwrap();
        let w = GpuBuffer::<f32>::zeroed(gpu, "w", 200).unwrap();
        let dop = wgsparse::fused::Op {
            alpha: op.alpha,
            y: &y,
            v: op.v.map(|_| &v),
            beta: op.beta,
            z: op.z.map(|_| &z),
            xty: op.xty,
        };
        let mut batch = Batch::new(gpu);
        plan.record(&mut batch, &dop, &w).unwrap();
        assert_eq!(batch.dispatches(), plan.dispatches(p));
        // The two pre-passes (maxima, scales) over compare-exchange's dispatches.
        assert_eq!(plan.dispatches(p), cas.dispatches(p) + 2);
    }
}

#[test]
fn zero_y_gives_beta_z() {
    let gpu = common::gpu();
    let x = sparse_x(400, 150, 4_000, 6);
    let mut vecs = vectors(400, 150, false, 3);
    vecs.y = vec![0.0; 150];
    let op = host_op(Pattern::Full, &vecs, -0.75, 0.5);
    let (got, _) = check_op(gpu, Matrix::Sparse(&x), &fixed_opts(), &op);
    for (g, z) in got.iter().zip(&vecs.z) {
        assert_eq!(*g, 0.5 * z);
    }
    // v = 0 too.
    vecs.y = gen::dense_uniform(1, 150, 9).data;
    vecs.v = vec![0.0; 400];
    let op = host_op(Pattern::Full, &vecs, -0.75, 0.5);
    let (got, _) = check_op(gpu, Matrix::Sparse(&x), &fixed_opts(), &op);
    for (g, z) in got.iter().zip(&vecs.z) {
        assert_eq!(*g, 0.5 * z);
    }
}

/// Max |·| of a vector as f32.
fn max_abs(v: &[f32]) -> f32 {
    v.iter().fold(0f32, |m, x| m.max(x.abs()))
}

#[test]
fn mixed_sign_v_over_twelve_decades() {
    let gpu = common::gpu();
    let x = with_hot_columns(&sparse_x(2_000, 300, 20_000, 11), &[3], 12);
    let mut vecs = vectors(2_000, 300, false, 5);
    let u = gen::dense_uniform(1, 2_000, 77).data;
    // ±10^(6u), u ∈ [−1, 1): signs and magnitudes from different draws.
    vecs.v = u
        .iter()
        .zip(&vecs.v)
        .map(|(u, s)| 10f32.powf(6.0 * u).copysign(*s))
        .collect();
    let plan = Plan::new(gpu, Matrix::Sparse(&x), &fixed_opts()).unwrap();
    for p in [Pattern::Full, Pattern::Xtvxy] {
        let op = host_op(p, &vecs, 1.5, 0.25);
        let got = plan.run_host(gpu, &op).unwrap();
        let (want, mag) = cpu::sparse(&x, &op);
        let k = cpu::rounding_terms_sparse(&x);
        // Fixed point's absolute error bound beside the condition-aware one.
        let abs =
            fixed::abs_error(&plan, false, op.alpha, max_abs(&vecs.y), max_abs(&vecs.v)).unwrap();
        let tol = (k as f64 + 4.0) * f32::EPSILON as f64;
        for c in 0..300 {
            let err = (got[c] as f64 - want[c]).abs();
            assert!(
                err <= tol * mag[c].max(f32::MIN_POSITIVE as f64) + abs[c],
                "{p:?} w[{c}] = {} want {} (mag {}, fixed {})",
                got[c],
                want[c],
                mag[c],
                abs[c]
            );
        }
        // The fixed-point term stays below the condition-aware bound on the hot column.
        assert!(abs[3] < tol * mag[3], "{} vs {}", abs[3], tol * mag[3]);
        let plain = compare(&got, &want, &mag, k);
        eprintln!(
            "{p:?}: condition-aware bound alone {} (max rel {:.2e} of tolerance {:.2e})",
            if plain.ok() { "holds" } else { "fails" },
            plain.max_rel_error,
            plain.tolerance
        );
    }
}

/// w from a plan of `options` on `x`, for `op`.
fn run(x: &wgsparse::sparse::Csr, options: &Options, op: &HostOp) -> Vec<f32> {
    let gpu = common::gpu();
    Plan::new(gpu, Matrix::Sparse(x), options)
        .unwrap()
        .run_host(gpu, op)
        .unwrap()
}

#[test]
fn nan_and_inf_propagate_as_with_compare_exchange() {
    let x = sparse_x(500, 200, 5_000, 13);
    // On lavapipe a NaN operand comes out finite with compare-exchange too (its float mode):
    // there the masks must agree; ∞ must reach w.
    let cases = [
        (f32::NAN, 1.0),
        (1.0, f32::NAN),
        (f32::INFINITY, 1.0),
        (1.0, f32::NEG_INFINITY),
    ];
    for (bad_y, bad_v) in cases {
        let mut vecs = vectors(500, 200, false, 6);
        vecs.y[x.col_idx[0] as usize] = bad_y;
        // The row of X's first entry (a row with entries).
        let r0 = x.row_ptr.iter().position(|&p| p > 0).unwrap() - 1;
        vecs.v[r0] *= bad_v;
        let op = host_op(Pattern::Full, &vecs, 1.0, 0.5);
        let fixed = run(&x, &fixed_opts(), &op);
        let cas = run(&x, &opts(Variant::Fused), &op);
        let nan = |w: &[f32]| w.iter().map(|v| v.is_nan()).collect::<Vec<_>>();
        let inf = |w: &[f32]| w.iter().map(|v| v.is_infinite()).collect::<Vec<_>>();
        let bad = |w: &[f32]| w.iter().filter(|v| !v.is_finite()).count();
        eprintln!(
            "y {bad_y} v {bad_v}: fixed {} cas {}",
            bad(&fixed),
            bad(&cas)
        );
        if bad_y.is_infinite() || bad_v.is_infinite() {
            assert!(bad(&fixed) > 0);
        }
        assert_eq!(nan(&fixed), nan(&cas), "y {bad_y} v {bad_v}");
        assert_eq!(inf(&fixed), inf(&cas), "y {bad_y} v {bad_v}");
    }
}

#[test]
fn bit_identical_with_one_workgroup() {
    let gpu = common::gpu();
    let x = with_hot_columns(&sparse_x(1_000, 128, 10_000, 14), &[9], 15);
    // One workgroup: its integer partials do not depend on the order of the adds, and each
    // column takes one global add onto β·z. (With several workgroups their f32 global adds
    // may come in any order: not reproducible bit for bit.)
    let o = Options {
        workgroup: Some(64),
        vs: Some(4),
        rows_per_vector: Some(100),
        ..fixed_opts()
    };
    let vecs = vectors(1_000, 128, false, 7);
    let op = host_op(Pattern::Full, &vecs, 0.5, 1.5);
    let (first, plan) = check_op(gpu, Matrix::Sparse(&x), &o, &op);
    assert_eq!(plan.config.groups, 1, "{}", plan.config.describe());
    for _ in 0..3 {
        let again = plan.run_host(gpu, &op).unwrap();
        let same = again
            .iter()
            .zip(&first)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same);
    }
}

#[test]
fn other_accumulation_modes_are_refused() {
    let gpu = common::gpu();
    let x = sparse_x(500, 200, 5_000, 16);
    let d = gen::dense_uniform(100, 30, 17);
    let cases: Vec<(Matrix, Options)> = vec![
        (Matrix::Sparse(&x), opts(Variant::TwoPass)),
        (Matrix::Sparse(&x), opts(Variant::Sorted)),
        (Matrix::Sparse(&x), opts(Variant::Split)),
        (Matrix::Sparse(&x), opts(Variant::Unfused)),
        (
            Matrix::Sparse(&x),
            Options {
                workgroup_w: Some(false),
                ..opts(Variant::Fused)
            },
        ),
        (
            Matrix::Sparse(&x),
            Options {
                hot_cols: Some(8),
                ..opts(Variant::Fused)
            },
        ),
        (
            Matrix::Sparse(&x),
            Options {
                regs: Some(2),
                ..opts(Variant::Fused)
            },
        ),
        (Matrix::Dense(&d), opts(Variant::Fused)),
    ];
    for (m, o) in cases {
        let o = Options {
            wg_accum: Some(WgAccum::Fixed),
            ..o
        };
        match Plan::new(gpu, m, &o) {
            Err(Error::Unsupported(msg)) => assert!(msg.contains("fixed-point"), "{msg}"),
            Err(e) => panic!("{o:?}: {e}"),
            Ok(p) => panic!("{o:?}: planned {}", p.config.describe()),
        }
    }
}

#[test]
fn the_tuner_times_fixed_point() {
    let gpu = common::gpu();
    let x = sparse_x(600, 128, 6_000, 18);
    let (plan, timed) = tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    assert!(timed.iter().any(|o| o.wg_accum == Some(WgAccum::Fixed)));
    // Whichever it picked is correct.
    let vecs = vectors(600, 128, false, 8);
    let op = host_op(Pattern::Full, &vecs, 1.0, 0.5);
    let got = plan.run_host(gpu, &op).unwrap();
    let (want, mag) = cpu::sparse(&x, &op);
    assert!(compare(&got, &want, &mag, cpu::rounding_terms_sparse(&x)).ok());
    // A caller's choice is kept.
    let o = Options {
        wg_accum: Some(WgAccum::Cas),
        ..Default::default()
    };
    let (_, timed) = tune::tune(gpu, Matrix::Sparse(&x), &o).unwrap();
    assert!(timed.iter().all(|o| o.wg_accum == Some(WgAccum::Cas)));
}

#[test]
fn cli_flag() {
    let j = common::wgsparse_json(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.1",
        "--variant",
        "fused",
        "--wg-accum",
        "fixed",
        "--pattern",
        "full,xty",
        "--check",
        "--reps",
        "2",
        "--json",
    ]);
    assert_eq!(j["ok"], true, "{j}");
    for r in j["results"].as_array().unwrap() {
        assert_eq!(r["measurement"]["config"]["wg_accum"], "Fixed", "{r}");
    }
    let (ok, _, err) = common::wgsparse(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.1",
        "--variant",
        "two-pass",
        "--wg-accum",
        "fixed",
        "--reps",
        "1",
    ]);
    assert!(!ok);
    assert!(err.contains("fixed-point"), "{err}");
}
