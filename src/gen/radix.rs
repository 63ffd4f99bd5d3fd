//! RadiX-Net-like sparse layers: every row and every column has the same number of nonzeros.

use crate::gen::engine::{check_u32, par_rows, permutation, stream_rng};
use crate::sparse::Csr;
use crate::{Error, Result};

/// An `n × n` sparse layer with exactly `per_row` nonzeros in every row and in every column,
/// all equal to `value` (1/16 is typical). Deterministic given `seed`.
///
/// Built like RadiX-Net's shifted permutations: draw `per_row` distinct strides `s_k` in
/// `0..n` and random permutations σ (rows) and π (columns); row `σ(i)` connects to columns
/// `π((i + s_k) mod n)`. For each `k` the map is a bijection, so every column receives exactly
/// one entry per stride; distinct strides keep a row's columns distinct.
///
/// Fails with [`Error::Option`] if `per_row > n`, `n · per_row` exceeds the `u32` index range,
/// or `value` is not finite.
pub fn radix_net_layer(n: usize, per_row: usize, value: f32, seed: u64) -> Result<Csr> {
    if per_row > n {
        return Err(Error::Option(format!(
            "{per_row} nonzeros per row do not fit an {n}×{n} layer"
        )));
    }
    if !value.is_finite() {
        return Err(Error::Option(format!("layer value {value} is not finite")));
    }
    check_u32("n", n)?;
    check_u32("n · per_row", n.saturating_mul(per_row))?;
    // Two permutations, the inverse and the row offsets per row; index and value per entry.
    crate::limits::check_host(
        &format!("a {n}×{n} RadiX-Net layer with {per_row} nonzeros per row"),
        u64::try_from(16 * n as u128 + 8 * n as u128 * per_row as u128).unwrap_or(u64::MAX),
    )?;
    let mut rng = stream_rng(seed, 0x7261_6469_785f_6e65);
    let strides: Vec<usize> = rand::seq::index::sample(&mut rng, n, per_row).into_vec();
    let row_perm = permutation(n, &mut rng);
    let col_perm = permutation(n, &mut rng);
    // inv[r] = i such that σ(i) = r.
    let mut inv = vec![0u32; n];
    for (i, &r) in row_perm.iter().enumerate() {
        inv[r as usize] = i as u32;
    }
    let row_ptr: Vec<u32> = (0..=n).map(|r| (r * per_row) as u32).collect();
    let mut col_idx = vec![0u32; n * per_row];
    let mut values = vec![value; n * per_row];
    par_rows(
        &row_ptr,
        &mut col_idx,
        &mut values,
        || (),
        |_, blk| {
            for (k, r) in blk.rows.clone().enumerate() {
                let i = inv[r] as usize;
                let out = &mut blk.cols[k * per_row..(k + 1) * per_row];
                for (o, &s) in out.iter_mut().zip(&strides) {
                    *o = col_perm[(i + s) % n];
                }
                out.sort_unstable();
            }
        },
    );
    Ok(Csr {
        nrows: n,
        ncols: n,
        row_ptr,
        col_idx,
        values,
    })
}
