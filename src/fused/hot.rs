//! The hot-column cache of the large-n sparse kernel (in the spirit of cuWide's importance
//! cache): when w does not fit workgroup memory, the H columns with the most stored entries
//! are aggregated in workgroup memory (one global add per (workgroup, hot column) at the end)
//! and only the cold tail is added straight to global memory. On power-law X the hot columns
//! take most of the entries, and global atomics on them would serialize.
//!
//! The plan ranks the columns once and keeps its own copy of X's column indices in which an
//! entry of hot column `cols[s]` is stored as `HOT_BIT | s` (its slot); cold entries keep their
//! column. X's values and row order are untouched, so y and w stay in the caller's order.

use crate::sparse::Csr;
use crate::{limits, Error, Result};

/// Marks a column index that holds a hot slot (column indices stay below it).
pub const HOT_BIT: u32 = 1 << 31;

/// The ranked hot columns and the column indices rewritten to slots.
pub struct HotColumns {
    /// Original column of each slot, most entries first (ties: lower column first).
    pub cols: Vec<u32>,
    /// X's column indices with hot entries replaced by `HOT_BIT | slot`.
    pub col_idx: Vec<u32>,
}

/// Stored entries per column.
pub fn column_degrees(x: &Csr) -> Vec<u32> {
    crate::sparse::order::column_counts(x, x.ncols)
}

/// Columns of a sparse X with at least one entry (0 for dense X).
pub(crate) fn column_degrees_used(x: crate::fused::Matrix) -> usize {
    match x {
        crate::fused::Matrix::Sparse(s) => column_degrees(s).iter().filter(|&&d| d > 0).count(),
        crate::fused::Matrix::Dense(_) => 0,
    }
}

/// The `h` columns with the most entries (only columns with at least one), most first; ties
/// broken by column so the ranking is deterministic.
pub fn rank(deg: &[u32], h: usize) -> Vec<u32> {
    let mut cols: Vec<u32> = (0..deg.len() as u32)
        .filter(|&c| deg[c as usize] > 0)
        .collect();
    let order = |a: &u32, b: &u32| deg[*b as usize].cmp(&deg[*a as usize]).then(a.cmp(b));
    if h < cols.len() {
        cols.select_nth_unstable_by(h, order);
        cols.truncate(h);
    }
    cols.sort_unstable_by(order);
    cols
}

/// Ranks X's columns and rewrites its column indices for a cache of `h` slots.
pub fn build(x: &Csr, h: usize) -> Result<HotColumns> {
    if x.ncols as u64 > HOT_BIT as u64 {
        return Err(Error::Unsupported(format!(
            "a hot-column cache on X with {} columns (at most 2^31)",
            x.ncols
        )));
    }
    let cols = rank(&column_degrees(x), h);
    let mut slot = limits::try_vec("hot-column slots", x.ncols, u32::MAX)?;
    for (s, &c) in cols.iter().enumerate() {
        slot[c as usize] = s as u32;
    }
    let mut col_idx = limits::try_with_capacity("hot-column indices", x.nnz())?;
    col_idx.extend(x.col_idx.iter().map(|&c| match slot[c as usize] {
        u32::MAX => c,
        s => HOT_BIT | s,
    }));
    Ok(HotColumns { cols, col_idx })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_degree_then_column() {
        let deg = [3, 0, 5, 3, 1, 5];
        assert_eq!(rank(&deg, 3), vec![2, 5, 0]);
        assert_eq!(rank(&deg, 10), vec![2, 5, 0, 3, 4]);
        assert!(rank(&deg, 0).is_empty());
    }

    #[test]
    fn rewrites_hot_entries_to_slots() {
        let x = Csr {
            nrows: 2,
            ncols: 4,
            row_ptr: vec![0, 3, 5],
            col_idx: vec![0, 1, 3, 1, 2],
            values: vec![1.0; 5],
        };
        let h = build(&x, 1).unwrap();
        assert_eq!(h.cols, vec![1]);
        assert_eq!(h.col_idx, vec![0, HOT_BIT, 3, HOT_BIT, 2]);
        let all = build(&x, 8).unwrap();
        assert_eq!(all.cols.len(), 4);
        for (&orig, &new) in x.col_idx.iter().zip(&all.col_idx) {
            assert_eq!(all.cols[(new & !HOT_BIT) as usize], orig);
        }
    }
}
