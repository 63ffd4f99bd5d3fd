//! The column-split layout of the `split` variant ([`crate::fused::Variant::Split`]): X's
//! rows cut into row tiles of `row_tile` consecutive rows, each tile's entries stored sorted
//! by column (then row), so a tile holds its columns one after another, every column's
//! entries together. Each entry is packed as `column << row_bits | row − tile's first row`,
//! with `row_bits = 32 − bits(n − 1)` (X's columns in the high bits, a row offset within the
//! tile in the low ones: `row_tile ≤ 2^row_bits`). A tile's entries are cut into chunks of at
//! most `chunk` entries (never across tiles): a workgroup takes a chunk, each subgroup a run
//! of its consecutive entries, and adds p\[row\]·x over each run of equal columns once.
//!
//! The plan computes p = α·v ⊙ (X·y) first (`fused.split_dots`, CSR rows, which also sets
//! w = β·z), then `fused.split` adds Xᵀp by chunks: X is read twice, but the scatter owns its
//! columns' runs (one add per run of a column in a subgroup, no per-entry compare-exchange and
//! no per-workgroup flush of n columns). With n ≤ 65,536 the row pass reads X's column indices
//! 16 bits each (a packed copy), and with subgroups of one size and tiles of at most 32,768
//! rows the scatter reads the 16-bit layout ([`build16`]: a 16-bit row offset beside each
//! value, a marker slot per run of a column): 6 + 6 bytes per entry over both passes instead
//! of 8 + 8.
//!
//! The row pass's cost (issue 9: on the H200 `full` − `xty`, which differ only in the row
//! pass reading X, was ≈ 101 µs on sparse-1024 and ≈ 218 µs on sparse-4096, 5–10× X's memory
//! time). Everything else in the pass is light: y (4–16 KiB) stays cached, w = β·z and p are
//! coalesced writes of n and m floats, row_ptr is one broadcast read per row, and `xty` runs
//! the same two dispatches over the same p buffer (p = α·y, no X read). What is serialised
//! is the longest rows: each row is walked by one vector, one entry per lane per trip, and a
//! trip waits on its loads (vals and col16, then y) before the next. The generated inputs
//! (seed 1) hold 891 rows of all 1,024 entries (sparse-1024) and 878 of all 4,096
//! (sparse-4096), ~28% of the entries in rows of n/2 or more, against a median row of 2 and
//! 9 entries: at the model's VS (8 and 32) a full row is 128 dependent trips, and those rows
//! sit anywhere in the grid, so the pass lasts about the bulk of the rows plus one such walk.
//! `fused.split_dots` therefore loads 4 entries per lane per trip into separate sums (32
//! trips for a full row); spreading long rows over a workgroup (as `fused`'s long-row path)
//! would cut the tail further at the cost of another dispatch. (An account from the code and
//! the inputs, to be confirmed by `benches/peers/fused_split.sh`.)

use crate::fused::cpu::HostOp;
use crate::sparse::Csr;
use crate::{limits, Error, Result};

/// X's entries rearranged by row tile and column.
pub struct SplitLayout {
    /// Packed keys (`column << row_bits | row offset`), X's length.
    pub keys: Vec<u32>,
    /// X's values in the same order.
    pub values: Vec<f32>,
    /// Per chunk: its first entry, one past its last, its tile's first row, 0.
    pub chunks: Vec<[u32; 4]>,
    /// Bits of a key holding the row offset.
    pub row_bits: u32,
    /// Rows per tile.
    pub row_tile: u32,
}

/// Row tiles of fewer rows are refused (the key would leave too few bits for the offset).
pub const MIN_ROW_BITS: u32 = 8;

/// Bits of a key left for the row offset on X with `ncols` columns; `None` when fewer than
/// [`MIN_ROW_BITS`] are left (more than 2^24 columns: the variant runs `fused` instead).
pub fn row_bits(ncols: usize) -> Option<u32> {
    let col_bits = usize::BITS - ncols.saturating_sub(1).max(1).leading_zeros();
    let rb = 32u32.checked_sub(col_bits)?;
    (rb >= MIN_ROW_BITS).then_some(rb)
}

/// The largest row tile X's columns allow: `2^row_bits` rows.
pub fn max_row_tile(ncols: usize) -> Option<u32> {
    row_bits(ncols).map(|rb| if rb >= 32 { u32::MAX } else { 1u32 << rb })
}

/// The layout of `x` with tiles of `row_tile` rows and chunks of at most `chunk` entries.
pub fn build(x: &Csr, row_tile: u32, chunk: u32) -> Result<SplitLayout> {
    let unsupported = |why: &str| {
        Error::Unsupported(format!(
            "the column-split layout with row tiles of {row_tile} and chunks of {chunk} on X \
             {}×{}: {why}",
            x.nrows, x.ncols
        ))
    };
    let rb = row_bits(x.ncols)
        .ok_or_else(|| unsupported("more than 2^24 columns leave too few key bits"))?;
    if row_tile == 0 || chunk == 0 {
        return Err(unsupported("tiles and chunks must be non-empty"));
    }
    if row_tile as u64 > 1u64 << rb {
        return Err(unsupported(&format!(
            "a tile's row offsets need more than the key's {rb} bits"
        )));
    }
    let nnz = x.nnz();
    if nnz as u64 > u32::MAX as u64 {
        return Err(unsupported("more than 2^32 − 1 entries"));
    }
    let mut order: Vec<(u32, f32)> = limits::try_with_capacity("split keys and values", nnz)?;
    let mut chunks = Vec::new();
    let rt = row_tile as usize;
    for r0 in (0..x.nrows).step_by(rt) {
        let r1 = (r0 + rt).min(x.nrows);
        let start = order.len();
        for r in r0..r1 {
            for e in x.row_range(r) {
                order.push(((x.col_idx[e] << rb) | (r - r0) as u32, x.values[e]));
            }
        }
        // (column, row offset) pairs are distinct in a valid X: the key alone orders them.
        order[start..].sort_unstable_by_key(|&(k, _)| k);
        let end = order.len();
        for s in (start..end).step_by(chunk as usize) {
            let e = (s + chunk as usize).min(end);
            chunks.push([s as u32, e as u32, r0 as u32, 0]);
        }
    }
    let mut keys = limits::try_with_capacity("split keys", nnz)?;
    let mut values = limits::try_with_capacity("split values", nnz)?;
    for (k, v) in order {
        keys.push(k);
        values.push(v);
    }
    Ok(SplitLayout {
        keys,
        values,
        chunks,
        row_bits: rb,
        row_tile,
    })
}

impl SplitLayout {
    /// Column of entry `i`.
    pub fn col(&self, i: usize) -> u32 {
        self.keys[i] >> self.row_bits
    }

    /// X's row of entry `i` in chunk `c`.
    pub fn row(&self, c: usize, i: usize) -> usize {
        let mask = if self.row_bits >= 32 {
            u32::MAX
        } else {
            (1u32 << self.row_bits) - 1
        };
        self.chunks[c][2] as usize + (self.keys[i] & mask) as usize
    }

    /// Adds the scatter makes when each subgroup takes `segment` consecutive entries of a
    /// chunk (its EPL rounds of a subgroup's lanes: [`crate::fused::SPLIT_EPL`] × the subgroup
    /// size): one per run of equal columns within a segment (runs are carried from round to
    /// round), against one per entry.
    pub fn adds(&self, segment: usize) -> usize {
        let per_sg = segment.max(1);
        let mut adds = 0;
        for c in &self.chunks {
            let (b, e) = (c[0] as usize, c[1] as usize);
            for s in (b..e).step_by(per_sg) {
                let stop = (s + per_sg).min(e);
                adds += 1
                    + (s + 1..stop)
                        .filter(|&i| self.col(i) != self.col(i - 1))
                        .count();
            }
        }
        adds
    }
}

/// Row offsets of the 16-bit layout are below this (a tile of at most 32,768 rows); a word
/// equal to it marks a column: its value slot holds the column's bits.
pub const MARKER16: u16 = 0x8000;

/// The 16-bit layout ([`build16`]): 6 bytes per entry instead of 8, and a marker per run of a
/// column within a chunk.
pub struct Split16Layout {
    /// Per slot: a row offset within the tile, or [`MARKER16`].
    pub words: Vec<u16>,
    /// Per slot: the entry's value, or (a marker) the column's bits.
    pub values: Vec<f32>,
    /// Per chunk: its first slot, one past its last, its tile's first row, 0. A chunk starts
    /// with a marker.
    pub chunks: Vec<[u32; 4]>,
    /// Rows per tile.
    pub row_tile: u32,
}

/// The 16-bit layout of `x`: the same tiles and order as [`build`], each entry a 16-bit row
/// offset beside its value, and a marker slot (word [`MARKER16`], the column in the value's
/// bits) wherever the column changes within a chunk and at the start of every `segment`
/// slots of a chunk (a subgroup's share: it finds an entry's column as the latest marker at
/// or before it within its own slots). Chunks hold at most `chunk` slots, markers included,
/// a multiple of `segment` (at least 4). Row tiles of at most 32,768 rows.
pub fn build16(x: &Csr, row_tile: u32, chunk: u32, segment: u32) -> Result<Split16Layout> {
    if row_tile > MARKER16 as u32
        || segment < 4
        || chunk < segment
        || !chunk.is_multiple_of(segment)
    {
        return Err(Error::Unsupported(format!(
            "the 16-bit column-split layout with row tiles of {row_tile} rows (at most {}), \
             chunks of {chunk} slots in segments of {segment} (a multiple of it, at least 4)",
            MARKER16
        )));
    }
    // One chunk per tile first: the tiles' sorted entries, re-cut below with markers.
    let l = build(x, row_tile, u32::MAX)?;
    let mask = (1u32 << l.row_bits) - 1;
    let slots = x.nnz() + x.nnz() / 8 + 2 * l.chunks.len() + 1;
    let mut words: Vec<u16> = limits::try_with_capacity("16-bit split words", slots)?;
    let mut values: Vec<f32> = limits::try_with_capacity("16-bit split values", slots)?;
    let mut chunks = Vec::new();
    for &[b, e, r0, _] in &l.chunks {
        let mut start = words.len();
        let mut col = None;
        for i in b as usize..e as usize {
            let c = l.col(i);
            loop {
                let at = words.len() - start;
                if at == chunk as usize {
                    chunks.push([start as u32, words.len() as u32, r0, 0]);
                    start = words.len();
                    col = None;
                    continue;
                }
                if col != Some(c) || at.is_multiple_of(segment as usize) {
                    // A marker on a segment's last slot is followed by another (harmless:
                    // markers add nothing); segments of 4 or more slots end the loop.
                    words.push(MARKER16);
                    values.push(f32::from_bits(c));
                    col = Some(c);
                    continue;
                }
                words.push((l.keys[i] & mask) as u16);
                values.push(l.values[i]);
                break;
            }
        }
        if words.len() > start {
            chunks.push([start as u32, words.len() as u32, r0, 0]);
        }
    }
    if words.len() as u64 > u32::MAX as u64 {
        return Err(Error::Unsupported(
            "the 16-bit column-split layout: more than 2^32 − 1 slots".into(),
        ));
    }
    Ok(Split16Layout {
        words,
        values,
        chunks,
        row_tile,
    })
}

impl Split16Layout {
    /// Each slot's column (a marker's own column), chunk by chunk.
    pub fn cols(&self) -> Vec<u32> {
        let mut cols = vec![0; self.words.len()];
        for ch in &self.chunks {
            let mut col = 0;
            let range = ch[0] as usize..ch[1] as usize;
            for ((c, &w), v) in cols[range.clone()]
                .iter_mut()
                .zip(&self.words[range.clone()])
                .zip(&self.values[range])
            {
                if w == MARKER16 {
                    col = v.to_bits();
                }
                *c = col;
            }
        }
        cols
    }

    /// The words packed two per u32 (slot i in word i / 2, low half first).
    pub fn packed(&self) -> Vec<u32> {
        self.words
            .chunks(2)
            .map(|p| p[0] as u32 | p.get(1).map_or(0, |&w| (w as u32) << 16))
            .collect()
    }

    /// Adds the scatter makes with subgroups taking `segment` consecutive slots of a chunk
    /// (as [`SplitLayout::adds`]).
    pub fn adds(&self, segment: usize) -> usize {
        let cols = self.cols();
        let per_sg = segment.max(1);
        let mut adds = 0;
        for c in &self.chunks {
            let (b, e) = (c[0] as usize, c[1] as usize);
            for s in (b..e).step_by(per_sg) {
                let stop = (s + per_sg).min(e);
                adds += 1 + (s + 1..stop).filter(|&i| cols[i] != cols[i - 1]).count();
            }
        }
        adds
    }
}

/// Twin of the `split` sequence, in f64 from the arrays the kernels bind: `fused.split_dots`'
/// row scales p = α·v ⊙ (X·y) (`xty`: α·v ⊙ y) from X's rows and w = β·z, then
/// `fused.split`'s scatter of p\[row\]·x over the layout's chunks. Returns w and the magnitude
/// bounding its rounding error, as [`crate::fused::cpu::sparse`] does.
pub fn twin(x: &Csr, layout: &SplitLayout, op: &HostOp) -> (Vec<f64>, Vec<f64>) {
    let (p, p_abs) = row_scales(x, op);
    let (mut w, mut mag) = beta_z(x.ncols, op);
    for (c, ch) in layout.chunks.iter().enumerate() {
        for i in ch[0] as usize..ch[1] as usize {
            let (col, row) = (layout.col(i) as usize, layout.row(c, i));
            let x = layout.values[i] as f64;
            w[col] += x * p[row];
            mag[col] += x.abs() * p_abs[row];
        }
    }
    (w, mag)
}

/// The row pass's twin: p = α·v ⊙ (X·y) (`xty`: α·v ⊙ y) and its magnitude.
fn row_scales(x: &Csr, op: &HostOp) -> (Vec<f64>, Vec<f64>) {
    let m = x.nrows;
    let alpha = op.alpha as f64;
    let mut p = vec![0f64; m];
    let mut p_abs = vec![0f64; m];
    for r in 0..m {
        let (mut s, mut a) = if op.xty {
            (op.y[r] as f64, (op.y[r] as f64).abs())
        } else {
            x.row_range(r).fold((0.0, 0.0), |(s, a), e| {
                let t = x.values[e] as f64 * op.y[x.col_idx[e] as usize] as f64;
                (s + t, a + t.abs())
            })
        };
        if let Some(v) = op.v {
            s *= v[r] as f64;
            a *= (v[r] as f64).abs();
        }
        p[r] = alpha * s;
        p_abs[r] = alpha.abs() * a;
    }
    (p, p_abs)
}

/// w = β·z and its magnitude (zero when β = 0).
fn beta_z(n: usize, op: &HostOp) -> (Vec<f64>, Vec<f64>) {
    let mut w = vec![0f64; n];
    let mut mag = vec![0f64; n];
    if op.beta != 0.0 {
        let z = op.z.expect("β ≠ 0 needs z");
        for j in 0..n {
            w[j] = op.beta as f64 * z[j] as f64;
            mag[j] = w[j].abs();
        }
    }
    (w, mag)
}

/// [`twin`] over the 16-bit layout: the same row scales, the scatter over its chunks (markers
/// set the column, entries add p\[row\]·x).
pub fn twin16(x: &Csr, layout: &Split16Layout, op: &HostOp) -> (Vec<f64>, Vec<f64>) {
    let (p, p_abs) = row_scales(x, op);
    let (mut w, mut mag) = beta_z(x.ncols, op);
    let cols = layout.cols();
    for ch in &layout.chunks {
        for i in ch[0] as usize..ch[1] as usize {
            if layout.words[i] == MARKER16 {
                continue;
            }
            let row = ch[2] as usize + layout.words[i] as usize;
            let x = layout.values[i] as f64;
            w[cols[i] as usize] += x * p[row];
            mag[cols[i] as usize] += x.abs() * p_abs[row];
        }
    }
    (w, mag)
}

/// Row tile sizes the tuner tries (cut to what X's columns allow).
pub const TUNE_ROW_TILES: [u32; 3] = [2048, 4096, 16_384];

/// The launch model's row tile: 4,096 rows, or the most X's columns allow. A chunk's entries
/// gather p over its tile's rows (a chunk spans a few columns, each over the whole tile), so
/// the tile's 16 KiB of p stay cached while its chunks run; longer tiles give longer runs
/// (fewer adds) but a wider window of p per chunk.
pub fn default_row_tile(ncols: usize) -> Option<u32> {
    max_row_tile(ncols).map(|t| t.min(4096))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen;

    #[test]
    fn key_bits_follow_the_column_count() {
        assert_eq!(row_bits(1), Some(31));
        assert_eq!(row_bits(2), Some(31));
        assert_eq!(row_bits(4096), Some(20));
        assert_eq!(row_bits(4097), Some(19));
        assert_eq!(row_bits(1 << 24), Some(8));
        assert_eq!(row_bits((1 << 24) + 1), None);
        assert_eq!(max_row_tile(4096), Some(1 << 20));
    }

    #[test]
    fn every_entry_once_sorted_within_tiles() {
        let x = gen::power_law(1_000, 300, 9_000, 1.1, 5).unwrap();
        for (rt, chunk) in [(256, 64), (100, 1000), (1 << 20, 7), (1, 3)] {
            let l = build(&x, rt, chunk).unwrap();
            assert_eq!(l.keys.len(), x.nnz());
            let mut seen: Vec<(usize, u32, u32)> = vec![];
            let mut prev_end = 0;
            for (c, ch) in l.chunks.iter().enumerate() {
                assert_eq!(ch[0], prev_end, "chunks cover the entries in order");
                prev_end = ch[1];
                assert!(ch[1] > ch[0] && ch[1] - ch[0] <= chunk);
                assert_eq!(ch[2] % rt, 0);
                for i in ch[0] as usize..ch[1] as usize {
                    let row = l.row(c, i);
                    assert!(row >= ch[2] as usize && row < ch[2] as usize + rt as usize);
                    if i > ch[0] as usize {
                        assert!(l.keys[i] > l.keys[i - 1], "sorted within a chunk");
                    }
                    seen.push((row, l.col(i), l.values[i].to_bits()));
                }
            }
            assert_eq!(prev_end as usize, x.nnz());
            seen.sort_unstable();
            let mut want: Vec<(usize, u32, u32)> = (0..x.nrows)
                .flat_map(|r| x.row_range(r).map(move |e| (r, e)))
                .map(|(r, e)| (r, x.col_idx[e], x.values[e].to_bits()))
                .collect();
            want.sort_unstable();
            assert_eq!(seen, want);
        }
    }

    #[test]
    fn the_16_bit_layout_holds_every_entry_behind_its_columns_marker() {
        let x = gen::power_law(1_000, 300, 9_000, 1.1, 6).unwrap();
        for (rt, chunk, segment) in [(256, 64, 8), (100, 1024, 256), (32_768, 8, 4), (1, 8, 8)] {
            let l = build16(&x, rt, chunk, segment).unwrap();
            let cols = l.cols();
            let mut seen = vec![];
            let mut prev_end = 0;
            for ch in &l.chunks {
                assert_eq!(ch[0], prev_end, "chunks cover the slots in order");
                prev_end = ch[1];
                assert!(ch[1] - ch[0] >= 2 && ch[1] - ch[0] <= chunk);
                for s in (ch[0]..ch[1]).step_by(segment as usize) {
                    assert_eq!(
                        l.words[s as usize], MARKER16,
                        "a segment starts with a marker"
                    );
                }
                for i in ch[0] as usize + 1..ch[1] as usize {
                    if l.words[i] == MARKER16 {
                        let at = i - ch[0] as usize;
                        let seg = segment as usize;
                        let edge = at.is_multiple_of(seg) || (at + 1).is_multiple_of(seg);
                        assert!(
                            cols[i] > cols[i - 1] || edge,
                            "markers where the column rises or at a segment's edge"
                        );
                        continue;
                    }
                    let row = ch[2] as usize + l.words[i] as usize;
                    assert!((l.words[i] as u32) < rt);
                    seen.push((row, cols[i], l.values[i].to_bits()));
                }
            }
            assert_eq!(prev_end as usize, l.words.len());
            seen.sort_unstable();
            let mut want: Vec<(usize, u32, u32)> = (0..x.nrows)
                .flat_map(|r| x.row_range(r).map(move |e| (r, e)))
                .map(|(r, e)| (r, x.col_idx[e], x.values[e].to_bits()))
                .collect();
            want.sort_unstable();
            assert_eq!(seen, want);
            let p = l.packed();
            assert_eq!(p.len(), l.words.len().div_ceil(2));
            for (i, &w) in l.words.iter().enumerate() {
                assert_eq!((p[i / 2] >> (16 * (i % 2))) & 0xffff, w as u32);
            }
        }
        assert!(build16(&x, 32_769, 64, 8).is_err());
        assert!(build16(&x, 64, 12, 8).is_err());
        assert!(build16(&x, 64, 4, 2).is_err());
    }

    #[test]
    fn bad_tiles_are_refused() {
        let x = gen::power_law(100, 5000, 900, 1.1, 5).unwrap();
        assert!(build(&x, 0, 8).is_err());
        assert!(build(&x, 8, 0).is_err());
        // 5,000 columns: 13 column bits, 19 for offsets.
        assert!(build(&x, 1 << 19, 8).is_ok());
        assert!(build(&x, (1 << 19) + 1, 8).is_err());
    }
}
