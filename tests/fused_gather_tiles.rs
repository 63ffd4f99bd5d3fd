//! The transpose variant's gathers in row tiles (`--variant transpose --epl E`:
//! `fused.gather_tiles`, runs of short rows loaded at consecutive positions, each row summed
//! from workgroup memory) against the f64 twin: every pattern at every tile size, with and
//! without subgroups and native adds, rows past a tile in the long-row chunks, a medium row
//! among short ones (the cut's bound on a lane's share), runs of rows of one entry and of
//! none, both matrices in row bands, the edge shapes, tiles as the variant's default, and a bad
//! tile size refused.

mod common;

use common::fused::{check, sparse_x, with_hot_columns};
use wgsparse::fused::{Atomics, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::fused::{GATHER_TILE_DEFAULT, GATHER_TILE_EPL};
use wgsparse::sparse::Csr;
use wgsparse::{Error, Gpu};

fn opts(epl: u32, workgroup: u32, subgroups: bool, atomics: Atomics) -> Options {
    Options {
        variant: Variant::Transpose,
        epl: Some(epl),
        workgroup: Some(workgroup),
        subgroups,
        atomics,
        ..Default::default()
    }
}

/// Checks a tiled plan on every pattern and that both passes ran in tiles.
fn check_tiled(g: &Gpu, x: &Csr, o: &Options, seed: u64) -> Plan {
    let mut last = None;
    for p in Pattern::ALL {
        let (_, plan) = check(g, Matrix::Sparse(x), o, p, seed);
        assert_eq!(plan.config.variant, Variant::Transpose);
        let tile = o.epl.unwrap() * o.workgroup.unwrap();
        assert_eq!(plan.config.tile, tile);
        if x.nrows > 0 {
            assert!(plan.transpose_x_tiles().unwrap() > 0);
        }
        if x.ncols > 0 {
            assert!(plan.transpose_pass().unwrap().tiles > 0);
        }
        last = Some(plan);
    }
    last.unwrap()
}

/// Power-law X with two hot columns (Xᵀ's long rows), rows 3 and 700 of 1,300 entries (X's),
/// and row 900 of 150 entries among short rows.
fn mixed_x() -> Csr {
    let x = with_hot_columns(&sparse_x(1_500, 1_400, 9_000, 401), &[5, 77], 402);
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (vec![], vec![]);
    for r in 0..x.nrows {
        let len = match r {
            3 | 700 => 1_300,
            900 => 150,
            _ => 0,
        };
        if len > 0 {
            col_idx.extend((0..len).map(|i| i as u32));
            values.extend((0..len).map(|i| 0.5 + ((i * 37 + r) % 101) as f32 / 101.0));
        } else {
            col_idx.extend(x.row_range(r).map(|e| x.col_idx[e]));
            values.extend(x.row_range(r).map(|e| x.values[e]));
        }
        row_ptr.push(col_idx.len() as u32);
    }
    Csr::new(x.nrows, x.ncols, row_ptr, col_idx, values).unwrap()
}

#[test]
fn every_tile_size_and_pattern() {
    let x = mixed_x();
    for (i, &epl) in GATHER_TILE_EPL.iter().enumerate() {
        let plan = check_tiled(
            common::gpu(),
            &x,
            &opts(epl, 128, true, Atomics::Auto),
            410 + i as u64,
        );
        // Rows past a tile (or the model's threshold) went to the chunks.
        assert!(plan.long_chunks() >= 2, "{}", plan.long_chunks());
        assert!(plan.transpose_pass().unwrap().long_chunks >= 2);
        assert!(plan.transpose_pass().unwrap().long_row <= 128 * epl);
    }
}

#[test]
fn without_subgroups_or_native_adds() {
    let x = mixed_x();
    check_tiled(
        common::gpu_plain(),
        &x,
        &opts(4, 64, true, Atomics::Cas),
        421,
    );
    let plan = check_tiled(common::gpu(), &x, &opts(2, 256, false, Atomics::Auto), 422);
    assert!(!plan.config.subgroup_reduce);
}

#[test]
fn short_and_empty_rows_fill_tiles_by_rows() {
    // 3,000 rows of one entry, then 700 empty rows, then rows of two: tiles of a workgroup's
    // rows, and Xᵀ's rows long (X's 2,000 columns hold about 3 entries each).
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (vec![], vec![]);
    for r in 0..4_500u32 {
        let len = match r {
            0..3_000 => 1,
            3_000..3_700 => 0,
            _ => 2,
        };
        for k in 0..len {
            col_idx.push((r * 7) % 1_000 + k * 1_000);
            values.push(1.0 + (r % 13) as f32 / 13.0 - k as f32 * 0.25);
        }
        row_ptr.push(col_idx.len() as u32);
    }
    let x = Csr::new(4_500, 2_000, row_ptr, col_idx, values).unwrap();
    let plan = check_tiled(common::gpu(), &x, &opts(4, 64, true, Atomics::Auto), 431);
    // At most 64 rows a tile: at least 4,500 / 64 of them.
    assert!(plan.transpose_x_tiles().unwrap() >= 4_500 / 64);
}

#[test]
fn x_and_its_transpose_in_row_bands() {
    let g = common::gpu_small_bindings();
    let x = mixed_x();
    let plan = check_tiled(g, &x, &opts(4, 128, true, Atomics::Auto), 441);
    assert!(plan.n_bands() > 4, "{} bands", plan.n_bands());
}

#[test]
fn edge_shapes() {
    let one_row = sparse_x(1, 300, 120, 451);
    let empty = Csr::new(10, 20, vec![0; 11], vec![], vec![]).unwrap();
    let one_col = Csr::new(
        400,
        1,
        (0..=400u32).map(|r| r.div_ceil(3)).collect(),
        vec![0; 134],
        wgsparse::gen::dense_uniform(1, 134, 452).data,
    )
    .unwrap();
    for x in [&one_row, &empty, &one_col] {
        check_tiled(common::gpu(), x, &opts(1, 32, true, Atomics::Auto), 453);
    }
}

#[test]
fn tiles_are_the_default() {
    let x = mixed_x();
    let o = Options {
        variant: Variant::Transpose,
        ..Default::default()
    };
    let plan = Plan::new(common::gpu(), Matrix::Sparse(&x), &o).unwrap();
    let (epl, wg) = GATHER_TILE_DEFAULT;
    assert_eq!((plan.config.tile, plan.config.workgroup), (epl * wg, wg));
    assert!(plan.transpose_pass().unwrap().tiles > 0);
}

#[test]
fn a_bad_tile_size_is_refused() {
    let x = sparse_x(100, 100, 500, 461);
    let err = Plan::new(
        common::gpu(),
        Matrix::Sparse(&x),
        &opts(3, 64, true, Atomics::Auto),
    )
    .err()
    .expect("epl 3 refused");
    assert!(matches!(err, Error::Option(_)), "{err}");
    assert!(err.to_string().contains("--epl"), "{err}");
}

#[test]
fn the_pipeline_over_resident_workgroups_equals_the_twin() {
    // --prefetch: one workgroup per resident slot, each taking many tiles with the next
    // tile's bounds, offsets and entries loaded during this tile's gathers; long rows (their
    // tiles skipped) among them, tiles of a workgroup's rows, every tile size, without
    // subgroups, and in row bands.
    let x = mixed_x();
    for (i, &epl) in GATHER_TILE_EPL.iter().enumerate() {
        let o = Options {
            prefetch: true,
            ..opts(epl, 64, true, Atomics::Auto)
        };
        let plan = check_tiled(common::gpu(), &x, &o, 470 + i as u64);
        assert!(plan.config.prefetch);
        assert!(plan.long_chunks() >= 2);
    }
    let piped = |o: Options| Options {
        prefetch: true,
        ..o
    };
    check_tiled(
        common::gpu_plain(),
        &x,
        &piped(opts(4, 64, true, Atomics::Cas)),
        481,
    );
    let plan = check_tiled(
        common::gpu_small_bindings(),
        &x,
        &piped(opts(2, 128, true, Atomics::Auto)),
        482,
    );
    assert!(plan.n_bands() > 4, "{} bands", plan.n_bands());
    // Many tiles a workgroup (hundreds of them over a grid of tens of workgroups here).
    let big = with_hot_columns(&sparse_x(20_000, 3_000, 60_000, 483), &[11], 484);
    let plan = check_tiled(
        common::gpu(),
        &big,
        &piped(opts(1, 64, true, Atomics::Auto)),
        485,
    );
    let tiles = plan.transpose_x_tiles().unwrap();
    assert!(tiles >= 500, "{tiles} tiles");
    // The row kernel has no pipeline.
    let rows = Options {
        prefetch: true,
        ..opts(0, 64, true, Atomics::Auto)
    };
    let plan = wgsparse::fused::Plan::new(common::gpu(), Matrix::Sparse(&x), &rows).unwrap();
    assert!(!plan.config.prefetch);
}
