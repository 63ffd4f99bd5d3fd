//! The long-row path of the sparse fused kernel. A power-law X can hold rows with millions of
//! entries (the generated KDD2010 shape: its heaviest row ~13% of all entries, its 16 heaviest
//! ~40%); one vector of VS lanes would take such a row alone while every other vector idles.
//! Rows longer than [`Config::long_row`](crate::fused::Config::long_row) are cut into chunks
//! of consecutive entries, each taken by a whole workgroup: a pre-pass adds the chunks'
//! partial dot products per row (`fused.long_rows` with DOT), the main kernel skips these
//! rows, and a post-pass scatters each chunk with its row's finished product.

use crate::sparse::Csr;
use crate::{limits, Result};

/// Entries per chunk at most (one workgroup of the long-row kernels takes a chunk).
pub const CHUNK_MAX: u32 = 8192;

/// The chunks of the rows longer than `threshold`: `[row, begin, end, slot]` each, `slot`
/// numbering the long rows (the index of a row's dot product), and how many long rows.
/// Chunks hold at most `min(threshold, CHUNK_MAX)` entries.
pub fn chunks(x: &Csr, threshold: u32) -> Result<(Vec<[u32; 4]>, usize)> {
    let size = threshold.clamp(1, CHUNK_MAX) as usize;
    let long = |r: usize| x.row_ptr[r + 1] - x.row_ptr[r] > threshold;
    let count: usize = (0..x.nrows)
        .filter(|&r| long(r))
        .map(|r| (x.row_ptr[r + 1] - x.row_ptr[r]).div_ceil(size as u32) as usize)
        .sum();
    let mut out = limits::try_with_capacity("long-row chunks", count)?;
    let mut rows = 0u32;
    for r in (0..x.nrows).filter(|&r| long(r)) {
        let (b, e) = (x.row_ptr[r], x.row_ptr[r + 1]);
        let mut i = b;
        while i < e {
            let j = (i as u64 + size as u64).min(e as u64) as u32;
            out.push([r as u32, i, j, rows]);
            i = j;
        }
        rows += 1;
    }
    Ok((out, rows as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_only_long_rows_into_bounded_chunks() {
        // Row lengths 5, 0, 2, 7.
        let x = Csr {
            nrows: 4,
            ncols: 8,
            row_ptr: vec![0, 5, 5, 7, 14],
            col_idx: vec![0, 1, 2, 3, 4, 0, 7, 0, 1, 2, 3, 4, 5, 6],
            values: vec![1.0; 14],
        };
        let (c, rows) = chunks(&x, 2).unwrap();
        assert_eq!(rows, 2);
        assert_eq!(
            c,
            vec![
                [0, 0, 2, 0],
                [0, 2, 4, 0],
                [0, 4, 5, 0],
                [3, 7, 9, 1],
                [3, 9, 11, 1],
                [3, 11, 13, 1],
                [3, 13, 14, 1]
            ]
        );
        assert_eq!(chunks(&x, 7).unwrap().1, 0);
    }
}
