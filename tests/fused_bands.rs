//! Sparse X beyond one storage binding: with storage bindings capped (16–32 KiB) a power-law X
//! runs as several row bands, and every pattern × sparse variant equals the same variant on
//! one binding and the f64 twin (w poisoned with NaN before each run); heavy and long rows at
//! band edges; two-pass stays bit-reproducible; a row too long for one binding is a clear
//! error.

mod common;

use std::sync::OnceLock;

use common::fused::{check_op, host_op, sparse_x, vectors, with_hot_columns};
use wgsparse::fused::{Matrix, Options, Pattern, Plan, Variant};
use wgsparse::gen;
use wgsparse::gpu::GpuOptions;
use wgsparse::sddmm::cpu::compare;
use wgsparse::sparse::Csr;
use wgsparse::{Error, Gpu};

/// The test adapter with storage bindings capped at `KIB` KiB.
fn capped<const KIB: u64>() -> &'static Gpu {
    static GPUS: OnceLock<std::sync::Mutex<Vec<(u64, &'static Gpu)>>> = OnceLock::new();
    let mut all = GPUS.get_or_init(Default::default).lock().unwrap();
    if let Some(&(_, g)) = all.iter().find(|(k, _)| *k == KIB) {
        return g;
    }
    let g: &'static Gpu = Box::leak(Box::new(
        Gpu::new_with(&GpuOptions {
            max_binding_bytes: Some(KIB << 10),
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("{e}")),
    ));
    all.push((KIB, g));
    g
}

/// Runs pattern `p` under `o` banded (on `banded`) and on one binding; both against the twin,
/// and against each other within twice the twin's bound. Returns the banded w and plan.
fn banded_equals_whole(banded: &Gpu, x: &Csr, o: &Options, p: Pattern, seed: u64) -> Plan {
    let vecs = vectors(x.nrows, x.ncols, p == Pattern::Xty, seed);
    let op = host_op(p, &vecs, -0.75, 1.25);
    let (got, plan) = check_op(banded, Matrix::Sparse(x), o, &op);
    let (whole, one) = check_op(common::gpu(), Matrix::Sparse(x), o, &op);
    assert_eq!(one.n_bands(), 1);
    // The column split and the stream tiles run `fused` where X's entries are beyond one
    // binding.
    let want = match one.config.variant {
        Variant::Split | Variant::Stream if plan.n_bands() > 1 => Variant::Fused,
        v => v,
    };
    assert_eq!(plan.config.variant, want);
    let (_, mag) = Matrix::Sparse(x).reference(&op);
    let whole64: Vec<f64> = whole.iter().map(|&v| v as f64).collect();
    let m2: Vec<f64> = mag.iter().map(|m| 2.0 * m).collect();
    let cmp = compare(&got, &whole64, &m2, Matrix::Sparse(x).rounding_terms());
    assert!(
        cmp.ok(),
        "{} {:?} banded vs whole: w[{:?}] (max rel err {:.3e})",
        plan.config.describe(),
        p,
        cmp.first_bad,
        cmp.max_rel_error
    );
    plan
}

/// Small grids (4 workgroups): two-pass partials (groups × n) well within one binding.
fn small_grid(variant: Variant) -> Options {
    Options {
        variant,
        vs: Some(4),
        workgroup: Some(128),
        rows_per_vector: Some(12),
        ..Default::default()
    }
}

#[test]
fn every_pattern_and_variant_in_bands() {
    // 32 KiB bindings: 30,000 entries (117 KiB per entry array) in at least 4 bands.
    let gpu = capped::<32>();
    let x = sparse_x(1_500, 300, 30_000, 31);
    for p in Pattern::ALL {
        for v in Variant::CONCRETE {
            let plan = banded_equals_whole(gpu, &x, &small_grid(v), p, 41);
            assert!(plan.n_bands() >= 4, "{} bands", plan.n_bands());
        }
    }
    // The launch model's own grid (64 KiB bindings: two-pass partials of 32 groups × n fit).
    let x = sparse_x(1_500, 300, 60_000, 42);
    for v in Variant::CONCRETE {
        let o = Options {
            variant: v,
            ..Default::default()
        };
        let plan = banded_equals_whole(capped::<64>(), &x, &o, Pattern::Full, 43);
        assert!(plan.n_bands() >= 4, "{} bands", plan.n_bands());
    }
}

/// Power-law X with heavy rows of `len` entries at `rows` (random columns and values).
fn with_heavy_rows(x: &Csr, heavy: &[(usize, usize)], seed: u64) -> Csr {
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (vec![], vec![]);
    let mut rng = seed;
    for r in 0..x.nrows {
        if let Some(&(_, len)) = heavy.iter().find(|(h, _)| *h == r) {
            let vals = gen::dense_uniform(1, len, seed + r as u64).data;
            // `len` distinct columns spread over X's columns.
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let off = (rng >> 33) as usize % x.ncols;
            let mut cols: Vec<u32> = (0..len)
                .map(|k| ((off + k * x.ncols / len) % x.ncols) as u32)
                .collect();
            cols.sort_unstable();
            cols.dedup();
            col_idx.extend(&cols);
            values.extend(&vals[..cols.len()]);
        } else {
            col_idx.extend(x.row_range(r).map(|e| x.col_idx[e]));
            values.extend(x.row_range(r).map(|e| x.values[e]));
        }
        row_ptr.push(col_idx.len() as u32);
    }
    Csr::new(x.nrows, x.ncols, row_ptr, col_idx, values).unwrap()
}

#[test]
fn heavy_and_long_rows_at_band_edges() {
    // 16 KiB bindings: a band holds at most 4,096 entries less the alignment, so rows of
    // 2,500–4,000 entries side by side each start a band (one ends right before each), and
    // the long-row path's chunks and the hot columns run in bands.
    let gpu = capped::<16>();
    let base = sparse_x(2_000, 4_000, 12_000, 32);
    let heavy = [
        (64, 2_500),
        (65, 3_000),
        (66, 3_900),
        (700, 4_000),
        (1_999, 2_600),
    ];
    let x = with_heavy_rows(&with_hot_columns(&base, &[5, 900, 3_001], 33), &heavy, 34);
    let x_nnz_bytes = x.nnz() * 4;
    assert!(x_nnz_bytes > 6 * (16 << 10));
    let long = |v: Variant, long_row: u32, hot: Option<u32>| Options {
        variant: v,
        long_row: Some(long_row),
        hot_cols: hot,
        workgroup_w: Some(false),
        ..Default::default()
    };
    let cases = [
        long(Variant::Fused, 256, Some(0)),
        long(Variant::Fused, 512, Some(8)),
        long(Variant::Fused, 300, None),
        long(Variant::Sorted, 256, None),
        long(Variant::Unfused, 256, None),
    ];
    for o in &cases {
        for p in [Pattern::Full, Pattern::Xty, Pattern::Xtxy] {
            let plan = banded_equals_whole(gpu, &x, o, p, 51);
            assert!(plan.n_bands() >= 6, "{} bands", plan.n_bands());
            // Each of the side-by-side heavy rows starts a band.
            let starts: Vec<usize> = plan.band_rows().iter().map(|r| r.start).collect();
            assert!([65, 66].iter().all(|r| starts.contains(r)), "{starts:?}");
            if o.variant == Variant::Fused {
                assert!(plan.long_chunks() >= heavy.len(), "{}", plan.long_chunks());
            }
        }
    }
    // Sorted tiles with wide keys (the key layout beyond a packed key) in bands: the same
    // entries through a column array.
    let wide = gen::power_law(1_500, 4_000, 20_000, 1.1, 35).unwrap();
    let o = Options {
        variant: Variant::Sorted,
        ..Default::default()
    };
    let plan = banded_equals_whole(gpu, &wide, &o, Pattern::Full, 52);
    assert!(plan.n_bands() >= 4);
}

#[test]
fn two_pass_in_bands_is_bit_reproducible() {
    let gpu = capped::<32>();
    let x = sparse_x(1_500, 300, 30_000, 36);
    let plan = banded_equals_whole(gpu, &x, &small_grid(Variant::TwoPass), Pattern::Full, 61);
    assert!(plan.n_bands() >= 4);
    let vecs = vectors(x.nrows, x.ncols, false, 62);
    let op = host_op(Pattern::Full, &vecs, 0.5, -1.5);
    let a = plan.run_host(gpu, &op).unwrap();
    for _ in 0..3 {
        let b = plan.run_host(gpu, &op).unwrap();
        assert!(a.iter().zip(&b).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

#[test]
fn a_row_beyond_one_binding_is_a_clear_error() {
    // 16 KiB bindings and n = 4,096: w fits one binding exactly, but a row holding every
    // column does not fit a band (its window must start at an aligned entry below it).
    let gpu = capped::<16>();
    let base = sparse_x(300, 4_096, 3_000, 37);
    let x = with_heavy_rows(&base, &[(150, 4_096)], 38);
    assert_eq!(x.row_range(150).len(), 4_096);
    for v in Variant::CONCRETE {
        let o = Options {
            variant: v,
            ..Default::default()
        };
        match Plan::new(gpu, Matrix::Sparse(&x), &o) {
            Err(Error::TooLarge { what, .. }) => assert!(what.contains("row 150 "), "{what}"),
            Err(e) => panic!("{v:?}: expected TooLarge naming row 150, got {e}"),
            Ok(_) => panic!("{v:?}: a 16 KiB row planned in 16 KiB bindings"),
        }
    }
    // m beyond one binding (v and the row offsets) is refused before anything is uploaded.
    let tall = sparse_x(5_000, 50, 8_000, 39);
    let e = Plan::new(gpu, Matrix::Sparse(&tall), &Options::default()).err();
    assert!(
        matches!(e, Some(Error::TooLarge { ref what, .. }) if what.contains("row offsets")),
        "{e:?}"
    );
}

/// `x` with rows `empty` emptied (a stretch of rows without entries).
fn with_empty_rows(x: &Csr, empty: std::ops::Range<usize>) -> Csr {
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (vec![], vec![]);
    for r in 0..x.nrows {
        if !empty.contains(&r) {
            col_idx.extend(x.row_range(r).map(|e| x.col_idx[e]));
            values.extend(x.row_range(r).map(|e| x.values[e]));
        }
        row_ptr.push(col_idx.len() as u32);
    }
    Csr::new(x.nrows, x.ncols, row_ptr, col_idx, values).unwrap()
}

#[test]
fn solvers_in_bands() {
    use wgsparse::fused::cpu;
    use wgsparse::fused::linreg::{self, CgOptions};
    use wgsparse::fused::logreg::{self, TronOptions};
    let gpu = capped::<32>();
    let x = with_empty_rows(&sparse_x(1_500, 300, 30_000, 71), 500..800);
    // The logistic row terms (NaN-poisoned) for every row, the empty stretch included.
    let w: Vec<f32> = gen::dense_uniform(1, x.ncols, 72).data;
    let labels: Vec<f32> = gen::dense_uniform(1, x.nrows, 73)
        .data
        .iter()
        .map(|&v| (v > 0.0) as u8 as f32)
        .collect();
    let plan = Plan::new(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    assert!(plan.n_bands() >= 3, "{} bands", plan.n_bands());
    let got = logreg::row_terms(gpu, &plan, &w, &labels).unwrap();
    let y: Vec<f64> = logreg::signed_labels(&labels)
        .iter()
        .map(|&v| v as f64)
        .collect();
    let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let want = cpu::logistic(&x, &w64, &y);
    for k in 0..3 {
        for r in 0..x.nrows {
            let mag: f64 = x
                .row_range(r)
                .map(|e| (x.values[e] as f64 * w64[x.col_idx[e] as usize]).abs())
                .sum::<f64>()
                + 1.0;
            let err = (got[k][r] as f64 - want[k][r]).abs();
            assert!(
                err <= 64.0 * f32::EPSILON as f64 * mag,
                "term {k} row {r}: {} want {}",
                got[k][r],
                want[k][r]
            );
        }
    }
    // Newton-CG and CG banded follow the one-binding solves.
    let whole = Plan::new(common::gpu(), Matrix::Sparse(&x), &Options::default()).unwrap();
    let close = |a: &[f32], b: &[f32]| {
        let top = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        a.iter().zip(b).all(|(a, b)| (a - b).abs() <= 1e-3 * top)
    };
    let o = TronOptions::default();
    let t_band = logreg::logreg_tron(gpu, &plan, &labels, &o, |_, _| {}).unwrap();
    let t_whole = logreg::logreg_tron(common::gpu(), &whole, &labels, &o, |_, _| {}).unwrap();
    assert_eq!(t_band.iterations, t_whole.iterations);
    assert!(close(&t_band.w, &t_whole.w));
    let b = linreg::synthetic_labels(Matrix::Sparse(&x), 74);
    // λ = 1 keeps the system well conditioned: CG converges within its 100 iterations.
    let o = CgOptions {
        lambda: 1.0,
        ..Default::default()
    };
    let c_band = linreg::linreg_cg(gpu, &plan, &b, &o, |_, _| {}).unwrap();
    let c_whole = linreg::linreg_cg(common::gpu(), &whole, &b, &o, |_, _| {}).unwrap();
    assert!(c_band.converged && c_whole.converged);
    assert!(close(&c_band.w, &c_whole.w));
}
