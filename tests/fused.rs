//! The fused pattern: every instantiation × sparse/dense × variant against the f64 CPU twin on
//! power-law inputs (w poisoned with NaN before each run), the capability paths (subgroups
//! or workgroup memory, native f32 atomics or compare-exchange, workgroup or global
//! aggregation, two-pass), the edge shapes, bit-reproducibility and bad input.

mod common;

use common::fused::{
    check, check_op, host_op, opts, sparse_x, top_shares, vectors, with_hot_columns, Vectors,
};
use wgsparse::fused::{cpu, Atomics, HostOp, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::gen;
use wgsparse::sddmm::cpu::compare;
use wgsparse::sparse::{Csr, Dense};
use wgsparse::Error;

#[test]
fn every_pattern_and_variant_sparse() {
    let x = sparse_x(700, 300, 9_000, 1);
    for gpu in [common::gpu(), common::gpu_plain()] {
        for p in Pattern::ALL {
            for v in Variant::CONCRETE {
                let (_, plan) = check(gpu, Matrix::Sparse(&x), &opts(v), p, 7);
                assert_eq!(plan.config.variant, v);
            }
        }
    }
}

#[test]
fn every_pattern_and_variant_dense() {
    for (m, n) in [(300, 70), (150, 20)] {
        let x = gen::dense_uniform(m, n, 3);
        for gpu in [common::gpu(), common::gpu_plain()] {
            for p in Pattern::ALL {
                for v in Variant::CONCRETE {
                    for r in RIF {
                        check(gpu, Matrix::Dense(&x), &rif(opts(v), r), p, 11);
                    }
                }
            }
        }
    }
}

/// Dense rows in flight per vector: every value the kernel takes.
const RIF: [u32; 3] = [1, 2, 4];

/// `o` with `r` dense rows in flight.
fn rif(o: Options, r: u32) -> Options {
    Options {
        rows_in_flight: Some(r),
        ..o
    }
}

#[test]
fn capability_paths_sparse() {
    let gpu = common::gpu();
    let x = sparse_x(600, 500, 8_000, 2);
    let mut seen = vec![];
    for atomics in [Atomics::Native, Atomics::Cas] {
        for workgroup_w in [true, false] {
            for subgroups in [true, false] {
                let o = Options {
                    atomics,
                    workgroup_w: Some(workgroup_w),
                    subgroups,
                    vs: Some(4),
                    ..Default::default()
                };
                let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 5);
                let c = plan.config;
                assert_eq!(c.native_atomics, atomics == Atomics::Native);
                assert_eq!(c.workgroup_w, workgroup_w);
                assert_eq!(c.subgroup_reduce, subgroups && gpu.caps.subgroups);
                seen.push(c.describe());
            }
        }
    }
    // Without optional features the adapter offers neither subgroups nor f32 atomics.
    let plain = Plan::new(common::gpu_plain(), Matrix::Sparse(&x), &Options::default()).unwrap();
    assert!(!plain.config.native_atomics && !plain.config.subgroup_reduce);
    assert!(matches!(
        Plan::new(
            common::gpu_plain(),
            Matrix::Sparse(&x),
            &Options {
                atomics: Atomics::Native,
                ..Default::default()
            }
        ),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn capability_paths_dense() {
    // Vectors within one subgroup (shuffles), spanning several (subgroupAdd, then workgroup
    // memory) and without subgroup operations (workgroup memory), each with native and CAS
    // global adds.
    let d = gen::dense_uniform(260, 60, 17);
    for gpu in [common::gpu(), common::gpu_plain()] {
        let caps = &gpu.caps;
        for (vs, tl) in [(4, 15), (32, 2), (64, 1), (256, 1)] {
            for (atomics, r) in [Atomics::Native, Atomics::Cas]
                .into_iter()
                .flat_map(|a| RIF.map(|r| (a, r)))
            {
                if atomics == Atomics::Native && !caps.f32_atomics {
                    continue;
                }
                let o = Options {
                    vs: Some(vs),
                    tl: Some(tl),
                    atomics,
                    rows_in_flight: Some(r),
                    ..Default::default()
                };
                let (_, plan) = check(gpu, Matrix::Dense(&d), &o, Pattern::Full, 8);
                let c = plan.config;
                assert_eq!(c.rows_in_flight, r);
                let fits = caps.shuffle_fits(vs);
                let wide = caps.subgroups
                    && !fits
                    && caps.subgroup_min_size == caps.subgroup_max_size
                    && vs > caps.subgroup_min_size;
                assert_eq!(c.subgroup_wide, wide, "{}", c.describe());
                assert_eq!(c.subgroup_reduce, fits || wide, "{}", c.describe());
            }
        }
    }
}

#[test]
fn every_legal_launch_configuration() {
    // Small input, every VS, workgroup size and a few C: tails and strides.
    let gpu = common::gpu();
    let x = sparse_x(157, 45, 1_500, 4);
    for vs in [1, 2, 4, 8, 16, 32] {
        for wg in [32, 64, 256] {
            for c in [1, 2, 5] {
                let o = Options {
                    vs: Some(vs),
                    workgroup: Some(wg),
                    rows_per_vector: Some(c),
                    ..Default::default()
                };
                check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, vs as u64);
            }
        }
    }
    let d = gen::dense_uniform(133, 45, 5);
    for (vs, tl) in [(4, 12), (8, 6), (16, 3), (32, 2), (64, 1), (128, 1)] {
        // C = 3 and 5 end on a partial step of 2 or 4 rows in flight.
        for (c, r) in [1, 3, 5].into_iter().flat_map(|c| RIF.map(|r| (c, r))) {
            let o = Options {
                vs: Some(vs),
                tl: Some(tl),
                workgroup: Some(128),
                rows_per_vector: Some(c),
                rows_in_flight: Some(r),
                ..Default::default()
            };
            check(gpu, Matrix::Dense(&d), &o, Pattern::Full, 3);
        }
    }
}

#[test]
fn unfused_twins_compose_to_the_pattern() {
    // The step-by-step twins of the unfused sequence give the pattern's twin.
    let x = sparse_x(300, 80, 3_000, 19);
    let d = gen::dense_uniform(120, 30, 19);
    for p in Pattern::ALL {
        let vs = vectors(300, 80, p == Pattern::Xty, 3);
        let op = host_op(p, &vs, -0.5, 2.0);
        let (want, mag) = cpu::sparse(&x, &op);
        let got: Vec<f32> = cpu::unfused(&x, &op).iter().map(|&v| v as f32).collect();
        assert!(compare(&got, &want, &mag, 4).ok(), "{p:?}");
        let vd = vectors(120, 30, p == Pattern::Xty, 4);
        let op = host_op(p, &vd, -0.5, 2.0);
        let (want, mag) = cpu::dense(&d, &op);
        let got: Vec<f32> = cpu::unfused_dense(&d, &op)
            .iter()
            .map(|&v| v as f32)
            .collect();
        assert!(compare(&got, &want, &mag, 4).ok(), "{p:?}");
    }
}

#[test]
fn edge_shapes() {
    let gpu = common::gpu();
    // Empty rows, rows longer than 32 and rows shorter than VS (power law on many rows).
    let x = sparse_x(2_000, 400, 10_000, 6);
    let lens: Vec<usize> = (0..x.nrows).map(|r| x.row_range(r).len()).collect();
    assert!(lens.contains(&0) && lens.iter().any(|&l| l > 32) && lens.contains(&1));
    for vs in [4, 8] {
        let o = Options {
            vs: Some(vs),
            ..Default::default()
        };
        check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 1);
    }
    // n ≤ 32, n not a multiple of VS, m = 1, n = 1.
    for (m, n, nnz) in [
        (300, 7, 900),
        (97, 29, 1_000),
        (1, 50, 20),
        (40, 1, 30),
        (1, 1, 1),
    ] {
        let x = sparse_x(m, n, nnz, 9);
        let d = gen::dense_uniform(m, n, 9);
        for p in [Pattern::Full, Pattern::Xty] {
            for v in Variant::CONCRETE {
                check(gpu, Matrix::Sparse(&x), &opts(v), p, 2);
                for r in RIF {
                    check(gpu, Matrix::Dense(&d), &rif(opts(v), r), p, 2);
                }
            }
        }
    }
    // An all-empty matrix: w = β·z.
    let empty = Csr::empty(10, 6);
    check(
        gpu,
        Matrix::Sparse(&empty),
        &opts(Variant::Fused),
        Pattern::Full,
        3,
    );
}

#[test]
fn workgroup_memory_threshold() {
    // n just below and just above what a workgroup copy of w can hold.
    let gpu = common::gpu();
    let vs = 4; // fits any subgroup size ≥ 4 (no reduction scratch with subgroups)
    let scratch = if gpu.caps.shuffle_fits(vs) {
        0
    } else {
        4 * 256
    };
    let limit = ((gpu.caps.max_workgroup_storage_bytes - scratch) / 4) as usize;
    for (n, expect_shared) in [(limit, true), (limit + 1, false)] {
        let x = sparse_x(400, n, 6_000, 8);
        let o = Options {
            vs: Some(vs),
            workgroup: Some(256),
            ..Default::default()
        };
        let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 4);
        assert_eq!(plan.config.workgroup_w, expect_shared, "n = {n}");
    }
}

#[test]
fn alpha_zero_and_beta_zero_with_nan_z() {
    let gpu = common::gpu();
    let x = sparse_x(300, 120, 3_000, 10);
    let d = gen::dense_uniform(200, 40, 10);
    for mat in [Matrix::Sparse(&x), Matrix::Dense(&d)] {
        let (m, n) = mat.shape();
        let mut vecs = vectors(m, n, false, 3);
        for v in [Variant::Fused, Variant::TwoPass] {
            // α = 0: w = β·z exactly.
            let op = host_op(Pattern::Full, &vecs, 0.0, 0.5);
            let (got, _) = check_op(gpu, mat, &opts(v), &op);
            for (g, z) in got.iter().zip(&vecs.z) {
                assert_eq!(*g, 0.5 * z);
            }
        }
        vecs.z = vec![f32::NAN; n];
        for v in Variant::CONCRETE {
            let op = host_op(Pattern::Full, &vecs, 1.5, 0.0);
            let (got, _) = check_op(gpu, mat, &opts(v), &op);
            assert!(got.iter().all(|g| g.is_finite()));
        }
    }
}

#[test]
fn paths_agree_and_two_pass_is_bit_reproducible() {
    let gpu = common::gpu();
    let x = sparse_x(3_000, 256, 40_000, 12);
    let vecs = vectors(3_000, 256, false, 4);
    let op = host_op(Pattern::Full, &vecs, 1.0, 0.5);
    let (want, mag) = cpu::sparse(&x, &op);
    let k = cpu::rounding_terms_sparse(&x);
    let mut results = vec![];
    for (variant, atomics) in [
        (Variant::Fused, Atomics::Native),
        (Variant::Fused, Atomics::Cas),
        (Variant::TwoPass, Atomics::Auto),
        (Variant::Unfused, Atomics::Cas),
    ] {
        let o = Options {
            variant,
            atomics,
            ..Default::default()
        };
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        let mut runs: Vec<Vec<f32>> = (0..3).map(|_| plan.run_host(gpu, &op).unwrap()).collect();
        for r in &runs {
            assert!(
                compare(r, &want, &mag, k).ok(),
                "{}",
                plan.config.describe()
            );
        }
        if variant == Variant::TwoPass {
            for r in &runs[1..] {
                let same = r
                    .iter()
                    .zip(&runs[0])
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "two-pass differs between runs");
            }
        }
        results.push(runs.swap_remove(0));
    }
    // The paths agree with each other within twice the bound against the twin.
    for r in &results[1..] {
        let r64: Vec<f64> = r.iter().map(|&v| v as f64).collect();
        let m2: Vec<f64> = mag.iter().map(|m| 2.0 * m).collect();
        assert!(compare(&results[0], &r64, &m2, k).ok());
    }
    let d = gen::dense_uniform(500, 60, 13);
    for r in RIF {
        let o = rif(opts(Variant::TwoPass), r);
        let dplan = Plan::new(gpu, Matrix::Dense(&d), &o).unwrap();
        let a = dplan.run_host(gpu, &op_dense(&d)).unwrap();
        let b = dplan.run_host(gpu, &op_dense(&d)).unwrap();
        let same = a.iter().zip(&b).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{}", dplan.config.describe());
    }
}

fn op_dense(d: &Dense) -> HostOp<'static> {
    let vecs: &'static Vectors = Box::leak(Box::new(vectors(d.nrows, d.ncols, false, 21)));
    host_op(Pattern::Full, vecs, 1.0, 0.5)
}

#[test]
fn dense_bands_beyond_one_binding() {
    // 8 KiB bindings: a 300 × 40 matrix (48 KiB padded) runs as several bands of rows.
    let gpu = common::gpu_small_bindings();
    let d = gen::dense_uniform(300, 40, 14);
    for v in Variant::CONCRETE {
        for p in [Pattern::Full, Pattern::Xty] {
            // Many rows per vector keep the two-pass partials within one small binding.
            for r in RIF {
                let o = Options {
                    variant: v,
                    rows_per_vector: Some(40),
                    rows_in_flight: Some(r),
                    ..Default::default()
                };
                let (_, plan) = check(gpu, Matrix::Dense(&d), &o, p, 6);
                assert!(plan.n_bands() > 1);
            }
        }
    }
    // Sparse X beyond one binding runs in row bands too (tests/fused_bands.rs in full).
    let x = sparse_x(300, 200, 4_000, 15);
    let (_, plan) = check(
        gpu,
        Matrix::Sparse(&x),
        &Options::default(),
        Pattern::Full,
        6,
    );
    assert!(plan.n_bands() > 1);
}

#[test]
fn bad_input_is_an_error() {
    let gpu = common::gpu();
    let x = sparse_x(50, 30, 300, 16);
    let plan = Plan::new(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    let y = vec![1.0f32; 29];
    let op = HostOp {
        alpha: 1.0,
        y: &y,
        v: None,
        beta: 0.0,
        z: None,
        xty: false,
    };
    assert!(matches!(plan.run_host(gpu, &op), Err(Error::Shape(_))));
    let y = vec![1.0f32; 30];
    let op = HostOp {
        y: &y,
        beta: 1.0,
        ..op
    };
    assert!(matches!(plan.run_host(gpu, &op), Err(Error::Option(_))));
    let op = HostOp {
        alpha: f32::NAN,
        beta: 0.0,
        ..op
    };
    assert!(matches!(plan.run_host(gpu, &op), Err(Error::Option(_))));
    for bad in [
        Options {
            vs: Some(3),
            ..Default::default()
        },
        Options {
            rows_per_vector: Some(0),
            ..Default::default()
        },
        Options {
            variant: Variant::TwoPass,
            workgroup_w: Some(false),
            ..Default::default()
        },
    ] {
        assert!(Plan::new(gpu, Matrix::Sparse(&x), &bad).is_err(), "{bad:?}");
    }
    let mut nan = x.clone();
    nan.values[3] = f32::NAN;
    assert!(Plan::new(gpu, Matrix::Sparse(&nan), &Options::default()).is_err());
}

#[test]
fn autotuner_caches_per_adapter_and_shape() {
    let dir = tempfile::tempdir().unwrap();
    // Only this test of the binary reads the cache folder.
    std::env::set_var("WGSPARSE_CACHE_DIR", dir.path());
    let gpu = common::gpu();
    let x = sparse_x(2_000, 150, 16_000, 18);
    // The observer hears of every candidate as it is screened, in the order of the plan's
    // list, numbered from 1.
    let heard = std::cell::RefCell::new(vec![]);
    let hear = |k: usize, step: &wgsparse::fused::tune::TuneStep| {
        heard.borrow_mut().push((k, step.config.clone(), step.ms));
    };
    let tuned = || {
        wgsparse::fused::tune::autotuned_plan_observed(
            gpu,
            Matrix::Sparse(&x),
            &Options::default(),
            Some(&hear),
        )
        .unwrap()
    };
    let first = tuned();
    let listed: Vec<_> = first
        .tuning()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, s)| (i + 1, s.config.clone(), s.ms))
        .collect();
    assert!(listed.len() > 1, "{listed:?}");
    assert_eq!(*heard.borrow(), listed);
    let file = dir.path().join("fused-tune.json");
    let cached = wgsparse::tune::TuneCache::at(&file).read().unwrap();
    let key = cached.keys().next().unwrap().clone();
    assert!(
        key.starts_with(&gpu.caps.adapter_name) && key.contains("sparse"),
        "{key}"
    );
    // The entry records the tuned long-row threshold (null: the launch model's).
    assert!(cached[&key].get("long_row").is_some(), "{}", cached[&key]);
    // From the cache: nothing screened, nothing heard.
    heard.borrow_mut().clear();
    let again = tuned();
    assert!(heard.borrow().is_empty());
    assert_eq!(first.config, again.config);
    // The tuned plan computes the pattern.
    let vecs = vectors(2_000, 150, false, 5);
    let op = host_op(Pattern::Full, &vecs, 1.0, 0.5);
    let got = again.run_host(gpu, &op).unwrap();
    let (want, mag) = cpu::sparse(&x, &op);
    assert!(compare(&got, &want, &mag, cpu::rounding_terms_sparse(&x)).ok());
}

#[test]
fn hot_column_cache() {
    // w beyond workgroup memory: the columns with the most entries are aggregated there and
    // only the cold tail goes to global memory. n just above the threshold (every used column
    // fits the cache) and far above it (only the hottest do), with a few extremely hot
    // columns; native and compare-exchange global adds; the cache off, tiny and full.
    let gpu = common::gpu();
    let (vs, wg) = (4, 256);
    let scratch = if gpu.caps.shuffle_fits(vs) { 0 } else { 4 * wg };
    let cap = ((gpu.caps.max_workgroup_storage_bytes - scratch) / 4) as usize;
    for (m, n, nnz) in [(400, cap + 1, 6_000), (1_000, 8 * cap, 40_000)] {
        let base = sparse_x(m, n, nnz, 21);
        let x = with_hot_columns(&base, &[3, n as u32 / 2, n as u32 - 1], 22);
        let used = wgsparse::fused::hot::column_degrees(&x)
            .iter()
            .filter(|&&d| d > 0)
            .count();
        for hot in [None, Some(0), Some(3), Some(64)] {
            for atomics in [Atomics::Native, Atomics::Cas] {
                for p in [Pattern::Full, Pattern::Xty] {
                    let o = Options {
                        atomics,
                        vs: Some(vs),
                        workgroup: Some(wg),
                        hot_cols: hot,
                        ..Default::default()
                    };
                    let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, p, 13);
                    let c = plan.config;
                    assert!(!c.workgroup_w, "n = {n}");
                    let want = hot.map_or(cap.min(used), |h| (h as usize).min(used));
                    assert_eq!(c.hot_cols as usize, want, "{}", c.describe());
                }
            }
        }
        // A plan of the same X with another launch configuration shares the ranked columns
        // (same slot count) and the column count, and still computes the pattern.
        let o = |vs: u32, wg: u32| Options {
            vs: Some(vs),
            workgroup: Some(wg),
            ..Default::default()
        };
        let first = Plan::new(gpu, Matrix::Sparse(&x), &o(vs, wg)).unwrap();
        let other = Plan::new_like(gpu, Matrix::Sparse(&x), &o(8, 128), &first).unwrap();
        assert!(other.config.hot_cols > 0 && other.config.vs == 8);
        let vecs = vectors(m, n, false, 41);
        let op = host_op(Pattern::Full, &vecs, -0.75, 1.25);
        let got = other.run_host(gpu, &op).unwrap();
        let (want, mag) = Matrix::Sparse(&x).reference(&op);
        assert!(compare(&got, &want, &mag, Matrix::Sparse(&x).rounding_terms()).ok());
        // More slots than fit is an error; the variants without global aggregation ignore it.
        let too_many = Options {
            vs: Some(vs),
            workgroup: Some(wg),
            hot_cols: Some(cap as u32 + 1),
            ..Default::default()
        };
        assert!(matches!(
            Plan::new(gpu, Matrix::Sparse(&x), &too_many),
            Err(Error::TooLarge { .. })
        ));
        for v in [Variant::TwoPass, Variant::Unfused] {
            let o = Options {
                variant: v,
                hot_cols: Some(16),
                ..Default::default()
            };
            if let Ok(plan) = Plan::new(gpu, Matrix::Sparse(&x), &o) {
                assert_eq!(plan.config.hot_cols, 0);
            }
        }
    }
    // Without subgroups or f32 atomics: workgroup-memory reduction and compare-exchange.
    let x = with_hot_columns(&sparse_x(300, cap + 1, 4_000, 23), &[0, 5], 24);
    let (_, plan) = check(
        common::gpu_plain(),
        Matrix::Sparse(&x),
        &Options::default(),
        Pattern::Full,
        3,
    );
    assert!(plan.config.hot_cols > 0 && !plan.config.native_atomics);
}

#[test]
fn long_rows_split_over_workgroups() {
    // Rows above the threshold go through the long-row path (chunked dot products, then the
    // scatter); one row holds more than half of X (heavy rows), or one column does (heavy
    // columns, short rows). w in workgroup memory and in global memory (with and without the
    // hot-column cache), native and compare-exchange adds, with and without subgroups.
    let gpu = common::gpu();
    let cap = (gpu.caps.max_workgroup_storage_bytes / 4) as usize;
    for (n, row_alpha, col_alpha, nnz) in [
        (900, 2.0, 1.1, 1_200),
        (2 * cap, 2.0, 1.1, 9_000),
        (2 * cap, 0.0, 3.0, 330),
    ] {
        let x = gen::power_law_skewed(300, n, nnz, row_alpha, col_alpha, 31).unwrap();
        let (row, col) = top_shares(&x);
        assert!(row > 0.5 || col > 0.5, "row {row:.2}, column {col:.2}");
        for g in [gpu, common::gpu_plain()] {
            for (long_row, hot) in [
                (Some(1), None),
                (Some(40), Some(0)),
                (Some(40), None),
                (None, None),
            ] {
                for variant in [Variant::Fused, Variant::Sorted] {
                    for p in [Pattern::Full, Pattern::Xty, Pattern::Xtxy] {
                        let o = Options {
                            variant,
                            long_row,
                            hot_cols: hot,
                            ..Default::default()
                        };
                        let (_, plan) = check(g, Matrix::Sparse(&x), &o, p, 17);
                        if let Some(l) = long_row {
                            assert_eq!(plan.config.long_row, l);
                        }
                        let longest = (0..x.nrows).map(|r| x.row_range(r).len()).max().unwrap();
                        assert_eq!(
                            plan.long_chunks() > 0,
                            longest > plan.config.long_row as usize,
                            "{}",
                            plan.config.describe()
                        );
                    }
                }
            }
        }
    }
    // Two-pass and unfused never split rows.
    let x = gen::power_law_skewed(300, 900, 1_200, 2.0, 1.1, 31).unwrap();
    for variant in [Variant::TwoPass, Variant::Unfused] {
        let o = Options {
            variant,
            long_row: Some(1),
            ..Default::default()
        };
        let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 3);
        assert_eq!(plan.long_chunks(), 0);
    }
}
