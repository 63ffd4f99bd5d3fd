//! Power-law (Zipf) sparse matrices.

use rand::Rng;

use crate::gen::engine::{
    check_alpha, check_u32, permutation, sample_rows, stream_rng, sub_seed, zipf_degrees,
    zipf_weights, Columns,
};
use crate::sparse::Csr;
use crate::{Error, Result};

/// A random `nrows × ncols` sparse matrix with exactly `nnz` nonzeros whose row lengths and
/// column popularities follow Zipf's law with exponent `alpha` (≈ 1.0–1.2 is typical of
/// real data; 0 gives uniform rows and columns). Deterministic given `seed`.
///
/// - Row degrees: the row of popularity rank `k` expects `c · (k + 1)^-alpha` entries, capped
///   at `ncols` (saturated rows are full and `c` is raised until the expectations sum to
///   `nnz`); each degree is Poisson around its expectation, then adjusted by single units so
///   the total is exactly `nnz`.
/// - Columns: each row draws its distinct columns by successive sampling, column of rank `j`
///   weighted `(j + 1)^-alpha`.
/// - Rows and columns are then relabelled by seeded random permutations, so the heavy rows and
///   columns are scattered rather than at index 0.
/// - Values are uniform in ±[0.5, 1.5] (never zero, random sign). Columns are sorted and
///   unique within every row, so the result satisfies [`Csr::validate`].
///
/// Cost is about linear in `nnz` and spread over the available cores (70M nonzeros take a
/// few seconds in release builds); the output does not depend on the number of threads.
///
/// Fails with [`Error::Option`] if `nnz > nrows · ncols`, if a dimension or `nnz` exceeds the
/// `u32` index range, or if `alpha` is negative or not finite.
pub fn power_law(nrows: usize, ncols: usize, nnz: usize, alpha: f64, seed: u64) -> Result<Csr> {
    power_law_skewed(nrows, ncols, nnz, alpha, alpha, seed)
}

/// [`power_law`] with separate Zipf exponents for the row degrees (`row_alpha`) and the
/// column popularities (`col_alpha`): a pattern of the same shape and nonzero count with
/// other skews (heavy rows over flat columns, or the reverse). Equal exponents give exactly
/// [`power_law`]'s matrix.
pub fn power_law_skewed(
    nrows: usize,
    ncols: usize,
    nnz: usize,
    row_alpha: f64,
    col_alpha: f64,
    seed: u64,
) -> Result<Csr> {
    check_alpha(row_alpha)?;
    check_alpha(col_alpha)?;
    check_u32("nrows", nrows)?;
    check_u32("ncols", ncols)?;
    check_u32("nnz", nnz)?;
    if nnz as u128 > nrows as u128 * ncols as u128 {
        return Err(Error::Option(format!(
            "{nnz} nonzeros do not fit a {nrows}×{ncols} matrix"
        )));
    }
    // Permutations, degrees and row offsets per row; permutation and weights per column;
    // index, value and sampling state per nonzero: checked before any of it is allocated.
    let bytes = 24 * nrows as u128 + 16 * ncols as u128 + 16 * nnz as u128;
    crate::limits::check_host(
        &format!("a {nrows}×{ncols} power-law matrix with {nnz} nonzeros"),
        u64::try_from(bytes).unwrap_or(u64::MAX),
    )?;
    if nnz == 0 {
        return Ok(Csr::empty(nrows, ncols));
    }
    let mut rng = stream_rng(seed, 0x706f_7765_725f_6c61);
    let row_perm = permutation(nrows, &mut rng);
    let col_perm = permutation(ncols, &mut rng);
    let by_rank = zipf_degrees(nrows, ncols, nnz, row_alpha, &mut rng);
    let mut degrees = vec![0u32; nrows];
    for (&r, &d) in row_perm.iter().zip(&by_rank) {
        degrees[r as usize] = d;
    }
    let cols = Columns::new(zipf_weights(ncols, col_alpha), col_perm);
    Ok(sample_rows(&degrees, &cols, sub_seed(seed, 1), |rng| {
        let x: u32 = rng.random();
        let magnitude = 0.5 + (x >> 8) as f32 * (1.0 / (1u32 << 24) as f32);
        if x & 1 == 0 {
            magnitude
        } else {
            -magnitude
        }
    }))
}
