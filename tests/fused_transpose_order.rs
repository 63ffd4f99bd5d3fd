//! The transpose variant with Xᵀ's rows in the caller's column order (the default on
//! re-indexed columns, `--xt-order caller`: Xᵀ's pass writes the caller's w, a run gathers y
//! alone) against the f64 twin: every pattern, row tiles and the row kernel, with column
//! panels, adding onto w; the dispatches it saves against the plan's order; a plan built
//! like another shares its Xᵀ in the same order only; cleared without re-indexing; refusals.

mod common;

use common::fused::{
    check, check_plan, host_op, refused, run_counted, sparse_x, vectors, with_hot_columns,
};
use wgsparse::fused::{Atomics, Matrix, Options, Pattern, Plan, Reorder, Variant};
use wgsparse::sddmm::cpu::compare;
use wgsparse::sparse::Csr;

fn opts(caller: Option<bool>, panels: u32, epl: Option<u32>, atomics: Atomics) -> Options {
    Options {
        variant: Variant::Transpose,
        reorder: Reorder::On,
        xt_caller: caller,
        panels: Some(panels),
        epl,
        atomics,
        ..Default::default()
    }
}

/// Power-law X with hot columns far from the front (re-indexing moves them first).
fn hot_x() -> Csr {
    with_hot_columns(&sparse_x(1_200, 1_500, 8_000, 501), &[700, 1_499], 502)
}

#[test]
fn every_pattern_in_the_callers_order() {
    let g = common::gpu();
    let x = hot_x();
    for (panels, epl, atomics) in [
        (1, None, Atomics::Auto),
        (1, Some(0), Atomics::Cas),
        (3, None, Atomics::Auto),
    ] {
        for p in Pattern::ALL {
            // The caller's order by default.
            let (_, plan) = check(
                g,
                Matrix::Sparse(&x),
                &opts(None, panels, epl, atomics),
                p,
                511,
            );
            assert!(
                plan.config.xt_caller && plan.config.reorder,
                "{}",
                plan.config.describe()
            );
            // Against the plan's order (also checked here, the reorder tests running the
            // default): z and w are not permuted (y still is, but in `xty`).
            let vecs = vectors(x.nrows, x.ncols, p == Pattern::Xty, 512);
            let op = host_op(p, &vecs, -0.75, 1.25);
            let (got, count) = run_counted(g, &plan, &op);
            let (want, mag) = Matrix::Sparse(&x).reference(&op);
            let cmp = compare(&got, &want, &mag, Matrix::Sparse(&x).rounding_terms());
            assert!(cmp.ok(), "{p:?}: w[{:?}]", cmp.first_bad);
            assert_eq!(count, plan.dispatches(p), "{p:?}: Plan::dispatches");
            let planned = Plan::new(
                g,
                Matrix::Sparse(&x),
                &opts(Some(false), panels, epl, atomics),
            )
            .unwrap();
            assert!(!planned.config.xt_caller && planned.config.reorder);
            let (planned_got, planned_count) = run_counted(g, &planned, &op);
            let cmp = compare(
                &planned_got,
                &want,
                &mag,
                Matrix::Sparse(&x).rounding_terms(),
            );
            assert!(cmp.ok(), "{p:?}, the plan's order: w[{:?}]", cmp.first_bad);
            assert_eq!(
                count + usize::from(p.has_z()) + 1,
                planned_count,
                "{p:?}: the permutations of z and w saved"
            );
        }
    }
}

#[test]
fn plans_built_like_another_share_xt_in_the_same_order_only() {
    let g = common::gpu();
    let x = hot_x();
    let m = Matrix::Sparse(&x);
    let caller = Plan::new(g, m, &opts(None, 1, None, Atomics::Auto)).unwrap();
    // The row kernel in the same order: Xᵀ shared, its grids built again.
    let rows = Plan::new_like(g, m, &opts(None, 1, Some(0), Atomics::Auto), &caller).unwrap();
    assert!(rows.config.xt_caller && rows.shares_transpose(&caller));
    check_plan(g, m, &rows, 521);
    // The plan's order: Xᵀ's rows differ, so it builds its own.
    let planned = Plan::new_like(g, m, &opts(Some(false), 1, None, Atomics::Auto), &caller);
    let planned = planned.unwrap();
    assert!(!planned.config.xt_caller && !planned.shares_transpose(&caller));
    check_plan(g, m, &planned, 522);
}

#[test]
fn adds_onto_w_in_the_callers_order() {
    let g = common::gpu();
    let x = hot_x();
    let plan = Plan::new(
        g,
        Matrix::Sparse(&x),
        &opts(Some(true), 2, None, Atomics::Auto),
    )
    .unwrap();
    assert!(plan.config.xt_caller);
    common::fused::check_onto(g, &x, &plan, 521);
}

#[test]
fn cleared_without_reindexing_and_refused_off_the_transpose() {
    let g = common::gpu();
    let x = hot_x();
    // The caller's order is the plan's: nothing to change.
    let o = Options {
        reorder: Reorder::Off,
        ..opts(Some(true), 1, None, Atomics::Auto)
    };
    let (_, plan) = check(g, Matrix::Sparse(&x), &o, Pattern::Full, 531);
    assert!(!plan.config.xt_caller && !plan.config.reorder);
    let stream = Options {
        variant: Variant::Stream,
        xt_caller: Some(true),
        ..Default::default()
    };
    refused(
        g,
        &sparse_x(200, 50, 900, 532),
        &stream,
        "caller's column order",
    );
}

#[test]
fn cli_takes_the_order() {
    let args = [
        "fused",
        "--gen",
        "demo",
        "--variant",
        "transpose",
        "--reorder-cols",
        "on",
        "--check",
        "--json",
        "--reps",
        "2",
    ];
    // The caller's order by default, the plan's when asked for.
    for (order, caller) in [(None, true), (Some("plan"), false)] {
        let mut args = args.to_vec();
        args.extend(order.map(|o| ["--xt-order", o]).into_iter().flatten());
        let (code, out, err) = common::wgsparse_exit(&args);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("\"xt_caller\":{caller}")), "{out}");
    }
    let (code, _, err) = common::wgsparse_exit(&[
        "fused",
        "--gen",
        "demo",
        "--variant",
        "stream",
        "--no-tune",
        "--xt-order",
        "caller",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("caller's column order"), "{err}");
}
