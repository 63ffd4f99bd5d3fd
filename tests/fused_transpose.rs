//! The fused pattern's transpose variant by its row kernel (`transpose --epl 0`: Xᵀ
//! materialized at plan time, p = α·v ⊙ (X·y) by X's rows, then w = β·z + Xᵀp by Xᵀ's rows,
//! VS lanes per row; its row tiles, the default, in fused_gather_tiles.rs) against the f64
//! twin: every
//! pattern, with and without subgroups, native and compare-exchange adds; X's heavy rows and
//! heavy columns (Xᵀ's rows) in chunks over whole workgroups, at the model's threshold and a
//! tiny one; both matrices in several row bands; empty rows and columns, m = 1, n = 1, X
//! without entries; w added onto (`record_onto`); dense X runs `fused`.

mod common;

use common::fused::{check, check_op, host_op, sparse_x, vectors, with_hot_columns};
use wgsparse::fused::{Atomics, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::sparse::{Csr, Dense};
use wgsparse::Gpu;

fn opts(subgroups: bool, atomics: Atomics, long_row: Option<u32>) -> Options {
    Options {
        variant: Variant::Transpose,
        subgroups,
        atomics,
        long_row,
        epl: Some(0),
        ..Default::default()
    }
}

/// `x` with rows `rows` replaced by `len` entries each (columns 0, 1, … spread over n),
/// random values: rows past the long-row threshold.
fn with_heavy_rows(x: &Csr, rows: &[usize], len: usize, seed: u64) -> Csr {
    let vals = wgsparse::gen::dense_uniform(1, len, seed).data;
    let step = (x.ncols / len).max(1);
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (vec![], vec![]);
    for r in 0..x.nrows {
        if rows.contains(&r) {
            col_idx.extend((0..len).map(|i| ((i * step) % x.ncols) as u32));
            values.extend(vals.iter().map(|v| v + r as f32 * 1e-3));
        } else {
            col_idx.extend(x.row_range(r).map(|e| x.col_idx[e]));
            values.extend(x.row_range(r).map(|e| x.values[e]));
        }
        row_ptr.push(col_idx.len() as u32);
    }
    Csr::new(x.nrows, x.ncols, row_ptr, col_idx, values).unwrap()
}

/// Power-law X whose two hot columns hold more entries than the model's threshold (1,024)
/// and whose rows 3 and 700 hold 1,300 entries each.
fn heavy_x() -> Csr {
    let x = with_hot_columns(&sparse_x(1_500, 1_400, 9_000, 301), &[5, 77], 302);
    with_heavy_rows(&x, &[3, 700], 1_300, 303)
}

fn check_transpose(g: &Gpu, x: &Csr, o: &Options, p: Pattern, seed: u64) -> Plan {
    let (_, plan) = check(g, Matrix::Sparse(x), o, p, seed);
    assert_eq!(plan.config.variant, Variant::Transpose);
    plan
}

#[test]
fn every_pattern_with_heavy_rows_and_columns() {
    let x = heavy_x();
    for g in [common::gpu(), common::gpu_plain()] {
        for atomics in [Atomics::Auto, Atomics::Cas] {
            for p in Pattern::ALL {
                let plan = check_transpose(g, &x, &opts(true, atomics, None), p, 311);
                // Both long-row paths ran: X's two heavy rows, Xᵀ's two hot columns.
                let t = plan.transpose_pass().unwrap();
                assert_eq!(t.long_row, 1024);
                assert!(
                    t.long_chunks >= 4,
                    "{} chunks of Xᵀ's long rows",
                    t.long_chunks
                );
                assert_eq!(t.tiles, 0, "the row kernel at --epl 0");
                assert!(plan.long_chunks() >= 4, "{} chunks", plan.long_chunks());
            }
        }
    }
}

#[test]
fn without_subgroups_and_a_tiny_threshold() {
    // Rows of more than 3 entries in chunks of 3: nearly every chunk an atomic add.
    let x = heavy_x();
    for p in Pattern::ALL {
        let plan = check_transpose(
            common::gpu(),
            &x,
            &opts(false, Atomics::Auto, Some(3)),
            p,
            321,
        );
        assert!(!plan.config.subgroup_reduce);
        assert!(plan.long_chunks() > 1_000, "{}", plan.long_chunks());
    }
}

#[test]
fn x_and_its_transpose_in_row_bands() {
    // 8 KiB bindings: X's and Xᵀ's entries each over several bands, heavy rows included.
    let g = common::gpu_small_bindings();
    let x = heavy_x();
    for p in Pattern::ALL {
        let plan = check_transpose(g, &x, &opts(true, Atomics::Auto, None), p, 331);
        assert!(plan.n_bands() > 4, "{} bands", plan.n_bands());
        assert!(plan.transpose_pass().unwrap().long_chunks > 0);
    }
}

#[test]
fn edge_shapes() {
    let one_row = sparse_x(1, 300, 120, 341);
    let one_col = Csr::new(
        400,
        1,
        (0..=400u32).map(|r| r.div_ceil(3)).collect(),
        vec![0; 134],
        wgsparse::gen::dense_uniform(1, 134, 342).data,
    )
    .unwrap();
    let empty = Csr::new(10, 20, vec![0; 11], vec![], vec![]).unwrap();
    // Rows and columns without entries: every third row, the upper half of the columns.
    let x = sparse_x(600, 500, 2_000, 343);
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (vec![], vec![]);
    for r in 0..x.nrows {
        for e in x.row_range(r).filter(|_| r % 3 != 0) {
            if x.col_idx[e] < 250 {
                col_idx.push(x.col_idx[e]);
                values.push(x.values[e]);
            }
        }
        row_ptr.push(col_idx.len() as u32);
    }
    let holes = Csr::new(600, 500, row_ptr, col_idx, values).unwrap();
    // `wgsparse fused --gen demo --scale 0.02`: one lane per row, rows of up to 384 entries
    // (a form of the unrolled loop that loaded the column indices first summed wrong here on
    // lavapipe).
    let demo = sparse_x(400, 500, 2_000, 1);
    for x in [&one_row, &one_col, &empty, &holes, &demo] {
        for p in Pattern::ALL {
            check_transpose(common::gpu(), x, &opts(true, Atomics::Auto, None), p, 344);
            check_transpose(
                common::gpu_plain(),
                x,
                &opts(true, Atomics::Cas, Some(2)),
                p,
                345,
            );
        }
    }
}

#[test]
fn adds_onto_w() {
    let g = common::gpu();
    let x = heavy_x();
    let plan = Plan::new(g, Matrix::Sparse(&x), &opts(true, Atomics::Auto, None)).unwrap();
    assert!(plan.accumulates(true));
    common::fused::check_onto(g, &x, &plan, 351);
}

#[test]
fn dense_x_runs_fused() {
    let d = Dense {
        nrows: 50,
        ncols: 40,
        data: wgsparse::gen::dense_uniform(50, 40, 361).data,
    };
    let vecs = vectors(50, 40, false, 362);
    let op = host_op(Pattern::Full, &vecs, 0.5, 2.0);
    let o = opts(true, Atomics::Auto, None);
    let (_, plan) = check_op(common::gpu(), Matrix::Dense(&d), &o, &op);
    assert_eq!(plan.config.variant, Variant::Fused);
}

#[test]
fn the_tuner_times_the_transpose_where_w_is_beyond_workgroup_memory() {
    // n past lavapipe's 32 KiB of workgroup memory (and the H200's 48 KiB): w in global
    // memory, so the transpose is among the timed candidates; the pick equals the twin.
    let g = common::gpu();
    let x = with_hot_columns(&sparse_x(2_000, 20_000, 16_000, 371), &[11], 372);
    let (pick, timed) =
        wgsparse::fused::tune::tune(g, Matrix::Sparse(&x), &Options::default()).unwrap();
    // In row tiles with and without their pipeline, and by rows.
    for (epl, prefetch) in [(Some(4), false), (Some(4), true), (Some(0), false)] {
        assert!(
            timed
                .iter()
                .any(|o| o.variant == Variant::Transpose && o.epl == epl && o.prefetch == prefetch),
            "the transpose (epl {epl:?}, prefetch {prefetch}) was not timed: {timed:?}"
        );
    }
    // Column panels on the transpose variant only, and all of them where it was picked (no
    // later stage changes the variant).
    assert!(
        timed
            .iter()
            .filter(|o| o.panels.is_some())
            .all(|o| o.variant == Variant::Transpose),
        "column panels timed off the transpose variant: {timed:?}"
    );
    // Two of them (four never won, and each panel count transposes X again).
    if pick.config.variant == Variant::Transpose {
        assert!(
            timed.iter().any(|o| o.panels == Some(2)),
            "2 column panels were not timed on the transpose pick: {timed:?}"
        );
    }
    assert!(
        timed.iter().all(|o| o.panels.is_none_or(|p| p == 2)),
        "column panels other than 2 timed: {timed:?}"
    );
    common::fused::check_plan(g, Matrix::Sparse(&x), &pick, 373);
    // On re-indexed columns, a transpose pick is also timed with Xᵀ's rows in the plan's
    // order (the caller's is the default).
    let o = Options {
        reorder: wgsparse::fused::Reorder::On,
        ..Default::default()
    };
    let (pick, timed) = wgsparse::fused::tune::tune(g, Matrix::Sparse(&x), &o).unwrap();
    if pick.config.variant == Variant::Transpose {
        assert!(
            timed
                .iter()
                .any(|o| o.variant == Variant::Transpose && o.xt_caller == Some(false)),
            "Xᵀ in the plan's order was not timed: {timed:?}"
        );
    }
    common::fused::check_plan(g, Matrix::Sparse(&x), &pick, 374);
}
