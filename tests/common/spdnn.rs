//! Helpers of the `spdnn` tests: layers built column by column, power-law binary inputs.

use rand::{Rng, SeedableRng};

use wgsparse::sparse::Csr;

/// An `n × n` layer built column by column: column j has `count(j)` distinct random
/// sources, entry e of it the weight `value(j, e)`.
pub fn by_columns(
    n: usize,
    seed: u64,
    count: impl Fn(usize) -> usize,
    value: impl Fn(usize, usize) -> f32,
) -> Csr {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (Vec::new(), Vec::new());
    for j in 0..n {
        let mut src: Vec<u32> = Vec::new();
        while src.len() < count(j).min(n) {
            let s = rng.random_range(0..n as u32);
            if !src.contains(&s) {
                src.push(s);
            }
        }
        src.sort_unstable();
        for (e, &s) in src.iter().enumerate() {
            col_idx.push(s);
            values.push(value(j, e));
        }
        row_ptr.push(col_idx.len() as u32);
    }
    // Built as Wᵀ (row j = column j's sources), returned as W.
    Csr::new(n, n, row_ptr, col_idx, values)
        .unwrap()
        .transpose()
}

/// Binary inputs whose rows have skewed densities 0.95·(1 − u²) (u uniform): most rows
/// dense enough to saturate, a tail of sparse ones that die, some in between.
pub fn power_law_inputs(rows: usize, n: usize, seed: u64) -> Csr {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut row_ptr = vec![0u32];
    let mut col_idx = Vec::new();
    for _ in 0..rows {
        let density = 0.95 * (1.0 - rng.random::<f64>().powi(2));
        for j in 0..n as u32 {
            if rng.random_bool(density) {
                col_idx.push(j);
            }
        }
        row_ptr.push(col_idx.len() as u32);
    }
    let values = vec![1.0f32; col_idx.len()];
    Csr::new(rows, n, row_ptr, col_idx, values).unwrap()
}
