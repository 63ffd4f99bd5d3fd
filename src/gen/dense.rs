//! Dense random matrices.

use rand::Rng;

use crate::gen::engine::{par_fill, sub_seed};
use crate::sparse::Dense;

/// Values per parallel chunk (each chunk has its own random stream).
const CHUNK: usize = 1 << 16;

/// A random `nrows × ncols` row-major matrix with values uniform in `[-1, 1]`, never exactly
/// zero. Deterministic given `seed` (independent of the number of threads).
///
/// # Panics
/// When `nrows × ncols` overflows `usize`.
pub fn dense_uniform(nrows: usize, ncols: usize, seed: u64) -> Dense {
    let cells = nrows
        .checked_mul(ncols)
        .expect("nrows × ncols overflows usize");
    let mut data = vec![0f32; cells];
    par_fill(&mut data, CHUNK, sub_seed(seed, 2), |rng| loop {
        let v: f32 = rng.random_range(-1.0..=1.0);
        if v != 0.0 {
            break v;
        }
    });
    Dense { nrows, ncols, data }
}
