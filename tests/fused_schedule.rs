//! The launch model's C for the sparse row kernel (`fused::schedule`): on a few heavy rows
//! it is smaller than on even rows of the same shape (a second wave of workgroups), and the
//! plan at that C matches the f64 twin.

mod common;

use common::fused::{check, opts, rows_of};
use wgsparse::fused::{Matrix, Options, Pattern, Plan, Variant};
use wgsparse::sparse::Csr;

/// `m` rows over `n` columns: the first `heavy` rows hold `long` entries, the others `short`.
fn rows(m: usize, n: usize, heavy: usize, long: usize, short: usize) -> Csr {
    let lens: Vec<usize> = (0..m)
        .map(|r| if r < heavy { long } else { short })
        .collect();
    rows_of(m, n, &lens, 5)
}

fn fused() -> Options {
    opts(Variant::Fused)
}

#[test]
fn heavy_rows_take_a_smaller_c_than_even_rows() {
    let gpu = common::gpu();
    let (m, n) = (40_000, 512);
    let even = rows(m, n, 0, 0, 4);
    let skewed = rows(m, n, 64, 400, 4);
    let c_even = Plan::new(gpu, Matrix::Sparse(&even), &fused())
        .unwrap()
        .config;
    let (_, plan) = check(gpu, Matrix::Sparse(&skewed), &fused(), Pattern::Full, 3);
    let c_skewed = plan.config;
    assert_eq!(
        (c_even.vs, c_even.workgroup),
        (c_skewed.vs, c_skewed.workgroup)
    );
    // Same m, VS and workgroup size, so the same Eq. 5 C: the heavy rows alone shrink it.
    assert!(
        c_skewed.rows_per_vector < c_even.rows_per_vector,
        "C {} on heavy rows against {} on even ones",
        c_skewed.rows_per_vector,
        c_even.rows_per_vector
    );
    assert_eq!(
        c_skewed.groups as usize,
        m.div_ceil(c_skewed.rows_per_vector as usize * (c_skewed.workgroup / c_skewed.vs) as usize)
    );
}
