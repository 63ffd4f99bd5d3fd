//! The stream variant (`Variant::Stream`): row tiles in CSR order, the row sums chained
//! across invocations (by subgroup shuffles or through workgroup memory), the entries scaled
//! from registers. Against the f64 twin (w poisoned with NaN) for every pattern: rows that
//! span many subgroups, one-entry and empty rows, long rows taken whole by a workgroup of the
//! same kernel, tiles cut by their row cap, the next tile's entries loaded during the scatter,
//! 4 or 8 entries per invocation, 16- or 32-bit keys, native or compare-exchange adds, the
//! one-dispatch ending over repeated runs (with and without long rows);
//! where it does not apply it runs `Fused`, and a bad entry count is refused.

mod common;

use common::fused::{check, refused, rows_of, sparse_x, stream_cli_refuses, with_hot_columns};
use wgsparse::fused::{Atomics, Matrix, Options, Pattern, Variant, STREAM_EPL};
use wgsparse::gen;
use wgsparse::sddmm::cpu::compare;
use wgsparse::sparse::Csr;
use wgsparse::Gpu;

fn stream(workgroup: u32, epl: u32, prefetch: bool, long_row: Option<u32>) -> Options {
    Options {
        variant: Variant::Stream,
        workgroup: Some(workgroup),
        epl: Some(epl),
        prefetch,
        long_row,
        ..Default::default()
    }
}

fn every_pattern(gpu: &Gpu, x: &Csr, o: &Options, seed: u64) {
    for p in Pattern::ALL {
        let (_, plan) = check(gpu, Matrix::Sparse(x), o, p, seed);
        let c = plan.config;
        assert_eq!(c.variant, Variant::Stream, "{}", c.describe());
        // Long rows or not, one kernel (and w = β·z before it without the ending).
        let alone = usize::from(!plan.finishes());
        assert_eq!(plan.dispatches(p), 1 + alone, "{}", c.describe());
        assert_eq!(c.tile, o.workgroup.unwrap() * o.epl.unwrap_or(STREAM_EPL));
        let whole_subgroups = o.workgroup.unwrap() >= gpu.caps.subgroup_max_size;
        assert_eq!(c.segmented, gpu.caps.subgroups && whole_subgroups);
        if let Some(l) = o.long_row {
            assert!(plan.long_chunks() > 0, "no long row above {l}");
        }
    }
}

#[test]
fn stream_equals_the_twin_on_power_law_x() {
    // Hot columns in nearly every row (empty rows are in the next test's X).
    let x = with_hot_columns(&sparse_x(1_300, 420, 10_000, 151), &[5, 300], 152);
    for g in [common::gpu(), common::gpu_plain()] {
        for (wg, epl, prefetch, long_row) in [
            (64, 4, false, None),
            (64, 8, true, Some(24)),
            (256, 8, false, None),
            (32, 4, true, Some(40)),
        ] {
            every_pattern(g, &x, &stream(wg, epl, prefetch, long_row), 153);
        }
    }
}

#[test]
fn rows_across_many_subgroups_and_tiles_cut_by_rows() {
    // Rows of 300 entries span 38 invocations at 8 each (several subgroups of any size up
    // to 32), beside rows of one entry and empty ones; rows of 2,100 entries exceed a tile
    // of 2,048 and are taken whole by a workgroup.
    let gpu = common::gpu();
    let long = rows_of(90, 2_500, &[300, 1, 0, 57, 2, 300, 2_100, 5], 161);
    for (wg, epl, prefetch) in [(256, 8, false), (256, 8, true), (512, 4, false)] {
        every_pattern(gpu, &long, &stream(wg, epl, prefetch, None), 162);
    }
    every_pattern(
        common::gpu_plain(),
        &long,
        &stream(256, 8, false, None),
        163,
    );
    // One-entry rows: a tile reaches its row cap (what workgroup memory holds beside w)
    // long before its entries.
    let short = rows_of(40_000, 64, &[1, 1, 2, 0], 164);
    for atomics in [Atomics::Auto, Atomics::Cas] {
        let o = Options {
            atomics,
            ..stream(
                1024.min(gpu.caps.max_invocations_per_workgroup),
                8,
                false,
                None,
            )
        };
        every_pattern(gpu, &short, &o, 165);
    }
}

#[test]
fn one_dispatch_ending_holds_over_repeated_runs() {
    // Without long rows and with room for the flag the plan is one dispatch: the last
    // workgroup writes w = β·z + the sum and leaves the accumulator zero, so a second run of
    // the same plan equals the twin again; with --fold off, w = β·z first, then the kernel.
    // Rows past the threshold (24) keep it: the workgroups take them in the same kernel.
    let gpu = common::gpu();
    let x = sparse_x(900, 120, 6_000, 181);
    let vecs = common::fused::vectors(900, 120, false, 182);
    let op = common::fused::host_op(Pattern::Full, &vecs, -0.75, 1.25);
    for (fold, long_row, dispatches) in [
        (true, None, 1),
        (false, None, 2),
        (true, Some(24), 1),
        (false, Some(24), 2),
    ] {
        let o = Options {
            fold,
            ..stream(64, 8, false, long_row)
        };
        let (_, plan) = common::fused::check_op(gpu, Matrix::Sparse(&x), &o, &op);
        assert_eq!(plan.finishes(), fold);
        assert_eq!(plan.long_chunks() > 0, long_row.is_some());
        assert_eq!(plan.dispatches(Pattern::Full), dispatches);
        let (want, mag) = Matrix::Sparse(&x).reference(&op);
        for _ in 0..2 {
            let again = plan.run_host(gpu, &op).unwrap();
            let cmp = compare(&again, &want, &mag, Matrix::Sparse(&x).rounding_terms());
            assert!(cmp.ok(), "run again: w[{:?}]", cmp.first_bad);
        }
    }
}

#[test]
fn runs_fused_where_it_does_not_apply_and_refuses_bad_entry_counts() {
    let gpu = common::gpu();
    let x = sparse_x(500, 300, 4_000, 171);
    // w wanted in global memory, n beyond workgroup memory, X beyond one binding, dense X.
    let wide_n = (gpu.caps.max_workgroup_storage_bytes / 4) as usize + 1;
    let wide = sparse_x(200, wide_n, 2_000, 172);
    let global_w = Options {
        workgroup_w: Some(false),
        ..stream(64, 8, false, None)
    };
    for (g, x, o) in [
        (gpu, &x, &global_w),
        (gpu, &wide, &stream(64, 8, false, None)),
        (
            common::gpu_small_bindings(),
            &x,
            &stream(64, 8, false, None),
        ),
    ] {
        let (_, plan) = check(g, Matrix::Sparse(x), o, Pattern::Full, 173);
        assert_eq!(
            plan.config.variant,
            Variant::Fused,
            "{}",
            plan.config.describe()
        );
    }
    let d = gen::dense_uniform(60, 20, 174);
    let (_, plan) = check(
        gpu,
        Matrix::Dense(&d),
        &stream(64, 8, false, None),
        Pattern::Full,
        175,
    );
    assert_eq!(plan.config.variant, Variant::Fused);
    for epl in [0, 2, 6, 16] {
        let o = Options {
            epl: Some(epl),
            ..stream(64, 8, false, None)
        };
        refused(gpu, &x, &o, "4 or 8");
    }
    stream_cli_refuses("--epl", "6", "4 or 8");
}

#[test]
fn y_in_workgroup_memory_or_not_equals_the_twin() {
    // y copied beside w (asked for) or gathered from global memory (the default), long rows
    // included; where w and y together would leave a tile fewer than 32 rows, asking for the
    // copy is refused by name.
    let gpu = common::gpu();
    let x = with_hot_columns(&sparse_x(900, 300, 7_000, 191), &[3], 192);
    for y_shared in [None, Some(true), Some(false)] {
        let o = Options {
            y_shared,
            ..stream(64, 8, false, Some(30))
        };
        for p in Pattern::ALL {
            let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, p, 193);
            assert_eq!(plan.config.y_shared, y_shared == Some(true));
            assert!(plan.long_chunks() > 0);
        }
    }
    let wg = 64u64;
    let caps = &gpu.caps;
    let bytes = caps.max_workgroup_storage_bytes as u64;
    // Scratch slots: one a subgroup where subgroups sum the row chains, else one an invocation.
    let slots = if caps.subgroups && wg >= caps.subgroup_max_size as u64 {
        wg.div_ceil(caps.subgroup_min_size.max(1) as u64)
    } else {
        wg
    };
    // 8 bytes a column for w and y, 8 a slot, the 4-byte flag, 16 a row.
    let n = ((bytes - 8 * slots - 4 - 16 * 32) / 8 + 2) as usize;
    let wide = sparse_x(300, n, 3_000, 194);
    let (_, plan) = check(
        gpu,
        Matrix::Sparse(&wide),
        &stream(wg as u32, 8, false, None),
        Pattern::Full,
        195,
    );
    assert_eq!(plan.config.variant, Variant::Stream);
    assert!(!plan.config.y_shared);
    let forced = Options {
        y_shared: Some(true),
        ..stream(wg as u32, 8, false, None)
    };
    let e = wgsparse::fused::Plan::new(gpu, Matrix::Sparse(&wide), &forced)
        .err()
        .expect("y in workgroup memory refused");
    assert!(e.to_string().contains("y in workgroup memory"), "{e}");
}

#[test]
fn sixteen_or_thirty_two_bit_keys_equal_the_twin() {
    // 32-bit keys by default, 16-bit ones when asked (X of at most 32,767 columns); long
    // rows included (their keys are read twice, from the same packed words).
    let gpu = common::gpu();
    let x = with_hot_columns(&sparse_x(700, 5_000, 6_000, 196), &[4_999], 197);
    for key16 in [None, Some(false), Some(true)] {
        let o = Options {
            key16,
            ..stream(128, 4, true, Some(40))
        };
        for p in Pattern::ALL {
            let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, p, 198);
            assert_eq!(plan.config.variant, Variant::Stream);
            assert_eq!(plan.config.key16, key16 == Some(true));
            assert!(plan.long_chunks() > 0);
        }
    }
}

#[test]
fn edge_shapes_with_long_rows() {
    // Every row of two entries or more long (threshold 1), a single long row (m = 1), rows
    // exactly a tile long (not long) beside one longer, and n = 1: all against the twin, with
    // and without subgroups.
    let all_long = rows_of(50, 7, &[2, 1, 7, 0, 3], 201);
    let one_row = rows_of(1, 600, &[600], 202);
    let at_tile = rows_of(12, 700, &[256, 257, 0, 1], 203);
    let one_col = rows_of(40, 1, &[1, 0], 204);
    for g in [common::gpu(), common::gpu_plain()] {
        for (x, o) in [
            (&all_long, stream(32, 4, false, Some(1))),
            (&one_row, stream(64, 4, false, None)),
            (&at_tile, stream(64, 4, false, None)),
            (&one_col, stream(32, 8, false, None)),
        ] {
            every_pattern(g, x, &o, 205);
        }
    }
}

#[test]
fn the_tuner_times_stream() {
    // Stream is timed at its workgroup sizes and entry counts; the pick (tuned afresh) equals
    // the twin.
    let gpu = common::gpu();
    let x = with_hot_columns(&sparse_x(3_000, 200, 24_000, 221), &[9], 222);
    let (pick, timed) =
        wgsparse::fused::tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    assert!(
        timed
            .iter()
            .any(|o| o.epl.is_some() && o.variant == Variant::Stream),
        "no stream candidate timed: {timed:?}"
    );
    common::fused::check_plan(gpu, Matrix::Sparse(&x), &pick, 223);
}

#[test]
fn the_tuner_times_stream_grids_at_every_size() {
    // Rows of about two entries over 200 columns (the 500k × 200 input's shape, smaller):
    // grids of a few workgroups per compute unit are timed against the model's for every
    // workgroup size and entries per invocation (searched jointly); the pick, whichever
    // variant the timings chose, equals the twin.
    let gpu = common::gpu();
    let x = sparse_x(12_000, 200, 24_000, 231);
    let (pick, timed) =
        wgsparse::fused::tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    let grids: Vec<u32> = timed.iter().filter_map(|o| o.groups).collect();
    assert!(
        !grids.is_empty(),
        "no grid timed: {}",
        pick.config.describe()
    );
    assert!(grids.iter().all(|&g| g >= 1));
    let sizes: std::collections::HashSet<(Option<u32>, Option<u32>)> = timed
        .iter()
        .filter(|o| o.groups.is_some())
        .map(|o| (o.workgroup, o.epl))
        .collect();
    assert!(sizes.len() > 1, "grids timed at one size only: {sizes:?}");
    common::fused::check_plan(gpu, Matrix::Sparse(&x), &pick, 232);
}

#[test]
fn a_grid_of_any_size_equals_the_twin_and_other_variants_refuse_it() {
    // Fewer workgroups take more tiles each, more run in waves (the next tile's loads in
    // flight or not, long rows first); a grid of 0, or one for a variant without it, is
    // refused by name.
    let gpu = common::gpu();
    let x = with_hot_columns(&sparse_x(1_300, 420, 10_000, 201), &[7], 202);
    for groups in [1, 2, 5, 64] {
        for prefetch in [false, true] {
            let o = Options {
                groups: Some(groups),
                ..stream(64, 8, prefetch, Some(40))
            };
            every_pattern(gpu, &x, &o, 203);
            let plan = wgsparse::fused::Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
            // The grid asked for, at most one workgroup per tile (about 23 here), raised
            // only where a software device's loop budget needs more workgroups.
            let (g, tiles) = (
                plan.config.groups,
                x.nnz().div_ceil(plan.config.tile as usize),
            );
            assert!(g <= groups.max(tiles as u32), "{}", plan.config.describe());
            if gpu.caps.loop_cap.is_none() {
                assert_eq!(g, groups.min(tiles as u32), "{}", plan.config.describe());
            }
        }
    }
    for (variant, groups, what) in [
        (Variant::Stream, 0, "at least 1"),
        (Variant::Fused, 4, "only the stream variant"),
        (Variant::Auto, 4, "only the stream variant"),
    ] {
        let o = Options {
            variant,
            groups: Some(groups),
            ..Default::default()
        };
        refused(gpu, &x, &o, what);
    }
    stream_cli_refuses("--groups", "0", "at least 1");
}

#[test]
fn tiles_capped_by_rows_equal_the_twin() {
    // A cap on a tile's rows cuts tiles early (3 rows: most tiles hold far fewer entries than
    // they could); plans with other caps do not share its tiles; a cap of 0 is refused.
    let gpu = common::gpu();
    let x = rows_of(700, 300, &[9, 1, 0, 40, 2, 130], 211);
    for (cap, prefetch) in [(3, false), (3, true), (17, true), (100_000, false)] {
        let o = Options {
            row_tile: Some(cap),
            ..stream(64, 8, prefetch, Some(64))
        };
        every_pattern(gpu, &x, &o, 212);
        let plan = wgsparse::fused::Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        assert!(plan.config.row_tile >= 1 && plan.config.row_tile <= cap);
        let rows_max = plan.stream_rows_max().unwrap();
        assert!(rows_max <= cap && rows_max >= cap.min(3), "{rows_max} rows");
    }
    let o = Options {
        row_tile: Some(0),
        ..stream(64, 8, false, None)
    };
    refused(gpu, &x, &o, "at least 1");
}

#[test]
fn the_tuner_times_the_fastest_stream_size_with_fewer_rows_a_tile() {
    // Runs of one-entry rows between runs of 60-entry ones: the fullest tile holds far more
    // rows than a tile's mean, so the fastest stream size is timed again with its tiles cut
    // at fewer rows (less workgroup memory), at its grids; the pick equals the twin.
    let gpu = common::gpu();
    let lens: Vec<usize> = [1; 300].into_iter().chain([60; 300]).collect();
    let x = rows_of(1_200, 300, &lens, 241);
    let (pick, timed) =
        wgsparse::fused::tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    let trimmed: Vec<u32> = timed
        .iter()
        .filter(|o| o.variant == Variant::Stream)
        .filter_map(|o| o.row_tile)
        .collect();
    assert!(!trimmed.is_empty(), "no trimmed tiles timed");
    // Half again a tile's mean rows (its entries over 30.5 a row), a multiple of 32.
    assert!(
        trimmed.iter().all(|&r| r % 32 == 0 && r < 1_024),
        "{trimmed:?}"
    );
    common::fused::check_plan(gpu, Matrix::Sparse(&x), &pick, 242);
}
