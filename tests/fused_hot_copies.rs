//! Hot copies (`Options::hot_cols` with w in workgroup memory): every vector of the sparse
//! fused kernel adds the hot columns' products to its own copy of their slots, summed at the
//! flush. Against the f64 twin (w poisoned with NaN) for every pattern, with the one-dispatch
//! ending and without, folded long-row chunks, the compare-exchange and workgroup-memory
//! paths, X in row bands; the copies' workgroup memory checked; the tuner times them. With
//! the columns re-indexed by entry count the copies take the hot prefix by plain index.

mod common;

use common::fused::{check, sparse_x, with_hot_columns};
use wgsparse::fused::{tune, Matrix, Options, Pattern, Plan, Reorder, Variant};
use wgsparse::sparse::Csr;
use wgsparse::{Error, Gpu};

/// Hot copies of `h` columns on `x`, w in workgroup memory, at VS = 4 and 128 invocations.
fn copies(h: u32, fold: bool, long_row: Option<u32>) -> Options {
    Options {
        variant: Variant::Fused,
        workgroup_w: Some(true),
        hot_cols: Some(h),
        vs: Some(4),
        workgroup: Some(128),
        fold,
        long_row,
        ..Default::default()
    }
}

/// Power-law X with hot columns in nearly every row, n within the one-dispatch ending.
fn hot_x(seed: u64) -> Csr {
    with_hot_columns(
        &sparse_x(1_500, 400, 12_000, seed),
        &[7, 123, 399],
        seed + 1,
    )
}

/// Every pattern under `o` against the twin; returns the plan (of the last pattern).
fn every_pattern(gpu: &Gpu, x: &Csr, o: &Options, seed: u64) -> Plan {
    let mut last = None;
    for p in Pattern::ALL {
        let (_, plan) = check(gpu, Matrix::Sparse(x), o, p, seed);
        assert_eq!(plan.config.hot_cols, o.hot_cols.unwrap(), "{o:?}");
        assert!(plan.config.workgroup_w, "{}", plan.config.describe());
        last = Some(plan);
    }
    last.unwrap()
}

#[test]
fn hot_copies_equal_the_twin_finishing_folded_and_not() {
    let gpu = common::gpu();
    let x = hot_x(91);
    // One copy slot, a few, more than the hot columns X has entries in a row.
    for h in [1, 8, 64] {
        let plan = every_pattern(gpu, &x, &copies(h, true, None), 92);
        assert!(plan.finishes(), "{}", plan.config.describe());
        let plan = every_pattern(gpu, &x, &copies(h, false, None), 93);
        assert!(!plan.finishes(), "{}", plan.config.describe());
        // Long rows folded into the main kernel (whole workgroups per chunk).
        let plan = every_pattern(gpu, &x, &copies(h, true, Some(24)), 94);
        assert!(plan.long_folded(), "{}", plan.config.describe());
        // And their unfolded passes.
        let plan = every_pattern(gpu, &x, &copies(h, false, Some(24)), 95);
        assert!(plan.long_chunks() > 0 && !plan.long_folded());
    }
}

#[test]
fn vectors_share_copies_when_there_are_many() {
    // One lane per row at 1,024 invocations: 1,024 vectors share at most 32 copies (fewer
    // where the copies would not fit), vector v adding to copy v mod R.
    let gpu = common::gpu();
    let x = hot_x(103);
    for h in [8, 200] {
        let o = Options {
            vs: Some(1),
            workgroup: Some(1024),
            ..copies(h, true, None)
        };
        every_pattern(gpu, &x, &o, 104);
        every_pattern(gpu, &x, &Options { fold: false, ..o }, 105);
    }
}

#[test]
fn prefix_copies_on_reindexed_columns_equal_the_twin() {
    // Re-indexed columns: the hot columns are the first h, copied by plain index (no
    // rewritten indices), one dispatch or folded long rows, many vectors sharing copies,
    // and without subgroups or native atomics.
    let x = hot_x(106);
    for (gpu, o) in [
        (common::gpu(), copies(3, true, None)),
        (common::gpu(), copies(64, false, Some(24))),
        (common::gpu(), copies(8, true, Some(24))),
        (
            common::gpu(),
            Options {
                vs: Some(1),
                workgroup: Some(1024),
                ..copies(200, true, None)
            },
        ),
        (common::gpu_plain(), copies(16, true, None)),
    ] {
        let o = Options {
            reorder: Reorder::On,
            ..o
        };
        let plan = every_pattern(gpu, &x, &o, 107);
        assert!(plan.config.hot_prefix(), "{}", plan.config.describe());
        assert!(plan.config.describe().contains("hot-prefix-copies"));
    }
    // Without the re-indexing the copies keep the rewritten indices.
    let o = Options {
        reorder: Reorder::Off,
        ..copies(8, true, None)
    };
    let plan = every_pattern(common::gpu(), &x, &o, 108);
    assert!(!plan.config.hot_prefix(), "{}", plan.config.describe());
}

#[test]
fn hot_copies_without_subgroups_or_native_atomics() {
    // The workgroup-memory reduction and compare-exchange into the accumulator and w.
    let gpu = common::gpu_plain();
    let x = hot_x(96);
    for o in [copies(16, true, None), copies(16, false, Some(32))] {
        let plan = every_pattern(gpu, &x, &o, 97);
        assert!(!plan.config.native_atomics && !plan.config.subgroup_reduce);
    }
}

#[test]
fn hot_copies_over_row_bands() {
    // 8 KiB bindings: the rewritten column indices bound through each band's window.
    let gpu = common::gpu_small_bindings();
    let x = hot_x(98);
    for o in [copies(16, true, None), copies(16, true, Some(20))] {
        let o = Options {
            rows_per_vector: Some(32),
            ..o
        };
        let plan = every_pattern(gpu, &x, &o, 99);
        assert!(plan.n_bands() >= 4, "{} bands", plan.n_bands());
    }
}

#[test]
fn copies_past_workgroup_memory_are_refused_and_the_default_has_none() {
    let gpu = common::gpu();
    let x = hot_x(100);
    // One copy of h columns takes 4·h bytes beside 4·n of w and the ending's 4-byte flag.
    let room = gpu.caps.max_workgroup_storage_bytes as usize - 4 * x.ncols - 4;
    let too_many = (room / 4 + 1) as u32;
    match Plan::new(gpu, Matrix::Sparse(&x), &copies(too_many, true, None)) {
        Err(Error::TooLarge { what, .. }) => assert!(what.contains("hot columns"), "{what}"),
        other => panic!(
            "{too_many} copies: {:?}",
            other.map(|p| p.config.describe())
        ),
    }
    let plan = Plan::new(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    assert!(plan.config.workgroup_w && plan.config.hot_cols == 0);
}

#[test]
fn the_tuner_times_hot_copies_and_its_pick_equals_the_twin() {
    let gpu = common::gpu();
    let x = hot_x(101);
    let (pick, timed) = tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    if pick.config.variant == Variant::Fused && pick.config.workgroup_w {
        assert!(
            timed.iter().any(|o| o.hot_cols.is_some_and(|h| h > 0)),
            "no hot-copies candidate timed: {timed:?}"
        );
    }
    let picked = Options {
        variant: pick.config.variant,
        vs: Some(pick.config.vs),
        workgroup: Some(pick.config.workgroup),
        hot_cols: Some(pick.config.hot_cols),
        long_row: Some(pick.config.long_row),
        ..Default::default()
    };
    check(gpu, Matrix::Sparse(&x), &picked, Pattern::Full, 102);
}
