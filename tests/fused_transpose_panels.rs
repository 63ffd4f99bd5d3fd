//! The transpose variant's column panels (`--panels P`: X·y summed over X's column panels,
//! X's first panel writing p and the others adding onto it; Xᵀp over Xᵀ's column panels, each
//! adding onto w) against the f64 twin: every pattern, row tiles and the row kernel, native
//! and compare-exchange adds, long rows in chunks in several panels, both matrices in row
//! bands, more panels than columns or rows; the panels' facts; plans built like another
//! sharing its Xᵀ and panels under other grids; refusals.

mod common;

use common::fused::{check, check_plan, refused, sparse_x, with_hot_columns};
use wgsparse::fused::{Atomics, Matrix, Options, Pattern, Plan, Variant, PANELS_MAX};
use wgsparse::sparse::Csr;
use wgsparse::Gpu;

fn opts(panels: u32, epl: Option<u32>, atomics: Atomics, long_row: Option<u32>) -> Options {
    Options {
        variant: Variant::Transpose,
        panels: Some(panels),
        epl,
        atomics,
        long_row,
        ..Default::default()
    }
}

/// Power-law X with two hot columns (Xᵀ's rows of 1,500 entries, in different panels of X).
fn hot_x() -> Csr {
    with_hot_columns(&sparse_x(1_500, 1_400, 9_000, 401), &[5, 1_200], 402)
}

fn check_panels(g: &Gpu, x: &Csr, o: &Options, p: Pattern, seed: u64) -> Plan {
    let (_, plan) = check(g, Matrix::Sparse(x), o, p, seed);
    assert_eq!(plan.config.variant, Variant::Transpose);
    assert_eq!(Some(plan.config.panels), o.panels);
    plan
}

#[test]
fn every_pattern_in_panels() {
    let x = hot_x();
    for panels in [2, 3, 7] {
        for (epl, atomics) in [(None, Atomics::Auto), (Some(0), Atomics::Cas)] {
            for p in Pattern::ALL {
                check_panels(common::gpu(), &x, &opts(panels, epl, atomics, None), p, 411);
            }
        }
    }
}

#[test]
fn long_rows_in_every_panel_and_without_subgroups() {
    // X's rows of more than 4 entries in chunks: a row's chunks in several panels, the first
    // panel's zeroing its long rows and the others adding onto them.
    let x = hot_x();
    for p in Pattern::ALL {
        let o = Options {
            subgroups: false,
            ..opts(4, Some(0), Atomics::Auto, Some(4))
        };
        let plan = check_panels(common::gpu_plain(), &x, &o, p, 421);
        if p != Pattern::Xty {
            assert!(plan.long_chunks() > 1_000, "{}", plan.long_chunks());
        }
    }
}

#[test]
fn panels_in_row_bands() {
    // 8 KiB bindings: every panel of X and of Xᵀ over several bands.
    let g = common::gpu_small_bindings();
    let x = hot_x();
    for p in [Pattern::Full, Pattern::Xty] {
        let plan = check_panels(g, &x, &opts(3, None, Atomics::Auto, None), p, 431);
        assert!(plan.n_bands() > 4, "{} bands", plan.n_bands());
    }
}

#[test]
fn more_panels_than_columns_or_rows() {
    let narrow = sparse_x(300, 5, 700, 441);
    let short = sparse_x(3, 400, 500, 442);
    for x in [&narrow, &short] {
        for p in Pattern::ALL {
            check_panels(
                common::gpu(),
                x,
                &opts(PANELS_MAX, None, Atomics::Auto, None),
                p,
                443,
            );
        }
    }
}

#[test]
fn panels_sum_the_same_chunks_and_tiles() {
    // Panels cut X's entries, so their tiles cover at least the whole X's rows once per
    // panel, and the facts sum over them.
    let g = common::gpu();
    let x = hot_x();
    let whole = Plan::new(g, Matrix::Sparse(&x), &opts(1, None, Atomics::Auto, None)).unwrap();
    let cut = Plan::new(g, Matrix::Sparse(&x), &opts(4, None, Atomics::Auto, None)).unwrap();
    let tiles = |plan: &Plan| {
        (
            plan.transpose_x_tiles().unwrap(),
            plan.transpose_pass().unwrap().tiles,
        )
    };
    let ((tx, txt), (px, pxt)) = (tiles(&whole), tiles(&cut));
    assert!(px >= tx && pxt >= txt, "{px} ≥ {tx}, {pxt} ≥ {txt}");
    assert!(cut.config.describe().contains("panels=4"));
}

#[test]
fn plans_built_like_another_share_its_matrices_under_other_grids() {
    // The tuner's candidates: row tiles, their pipeline, the row kernel, another workgroup
    // size and long-row threshold gather over the first plan's Xᵀ and panels (grids built
    // again), checked against the twin; another panel count or row order builds its own.
    let g = common::gpu();
    let x = hot_x();
    let m = Matrix::Sparse(&x);
    for panels in [1, 3] {
        let first = Plan::new(g, m, &opts(panels, None, Atomics::Auto, None)).unwrap();
        let grids = [
            opts(panels, Some(0), Atomics::Auto, None),
            Options {
                prefetch: true,
                ..opts(panels, None, Atomics::Auto, None)
            },
            Options {
                workgroup: Some(64),
                ..opts(panels, Some(2), Atomics::Cas, Some(8))
            },
        ];
        for (i, o) in grids.iter().enumerate() {
            let plan = Plan::new_like(g, m, o, &first).unwrap();
            assert_ne!(plan.config, first.config, "candidate {i}");
            // The tuner's list tells them apart (the pipeline as `pipe`).
            assert_ne!(
                plan.config.describe(),
                first.config.describe(),
                "candidate {i}"
            );
            assert_eq!(plan.config.describe().contains(" pipe"), o.prefetch);
            assert!(
                plan.shares_transpose(&first),
                "panels {panels}, candidate {i}"
            );
            check_plan(g, m, &plan, 461 + i as u64);
        }
        let other = Plan::new_like(g, m, &opts(2, None, Atomics::Auto, None), &first).unwrap();
        assert!(!other.shares_transpose(&first));
        check_plan(g, m, &other, 465);
    }
    // Not transposes: nothing to share.
    let fused = Plan::new(g, m, &common::fused::opts(Variant::Fused)).unwrap();
    assert!(!fused.shares_transpose(&fused));
}

#[test]
fn refusals() {
    let g = common::gpu();
    let x = sparse_x(200, 300, 1_000, 451);
    refused(g, &x, &opts(0, None, Atomics::Auto, None), "1 to 64");
    refused(
        g,
        &x,
        &opts(PANELS_MAX + 1, None, Atomics::Auto, None),
        "1 to 64",
    );
    for variant in [Variant::Fused, Variant::Stream, Variant::Auto] {
        let o = Options {
            variant,
            panels: Some(2),
            ..Default::default()
        };
        refused(g, &x, &o, "transpose variant on sparse X only");
    }
    let (code, _, err) = common::wgsparse_exit(&[
        "fused",
        "--gen",
        "demo",
        "--variant",
        "fused",
        "--panels",
        "2",
        "--no-tune",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("column panels"), "{err}");
}
