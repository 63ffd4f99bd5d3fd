//! Fixed-point sums of w in the stream kernel (`Options::wg_fixed`, `shared/fixed_wg`): every
//! pattern equals the f64 twin (w poisoned) with and without subgroups, the prefetch and long
//! rows; products over a wide range of magnitudes that grow tile by tile (the rescales) stay
//! within the twin's bound; one workgroup's sums are bit-identical run to run; the options
//! refuse what does not apply; and the tuner times the sums against float adds on its stream
//! pick. (NaN and infinities are not tested: WGSL lets a compiler assume there are none, and
//! lavapipe's float adds drop them already.)

mod common;

use common::fused::{check, check_op, host_op, rows_of, sparse_x, vectors};
use wgsparse::fused::{tune, Diag, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::sparse::Csr;

fn fixed(workgroup: u32, epl: u32) -> Options {
    Options {
        variant: Variant::Stream,
        wg_fixed: Some(true),
        workgroup: Some(workgroup),
        epl: Some(epl),
        ..Default::default()
    }
}

#[test]
fn every_pattern_matches_the_twin() {
    let gpu = common::gpu();
    let x = sparse_x(1_300, 300, 11_000, 301);
    let longs = rows_of(400, 250, &[3, 90, 1, 7, 200], 302);
    for (what, xx, o) in [
        ("plain", &x, fixed(128, 4)),
        (
            "prefetch, no subgroups",
            &x,
            Options {
                prefetch: true,
                subgroups: false,
                ..fixed(64, 8)
            },
        ),
        (
            "long rows, one workgroup",
            &longs,
            Options {
                long_row: Some(64),
                groups: Some(1),
                ..fixed(64, 4)
            },
        ),
        (
            "long rows, grid of 5",
            &longs,
            Options {
                long_row: Some(64),
                groups: Some(5),
                prefetch: true,
                ..fixed(32, 4)
            },
        ),
    ] {
        for p in Pattern::ALL {
            let (_, plan) = check(gpu, Matrix::Sparse(xx), &o, p, 303);
            let c = &plan.config;
            assert!(
                c.wg_fixed && !c.wg_native_atomics,
                "{what}: {}",
                c.describe()
            );
            assert!(c.describe().contains("wg-fixed"), "{what}");
        }
    }
}

/// X whose values grow by 2^(r / 40) along the rows and whose signs alternate: each tile's
/// products exceed the last's, so the sums rescale again and again.
fn growing(m: usize, n: usize) -> Csr {
    let mut x = rows_of(m, n, &[5, 9, 2, 14], 311);
    for r in 0..m {
        let scale = 2f32.powf(r as f32 / 40.0) * if r % 3 == 0 { -1.0 } else { 1.0 };
        for e in x.row_range(r) {
            x.values[e] *= scale;
        }
    }
    x
}

#[test]
fn growing_products_rescale_within_the_bound() {
    let gpu = common::gpu();
    let x = growing(600, 120);
    for groups in [1, 4] {
        let o = Options {
            groups: Some(groups),
            ..fixed(32, 4)
        };
        for p in Pattern::ALL {
            check(gpu, Matrix::Sparse(&x), &o, p, 312);
        }
    }
}

#[test]
fn one_workgroup_sums_are_bit_identical() {
    let gpu = common::gpu();
    let x = sparse_x(2_000, 200, 16_000, 321);
    let (m, n) = (x.nrows, x.ncols);
    let vecs = vectors(m, n, false, 322);
    let op = host_op(Pattern::Full, &vecs, 0.5, 0.0);
    let o = Options {
        groups: Some(1),
        ..fixed(128, 4)
    };
    let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
    let first = plan.run_host(gpu, &op).unwrap();
    for _ in 0..3 {
        let again = plan.run_host(gpu, &op).unwrap();
        let same = first
            .iter()
            .zip(&again)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "fixed-point sums differ between runs");
    }
    check_op(gpu, Matrix::Sparse(&x), &o, &op);
}

#[test]
fn options_refuse_what_does_not_apply() {
    let gpu = common::gpu();
    let x = sparse_x(400, 100, 3_000, 341);
    let e = Plan::new(
        gpu,
        Matrix::Sparse(&x),
        &Options {
            variant: Variant::Fused,
            ..fixed(64, 4)
        },
    )
    .err()
    .expect("fused took fixed-point sums");
    assert!(e.to_string().contains("stream kernel only"), "{e}");
    // Beyond workgroup memory at two words a column.
    let wide = sparse_x(
        64,
        gpu.caps.max_workgroup_storage_bytes as usize / 8 + 1,
        500,
        342,
    );
    let e = Plan::new(gpu, Matrix::Sparse(&wide), &fixed(64, 4))
        .err()
        .expect("fixed-point sums beyond workgroup memory");
    assert!(e.to_string().contains("fixed-point"), "{e}");
    for list in ["skip-wg-adds", "plain-wg-adds", "int-wg-adds"] {
        let o = Options {
            diag: Diag::parse(list).unwrap(),
            ..fixed(64, 4)
        };
        assert!(Plan::new(gpu, Matrix::Sparse(&x), &o).is_err(), "{list}");
    }
    for list in ["skip-flush", "fixed-no-global", "fixed-lo-only"] {
        let o = Options {
            diag: Diag::parse(list).unwrap(),
            ..fixed(64, 4)
        };
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        assert!(plan.config.wg_fixed, "{list}");
        let vecs = vectors(400, 100, false, 343);
        plan.run_host(gpu, &host_op(Pattern::Full, &vecs, 1.0, 0.0))
            .unwrap();
        // The sums' switches need the sums.
        let float = Options {
            wg_fixed: Some(false),
            ..o
        };
        assert_eq!(
            Plan::new(gpu, Matrix::Sparse(&x), &float).is_ok(),
            list == "skip-flush",
            "{list}"
        );
    }
}

#[test]
fn the_tuner_times_fixed_sums_and_copies_of_w_on_its_stream_pick() {
    let gpu = common::gpu();
    let x = sparse_x(3_000, 256, 24_000, 351);
    let o = Options {
        variant: Variant::Auto,
        ..Default::default()
    };
    let (plan, timed) = tune::tune(gpu, Matrix::Sparse(&x), &o).unwrap();
    common::fused::check_plan(gpu, Matrix::Sparse(&x), &plan, 352);
    if plan.config.variant == Variant::Stream {
        assert!(
            timed.iter().any(|t| t.wg_fixed == Some(true)),
            "stream timed, fixed-point sums never"
        );
        for copies in [2, 4] {
            assert!(
                timed.iter().any(|t| t.wg_copies == Some(copies)),
                "stream timed, {copies} copies of w never"
            );
        }
        // The fastest copied finalist at every stream grid too (revision 19): one size with
        // four copies timed at five grids or more.
        let copied = timed.iter().filter(|t| t.wg_copies == Some(4));
        assert!(
            common::fused::timed_at_grids(copied, 5),
            "four copies timed at fewer than five grids on any layout"
        );
    }
    // The caller's choice stands.
    let off = Options {
        wg_fixed: Some(false),
        ..o
    };
    let (plan, timed) = tune::tune(gpu, Matrix::Sparse(&x), &off).unwrap();
    assert!(!plan.config.wg_fixed);
    assert!(timed.iter().all(|t| t.wg_fixed != Some(true)));
    let one = Options {
        wg_copies: Some(1),
        ..o
    };
    let (plan, timed) = tune::tune(gpu, Matrix::Sparse(&x), &one).unwrap();
    assert_eq!(plan.config.wg_copies, 1);
    assert!(timed.iter().all(|t| t.wg_copies == Some(1)));
}
