//! Columns ordered by how many entries they hold: the re-indexing by frequency that puts a
//! power-law matrix's hot columns first (the wide engine's features, the fused pattern's
//! columns of X).

use super::Csr;
use crate::{limits, Result};

/// Entries per column of `x`, over `n ≥ x.ncols` columns (the others hold none).
pub fn column_counts(x: &Csr, n: usize) -> Vec<u32> {
    let mut count = vec![0u32; n.max(x.ncols)];
    for &c in &x.col_idx {
        count[c as usize] += 1;
    }
    count
}

/// Columns by descending count, ties the lower column first (deterministic): `order[new] =
/// old`. Fails with a clear error when the host cannot hold the sort's keys.
pub fn by_count(counts: &[u32]) -> Result<Vec<u32>> {
    let mut keys: Vec<u64> = limits::try_with_capacity("the column order's keys", counts.len())?;
    // The complement of the count first: ascending keys put the most entries first.
    keys.extend(
        counts
            .iter()
            .enumerate()
            .map(|(c, &d)| ((!d as u64) << 32) | c as u64),
    );
    keys.sort_unstable();
    let mut out = limits::try_with_capacity("the column order", counts.len())?;
    out.extend(keys.iter().map(|&k| k as u32));
    Ok(out)
}

/// The inverse of the permutation `order[new] = old`: `inverse[old] = new`. Fails with a clear
/// error when the host cannot hold it.
pub fn inverse(order: &[u32]) -> Result<Vec<u32>> {
    let mut new_of = limits::try_vec("the inverse column order", order.len(), 0u32)?;
    for (new, &old) in order.iter().enumerate() {
        new_of[old as usize] = new as u32;
    }
    Ok(new_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_count_then_column() {
        let counts = [3, 0, 5, 3, 1, 5];
        assert_eq!(by_count(&counts).unwrap(), vec![2, 5, 0, 3, 4, 1]);
        assert!(by_count(&[]).unwrap().is_empty());
    }

    #[test]
    fn inverts_a_permutation() {
        assert_eq!(inverse(&[1, 2, 0]).unwrap(), vec![2, 0, 1]);
        let order = by_count(&[3, 0, 5, 3, 1, 5]).unwrap();
        let inv = inverse(&order).unwrap();
        for (new, &old) in order.iter().enumerate() {
            assert_eq!(inv[old as usize] as usize, new);
        }
        assert!(inverse(&[]).unwrap().is_empty());
    }

    #[test]
    fn counts_cover_unseen_columns() {
        let x = Csr::new(2, 3, vec![0, 1, 3], vec![2, 0, 2], vec![1.0; 3]).unwrap();
        assert_eq!(column_counts(&x, 5), vec![1, 0, 2, 0, 0]);
    }
}
