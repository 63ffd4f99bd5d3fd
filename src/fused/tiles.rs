//! Column-sorted tiles for the `sorted` variant (`shaders/fused/sorted.wgsl`). Rows are cut
//! into tiles of consecutive rows holding at most `cap` entries; within a tile the entries
//! are stored sorted by column (then row), each packed as `column << pos_bits | pos` with `pos`
//! its place in the tile's row-major order, so the kernel forms the row dot products in CSR
//! order through workgroup memory and reduces the scatter over runs of equal columns: one add
//! per (run, column) instead of one per entry. Rows longer than the long-row threshold are in
//! no tile (the long-row path takes them); their entries keep their place, unsorted.
//!
//! When X has too many columns for a packed key (`ncols ≥ 2^(32 − pos_bits)`, KDD2010's
//! 29.9M), the key holds the position alone and a second array holds each entry's column
//! (wide keys, [`Tiles::cols`]): 4 more bytes read per entry, the same sorted order.

use crate::sparse::Csr;
use crate::{limits, Error, Result};

/// X's entries rearranged into column-sorted tiles.
pub struct Tiles {
    /// Per tile, its first row and one past its last row.
    pub rows: Vec<[u32; 2]>,
    /// Packed keys, X's length; a tile's keys occupy X's range of its rows.
    pub keys: Vec<u32>,
    /// X's values in the same order.
    pub values: Vec<f32>,
    /// Bits of a key holding the position (`cap ≤ 2^pos_bits`).
    pub pos_bits: u32,
    /// Wide keys: each entry's column, X's length, `keys` then holding positions alone (X's
    /// columns beyond a packed key); `None` when keys are packed.
    pub cols: Option<Vec<u32>>,
}

/// Bits needed for positions below `cap`.
pub fn pos_bits(cap: u32) -> u32 {
    cap.max(2).next_power_of_two().trailing_zeros()
}

/// Whether X's columns fit a key beside positions below `cap` (`ncols ≤ 2^(32 − pos_bits)`,
/// less the all-ones key that marks an absent entry).
pub fn fits(ncols: usize, cap: u32) -> bool {
    (ncols as u64) < (1u64 << (32 - pos_bits(cap)))
}

/// Tiles of at most `cap` entries over X's rows, skipping rows longer than `long` (which must
/// not exceed `cap`); packed keys when X's columns [`fit`](fits) them, else wide keys.
pub fn build(x: &Csr, cap: u32, long: u32) -> Result<Tiles> {
    build_with(x, cap, long, !fits(x.ncols, cap))
}

/// [`build`] with the key layout chosen by the caller (`wide`; packed keys must fit).
pub fn build_with(x: &Csr, cap: u32, long: u32, wide: bool) -> Result<Tiles> {
    build_banded(x, cap, long, wide, &[])
}

/// [`build_with`] where no tile crosses a row of `starts` (ascending: the first rows of X's
/// bands beyond one storage binding), so every band takes whole tiles.
pub fn build_banded(x: &Csr, cap: u32, long: u32, wide: bool, starts: &[usize]) -> Result<Tiles> {
    if (!wide && !fits(x.ncols, cap)) || long > cap || cap == 0 || cap > 1 << 16 {
        return Err(Error::Unsupported(format!(
            "column-sorted tiles of {cap} entries (rows above {long} split) on X with {} columns",
            x.ncols
        )));
    }
    let pb = pos_bits(cap);
    let mut rows: Vec<[u32; 2]> = Vec::new();
    let mut keys = limits::try_with_capacity("sorted-tile keys", x.nnz())?;
    let mut cols = if wide {
        let mut c = limits::try_with_capacity("sorted-tile columns", x.nnz())?;
        c.extend_from_slice(&x.col_idx);
        // Positions of the unsorted long rows are never read (no tile holds them).
        keys.resize(x.nnz(), 0);
        Some(c)
    } else {
        keys.extend(x.col_idx.iter().map(|&c| c << pb));
        None
    };
    let mut values = limits::try_with_capacity("sorted-tile values", x.nnz())?;
    values.extend_from_slice(&x.values);
    let len = |r: usize| x.row_ptr[r + 1] - x.row_ptr[r];
    // (column, position) as one u64 for the sort: any column count.
    let mut order: Vec<u64> = Vec::with_capacity(cap as usize);
    let mut r = 0;
    while r < x.nrows {
        if len(r) > long {
            r += 1;
            continue;
        }
        let start = r;
        let stop = starts
            .iter()
            .copied()
            .find(|&b| b > start)
            .unwrap_or(x.nrows);
        let mut count = 0u32;
        while r < stop && len(r) <= long && count + len(r) <= cap && r - start < cap as usize {
            count += len(r);
            r += 1;
        }
        rows.push([start as u32, r as u32]);
        let (b, e) = (x.row_ptr[start] as usize, x.row_ptr[r] as usize);
        order.clear();
        order.extend((0..(e - b) as u64).map(|p| ((x.col_idx[b + p as usize] as u64) << 32) | p));
        order.sort_unstable();
        for (i, &k) in order.iter().enumerate() {
            let (col, pos) = ((k >> 32) as u32, k as u32);
            match cols.as_mut() {
                Some(c) => {
                    keys[b + i] = pos;
                    c[b + i] = col;
                }
                None => keys[b + i] = (col << pb) | pos,
            }
            values[b + i] = x.values[b + pos as usize];
        }
    }
    Ok(Tiles {
        rows,
        keys,
        values,
        pos_bits: pb,
        cols,
    })
}

impl Tiles {
    /// Column of the tiled entry at X's position `i`.
    pub fn col(&self, i: usize) -> u32 {
        match &self.cols {
            Some(c) => c[i],
            None => self.keys[i] >> self.pos_bits,
        }
    }
}

/// Adds per subgroup step the kernel makes with subgroups of `sg` lanes and `wg` invocations
/// (runs of equal columns within each subgroup's consecutive entries), against one per entry:
/// the work the sorted scatter saves, counted on the host.
pub fn adds(t: &Tiles, row_ptr: &[u32], sg: usize) -> (usize, usize) {
    let (mut entries, mut heads) = (0, 0);
    for &[r0, r1] in &t.rows {
        let (b, e) = (row_ptr[r0 as usize] as usize, row_ptr[r1 as usize] as usize);
        entries += e - b;
        // A head: the first entry of each subgroup step, and each change of column.
        heads += (b..e)
            .filter(|&i| (i - b) % sg.max(1) == 0 || t.col(i - 1) != t.col(i))
            .count();
    }
    (entries, heads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_each_tile_by_column_and_keeps_positions() {
        // Row lengths 3, 0, 5 (long), 2, 2.
        let x = Csr {
            nrows: 5,
            ncols: 8,
            row_ptr: vec![0, 3, 3, 8, 10, 12],
            col_idx: vec![1, 4, 7, 0, 1, 2, 3, 4, 0, 4, 1, 2],
            values: (0..12).map(|i| i as f32 + 1.0).collect(),
        };
        let t = build(&x, 4, 4).unwrap();
        assert_eq!(t.pos_bits, 2);
        assert_eq!(t.rows, vec![[0, 2], [3, 5]]);
        let col = |k: u32| k >> 2;
        let pos = |k: u32| k & 3;
        // Tile 0: entries 0..3 sorted (columns 1, 4, 7 already).
        assert_eq!(
            t.keys[0..3].iter().map(|&k| col(k)).collect::<Vec<_>>(),
            [1, 4, 7]
        );
        // Tile 1: rows 3, 4 at X's 8..12: columns 0, 4, 1, 2 → 0, 1, 2, 4.
        let cols: Vec<u32> = t.keys[8..12].iter().map(|&k| col(k)).collect();
        assert_eq!(cols, [0, 1, 2, 4]);
        for i in 8..12 {
            let p = 8 + pos(t.keys[i]) as usize;
            assert_eq!(x.col_idx[p], col(t.keys[i]));
            assert_eq!(x.values[p], t.values[i]);
        }
        // The long row keeps its place.
        assert_eq!(&t.values[3..8], &x.values[3..8]);
        let (entries, heads) = adds(&t, &x.row_ptr, 8);
        assert_eq!((entries, heads), (7, 7));
    }

    #[test]
    fn no_tile_crosses_a_band_start() {
        // Row lengths 1, 1, 1, 1, 1, 1: one tile of 6 rows, or tiles cut at rows 2 and 5.
        let x = Csr {
            nrows: 6,
            ncols: 4,
            row_ptr: (0..=6).collect(),
            col_idx: vec![3, 2, 1, 0, 3, 2],
            values: (0..6).map(|i| i as f32 + 1.0).collect(),
        };
        assert_eq!(build(&x, 8, 8).unwrap().rows, vec![[0, 6]]);
        let t = build_banded(&x, 8, 8, false, &[0, 2, 5]).unwrap();
        assert_eq!(t.rows, vec![[0, 2], [2, 5], [5, 6]]);
        // Each tile sorted within its own rows.
        assert_eq!((2..5).map(|i| t.col(i)).collect::<Vec<_>>(), [0, 1, 3]);
    }

    #[test]
    fn wide_keys_beyond_the_packed_key() {
        let x = Csr::empty(1, 1 << 22);
        assert!(build_with(&x, 2048, 1024, false).is_err());
        assert!(build(&x, 2048, 1024).unwrap().cols.is_some());
        assert!(fits(1 << 20, 2048));
        assert!(!fits(1 << 21, 2048));
        // Columns past 2^21 beside 11 position bits: the same order and counts as packed
        // keys would give, columns from the second array.
        let big = 1u32 << 24;
        let x = Csr {
            nrows: 3,
            ncols: big as usize + 10,
            row_ptr: vec![0, 3, 5, 8],
            col_idx: vec![big + 9, 4, big, big, 7, 3, big + 9, big],
            values: (0..8).map(|i| i as f32 + 1.0).collect(),
        };
        let t = build(&x, 2048, 2048).unwrap();
        let cols = t.cols.as_ref().unwrap();
        assert_eq!(t.rows, vec![[0, 3]]);
        assert_eq!(cols, &[3, 4, 7, big, big, big, big + 9, big + 9]);
        for (i, &c) in cols.iter().enumerate() {
            let p = t.keys[i] as usize;
            assert_eq!(x.col_idx[p], c);
            assert_eq!(x.values[p], t.values[i]);
        }
        // Runs of equal columns within subgroups of 4: [3,4,7,big] 4, [big,big,big+9,big+9] 2.
        assert_eq!(adds(&t, &x.row_ptr, 4), (8, 6));
        // Packed keys of a small X give the wide build's order.
        let mut small = x.clone();
        small.ncols = 1 << 10;
        small.col_idx.iter_mut().for_each(|c| *c %= 1 << 10);
        let (p, w) = (
            build_with(&small, 64, 64, false).unwrap(),
            build_with(&small, 64, 64, true).unwrap(),
        );
        for i in 0..8 {
            assert_eq!(p.col(i), w.col(i));
            assert_eq!(p.keys[i] & 63, w.keys[i]);
            assert_eq!(p.values[i], w.values[i]);
        }
    }
}
