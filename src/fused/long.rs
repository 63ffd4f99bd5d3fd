//! The long-row path of the sparse fused kernel. A power-law X can hold rows with millions of
//! entries (the generated KDD2010 shape: its heaviest row ~13% of all entries, its 16 heaviest
//! ~40%); one vector of VS lanes would take such a row alone while every other vector idles.
//! Rows longer than [`Config::long_row`](crate::fused::Config::long_row) are cut into chunks
//! of consecutive entries, each taken by a whole workgroup: a pre-pass adds the chunks'
//! partial dot products per row (`fused.long_rows` with DOT), the main kernel skips these
//! rows, and a post-pass scatters each chunk with its row's finished product. Folded
//! ([`Config::fold`](crate::fused::Config::fold)), the pre-pass stores one partial per chunk
//! and initialises w, and the main kernel scatters the chunks itself ([`fold_codes`]).

use crate::{limits, Result};

/// Entries per chunk at most (one workgroup of the long-row kernels takes a chunk).
pub const CHUNK_MAX: u32 = 8192;

/// The chunks of the rows longer than `threshold`: `[row, begin, end, slot]` each, `slot`
/// numbering the long rows (the index of a row's dot product), and how many long rows.
/// Chunks hold at most `min(threshold, CHUNK_MAX)` entries. `row_ptr`: the matrix's CSR row
/// offsets (all the chunks need of it).
pub fn chunks(row_ptr: &[u32], threshold: u32) -> Result<(Vec<[u32; 4]>, usize)> {
    let size = threshold.clamp(1, CHUNK_MAX) as usize;
    let nrows = row_ptr.len().saturating_sub(1);
    let long = |r: usize| row_ptr[r + 1] - row_ptr[r] > threshold;
    let count: usize = (0..nrows)
        .filter(|&r| long(r))
        .map(|r| (row_ptr[r + 1] - row_ptr[r]).div_ceil(size as u32) as usize)
        .sum();
    let mut out = limits::try_with_capacity("long-row chunks", count)?;
    let mut rows = 0u32;
    for r in (0..nrows).filter(|&r| long(r)) {
        let (b, e) = (row_ptr[r], row_ptr[r + 1]);
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

/// Most chunks of one row the folded sequence takes: the main kernel sums a long row's chunk
/// partials in every chunk of it, so a row of c chunks costs c² loads; past this (KDD2010's
/// heaviest rows, thousands of chunks) the plan keeps the unfolded sequence.
pub const FOLD_CHUNKS_MAX: usize = 64;

/// The records of the folded sequence: `chunks` with each slot replaced by the index of its
/// row's first chunk | (the row's chunks − 1) << 26; `None` when a row has more than
/// [`FOLD_CHUNKS_MAX`] chunks or there are 2^26 chunks or more.
pub fn fold_codes(chunks: &[[u32; 4]]) -> Option<Vec<[u32; 4]>> {
    if chunks.len() >= 1 << 26 {
        return None;
    }
    let mut out = chunks.to_vec();
    let mut first = 0;
    while first < chunks.len() {
        let slot = chunks[first][3];
        let count = chunks[first..].iter().take_while(|c| c[3] == slot).count();
        if count > FOLD_CHUNKS_MAX {
            return None;
        }
        let code = first as u32 | ((count as u32 - 1) << 26);
        for c in &mut out[first..first + count] {
            c[3] = code;
        }
        first += count;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::Csr;

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
        let (c, rows) = chunks(&x.row_ptr, 2).unwrap();
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
        assert_eq!(chunks(&x.row_ptr, 7).unwrap().1, 0);
        let f = fold_codes(&c).unwrap();
        let codes: Vec<u32> = f.iter().map(|c| c[3]).collect();
        let (a, b) = (2 << 26, 3 | (3 << 26));
        assert_eq!(codes, vec![a, a, a, b, b, b, b]);
        assert!(f.iter().zip(&c).all(|(f, c)| f[..3] == c[..3]));
        let many: Vec<[u32; 4]> = (0..=FOLD_CHUNKS_MAX as u32)
            .map(|i| [0, i, i + 1, 0])
            .collect();
        assert!(fold_codes(&many).is_none());
        assert!(fold_codes(&many[1..]).is_some());
    }
}
