//! Column re-indexing by frequency (`Options::reorder`, `fused::reorder`): every pattern ×
//! variant on the re-indexed X against the f64 twin (w poisoned with NaN before each run) and
//! against the plan without it, the large-n paths (global w, hot columns, long rows, folded or
//! not, registers, hot copies), X in row bands, β = 0 with NaN z, columns without entries,
//! two-pass bit-reproducibility, the dispatches counted, `record_onto` and the solvers (the
//! logistic kernel reads w over columns outside `record`), `auto`'s decision, and the CLI.

mod common;

use common::fused::{
    check, check_op, host_op, on_device, opts, sparse_x, vectors, with_hot_columns,
};
use wgsparse::fused::reorder::{self, AUTO_MIN_COLS};
use wgsparse::fused::{cpu, linreg, logreg, HostOp, Matrix, Options, Pattern, Plan};
use wgsparse::fused::{Reorder, Variant};
use wgsparse::gpu::Batch;
use wgsparse::sddmm::cpu::compare;
use wgsparse::sparse::Csr;
use wgsparse::{gen, Error, Gpu};

/// `o` with the columns re-indexed (`On`) or not (`Off`).
fn with(o: Options, reorder: Reorder) -> Options {
    Options { reorder, ..o }
}

/// `a` and `b` (two GPU results for `op` on `x`) agree within twice the twin's bound.
fn assert_agree(x: &Csr, op: &HostOp, a: &[f32], b: &[f32], what: &str) {
    let (_, mag) = Matrix::Sparse(x).reference(op);
    let b64: Vec<f64> = b.iter().map(|&v| v as f64).collect();
    let m2: Vec<f64> = mag.iter().map(|m| 2.0 * m).collect();
    let cmp = compare(a, &b64, &m2, Matrix::Sparse(x).rounding_terms());
    assert!(
        cmp.ok(),
        "{what}: on and off differ at w[{:?}] (max rel err {:.3e})",
        cmp.first_bad,
        cmp.max_rel_error
    );
}

/// Checks `o` with the columns re-indexed against the twin and against the same options
/// without; returns the re-indexed plan.
fn check_both(gpu: &Gpu, x: &Csr, o: &Options, op: &HostOp) -> Plan {
    let (on, plan) = check_op(gpu, Matrix::Sparse(x), &with(o.clone(), Reorder::On), op);
    assert!(plan.config.reorder, "{}", plan.config.describe());
    assert!(plan.config.describe().contains("reorder"));
    let (off, plain) = check_op(gpu, Matrix::Sparse(x), &with(o.clone(), Reorder::Off), op);
    assert!(!plain.config.reorder);
    assert_agree(x, op, &on, &off, &plan.config.describe());
    plan
}

#[test]
fn every_pattern_and_variant_reordered() {
    // n = 300: not a multiple of any workgroup size.
    let x = sparse_x(700, 300, 9_000, 1);
    for gpu in [common::gpu(), common::gpu_plain()] {
        for p in Pattern::ALL {
            let vecs = vectors(700, 300, p == Pattern::Xty, 7);
            let op = host_op(p, &vecs, -0.75, 1.25);
            for v in Variant::CONCRETE {
                let plan = check_both(gpu, &x, &opts(v), &op);
                assert_eq!(plan.config.variant, v);
            }
        }
    }
}

#[test]
fn large_n_paths_reordered() {
    // Global w with the hot-column cache (some columns in nearly every row), long rows split
    // (folded and not), registers, hot copies with w in workgroup memory, sorted with global w.
    let gpu = common::gpu();
    let x = with_hot_columns(&sparse_x(900, 1_203, 14_000, 3), &[5, 700, 1_202], 4);
    let global = |o: Options| Options {
        workgroup_w: Some(false),
        ..o
    };
    let cases = [
        global(opts(Variant::Fused)),
        global(Options {
            hot_cols: Some(0),
            ..opts(Variant::Fused)
        }),
        global(Options {
            long_row: Some(40),
            ..opts(Variant::Fused)
        }),
        global(Options {
            long_row: Some(40),
            fold: false,
            ..opts(Variant::Fused)
        }),
        Options {
            regs: Some(2),
            ..opts(Variant::Fused)
        },
        Options {
            hot_cols: Some(4),
            ..opts(Variant::Fused)
        },
        global(Options {
            long_row: Some(40),
            ..opts(Variant::Sorted)
        }),
        opts(Variant::Split),
        opts(Variant::Unfused),
    ];
    for p in [Pattern::Xty, Pattern::XtxyBz, Pattern::Full] {
        let vecs = vectors(900, 1_203, p == Pattern::Xty, 9);
        let op = host_op(p, &vecs, -0.75, 1.25);
        for o in &cases {
            let plan = check_both(gpu, &x, o, &op);
            if o.long_row.is_some() {
                assert!(plan.long_chunks() > 0, "{}", plan.config.describe());
            }
        }
    }
}

#[test]
fn row_bands_reordered() {
    // Storage bindings of 8 KiB: X's entries in several row bands, w (1,500 words) in one.
    let gpu = common::gpu_small_bindings();
    let x = sparse_x(1_000, 1_500, 12_000, 5);
    for p in [Pattern::Xty, Pattern::Full] {
        let vecs = vectors(1_000, 1_500, p == Pattern::Xty, 2);
        let op = host_op(p, &vecs, -0.75, 1.25);
        for v in [Variant::Fused, Variant::Sorted, Variant::Unfused] {
            let plan = check_both(gpu, &x, &opts(v), &op);
            assert!(plan.n_bands() > 1, "{}", plan.config.describe());
        }
    }
}

#[test]
fn beta_zero_nan_z_and_columns_without_entries() {
    let gpu = common::gpu();
    // 1,000 columns, 2,000 entries: many columns hold none.
    let x = sparse_x(400, 1_000, 2_000, 6);
    let empty: Vec<usize> = wgsparse::fused::hot::column_degrees(&x)
        .iter()
        .enumerate()
        .filter(|&(_, &d)| d == 0)
        .map(|(c, _)| c)
        .collect();
    assert!(empty.len() > 10, "{} empty columns", empty.len());
    let mut vecs = vectors(400, 1_000, false, 3);
    for v in Variant::CONCRETE {
        let o = with(opts(v), Reorder::On);
        // β ≠ 0: an empty column's w is β·z exactly.
        let op = host_op(Pattern::Full, &vecs, 1.5, 0.5);
        let (got, plan) = check_op(gpu, Matrix::Sparse(&x), &o, &op);
        for &c in &empty {
            assert_eq!(got[c], 0.5 * vecs.z[c], "{} w[{c}]", plan.config.describe());
        }
    }
    vecs.z = vec![f32::NAN; 1_000];
    for v in Variant::CONCRETE {
        for p in [Pattern::XtxyBz, Pattern::Full] {
            let op = host_op(p, &vecs, 1.5, 0.0);
            let o = with(opts(v), Reorder::On);
            let (got, plan) = check_op(gpu, Matrix::Sparse(&x), &o, &op);
            assert!(
                got.iter().all(|g| g.is_finite()),
                "{}",
                plan.config.describe()
            );
            for &c in &empty {
                assert_eq!(got[c], 0.0);
            }
        }
    }
}

#[test]
fn two_pass_is_bit_reproducible_reordered() {
    let gpu = common::gpu();
    let x = sparse_x(3_000, 256, 40_000, 12);
    let vecs = vectors(3_000, 256, false, 4);
    let op = host_op(Pattern::Full, &vecs, 1.0, 0.5);
    let o = with(opts(Variant::TwoPass), Reorder::On);
    let (first, plan) = check_op(gpu, Matrix::Sparse(&x), &o, &op);
    for _ in 0..2 {
        let again = plan.run_host(gpu, &op).unwrap();
        let same = again
            .iter()
            .zip(&first)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(
            same,
            "two-pass with re-indexed columns differs between runs"
        );
    }
}

#[test]
fn dispatches_counted_reordered() {
    // y gathered (not `xty`), z gathered (the patterns with β·z), w scattered; the
    // transpose's default, Xᵀ in the caller's order, writes w in place and gathers y alone.
    let gpu = common::gpu();
    let x = sparse_x(700, 300, 9_000, 1);
    for v in Variant::CONCRETE {
        let on = Plan::new(gpu, Matrix::Sparse(&x), &with(opts(v), Reorder::On)).unwrap();
        let off = Plan::new(gpu, Matrix::Sparse(&x), &with(opts(v), Reorder::Off)).unwrap();
        for p in Pattern::ALL {
            let vecs = vectors(700, 300, p == Pattern::Xty, 1);
            let op = host_op(p, &vecs, 1.0, 0.5);
            on_device(gpu, 300, &op, |dop, w| {
                let mut batch = Batch::new(gpu);
                on.record(&mut batch, dop, w).unwrap();
                assert_eq!(batch.dispatches(), on.dispatches(p), "{v:?} {p:?}");
            });
            let permuted = if on.config.xt_caller {
                0
            } else {
                usize::from(p.has_z()) + 1
            };
            assert_eq!(on.config.xt_caller, v == Variant::Transpose, "{v:?}");
            let extra = usize::from(p != Pattern::Xty) + permuted;
            assert_eq!(on.dispatches(p), off.dispatches(p) + extra, "{v:?} {p:?}");
        }
    }
}

#[test]
fn record_onto_reordered() {
    // w already holds β·z in the caller's order: gathered, added onto, scattered back.
    let gpu = common::gpu();
    let x = sparse_x(800, 700, 10_000, 8);
    let vecs = vectors(800, 700, false, 5);
    let op = host_op(Pattern::Full, &vecs, -0.75, 1.25);
    let (want, mag) = Matrix::Sparse(&x).reference(&op);
    let o = Options {
        workgroup_w: Some(false),
        ..with(opts(Variant::Fused), Reorder::On)
    };
    let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
    assert!(plan.accumulates(false), "{}", plan.config.describe());
    on_device(gpu, 700, &op, |dop, w| {
        let bz: Vec<f32> = vecs.z.iter().map(|z| 1.25 * z).collect();
        w.write(gpu, &bz).unwrap();
        let mut batch = Batch::new(gpu);
        plan.record_onto(&mut batch, dop, w).unwrap();
        batch.submit().unwrap();
        let got = w.read(gpu).unwrap();
        // One rounding more than the twin's bound counts: β·z rounded before the adds.
        let cmp = compare(&got, &want, &mag, Matrix::Sparse(&x).rounding_terms() + 1);
        assert!(
            cmp.ok(),
            "w[{:?}] (max rel err {:.3e})",
            cmp.first_bad,
            cmp.max_rel_error
        );
    });
}

#[test]
fn solvers_reordered() {
    let gpu = common::gpu();
    // The logistic kernel's row terms at w (read over columns, gathered into the new order).
    let x = gen::power_law(700, 50, 7_000, 1.1, 8).unwrap();
    let w: Vec<f32> = gen::dense_uniform(1, 50, 3).data;
    let labels: Vec<f32> = gen::dense_uniform(1, 700, 4)
        .data
        .iter()
        .map(|&v| (v > 0.0) as u8 as f32)
        .collect();
    let on = |x: &Csr| {
        let o = with(Options::default(), Reorder::On);
        let plan = Plan::new(gpu, Matrix::Sparse(x), &o).unwrap();
        assert!(plan.config.reorder);
        plan
    };
    let plan = on(&x);
    let got = logreg::row_terms(gpu, &plan, &w, &labels).unwrap();
    let y: Vec<f64> = logreg::signed_labels(&labels)
        .iter()
        .map(|&v| v as f64)
        .collect();
    let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let want = cpu::logistic(&x, &w64, &y);
    for (k, name) in ["loss", "coef", "dd"].iter().enumerate() {
        for r in 0..x.nrows {
            let mag: f64 = x
                .row_range(r)
                .map(|e| (x.values[e] as f64 * w64[x.col_idx[e] as usize]).abs())
                .sum::<f64>()
                + 1.0;
            let err = (got[k][r] as f64 - want[k][r]).abs();
            assert!(err <= 64.0 * f32::EPSILON as f64 * mag, "{name}[{r}]");
        }
    }
    // TRON on the re-indexed plan: the twin's objective.
    let tron = logreg::TronOptions::default();
    let fit = logreg::logreg_tron(gpu, &plan, &labels, &tron, |_, _| {}).unwrap();
    let mut twin = cpu::LogregTwin::new(&x, &labels, tron.lambda);
    let (_, _, losses, _, _) = logreg::tron(&mut twin, &tron, |_, _| {}).unwrap();
    let (f, t) = (*fit.losses.last().unwrap(), *losses.last().unwrap());
    assert!((f - t).abs() <= 1e-4 * t, "objective {f} vs twin {t}");
    // CG for linear regression (its steps add onto w the plan does not write).
    let xl = gen::power_law(3_000, 60, 30_000, 1.1, 11).unwrap();
    let b = linreg::synthetic_labels(Matrix::Sparse(&xl), 3);
    for variant in [Variant::Fused, Variant::TwoPass] {
        let cg = linreg::CgOptions {
            lambda: 0.01,
            fused: Options {
                variant,
                workgroup_w: (variant == Variant::Fused).then_some(false),
                reorder: Reorder::On,
                ..Default::default()
            },
            ..Default::default()
        };
        let plan = Plan::new(gpu, Matrix::Sparse(&xl), &cg.fused).unwrap();
        let got = linreg::linreg_cg(gpu, &plan, &b, &cg, |_, _| {}).unwrap();
        let twin = cpu::linreg_cg(Matrix::Sparse(&xl), &b, 0.01, cg.tol, cg.max_iter);
        let diff = linreg::weights_rel_diff(&got.w, &twin.w);
        assert!(
            diff <= 1e-3,
            "{}: weights {diff:.3e}",
            plan.config.describe()
        );
    }
}

#[test]
fn auto_decides_by_size_and_skew() {
    let gpu = common::gpu();
    let n = AUTO_MIN_COLS;
    let auto = Options::default();
    assert_eq!(auto.reorder, Reorder::Auto);
    let share = |x: &Csr| reorder::top_share(&wgsparse::fused::hot::column_degrees(x)).unwrap();
    // Zipf 1.1 columns, 2 entries per column: the top 1% hold over 40% of the entries.
    let skewed = gen::power_law(100_000, n, 2 * n, 1.1, 5).unwrap();
    assert!(share(&skewed) >= 0.4, "{}", share(&skewed));
    let plan = Plan::new(gpu, Matrix::Sparse(&skewed), &auto).unwrap();
    assert!(!plan.config.workgroup_w && plan.config.reorder);
    // And it runs right at this size.
    check(gpu, Matrix::Sparse(&skewed), &auto, Pattern::Full, 3);
    // Flat columns of the same shape: the top 1% hold a few percent.
    let flat = gen::power_law_skewed(100_000, n, 2 * n, 1.1, 0.0, 5).unwrap();
    assert!(share(&flat) < 0.1, "{}", share(&flat));
    let plan = Plan::new(gpu, Matrix::Sparse(&flat), &auto).unwrap();
    assert!(!plan.config.workgroup_w && !plan.config.reorder);
    // Skewed but too sparse (under 2 entries per column), or too narrow: off; off when told.
    let thin = gen::power_law(2_000, n, n / 2, 1.1, 5).unwrap();
    assert!(share(&thin) >= 0.3);
    assert!(
        !Plan::new(gpu, Matrix::Sparse(&thin), &auto)
            .unwrap()
            .config
            .reorder
    );
    let narrow = sparse_x(3_000, 20_000, 60_000, 2);
    assert!(share(&narrow) >= 0.3);
    let o = Options {
        workgroup_w: Some(false),
        ..auto.clone()
    };
    assert!(
        !Plan::new(gpu, Matrix::Sparse(&narrow), &o)
            .unwrap()
            .config
            .reorder
    );
    let off = with(auto.clone(), Reorder::Off);
    assert!(
        !Plan::new(gpu, Matrix::Sparse(&skewed), &off)
            .unwrap()
            .config
            .reorder
    );
    // Dense X: never by `auto`, refused when asked for.
    let d = gen::dense_uniform(100, 20, 1);
    assert!(
        !Plan::new(gpu, Matrix::Dense(&d), &auto)
            .unwrap()
            .config
            .reorder
    );
    let on = with(auto, Reorder::On);
    assert!(matches!(
        Plan::new(gpu, Matrix::Dense(&d), &on),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn new_like_shares_or_rebuilds_the_reindexed_x() {
    // Plans derived from a re-indexed plan (the tuner's candidates) and from a plain one, in
    // both directions, stay exact.
    let gpu = common::gpu();
    let x = sparse_x(900, 1_100, 12_000, 9);
    let vecs = vectors(900, 1_100, false, 6);
    let op = host_op(Pattern::Full, &vecs, -0.75, 1.25);
    let (want, mag) = Matrix::Sparse(&x).reference(&op);
    let k = Matrix::Sparse(&x).rounding_terms();
    for first in [Reorder::On, Reorder::Off] {
        let like = Plan::new(gpu, Matrix::Sparse(&x), &with(opts(Variant::Fused), first)).unwrap();
        for (v, r) in [
            (Variant::Sorted, first),
            (Variant::Split, first),
            (Variant::Fused, Reorder::On),
            (Variant::Sorted, Reorder::Off),
        ] {
            let plan = Plan::new_like(gpu, Matrix::Sparse(&x), &with(opts(v), r), &like).unwrap();
            assert_eq!(plan.config.reorder, r == Reorder::On);
            let got = plan.run_host(gpu, &op).unwrap();
            let cmp = compare(&got, &want, &mag, k);
            assert!(
                cmp.ok(),
                "{}: w[{:?}]",
                plan.config.describe(),
                cmp.first_bad
            );
        }
    }
}

#[test]
fn reindexed_x_is_a_valid_permuted_csr() {
    let x = sparse_x(500, 800, 6_000, 4);
    let deg = wgsparse::fused::hot::column_degrees(&x);
    let order = wgsparse::sparse::order::by_count(&deg).unwrap();
    let r = reorder::reindex(&x, &order).unwrap();
    r.validate().unwrap();
    assert_eq!(r.row_ptr, x.row_ptr);
    // Counts fall along the new order; every entry keeps its row and value.
    let new_deg = wgsparse::fused::hot::column_degrees(&r);
    assert!(new_deg.windows(2).all(|w| w[0] >= w[1]));
    for row in 0..x.nrows {
        let mut a: Vec<(u32, u32)> = x
            .row_range(row)
            .map(|e| (x.col_idx[e], x.values[e].to_bits()))
            .collect();
        let mut b: Vec<(u32, u32)> = r
            .row_range(row)
            .map(|e| (order[r.col_idx[e] as usize], r.values[e].to_bits()))
            .collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "row {row}");
    }
}

#[test]
fn cli_reports_the_setting() {
    let j = common::wgsparse_json(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.2",
        "--variant",
        "fused,sorted",
        "--pattern",
        "xty,full",
        "--reorder-cols",
        "on",
        "--check",
        "--reps",
        "2",
        "--json",
    ]);
    assert_eq!(j["ok"], true, "{j}");
    assert_eq!(j["reorder_cols"], "on");
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        assert_eq!(r["measurement"]["config"]["reorder"], true, "{r}");
        assert!(r["measurement"]["max_rel_error"].as_f64().unwrap() < 1e-3);
    }
    let j = common::wgsparse_json(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.2",
        "--no-tune",
        "--reorder-cols",
        "auto",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(j["reorder_cols"], "auto");
    assert_eq!(j["results"][0]["measurement"]["config"]["reorder"], false);
}
