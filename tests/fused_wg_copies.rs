//! Copies of w in the stream kernel's workgroup memory (`Options::wg_copies`): invocation
//! slot s adds to copy s mod K, the flush sums the K copies. Against the f64 twin (w
//! poisoned) for every pattern on X of few, hot columns (adds contend), with native and
//! compare-exchange adds, with and without subgroups, the next tile's loads in flight and
//! long rows (added to copy 0); a bad count, copies with fixed-point sums, and copies that
//! leave a tile too few rows are refused by name, by the library and the CLI.

mod common;

use common::fused::{check, refused, sparse_x, stream_cli_refuses, with_hot_columns};
use wgsparse::fused::{Atomics, Matrix, Options, Pattern, Plan, Variant};

fn copies(k: u32, wg_atomics: Atomics, prefetch: bool, long_row: Option<u32>) -> Options {
    Options {
        variant: Variant::Stream,
        workgroup: Some(64),
        epl: Some(4),
        wg_copies: Some(k),
        wg_atomics,
        prefetch,
        long_row,
        ..Default::default()
    }
}

#[test]
fn copies_of_w_equal_the_twin() {
    // 40 columns, two of them in nearly every row: most adds of a tile meet on few words.
    let x = with_hot_columns(&sparse_x(1_500, 40, 9_000, 411), &[2, 31], 412);
    for g in [common::gpu(), common::gpu_plain()] {
        for (k, kind, prefetch, long_row) in [
            (2, Atomics::Auto, false, None),
            (4, Atomics::Cas, true, Some(20)),
            (8, Atomics::Auto, true, None),
            (4, Atomics::Auto, false, Some(12)),
        ] {
            let o = copies(k, kind, prefetch, long_row);
            for p in Pattern::ALL {
                let (_, plan) = check(g, Matrix::Sparse(&x), &o, p, 413);
                let c = &plan.config;
                assert_eq!(c.variant, Variant::Stream, "{}", c.describe());
                assert_eq!(c.wg_copies, k);
                assert!(c.describe().contains(&format!("w-copies={k}")));
                if long_row.is_some() {
                    assert!(plan.long_chunks() > 0, "no long row");
                }
            }
        }
    }
}

#[test]
fn bad_counts_fixed_sums_and_copies_beyond_workgroup_memory_are_refused() {
    let gpu = common::gpu();
    let x = sparse_x(600, 50, 3_000, 421);
    for k in [0, 3, 16] {
        refused(
            gpu,
            &x,
            &copies(k, Atomics::Auto, false, None),
            "1, 2, 4 or 8",
        );
    }
    let fixed = Options {
        wg_fixed: Some(true),
        ..copies(2, Atomics::Auto, false, None)
    };
    refused(gpu, &x, &fixed, "fixed-point sums keep one");
    // One copy of w fits beside 32 rows; eight do not.
    let n = (gpu.caps.max_workgroup_storage_bytes as usize / 4) * 2 / 3;
    let wide = sparse_x(300, n, 3_000, 422);
    let one = copies(1, Atomics::Auto, false, None);
    let plan = Plan::new(gpu, Matrix::Sparse(&wide), &one).unwrap();
    assert_eq!(plan.config.variant, Variant::Stream);
    refused(
        gpu,
        &wide,
        &copies(8, Atomics::Auto, false, None),
        "8 copies of w",
    );
    stream_cli_refuses("--wg-copies", "3", "1, 2, 4 or 8");
}
