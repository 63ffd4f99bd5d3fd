//! The launch model's C for the sparse row kernel (`fused::schedule`): on rows of equal
//! length it keeps Eq. 5's C, on a few heavy rows it takes a smaller one (a second wave of
//! workgroups), and the plan at that C matches the f64 twin.

mod common;

use common::fused::{check, opts};
use wgsparse::fused::{Matrix, Options, Pattern, Plan, Variant};
use wgsparse::sparse::Csr;

/// `m` rows over `n` columns: the first `heavy` rows hold `long` entries, the others `short`;
/// values power-law-ish and never zero.
fn rows(m: usize, n: usize, heavy: usize, long: usize, short: usize) -> Csr {
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (vec![], vec![]);
    for r in 0..m {
        let len = if r < heavy { long } else { short };
        for k in 0..len {
            col_idx.push(((r * 7 + k * 13) % n) as u32);
            values.push(1.0 / (1.0 + ((r + k) % 97) as f32).powf(0.7));
        }
        let row = &mut col_idx[*row_ptr.last().unwrap() as usize..];
        row.sort_unstable();
        row_ptr.push(col_idx.len() as u32);
    }
    Csr {
        nrows: m,
        ncols: n,
        row_ptr,
        col_idx,
        values,
    }
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
