//! Entries in registers (`Options::regs`): the sparse fused kernel's lanes keep their first
//! RK entries of a row from the dot product to the scatter. Against the f64 twin (w poisoned
//! with NaN) for every pattern and every aggregation of w (workgroup copy, hot copies, global
//! w with and without the hot-column cache), RK = 1 and 4 (rows shorter and longer than
//! RK·VS), folded and unfolded long rows, the compare-exchange and no-subgroup paths, X in
//! row bands; bad values refused, other variants unaffected, the tuner times it.

mod common;

use common::fused::{check, sparse_x, with_hot_columns};
use wgsparse::fused::{tune, Matrix, Options, Pattern, Variant};
use wgsparse::sparse::Csr;
use wgsparse::{Error, Gpu};

fn x_of(seed: u64) -> Csr {
    with_hot_columns(&sparse_x(1_400, 450, 11_000, seed), &[2, 200], seed + 1)
}

/// The aggregations of w at VS = 4, 128 invocations.
fn aggregations(regs: u32, fold: bool, long_row: Option<u32>) -> Vec<Options> {
    let o = |workgroup_w, hot_cols| Options {
        variant: Variant::Fused,
        workgroup_w,
        hot_cols,
        regs: Some(regs),
        vs: Some(4),
        workgroup: Some(128),
        fold,
        long_row,
        ..Default::default()
    };
    vec![
        o(Some(true), None),
        o(Some(true), Some(16)),
        o(Some(false), Some(8)),
        o(Some(false), Some(0)),
    ]
}

fn every_pattern(gpu: &Gpu, x: &Csr, o: &Options, seed: u64) {
    for p in Pattern::ALL {
        let (_, plan) = check(gpu, Matrix::Sparse(x), o, p, seed);
        assert_eq!(
            plan.config.regs,
            o.regs.unwrap(),
            "{}",
            plan.config.describe()
        );
    }
}

#[test]
fn registers_equal_the_twin_for_every_aggregation() {
    let gpu = common::gpu();
    let x = x_of(111);
    let longest = (0..x.nrows).map(|r| x.row_range(r).len()).max().unwrap();
    assert!(longest > 4 * 4, "rows past RK·VS: longest {longest}");
    for regs in [1, 4] {
        for (fold, long_row) in [
            (true, None),
            (false, None),
            (true, Some(24)),
            (false, Some(24)),
        ] {
            for o in aggregations(regs, fold, long_row) {
                every_pattern(gpu, &x, &o, 112);
            }
        }
    }
}

#[test]
fn registers_without_subgroups_or_native_atomics() {
    let gpu = common::gpu_plain();
    let x = x_of(113);
    for o in aggregations(3, true, None)
        .into_iter()
        .chain(aggregations(2, false, Some(20)))
    {
        every_pattern(gpu, &x, &o, 114);
    }
}

#[test]
fn registers_over_row_bands() {
    let gpu = common::gpu_small_bindings();
    let x = x_of(115);
    for o in aggregations(4, true, Some(20)) {
        let o = Options {
            rows_per_vector: Some(32),
            ..o
        };
        every_pattern(gpu, &x, &o, 116);
    }
}

#[test]
fn bad_register_counts_are_refused_and_other_variants_ignore_them() {
    let gpu = common::gpu();
    let x = x_of(117);
    let o = Options {
        variant: Variant::Fused,
        regs: Some(5),
        ..Default::default()
    };
    assert!(matches!(
        wgsparse::fused::Plan::new(gpu, Matrix::Sparse(&x), &o),
        Err(Error::Option(_))
    ));
    for v in [Variant::Sorted, Variant::TwoPass, Variant::Unfused] {
        let o = Options {
            variant: v,
            regs: Some(4),
            ..Default::default()
        };
        let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 118);
        assert_eq!(plan.config.regs, 0, "{}", plan.config.describe());
    }
}

#[test]
fn the_tuner_times_registers_and_its_pick_equals_the_twin() {
    let gpu = common::gpu();
    let x = x_of(119);
    let (pick, timed) = tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    if pick.config.variant == Variant::Fused {
        assert!(
            timed.iter().any(|o| o.regs.is_some_and(|k| k > 0)),
            "no registers candidate timed: {timed:?}"
        );
    }
    let picked = Options {
        variant: pick.config.variant,
        vs: Some(pick.config.vs),
        workgroup: Some(pick.config.workgroup),
        hot_cols: Some(pick.config.hot_cols),
        long_row: Some(pick.config.long_row),
        regs: Some(pick.config.regs),
        workgroup_w: Some(pick.config.workgroup_w),
        ..Default::default()
    };
    check(gpu, Matrix::Sparse(&x), &picked, Pattern::Full, 120);
}
