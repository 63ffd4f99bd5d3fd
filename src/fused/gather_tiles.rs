//! Row tiles of the gathers' tile kernel (`shaders/fused/gather_tiles.wgsl`, the `transpose`
//! variant with [`crate::fused::Config::tile`] set). A tile is a run of consecutive rows whose
//! entries a workgroup loads at consecutive positions, so every load of the matrix is
//! coalesced however short its rows (the row kernel leaves most lanes of a vector idle on a
//! row of one or two entries: KDD2010's Xᵀ). The kernel sums each row with
//! [`lanes_per_row`] lanes from workgroup memory; the cut bounds what each lane sums so that
//! one long row among short ones cannot hold its tile's workgroup.
//!
//! Invariants of a cut (rows `0..nrows` of a band, tile starts ascending from 0 to `nrows`):
//! every tile holds at least one row and at most `wg` rows; a row longer than `long` is alone
//! in its tile (the long-row chunks take it); every other tile holds at most `tile` entries,
//! and its longest row over its lanes per row is at most [`TileRule::serial_max`] entries.

use std::ops::Range;

use crate::fused::bands::SparseBand;
use crate::{limits, Result};

/// Entries a lane sums at most for its row, where the tile's size allows (a lone row of a
/// tile's length at the narrowest lanes may need more: [`TileRule::serial_max`]).
pub const SERIAL_MIN: u32 = 32;

/// How tiles are cut: the kernel's workgroup size, entries per tile (`wg` × entries per
/// invocation), the long-row threshold (at most `tile`) and the widest lanes per row.
#[derive(Clone, Copy, Debug)]
pub struct TileRule {
    /// Invocations per workgroup (a power of two).
    pub wg: u32,
    /// Entries per tile at most.
    pub tile: u32,
    /// Rows with more entries go to the long-row chunks (`≤ tile`).
    pub long: u32,
    /// Lanes per row at most (a power of two: the subgroup's reach, or the workgroup's).
    pub tpr_max: u32,
}

impl TileRule {
    /// Entries one lane sums at most: [`SERIAL_MIN`], or a lone row of `long` entries over
    /// `tpr_max` lanes where that is more.
    pub fn serial_max(&self) -> u32 {
        SERIAL_MIN.max(self.long.div_ceil(self.tpr_max.max(1)))
    }
}

/// The lanes that sum each row of a tile of `rows` rows: the largest power of two at most
/// `wg / rows`, at most `tpr_max` (the kernel's rule; `1 ≤ rows ≤ wg`).
pub fn lanes_per_row(rows: u32, wg: u32, tpr_max: u32) -> u32 {
    let share = (wg / rows.max(1)).max(1);
    (1u32 << share.ilog2()).min(tpr_max.max(1))
}

/// Cuts `rows` (a band) of the matrix whose CSR row offsets are `row_ptr` into tiles under
/// `rule`: the tiles' first rows relative to `rows.start`, then `rows.len()` (one more than
/// the tiles; `[0]` alone when `rows` is empty).
pub fn cut(row_ptr: &[u32], rows: Range<usize>, rule: &TileRule) -> Result<Vec<u32>> {
    let count = rows.len();
    let mut starts = limits::try_with_capacity::<u32>("gather tiles", count / 4 + 2)?;
    starts.push(0);
    let serial_max = rule.serial_max() as u64;
    let long = rule.long.min(rule.tile);
    // The open tile: its rows, entries and longest row.
    let (mut n, mut entries, mut longest) = (0u32, 0u64, 0u64);
    for (i, r) in rows.enumerate() {
        let len = (row_ptr[r + 1] - row_ptr[r]) as u64;
        let fits = |n: u32, entries: u64, longest: u64| {
            n <= rule.wg
                && entries <= rule.tile as u64
                && longest.div_ceil(lanes_per_row(n, rule.wg, rule.tpr_max) as u64) <= serial_max
        };
        let alone = len > long as u64;
        if n > 0 && (alone || !fits(n + 1, entries + len, longest.max(len))) {
            starts.push(i as u32);
            (n, entries, longest) = (0, 0, 0);
        }
        if alone {
            // A long row: a tile of its own, closed at once.
            starts.push(i as u32 + 1);
            continue;
        }
        (n, entries, longest) = (n + 1, entries + len, longest.max(len));
    }
    if n > 0 {
        starts.push(count as u32);
    }
    Ok(starts)
}

/// The kernel's tile records for a band's cut `starts`: `[row, entry]` per start, the row
/// band-local and the entry rebased to the band's window (as its uploaded row offsets);
/// `row_ptr` the matrix's CSR row offsets.
pub(crate) fn with_entries(row_ptr: &[u32], band: &SparseBand, starts: &[u32]) -> Result<Vec<u32>> {
    let mut out = limits::try_with_capacity::<u32>("gather tiles", 2 * starts.len())?;
    let base = band.window.start as u32;
    for &s in starts {
        out.push(s);
        out.push(row_ptr[band.rows.start + s as usize] - base);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::Csr;

    fn csr(lens: &[u32]) -> Csr {
        let mut row_ptr = vec![0u32];
        for &l in lens {
            row_ptr.push(row_ptr.last().unwrap() + l);
        }
        let nnz = *row_ptr.last().unwrap() as usize;
        Csr {
            nrows: lens.len(),
            ncols: 1,
            row_ptr,
            col_idx: vec![0; nnz],
            values: vec![1.0; nnz],
        }
    }

    /// Checks every invariant of the module's header on a cut.
    fn check(x: &Csr, rows: Range<usize>, rule: &TileRule, starts: &[u32]) {
        assert_eq!(starts[0], 0);
        assert_eq!(*starts.last().unwrap() as usize, rows.len());
        for t in starts.windows(2) {
            let (a, b) = (rows.start + t[0] as usize, rows.start + t[1] as usize);
            assert!(a < b && b - a <= rule.wg as usize, "tile {t:?}");
            let lens: Vec<u64> = (a..b)
                .map(|r| (x.row_ptr[r + 1] - x.row_ptr[r]) as u64)
                .collect();
            if lens.iter().any(|&l| l > rule.long as u64) {
                assert_eq!(lens.len(), 1, "a long row shares tile {t:?}");
                continue;
            }
            assert!(lens.iter().sum::<u64>() <= rule.tile as u64);
            let tpr = lanes_per_row(lens.len() as u32, rule.wg, rule.tpr_max) as u64;
            let longest = lens.iter().max().unwrap();
            assert!(longest.div_ceil(tpr) <= rule.serial_max() as u64);
        }
    }

    #[test]
    fn lanes_per_row_follow_the_kernel() {
        assert_eq!(lanes_per_row(1, 256, 32), 32);
        assert_eq!(lanes_per_row(1, 256, 8), 8);
        assert_eq!(lanes_per_row(36, 256, 32), 4);
        assert_eq!(lanes_per_row(129, 256, 32), 1);
        assert_eq!(lanes_per_row(256, 256, 32), 1);
    }

    #[test]
    fn cuts_keep_every_invariant() {
        let rule = TileRule {
            wg: 32,
            tile: 128,
            long: 100,
            tpr_max: 8,
        };
        // Empty rows, runs of short rows, one row per tile's worth, long rows at the ends and
        // side by side, a medium row among short ones.
        let lens = [
            101, 0, 0, 1, 2, 3, 128, 128, 127, 1, 90, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 40, 3, 3, 3, 3, 3, 200,
        ];
        let x = csr(&lens);
        let starts = cut(&x.row_ptr, 0..x.nrows, &rule).unwrap();
        check(&x, 0..x.nrows, &rule, &starts);
        // The long rows (101, 128, 128, 127, 200) are alone; 90 may not join 1-entry rows
        // past 8 of them (90 / 8 lanes ≤ 32 entries a lane, no fewer lanes).
        assert!(starts.windows(2).count() >= 6);
        // A band in the middle.
        let starts = cut(&x.row_ptr, 5..30, &rule).unwrap();
        check(&x, 5..30, &rule, &starts);
        assert_eq!(cut(&x.row_ptr, 7..7, &rule).unwrap(), vec![0]);
    }

    #[test]
    fn short_rows_fill_a_tile_by_entries_or_rows() {
        let rule = TileRule {
            wg: 256,
            tile: 1024,
            long: 1024,
            tpr_max: 32,
        };
        let x = csr(&[28; 100]);
        let starts = cut(&x.row_ptr, 0..100, &rule).unwrap();
        check(&x, 0..100, &rule, &starts);
        // 36 rows of 28 entries fill 1,008 of a tile's 1,024.
        assert_eq!(&starts[..3], &[0, 36, 72]);
        let x = csr(&[1; 600]);
        let starts = cut(&x.row_ptr, 0..600, &rule).unwrap();
        assert_eq!(starts, vec![0, 256, 512, 600]);
    }
}
