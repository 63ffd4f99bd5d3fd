//! The fused pattern's column-split variant (`split`: row scales p, then Xᵀp over row tiles
//! sorted by column, chunk by chunk) against the f64 twins: the pattern's and the split
//! layout's own (`fused::split::twin`, from the arrays the kernels bind). Every pattern, with
//! and without subgroups, native and compare-exchange adds, and the range boundaries: row
//! tiles of one row, of a few rows not dividing m, and the largest X's columns allow; chunks
//! cut inside a column's run and exactly full; runs longer than a subgroup round; m = 1,
//! n = 1, X without entries, n at the key's limit.

mod common;

use common::fused::{check, check_op, host_op, sparse_x, top_shares, vectors, with_hot_columns};
use wgsparse::fused::{split, tune, Atomics, Matrix, Options, Pattern, Plan, Variant, SPLIT_EPL};
use wgsparse::sddmm::cpu::compare;
use wgsparse::sparse::{Csr, Dense};
use wgsparse::{Error, Gpu};

fn opts(wg: u32, row_tile: Option<u32>, subgroups: bool, atomics: Atomics) -> Options {
    Options {
        variant: Variant::Split,
        workgroup: Some(wg),
        row_tile,
        subgroups,
        atomics,
        ..Default::default()
    }
}

/// Runs the split plan for pattern `p`, checks it against the pattern's twin and the split
/// layout's twin (both within the same bound), and the twins against each other.
fn check_split(g: &Gpu, x: &Csr, o: &Options, p: Pattern, seed: u64) -> Plan {
    let (m, n) = (x.nrows, x.ncols);
    let vecs = vectors(m, n, p == Pattern::Xty, seed);
    let op = host_op(p, &vecs, -0.75, 1.25);
    let (got, plan) = check_op(g, Matrix::Sparse(x), o, &op);
    let c = plan.config;
    assert_eq!(c.variant, Variant::Split, "{}", c.describe());
    let whole = c.workgroup >= g.caps.subgroup_max_size;
    assert_eq!(c.segmented, o.subgroups && g.caps.subgroups && whole);
    let chunk = SPLIT_EPL * c.workgroup;
    let segment = SPLIT_EPL * g.caps.subgroup_min_size;
    let (want, mag, chunks) = if c.key16 {
        let l = split::build16(x, c.row_tile, chunk, segment).unwrap();
        let (w, m) = split::twin16(x, &l, &op);
        (w, m, l.chunks.len())
    } else {
        let l = split::build(x, c.row_tile, chunk).unwrap();
        let (w, m) = split::twin(x, &l, &op);
        (w, m, l.chunks.len())
    };
    // The 16-bit layout wherever it applies unless the caller says otherwise.
    let fixed = g.caps.subgroup_min_size == g.caps.subgroup_max_size;
    let fits16 = c.segmented && fixed && c.row_tile <= split::MARKER16 as u32;
    assert_eq!(c.key16, o.key16.unwrap_or(fits16), "{}", c.describe());
    let terms = Matrix::Sparse(x).rounding_terms();
    let cmp = compare(&got, &want, &mag, terms);
    assert!(
        cmp.ok(),
        "{} vs the split twin: w[{:?}] (max rel err {:.3e})",
        c.describe(),
        cmp.first_bad,
        cmp.max_rel_error
    );
    let (pattern_w, _) = Matrix::Sparse(x).reference(&op);
    for (a, b) in want.iter().zip(&pattern_w) {
        assert!(
            (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
            "twins differ: {a} vs {b}"
        );
    }
    assert_eq!(plan.dispatches(p), 2);
    let (entries, adds, plan_chunks) = plan.split_adds().unwrap();
    assert_eq!(entries, x.nnz());
    assert_eq!(plan_chunks, chunks);
    // At most one add per slot (16-bit: at most one marker per entry).
    let slots = if c.key16 { 2 * entries } else { entries };
    assert!(adds <= slots.max(chunks), "{adds} adds, {entries} entries");
    plan
}

#[test]
fn split_matches_the_twins() {
    // Empty rows, a column in nearly every row (runs across subgroup rounds, chunks and
    // tiles), row tiles of 1 row, 7 rows (not dividing m), 64 rows and the default (all of
    // X), workgroups of 32 and 64 (chunks of 256 and 512 entries), subgroups or not, native
    // or compare-exchange adds, the row pass at one row per vector or C strided rows, every
    // pattern.
    let base = sparse_x(900, 300, 7_000, 41);
    assert!(
        (0..base.nrows).any(|r| base.row_range(r).is_empty()),
        "no empty row"
    );
    // Rows longer than 4 trips of a 32-lane vector and not a multiple of it: the row pass's
    // unrolled trips (4 entries per lane) and its remainder.
    let longest = (0..base.nrows).map(|r| base.row_range(r).len()).max();
    assert!(
        longest.is_some_and(|l| l > 4 * 32 && l % 32 != 0),
        "{longest:?}"
    );
    let heavy = with_hot_columns(&sparse_x(900, 300, 600, 42), &[17, 299], 5);
    assert!(
        top_shares(&heavy).1 > 0.3,
        "the hot column holds too little"
    );
    for g in [common::gpu(), common::gpu_plain()] {
        for x in [&base, &heavy] {
            for p in Pattern::ALL {
                for (wg, rt, subgroups, atomics, c, key16) in [
                    (64, None, true, Atomics::Auto, None, None),
                    (32, Some(7), true, Atomics::Cas, Some(5), None),
                    (64, Some(64), false, Atomics::Auto, None, None),
                    (32, Some(1), true, Atomics::Auto, Some(2), None),
                    (64, Some(64), true, Atomics::Auto, None, Some(false)),
                    (32, Some(1 << 16), true, Atomics::Auto, None, None),
                ] {
                    let o = Options {
                        rows_per_vector: c,
                        key16,
                        ..opts(wg, rt, subgroups, atomics)
                    };
                    let plan = check_split(g, x, &o, p, 23);
                    // One row per vector by default; the caller's C otherwise.
                    assert_eq!(plan.config.rows_per_vector, c.unwrap_or(1));
                }
            }
        }
    }
}

#[test]
fn split_edges() {
    let g = common::gpu();
    let o = |rt| opts(32, rt, true, Atomics::Auto);
    // m = 1, n = 1, and both.
    let one_row = sparse_x(1, 200, 120, 51);
    let one_col = sparse_x(500, 1, 300, 52);
    let single = Csr {
        nrows: 1,
        ncols: 1,
        row_ptr: vec![0, 1],
        col_idx: vec![0],
        values: vec![1.5],
    };
    for x in [&one_row, &one_col, &single] {
        for p in Pattern::ALL {
            check_split(g, x, &o(None), p, 53);
        }
    }
    // A column holding a whole chunk: the one column of X, chunks of 256 entries exactly
    // full (a multiple of them) and one over (32-bit keys); the same X in the 16-bit layout,
    // whose markers open every subgroup's slots (a chunk holds fewer entries).
    for extra in [0, 1] {
        let m = 3 * 256 + extra;
        let x = Csr {
            nrows: m,
            ncols: 3,
            row_ptr: (0..=m as u32).collect(),
            col_idx: vec![1; m],
            values: wgsparse::gen::dense_uniform(1, m, 54).data,
        };
        let keys32 = Options {
            key16: Some(false),
            ..o(None)
        };
        let plan = check_split(g, &x, &keys32, Pattern::Full, 55);
        assert_eq!(plan.split_adds().unwrap().2, 3 + extra);
        let plan = check_split(g, &x, &o(None), Pattern::Full, 56);
        if plan.config.key16 {
            assert!(plan.split_adds().unwrap().2 >= 4);
        }
    }
    // X without entries: w = β·z alone.
    let empty = Csr::empty(40, 30);
    for p in [Pattern::Full, Pattern::XtxyBz, Pattern::Xty] {
        check_split(g, &empty, &o(Some(8)), p, 56);
    }
    // The key's limit: 2^24 columns leave 8 bits of row offset (tiles of 256 rows at most).
    let n = 1usize << 24;
    let wide = with_hot_columns(&sparse_x(600, n, 2_000, 57), &[n as u32 - 1, 3], 9);
    // 32-bit column indices in the row pass (n > 65,536), over unrolled trips at VS ≤ 8.
    let longest = (0..wide.nrows).map(|r| wide.row_range(r).len()).max();
    assert!(longest.is_some_and(|l| l > 4 * 8), "{longest:?}");
    let plan = check_split(g, &wide, &o(Some(256)), Pattern::Full, 58);
    assert!(plan.config.vs <= 8, "{}", plan.config.describe());
    assert_eq!(plan.config.row_tile, 256);
    assert!(Plan::new(g, Matrix::Sparse(&wide), &o(Some(257))).is_err());
    // The default takes the most the columns allow.
    assert_eq!(
        Plan::new(g, Matrix::Sparse(&wide), &o(None))
            .unwrap()
            .config
            .row_tile,
        256
    );
}

#[test]
fn split_falls_back_or_refuses() {
    let g = common::gpu();
    // Beyond 2^24 columns the keys do not fit: `fused` runs it.
    let n = (1usize << 24) + 1;
    let x = sparse_x(200, n, 600, 61);
    let plan = Plan::new(g, Matrix::Sparse(&x), &opts(64, None, true, Atomics::Auto)).unwrap();
    assert_eq!(plan.config.variant, Variant::Fused);
    // Dense X runs `fused` too, and equals the twin.
    let d = wgsparse::gen::dense_uniform(300, 40, 62);
    let (_, plan) = check(
        g,
        Matrix::Dense(&d as &Dense),
        &opts(64, None, true, Atomics::Auto),
        Pattern::Full,
        63,
    );
    assert_eq!(plan.config.variant, Variant::Fused);
    // A row longer than a loop-capped device's budget in one vector (70,000 entries at one
    // lane per row, llvmpipe's budget 32,767 iterations) runs `fused` there (its long-row
    // path), the split elsewhere; both equal the twin.
    let mut long = sparse_x(50, 80_000, 300, 65);
    let row: Vec<u32> = (0..70_000u32).collect();
    let mut col_idx = row.clone();
    col_idx.extend_from_slice(&long.col_idx);
    let mut values = wgsparse::gen::dense_uniform(1, row.len(), 66).data;
    values.extend_from_slice(&long.values);
    let mut row_ptr = vec![0u32];
    row_ptr.extend(long.row_ptr[1..].iter().map(|&p| p + 70_000));
    row_ptr.insert(1, 70_000);
    long = Csr {
        nrows: long.nrows + 1,
        ncols: long.ncols,
        row_ptr,
        col_idx,
        values,
    };
    let o = Options {
        vs: Some(1),
        ..opts(64, None, true, Atomics::Auto)
    };
    let (_, plan) = check(g, Matrix::Sparse(&long), &o, Pattern::Full, 67);
    let capped = g.caps.loop_cap.is_some();
    let want = if capped {
        Variant::Fused
    } else {
        Variant::Split
    };
    assert_eq!(plan.config.variant, want, "{}", plan.config.describe());
    // The 16-bit layout past 32,768 rows per tile is refused when asked for.
    let x = sparse_x(200, 100, 600, 68);
    let o = Options {
        key16: Some(true),
        ..opts(64, Some(1 << 16), true, Atomics::Auto)
    };
    match Plan::new(g, Matrix::Sparse(&x), &o) {
        Err(Error::Option(msg)) => assert!(msg.contains("16-bit"), "{msg}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(p) => panic!("accepted: {}", p.config.describe()),
    }
    // A row tile of 0 rows is refused, naming it.
    let x = sparse_x(200, 100, 600, 64);
    match Plan::new(
        g,
        Matrix::Sparse(&x),
        &opts(64, Some(0), true, Atomics::Auto),
    ) {
        Err(Error::Option(msg)) => assert!(msg.contains("row tile"), "{msg}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a row tile of 0 rows was accepted"),
    }
}

#[test]
fn split_sums_runs_once() {
    // A column in nearly every row: the scatter's adds are far fewer than X's entries.
    let x = with_hot_columns(&sparse_x(2_000, 300, 1_000, 71), &[5], 7);
    let l = split::build(&x, 1024, 2048).unwrap();
    let adds = l.adds(8 * 32);
    assert!(adds * 4 < x.nnz(), "{adds} adds for {} entries", x.nnz());
    let l16 = split::build16(&x, 1024, 2048, 8 * 32).unwrap();
    let adds16 = l16.adds(8 * 32);
    assert!(
        adds16 * 4 < x.nnz(),
        "{adds16} adds for {} entries",
        x.nnz()
    );
    // A marker per run of a column in a chunk: few beside the entries.
    let markers = l16.words.iter().filter(|&&w| w == split::MARKER16).count();
    assert_eq!(l16.words.len(), x.nnz() + markers);
    assert!(markers * 4 < x.nnz(), "{markers} markers");
}

#[test]
fn the_tuner_times_the_split_and_its_pick_equals_the_twin() {
    let gpu = common::gpu();
    let x = sparse_x(6_000, 300, 40_000, 81);
    let (pick, timed) = tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    assert!(
        timed.iter().any(|o| o.variant == Variant::Split),
        "no split candidate timed: {timed:?}"
    );
    let picked = Options {
        variant: pick.config.variant,
        vs: Some(pick.config.vs),
        workgroup: Some(pick.config.workgroup),
        hot_cols: Some(pick.config.hot_cols),
        long_row: Some(pick.config.long_row),
        regs: Some(pick.config.regs),
        workgroup_w: Some(pick.config.workgroup_w),
        row_tile: (pick.config.row_tile > 0).then_some(pick.config.row_tile),
        rows_per_vector: Some(pick.config.rows_per_vector),
        key16: Some(pick.config.key16),
        ..Default::default()
    };
    check(gpu, Matrix::Sparse(&x), &picked, Pattern::Full, 82);
}
