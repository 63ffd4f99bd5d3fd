//! Column-sorted tiles for the `sorted` variant (`shaders/fused/sorted.wgsl`). Rows are cut
//! into tiles of consecutive rows holding at most `cap` entries; within a tile the entries
//! are stored sorted by column (then row), each packed as `column << pos_bits | pos` with `pos`
//! its place in the tile's row-major order, so the kernel forms the row dot products in CSR
//! order through workgroup memory and reduces the scatter over runs of equal columns: one add
//! per (run, column) instead of one per entry. Rows longer than the long-row threshold are in
//! no tile (the long-row path takes them); their entries keep their place, unsorted.

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
/// not exceed `cap`).
pub fn build(x: &Csr, cap: u32, long: u32) -> Result<Tiles> {
    if !fits(x.ncols, cap) || long > cap || cap == 0 {
        return Err(Error::Unsupported(format!(
            "column-sorted tiles of {cap} entries (rows above {long} split) on X with {} columns",
            x.ncols
        )));
    }
    let pb = pos_bits(cap);
    let mut rows: Vec<[u32; 2]> = Vec::new();
    let mut keys = limits::try_with_capacity("sorted-tile keys", x.nnz())?;
    keys.extend(x.col_idx.iter().map(|&c| c << pb));
    let mut values = limits::try_with_capacity("sorted-tile values", x.nnz())?;
    values.extend_from_slice(&x.values);
    let len = |r: usize| x.row_ptr[r + 1] - x.row_ptr[r];
    let mut order: Vec<u32> = Vec::with_capacity(cap as usize);
    let mut r = 0;
    while r < x.nrows {
        if len(r) > long {
            r += 1;
            continue;
        }
        let start = r;
        let mut count = 0u32;
        while r < x.nrows && len(r) <= long && count + len(r) <= cap && r - start < cap as usize {
            count += len(r);
            r += 1;
        }
        rows.push([start as u32, r as u32]);
        let (b, e) = (x.row_ptr[start] as usize, x.row_ptr[r] as usize);
        order.clear();
        order.extend((0..(e - b) as u32).map(|p| (x.col_idx[b + p as usize] << pb) | p));
        order.sort_unstable();
        for (i, &k) in order.iter().enumerate() {
            keys[b + i] = k;
            values[b + i] = x.values[b + (k & ((1 << pb) - 1)) as usize];
        }
    }
    Ok(Tiles {
        rows,
        keys,
        values,
        pos_bits: pb,
    })
}

/// Adds per subgroup step the kernel makes with subgroups of `sg` lanes and `wg` invocations
/// (runs of equal columns within each subgroup's consecutive entries), against one per entry:
/// the work the sorted scatter saves, counted on the host.
pub fn adds(t: &Tiles, row_ptr: &[u32], sg: usize) -> (usize, usize) {
    let (mut entries, mut heads) = (0, 0);
    for &[r0, r1] in &t.rows {
        let (b, e) = (row_ptr[r0 as usize] as usize, row_ptr[r1 as usize] as usize);
        entries += e - b;
        for chunk in t.keys[b..e].chunks(sg.max(1)) {
            heads += 1 + chunk
                .windows(2)
                .filter(|w| w[0] >> t.pos_bits != w[1] >> t.pos_bits)
                .count();
        }
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
    fn refuses_columns_beyond_the_key() {
        let x = Csr::empty(1, 1 << 22);
        assert!(build(&x, 2048, 1024).is_err());
        assert!(fits(1 << 20, 2048));
        assert!(!fits(1 << 21, 2048));
    }
}
