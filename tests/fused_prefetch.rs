//! The row pipeline (`Options::prefetch`): the sparse fused kernel loads a vector's next row
//! (entries in registers, factor, the bounds of the row after it) before this row's reduction
//! and scatter. Against the f64 twin (w poisoned with NaN) for every pattern and aggregation
//! of w, vectors of many rows (long rows and rows past m inside the pipeline), RK = 1 and 4,
//! hot prefix copies on re-indexed columns, the compare-exchange and no-subgroup paths and X
//! in row bands; refused without registers, ignored by other variants, timed by the tuner.

mod common;

use common::fused::{check, sparse_x, with_hot_columns};
use wgsparse::fused::{tune, Matrix, Options, Pattern, Plan, Reorder, Variant};
use wgsparse::sparse::Csr;
use wgsparse::{Error, Gpu};

fn x_of(seed: u64) -> Csr {
    with_hot_columns(&sparse_x(1_300, 420, 10_000, seed), &[5, 300], seed + 1)
}

/// Pipelined plans at VS = 4, 128 invocations, C rows per vector: every aggregation of w.
fn pipelined(regs: u32, c: u32, long_row: Option<u32>) -> Vec<Options> {
    let o = |workgroup_w, hot_cols, reorder| Options {
        variant: Variant::Fused,
        workgroup_w,
        hot_cols,
        reorder,
        regs: Some(regs),
        prefetch: true,
        vs: Some(4),
        workgroup: Some(128),
        rows_per_vector: Some(c),
        long_row,
        ..Default::default()
    };
    vec![
        o(Some(true), None, Reorder::Off),
        o(Some(true), Some(16), Reorder::Off),
        o(Some(true), Some(16), Reorder::On),
        o(Some(false), Some(8), Reorder::Off),
        o(Some(false), Some(0), Reorder::Off),
    ]
}

fn every_pattern(gpu: &Gpu, x: &Csr, o: &Options, seed: u64) {
    for p in Pattern::ALL {
        let (_, plan) = check(gpu, Matrix::Sparse(x), o, p, seed);
        let c = plan.config;
        assert!(c.prefetch && c.regs == o.regs.unwrap(), "{}", c.describe());
        assert!(c.describe().contains("prefetch"));
    }
}

#[test]
fn pipelined_rows_equal_the_twin() {
    let gpu = common::gpu();
    let x = x_of(131);
    // C = 7 rows per vector: the grid leaves the last vectors' rows past m.
    for (regs, long_row) in [(4, None), (1, Some(24)), (4, Some(24))] {
        for o in pipelined(regs, 7, long_row) {
            every_pattern(gpu, &x, &o, 132);
        }
    }
}

#[test]
fn pipelined_rows_without_subgroups_or_native_atomics_and_over_bands() {
    let x = x_of(133);
    for o in pipelined(2, 5, Some(20)) {
        every_pattern(common::gpu_plain(), &x, &o, 134);
    }
    for o in pipelined(4, 32, Some(20)) {
        every_pattern(common::gpu_small_bindings(), &x, &o, 135);
    }
}

#[test]
fn refused_without_registers_and_ignored_elsewhere() {
    let gpu = common::gpu();
    let x = x_of(136);
    let o = Options {
        variant: Variant::Fused,
        prefetch: true,
        ..Default::default()
    };
    match Plan::new(gpu, Matrix::Sparse(&x), &o) {
        Err(Error::Option(m)) => assert!(m.contains("prefetch"), "{m}"),
        other => panic!("prefetch without regs: {:?}", other.map(|p| p.config)),
    }
    for v in [Variant::Sorted, Variant::TwoPass, Variant::Unfused] {
        let o = Options {
            variant: v,
            regs: Some(4),
            prefetch: true,
            ..Default::default()
        };
        let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 137);
        assert!(!plan.config.prefetch, "{}", plan.config.describe());
    }
}

#[test]
fn the_tuner_times_the_pipeline_and_its_pick_equals_the_twin() {
    let gpu = common::gpu();
    let x = x_of(138);
    let (pick, timed) = tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    // The wide-vector pipeline is timed whatever won before it.
    assert!(
        timed
            .iter()
            .any(|o| o.prefetch && o.vs == Some(32) && o.regs.is_some()),
        "no wide pipelined candidate timed: {timed:?}"
    );
    if pick.config.variant == Variant::Fused {
        assert!(
            timed.iter().any(|o| o.prefetch && o.regs == Some(4)),
            "no pipelined candidate at the tuned VS: {timed:?}"
        );
    }
    let c = pick.config;
    let picked = Options {
        variant: c.variant,
        vs: Some(c.vs),
        workgroup: Some(c.workgroup),
        hot_cols: Some(c.hot_cols),
        long_row: Some(c.long_row),
        regs: Some(c.regs),
        prefetch: c.prefetch,
        workgroup_w: Some(c.workgroup_w),
        ..Default::default()
    };
    check(gpu, Matrix::Sparse(&x), &picked, Pattern::Full, 139);
}
