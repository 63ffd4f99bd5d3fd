//! Columns ordered by how many entries they hold: the re-indexing by frequency that puts a
//! power-law matrix's hot columns first (the wide engine's features, the fused pattern's
//! columns of X).

use std::sync::atomic::{AtomicU32, Ordering};

use super::Csr;
use crate::{limits, Result};

/// Entries per column of `x`, over `n ≥ x.ncols` columns (the others hold none). Large X is
/// counted on the host's cores (relaxed atomic adds into one array: the order of the adds
/// does not change a count).
pub fn column_counts(x: &Csr, n: usize) -> Vec<u32> {
    let n = n.max(x.ncols);
    let parts = crate::sparse::bucket::threads().min(x.col_idx.len() / PER_THREAD + 1);
    if parts == 1 {
        let mut count = vec![0u32; n];
        for &c in &x.col_idx {
            count[c as usize] += 1;
        }
        return count;
    }
    let count: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let each = x.col_idx.len().div_ceil(parts);
    std::thread::scope(|scope| {
        for part in x.col_idx.chunks(each) {
            let count = &count;
            scope.spawn(move || {
                for &c in part {
                    count[c as usize].fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    count.into_iter().map(AtomicU32::into_inner).collect()
}

/// Entries a counting thread takes at least.
const PER_THREAD: usize = 1 << 20;

/// Columns by descending count, ties the lower column first (deterministic): `order[new] =
/// old`. Fails with a clear error when the host cannot hold the sort's keys.
pub fn by_count(counts: &[u32]) -> Result<Vec<u32>> {
    // The few columns of SMALL_COUNTS entries or more by a sort (the complement of the count
    // first: ascending keys put the most entries first), the rest after them by a counting
    // sort over their counts, columns ascending within a count: O(n) for a power law's tail.
    let mut big: Vec<u64> = counts
        .iter()
        .enumerate()
        .filter(|&(_, &d)| d as usize >= SMALL_COUNTS)
        .map(|(c, &d)| ((!d as u64) << 32) | c as u64)
        .collect();
    big.sort_unstable();
    let mut start = vec![0usize; SMALL_COUNTS];
    for &d in counts {
        if (d as usize) < SMALL_COUNTS {
            start[d as usize] += 1;
        }
    }
    let mut at = big.len();
    for slot in start.iter_mut().rev() {
        (*slot, at) = (at, at + *slot);
    }
    let mut out = limits::try_vec("the column order", counts.len(), 0u32)?;
    for (o, &k) in out.iter_mut().zip(&big) {
        *o = k as u32;
    }
    for (c, &d) in counts.iter().enumerate() {
        if (d as usize) < SMALL_COUNTS {
            out[start[d as usize]] = c as u32;
            start[d as usize] += 1;
        }
    }
    Ok(out)
}

/// Counts below this go through [`by_count`]'s counting sort.
const SMALL_COUNTS: usize = 1 << 16;

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

    #[test]
    fn the_counting_sort_equals_a_sort_of_keys() {
        // Counts on both sides of the counting sort's bound, ties among both.
        let mut rng = 12_345u64;
        let counts: Vec<u32> = (0..50_000)
            .map(|_| {
                rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let r = (rng >> 33) as u32;
                match r % 10 {
                    0 => SMALL_COUNTS as u32 + r % 300,
                    1 => SMALL_COUNTS as u32 - 1 - r % 3,
                    _ => r % 40,
                }
            })
            .collect();
        let mut keys: Vec<u64> = counts
            .iter()
            .enumerate()
            .map(|(c, &d)| ((!d as u64) << 32) | c as u64)
            .collect();
        keys.sort_unstable();
        let want: Vec<u32> = keys.iter().map(|&k| k as u32).collect();
        assert_eq!(by_count(&counts).unwrap(), want);
    }

    #[test]
    fn counts_on_threads_equal_one_pass() {
        // Enough entries for several counting threads (where the host has the cores).
        let x = crate::gen::power_law(3_000, 5_000, 3 * PER_THREAD, 1.1, 7).unwrap();
        let mut want = vec![0u32; 5_100];
        for &c in &x.col_idx {
            want[c as usize] += 1;
        }
        assert_eq!(column_counts(&x, 5_100), want);
    }
}
