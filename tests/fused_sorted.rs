//! The fused pattern's sorted variant: column-sorted tiles (empty rows, a column holding
//! more than half of X, n at the edge of the workgroup copy of w, long rows split, every
//! pattern) and wide keys beyond a packed key, against the f64 CPU twin.

mod common;

use common::fused::{check, sparse_x, top_shares, with_hot_columns};
use wgsparse::fused::{Atomics, Matrix, Options, Pattern, Variant, SORTED_EPL_MAX};
use wgsparse::Gpu;

#[test]
fn sorted_tiles() {
    // The column-sorted tile scatter: empty rows, a column holding more than half of X (long
    // runs, so runs straddle subgroups and tiles), n just below and above what a workgroup
    // copy of w holds beside the tile, rows split around tiles (long rows between tiles),
    // subgroups or not, native or compare-exchange adds, every pattern.
    let gpu = common::gpu();
    let wg = 64;
    assert_eq!(SORTED_EPL_MAX, 8);
    // Columns a workgroup copy of w can hold beside a tile of `epl` entries per invocation.
    let room = |g: &Gpu, epl: u32| {
        let scratch = if g.caps.shuffle_fits(4) { 0 } else { 4 * wg };
        ((g.caps.max_workgroup_storage_bytes - scratch - 4 * epl * wg) / 4) as usize
    };
    let base = sparse_x(900, 300, 7_000, 41);
    let lens: Vec<usize> = (0..base.nrows).map(|r| base.row_range(r).len()).collect();
    assert!(lens.contains(&0), "no empty row");
    let heavy = with_hot_columns(&sparse_x(900, 300, 600, 42), &[17], 5);
    assert!(
        top_shares(&heavy).1 > 0.5,
        "the hot column holds too little"
    );
    for g in [gpu, common::gpu_plain()] {
        for x in [&base, &heavy] {
            for p in Pattern::ALL {
                // VS 32 exceeds lavapipe's subgroups: row sums through workgroup memory, the
                // segmented sum still by subgroup operations.
                for (atomics, subgroups, vs) in [
                    (Atomics::Auto, true, 4),
                    (Atomics::Cas, false, 4),
                    (Atomics::Auto, true, 32),
                ] {
                    for long_row in [None, Some(3)] {
                        let o = Options {
                            variant: Variant::Sorted,
                            atomics,
                            subgroups,
                            long_row,
                            vs: Some(vs),
                            workgroup: Some(wg),
                            ..Default::default()
                        };
                        let (_, plan) = check(g, Matrix::Sparse(x), &o, p, 23);
                        let c = plan.config;
                        assert_eq!(c.variant, Variant::Sorted);
                        assert_eq!(c.segmented, subgroups && g.caps.subgroups);
                        assert!(c.workgroup_w && c.tile > 0, "{}", c.describe());
                        if long_row.is_some() {
                            assert!(plan.long_chunks() > 0);
                        }
                    }
                }
            }
        }
        // n at the edge of the workgroup copy of w: the largest tile that leaves room for it
        // (8, then 4 entries per invocation), and global w when one per invocation leaves none.
        for (n, shared, epl) in [
            (room(g, 8), true, 8),
            (room(g, 8) + 1, true, 4),
            (room(g, 1) + 1, false, 8),
        ] {
            let x = with_hot_columns(&sparse_x(300, n, 4_000, 43), &[3, n as u32 - 1], 6);
            let o = Options {
                variant: Variant::Sorted,
                vs: Some(4),
                workgroup: Some(wg),
                ..Default::default()
            };
            for p in [Pattern::Full, Pattern::Xty] {
                let (_, plan) = check(g, Matrix::Sparse(&x), &o, p, 29);
                assert_eq!(plan.config.workgroup_w, shared, "n = {n}");
                assert_eq!(plan.config.tile, epl * wg, "n = {n}");
            }
        }
    }
    // Tiles sum runs: the heavy column's entries take far fewer adds than entries.
    let t = wgsparse::fused::tiles::build(&heavy, 512, 512).unwrap();
    let (entries, adds) = wgsparse::fused::tiles::adds(&t, &heavy.row_ptr, 32);
    assert_eq!(entries, heavy.nnz());
    assert!(adds < entries * 3 / 4, "{adds} adds for {entries} entries");
}

#[test]
fn sorted_wide_keys() {
    // Columns beyond a packed key (2^23 + 5 beside the 9 position bits of 512-entry tiles:
    // KDD2010's case) take wide keys, w in global memory: a hot column near the top (long
    // runs straddling subgroups), long rows split or not, subgroups or not, against the twin.
    let n = (1usize << 23) + 5;
    let x = with_hot_columns(&sparse_x(300, n, 3_000, 47), &[n as u32 - 2, 9], 8);
    for g in [common::gpu(), common::gpu_plain()] {
        for p in [Pattern::Full, Pattern::Xty] {
            for (subgroups, long_row) in [(true, None), (false, None), (true, Some(4))] {
                let o = Options {
                    variant: Variant::Sorted,
                    subgroups,
                    long_row,
                    vs: Some(4),
                    workgroup: Some(64),
                    ..Default::default()
                };
                let (_, plan) = check(g, Matrix::Sparse(&x), &o, p, 31);
                assert!(plan.sorted_wide(), "{}", plan.config.describe());
                assert!(!plan.config.workgroup_w);
                assert_eq!(plan.config.segmented, subgroups && g.caps.subgroups);
                if long_row.is_some() {
                    assert!(plan.long_chunks() > 0);
                }
            }
        }
    }
}
