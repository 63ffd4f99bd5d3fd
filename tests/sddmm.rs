//! SDDMM: every variant against the f64 CPU twin on power-law inputs, outputs poisoned with
//! NaN before each run, plus the edge cases of the tiling.

mod common;

use wgsparse::gen;
use wgsparse::sddmm::{cpu, Options, Plan, Transpose, Variant};
use wgsparse::sparse::{Coo, Csr, Dense};
use wgsparse::{Error, Gpu};

fn check_with(gpu: &Gpu, s: &Csr, k: usize, opts: Options, seed: u64) -> Plan {
    let a = gen::dense_uniform(s.nrows, k, seed);
    let b = gen::dense_uniform(s.ncols, k, seed + 1);
    let plan = Plan::new(gpu, s, k, opts.clone())
        .unwrap_or_else(|e| panic!("plan {:?}: {e}", opts.variant));
    let got = plan.run_host(gpu, &a, &b).unwrap();
    let (want, mag) = cpu::sddmm(s, &a, &b);
    let cmp = cpu::compare(&got, &want, &mag, k);
    assert!(
        cmp.ok(),
        "{:?} K={k} config {:?}: entry {:?} = {} want {} (max rel err {:.3e})",
        opts.variant,
        plan.config,
        cmp.first_bad,
        cmp.first_bad.map_or(0.0, |e| got[e]),
        cmp.first_bad.map_or(0.0, |e| want[e]),
        cmp.max_rel_error
    );
    plan
}

fn check(s: &Csr, k: usize, opts: Options) -> Plan {
    check_with(common::gpu(), s, k, opts, 42)
}

fn opts(variant: Variant) -> Options {
    Options {
        variant,
        ..Default::default()
    }
}

fn all_variant_options() -> Vec<Options> {
    let mut out = vec![
        opts(Variant::Naive),
        opts(Variant::Warp),
        opts(Variant::Auto),
    ];
    // The row index per nonzero expanded on the device (the default on GPUs; lavapipe, a
    // CPU device, builds it on the host unless told).
    for variant in [Variant::Naive, Variant::Warp] {
        out.push(Options {
            variant,
            build_on_device: Some(true),
            ..Default::default()
        });
    }
    // Row runs: the default lanes, a transposed butterfly wider than lavapipe's subgroup
    // (the workgroup-memory path), and runs short enough to cut most rows.
    out.push(opts(Variant::RowRun));
    // Column panels of 7 (rows cut at every panel boundary) and one panel.
    for (vws, run, tj) in [
        (32, None, None),
        (2, Some(3), Some(7)),
        (4, Some(4), Some(1 << 20)),
    ] {
        out.push(Options {
            variant: Variant::RowRun,
            vws: Some(vws),
            block_nnz: run,
            tj,
            ..Default::default()
        });
    }
    // Tilings built on the host and on the device (counted, scanned and placed there).
    for variant in [Variant::SmL2, Variant::SmSm] {
        for transpose in [Transpose::Never, Transpose::Always] {
            for compress in [true, false] {
                if variant == Variant::SmSm && !compress {
                    continue;
                }
                for build_on_device in [false, true] {
                    out.push(Options {
                        variant,
                        transpose,
                        compress,
                        build_on_device: Some(build_on_device),
                        ..Default::default()
                    });
                }
            }
        }
    }
    out
}

#[test]
fn every_variant_matches_the_twin_on_power_law_input() {
    let s = gen::power_law(300, 220, 4000, 1.1, 1).unwrap();
    for k in [32, 72] {
        for o in all_variant_options() {
            check(&s, k, o);
        }
    }
}

#[test]
fn k_not_a_multiple_of_four_and_tiny_k() {
    let s = gen::power_law(120, 90, 900, 1.0, 2).unwrap();
    for k in [1, 3, 5, 13] {
        for o in all_variant_options() {
            check(&s, k, o);
        }
    }
}

#[test]
fn k_slices_accumulate() {
    // K/Tk > 1 with a partial last slice: the printed Algorithm 5 would keep only the last.
    let s = gen::power_law(200, 150, 2500, 1.2, 3).unwrap();
    for (variant, tk) in [(Variant::SmL2, 8), (Variant::SmL2, 24), (Variant::SmSm, 16)] {
        let p = check(
            &s,
            100,
            Options {
                variant,
                tk: Some(tk),
                ..Default::default()
            },
        );
        assert!(p.config.stride.div_ceil(p.config.tk) > 1);
    }
}

#[test]
fn panels_and_blocks_at_awkward_sizes() {
    let s = gen::power_law(257, 301, 5000, 1.1, 4).unwrap();
    // N not a multiple of Tj, active rows not a multiple of Ti, several blocks per panel.
    for (tj, ti) in [(7, 5), (64, 3), (100, 17), (301, 64), (1000, 1)] {
        for transpose in [Transpose::Never, Transpose::Always] {
            check(
                &s,
                40,
                Options {
                    variant: Variant::SmL2,
                    tj: Some(tj),
                    ti: Some(ti),
                    tk: Some(16),
                    transpose,
                    ..Default::default()
                },
            );
            check(
                &s,
                40,
                Options {
                    variant: Variant::SmSm,
                    tj: Some(tj.min(128)),
                    ti: Some(ti.clamp(2, 128)),
                    tk: Some(16),
                    transpose,
                    ..Default::default()
                },
            );
        }
    }
}

#[test]
fn heavy_rows_split_over_blocks() {
    // Tiny nonzero caps force every long row to span several workgroups.
    let s = gen::power_law(90, 400, 6000, 1.3, 8).unwrap();
    for cap in [1, 3, 7, 64, 1000] {
        for transpose in [Transpose::Never, Transpose::Always] {
            check(
                &s,
                24,
                Options {
                    variant: Variant::SmL2,
                    tj: Some(150),
                    block_nnz: Some(cap),
                    transpose,
                    ..Default::default()
                },
            );
        }
    }
}

#[test]
fn empty_rows_columns_and_one_dense_row() {
    // Rows 0..10 and columns 0..5 empty; row 20 is dense.
    let mut coo = Coo::empty(60, 50);
    for j in 5..50 {
        coo.rows.push(20);
        coo.cols.push(j);
        coo.values.push(0.5 + j as f32 / 50.0);
    }
    for i in 10..60u32 {
        if i != 20 {
            coo.rows.push(i);
            coo.cols.push(5 + (i * 7) % 45);
            coo.values.push(-1.25);
        }
    }
    let s = coo.to_csr();
    for o in all_variant_options() {
        check(&s, 24, o);
    }
}

#[test]
fn all_nonzeros_in_one_column_panel() {
    let mut coo = Coo::empty(80, 400);
    for i in 0..80u32 {
        for j in 0..6u32 {
            coo.rows.push(i);
            coo.cols.push(350 + (i + j * 3) % 40);
            coo.values.push(1.0 + j as f32);
        }
    }
    let s = coo.to_csr();
    for transpose in [Transpose::Never, Transpose::Always] {
        check(
            &s,
            32,
            Options {
                variant: Variant::SmL2,
                tj: Some(64),
                transpose,
                ..Default::default()
            },
        );
    }
}

#[test]
fn sixteen_bit_compression_boundary() {
    // Columns on both sides of 65536 with a panel width of exactly 65536: local indices reach
    // 65535 and the second panel starts at 65536.
    let cols = [0u32, 1, 65_534, 65_535, 65_536, 65_537, 69_999];
    let mut coo = Coo::empty(3, 70_000);
    for i in 0..3u32 {
        for &c in &cols {
            coo.rows.push(i);
            coo.cols.push(c);
            coo.values.push(1.5 - i as f32);
        }
    }
    let s = coo.to_csr();
    let p = check(
        &s,
        16,
        Options {
            variant: Variant::SmL2,
            tj: Some(65_536),
            transpose: Transpose::Never,
            ..Default::default()
        },
    );
    assert!(p.config.compress, "Tj = 65536 must still compress");
    let p = check(
        &s,
        16,
        Options {
            variant: Variant::SmL2,
            tj: Some(65_537),
            transpose: Transpose::Never,
            ..Default::default()
        },
    );
    assert!(!p.config.compress, "Tj > 65536 cannot use 16-bit indices");
}

#[test]
fn empty_and_one_by_one() {
    let empty = Csr::empty(40, 30);
    let one = Coo::new(1, 1, vec![0], vec![0], vec![2.5])
        .unwrap()
        .to_csr();
    for o in all_variant_options() {
        let p = check(&empty, 16, o.clone());
        assert_eq!(p.nnz, 0);
        check(&one, 16, o.clone());
        check(&one, 0, o);
    }
}

#[test]
fn small_sweep_agrees() {
    let s = gen::power_law(150, 170, 2200, 1.1, 9).unwrap();
    for tj in [16, 64, 170] {
        for tk in [8, 32, 48] {
            for vws in [1, 2, 4, 8, 16, 32] {
                check(
                    &s,
                    48,
                    Options {
                        variant: Variant::SmL2,
                        tj: Some(tj),
                        tk: Some(tk),
                        vws: Some(vws),
                        workgroup: Some(if vws == 32 { 128 } else { 64 }),
                        ..Default::default()
                    },
                );
            }
        }
    }
    for vws in [1, 2, 4, 8, 16, 32] {
        check(
            &s,
            48,
            Options {
                variant: Variant::Warp,
                vws: Some(vws),
                ..Default::default()
            },
        );
    }
}

#[test]
fn fallback_path_without_subgroups_or_timestamps() {
    let gpu = common::gpu_plain();
    let s = gen::power_law(100, 80, 1200, 1.1, 5).unwrap();
    for o in all_variant_options() {
        let p = check_with(gpu, &s, 40, o, 7);
        assert!(!p.config.subgroup_reduce);
    }
}

#[test]
fn bad_input_is_rejected() {
    let gpu = common::gpu();
    // Unsorted columns never reach a plan: Csr::new refuses them.
    let unsorted = Csr::new(1, 4, vec![0, 2], vec![3, 1], vec![1.0, 1.0]);
    assert!(matches!(unsorted, Err(Error::Invalid { .. })));
    // A hand-built invalid Csr is caught by Plan::new's validation.
    let bad = Csr {
        nrows: 1,
        ncols: 4,
        row_ptr: vec![0, 2],
        col_idx: vec![3, 9],
        values: vec![1.0, f32::NAN],
    };
    assert!(matches!(
        Plan::new(gpu, &bad, 8, Options::default()),
        Err(Error::Invalid { .. })
    ));
    let s = gen::power_law(20, 10, 50, 1.0, 1).unwrap();
    let plan = Plan::new(gpu, &s, 8, Options::default()).unwrap();
    let a = gen::dense_uniform(20, 8, 1);
    let wrong = gen::dense_uniform(11, 8, 2);
    assert!(matches!(
        plan.run_host(gpu, &a, &wrong),
        Err(Error::Shape(_))
    ));
    let nan = Dense {
        nrows: 10,
        ncols: 8,
        data: vec![f32::NAN; 80],
    };
    assert!(matches!(
        plan.run_host(gpu, &a, &nan),
        Err(Error::Invalid { .. })
    ));
    let bad_vws = Options {
        variant: Variant::Warp,
        vws: Some(3),
        ..Default::default()
    };
    assert!(matches!(
        Plan::new(gpu, &s, 8, bad_vws),
        Err(Error::Option(_))
    ));
    let huge_tile = Options {
        variant: Variant::SmL2,
        ti: Some(1 << 20),
        tk: Some(64),
        ..Default::default()
    };
    assert!(matches!(
        Plan::new(gpu, &s, 64, huge_tile),
        Err(Error::Option(_))
    ));
}

#[test]
fn large_tilings_use_the_parallel_path() {
    // ≥ 65,536 nonzeros: tiling and transposition run multi-threaded.
    let s = gen::power_law(2_000, 1_500, 120_000, 1.1, 21).unwrap();
    for transpose in [Transpose::Never, Transpose::Always] {
        for (variant, tj) in [(Variant::SmL2, 300), (Variant::SmSm, 48)] {
            check(
                &s,
                16,
                Options {
                    variant,
                    tj: Some(tj),
                    ti: (variant == Variant::SmSm).then_some(40),
                    transpose,
                    ..Default::default()
                },
            );
        }
    }
}

#[test]
fn unrolled_steps_agree() {
    // 1–4 nonzeros per virtual subgroup per step, with counts that leave partial steps.
    let s = gen::power_law(170, 130, 2_333, 1.2, 31).unwrap();
    for unroll in 1..=4 {
        for (variant, vws) in [
            (Variant::Warp, 4),
            (Variant::Warp, 32),
            (Variant::SmL2, 2),
            (Variant::SmL2, 8),
        ] {
            for transpose in [Transpose::Never, Transpose::Always] {
                check(
                    &s,
                    40,
                    Options {
                        variant,
                        vws: Some(vws),
                        unroll: Some(unroll),
                        block_nnz: Some(77),
                        tk: Some(16),
                        transpose,
                        ..Default::default()
                    },
                );
            }
        }
    }
    let bad = Options {
        variant: Variant::Warp,
        unroll: Some(5),
        ..Default::default()
    };
    assert!(matches!(
        Plan::new(common::gpu(), &s, 8, bad),
        Err(Error::Option(_))
    ));
}

#[test]
fn run_new_returns_p_with_s_pattern_shared_across_calls() {
    let gpu = common::gpu();
    let s = gen::power_law(90, 70, 800, 1.1, 41).unwrap();
    let plan = Plan::new(gpu, &s, 24, Options::default()).unwrap();
    let a = gen::dense_uniform(90, 24, 1);
    let b = gen::dense_uniform(70, 24, 2);
    let (ga, gb) = (
        wgsparse::sparse::GpuDense::upload(gpu, &a).unwrap(),
        wgsparse::sparse::GpuDense::upload(gpu, &b).unwrap(),
    );
    let p1 = plan.run_new(gpu, &ga, &gb).unwrap();
    let p2 = plan.run_new(gpu, &ga, &gb).unwrap();
    assert!(std::sync::Arc::ptr_eq(&p1.col_idx, &p2.col_idx));
    let p = p1.read(gpu).unwrap();
    assert_eq!((&p.row_ptr, &p.col_idx), (&s.row_ptr, &s.col_idx));
    let (want, mag) = cpu::sddmm(&s, &a, &b);
    assert!(cpu::compare(&p.values, &want, &mag, 24).ok());
}

#[test]
fn data_beyond_one_binding_runs_in_row_bands() {
    // 8 KiB bindings: A (400 × 24 floats, 38 KB) and the 5,000 nonzeros (20 KB per array)
    // are split into row bands; B (60 × 24 floats, 5.8 KB) fits whole.
    let gpu = common::gpu_small_bindings();
    let s = gen::power_law(400, 60, 5000, 1.1, 9).unwrap();
    for o in all_variant_options() {
        let plan = check_with(gpu, &s, 20, o, 5);
        assert!(plan.n_bands() >= 3, "{} bands", plan.n_bands());
    }
}

#[test]
fn b_beyond_one_binding_is_a_clear_error() {
    let gpu = common::gpu_small_bindings();
    let s = gen::power_law(50, 400, 2000, 1.0, 10).unwrap();
    match Plan::new(gpu, &s, 20, opts(Variant::Warp)) {
        Err(Error::TooLarge { what, .. }) => assert!(what.starts_with("B "), "{what}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("B beyond one binding was accepted"),
    }
}

#[test]
fn tuned_plans_match_the_twin() {
    // The tuner's winner is returned as it ran (COO candidates share one upload of S); it
    // must compute the same P as the twin, on a plain and on a banded device.
    use wgsparse::sddmm::tune::{self, Operands};
    let s = gen::power_law(400, 60, 5000, 1.1, 11).unwrap();
    for gpu in [common::gpu(), common::gpu_small_bindings()] {
        for variant in [Variant::Auto, Variant::Warp, Variant::SmL2] {
            let k = 20;
            let ops = Operands::random(gpu, &s, k, 3).unwrap();
            let (m, plan) = tune::tune(gpu, &s, k, &opts(variant), &ops).unwrap();
            assert!(m.ms > 0.0 && m.ms.is_finite());
            if variant != Variant::Auto {
                assert_eq!(plan.config.variant, variant);
            }
            ops.out.fill(gpu, f32::NAN).unwrap();
            plan.run(gpu, &ops.a, &ops.b, &ops.out).unwrap();
            let got = ops.out.read(gpu).unwrap();
            let (want, mag) = cpu::sddmm(&s, &ops.a_host, &ops.b_host);
            let cmp = cpu::compare(&got, &want, &mag, k);
            assert!(
                cmp.ok(),
                "{variant:?}: {:?} max rel {:e}",
                plan.config,
                cmp.max_rel_error
            );
        }
    }
}

#[test]
fn plans_sharing_arrays_match_the_twin() {
    for gpu in [common::gpu(), common::gpu_small_bindings()] {
        let s = gen::power_law(400, 60, 5000, 1.1, 12).unwrap();
        let k = 20;
        let a = gen::dense_uniform(s.nrows, k, 1);
        let b = gen::dense_uniform(s.ncols, k, 2);
        let (want, mag) = cpu::sddmm(&s, &a, &b);
        let panels = |vws, workgroup| Options {
            tj: Some(40),
            block_nnz: Some(64),
            vws: Some(vws),
            workgroup: Some(workgroup),
            ..opts(Variant::SmL2)
        };
        let tiles = |tk| Options {
            tj: Some(16),
            ti: Some(16),
            tk: Some(tk),
            ..opts(Variant::SmSm)
        };
        // (first plan, a plan built like it): same layouts share arrays, others build
        // their own.
        let pairs = [
            (opts(Variant::Warp), opts(Variant::Naive)),
            (
                opts(Variant::Warp),
                Options {
                    vws: Some(8),
                    unroll: Some(2),
                    workgroup: Some(128),
                    ..opts(Variant::Warp)
                },
            ),
            (opts(Variant::Warp), opts(Variant::SmL2)),
            (panels(2, 128), panels(8, 256)),
            (tiles(8), tiles(16)),
            (tiles(8), panels(4, 128)),
            (panels(4, 128), opts(Variant::Naive)),
        ];
        for (first, o) in pairs {
            let first = Plan::new(gpu, &s, k, first).unwrap();
            let plan = Plan::new_like(gpu, &s, k, o, &first).unwrap();
            let got = plan.run_host(gpu, &a, &b).unwrap();
            let cmp = cpu::compare(&got, &want, &mag, k);
            assert!(
                cmp.ok(),
                "{:?}: max rel {:e}",
                plan.config,
                cmp.max_rel_error
            );
        }
    }
}

#[test]
fn rows_expanded_on_the_device_skip_empty_rows() {
    // Empty rows first, in the middle (several in a row) and last.
    let mut coo = Coo::empty(9, 7);
    for (i, j) in [(1, 0), (1, 6), (2, 3), (5, 1), (5, 2), (5, 5), (7, 4)] {
        coo.rows.push(i);
        coo.cols.push(j);
        coo.values.push(1.0 + j as f32);
    }
    let s = coo.to_csr();
    for variant in [Variant::Naive, Variant::Warp] {
        for build_on_device in [true, false] {
            check(
                &s,
                5,
                Options {
                    variant,
                    build_on_device: Some(build_on_device),
                    ..Default::default()
                },
            );
        }
    }
}
