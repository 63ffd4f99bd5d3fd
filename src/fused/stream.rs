//! Row tiles streamed in CSR order for the `stream` variant (`shaders/fused/stream.wgsl`).
//! Consecutive rows are cut into tiles of at most `cap` entries and `rows_cap` rows, copied
//! with every tile starting at a multiple of 4 entries and padded to one, so an invocation
//! loads its entries as whole `vec4`s. An entry is a key — its column, with [`START`] set on
//! the first entry of its row — and a value. Empty rows are in no tile; a tile's rows are
//! numbered 0.. in order (its *tile rows*) and [`Stream::rows`] names X's row of each.
//!
//! Rows longer than the long-row threshold (at most a tile) are in no tile either: their
//! entries follow the tiles', each row padded to a multiple of 4, and [`Stream::longs`] lists
//! them longest first. The same kernel takes each such row with a whole workgroup — its dot
//! product summed over the workgroup, then its entries (read again, now from cache) scattered
//! — so a power-law X needs no other pass.
//!
//! Invocation `t` of a workgroup takes the tile's entries `t·epl .. t·epl + epl`;
//! [`Stream::leads`] gives the tile row of its first entry, so the kernel finds every entry's
//! row by counting `START` bits from there: no search and no per-entry row array. (Unit tiles,
//! cut for a unit's lanes, find it by a subgroup scan instead.)

use crate::sparse::Csr;
use crate::{limits, Error, Result};

/// Set in the key of a row's first entry.
pub const START: u32 = 1 << 31;
/// The key of a padding entry (never a column's: columns stay below `START − 1`).
pub const PAD: u32 = u32::MAX;

/// X's entries in row tiles, in CSR order.
pub struct Stream {
    /// Per tile: its first entry (a multiple of 4), its entries padded to a multiple of 4,
    /// its first index into [`Stream::rows`], and its rows.
    pub tiles: Vec<[u32; 4]>,
    /// Per entry: column | [`START`] on a row's first entry; [`PAD`] past a tile's entries.
    pub keys: Vec<u32>,
    /// Per entry: X's value (0 for padding).
    pub values: Vec<f32>,
    /// Invocations a tile was cut for (`wg`).
    pub lanes: u32,
    /// Entries an invocation takes of a tile (`epl`).
    pub epl: u32,
    /// X's row of each tile row, tile by tile.
    pub rows: Vec<u32>,
    /// Rows of the fullest tile.
    pub rows_max: u32,
    /// The long rows, longest first: their first entry (a multiple of 4, past the tiles'
    /// entries), entries padded to a multiple of 4, X's row, and entries.
    pub longs: Vec<[u32; 4]>,
}

/// Whether X's columns fit a key beside the [`START`] bit (and differ from [`PAD`]).
pub fn fits(ncols: usize) -> bool {
    (ncols as u64) < u64::from(START) - 1
}

/// The 16-bit key of a row's first entry: [`START`]'s place in [`pack16`]'s halves.
const START16: u32 = 1 << 15;
/// A padding entry's 16-bit key.
const PAD16: u32 = 0xffff;

/// Whether X's columns fit a 16-bit key beside its start bit (and differ from its padding:
/// the last column, 32,766, with the start bit is 0xfffe).
pub fn fits16(ncols: usize) -> bool {
    ncols < START16 as usize
}

/// `keys` ([`Stream::keys`], a multiple of 4 long) as 16-bit halves, two per word (low half
/// first): a column below `START16 − 1`, `START16` on a row's first entry, `PAD16` for
/// padding. A column beyond (X wider than [`fits16`]) is refused.
pub fn pack16(keys: &[u32]) -> Result<Vec<u32>> {
    let half = |k: u32| -> Result<u32> {
        if k == PAD {
            return Ok(PAD16);
        }
        let col = k & !START;
        if col >= START16 - 1 {
            return Err(Error::Unsupported(format!(
                "16-bit stream keys hold columns below {}; column {col} does not fit",
                START16 - 1
            )));
        }
        Ok(col | if k & START != 0 { START16 } else { 0 })
    };
    let mut out = limits::try_with_capacity("stream-tile 16-bit keys", keys.len().div_ceil(2))?;
    for pair in keys.chunks(2) {
        let hi = pair.get(1).map_or(Ok(PAD16), |&k| half(k))?;
        out.push(half(pair[0])? | hi << 16);
    }
    Ok(out)
}

/// Cuts X into tiles of at most `wg · epl` entries and `rows_cap` rows, skipping empty rows
/// and rows longer than `long` (at most a tile), which follow as [`Stream::longs`]. `epl` is
/// a multiple of 4 and `wg` even.
pub fn build(x: &Csr, wg: u32, epl: u32, long: u32, rows_cap: u32) -> Result<Stream> {
    let cap = wg as u64 * epl as u64;
    if !fits(x.ncols)
        || !epl.is_multiple_of(4)
        || epl == 0
        || wg < 2
        || !wg.is_multiple_of(2)
        || long as u64 > cap
        || rows_cap == 0
        || rows_cap > 1 << 16
    {
        return Err(Error::Unsupported(format!(
            "row tiles of {wg} × {epl} entries and {rows_cap} rows (rows above {long} split) \
             on X with {} columns",
            x.ncols
        )));
    }
    let cap = cap as u32;
    let len = |r: usize| x.row_ptr[r + 1] - x.row_ptr[r];
    // Padding adds at most 3 entries a tile, and a tile holds a row at least.
    let rows_in = (0..x.nrows)
        .filter(|&r| len(r) > 0 && len(r) <= long)
        .count();
    let mut long_rows: Vec<usize> = (0..x.nrows).filter(|&r| len(r) > long).collect();
    let about = x.nnz() + 3 * (rows_in + long_rows.len());
    let mut keys: Vec<u32> = limits::try_with_capacity("stream-tile keys", about)?;
    let mut values: Vec<f32> = limits::try_with_capacity("stream-tile values", about)?;
    let mut rows: Vec<u32> = limits::try_with_capacity("stream-tile rows", rows_in)?;
    let mut tiles: Vec<[u32; 4]> = Vec::new();
    let mut r = 0;
    while r < x.nrows {
        let (first, row0) = (keys.len(), rows.len());
        let mut count = 0u32;
        while r < x.nrows && (rows.len() - row0) < rows_cap as usize {
            let l = len(r);
            if l == 0 || l > long {
                r += 1;
                continue;
            }
            if count + l > cap {
                break;
            }
            let b = x.row_ptr[r] as usize;
            keys.push(x.col_idx[b] | START);
            keys.extend_from_slice(&x.col_idx[b + 1..b + l as usize]);
            values.extend_from_slice(&x.values[b..b + l as usize]);
            rows.push(r as u32);
            count += l;
            r += 1;
        }
        if count == 0 {
            continue;
        }
        let padded = count.next_multiple_of(4);
        keys.resize(first + padded as usize, PAD);
        values.resize(first + padded as usize, 0.0);
        tiles.push([
            u32::try_from(first).map_err(|_| too_many(x))?,
            padded,
            u32::try_from(row0).map_err(|_| too_many(x))?,
            (rows.len() - row0) as u32,
        ]);
    }
    let rows_max = tiles.iter().map(|t| t[3]).max().unwrap_or(0);
    // Longest first: the heaviest items start early and the grid's tail stays short.
    long_rows.sort_by_key(|&r| std::cmp::Reverse(len(r)));
    let mut longs = Vec::with_capacity(long_rows.len());
    for r in long_rows {
        let first = keys.len();
        let (b, l) = (x.row_ptr[r] as usize, len(r));
        keys.extend_from_slice(&x.col_idx[b..b + l as usize]);
        values.extend_from_slice(&x.values[b..b + l as usize]);
        let padded = l.checked_next_multiple_of(4).ok_or_else(|| too_many(x))?;
        keys.resize(first + padded as usize, PAD);
        values.resize(first + padded as usize, 0.0);
        longs.push([
            u32::try_from(first).map_err(|_| too_many(x))?,
            padded,
            r as u32,
            l,
        ]);
    }
    Ok(Stream {
        tiles,
        keys,
        values,
        lanes: wg,
        epl,
        rows,
        rows_max,
        longs,
    })
}

fn too_many(x: &Csr) -> Error {
    Error::TooLarge {
        what: format!("row tiles of X ({} entries)", x.nnz()),
        needed: "entry offsets beyond 32 bits".into(),
        limit: format!("{} entries", u32::MAX),
    }
}

/// The tile row of each invocation's first entry, two per word, for a tile's keys.
fn tile_leads(keys: &[u32], wg: u32, epl: u32) -> Vec<u32> {
    let mut out = vec![0u32; wg as usize / 2];
    let mut row = 0u32;
    let mut seen = 0u32;
    for (i, &k) in keys.iter().enumerate() {
        if k != PAD && k & START != 0 {
            row = seen;
            seen += 1;
        }
        if (i as u32).is_multiple_of(epl) {
            let t = i as u32 / epl;
            out[t as usize / 2] |= row << (16 * (t % 2));
        }
    }
    out
}

impl Stream {
    /// Per tile and invocation, the tile row of the invocation's first entry (0 past the
    /// tile's end), 16 bits each, two per word (low half first): `lanes / 2` words a tile.
    pub fn leads(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.tiles.len() * self.lanes as usize / 2);
        for t in &self.tiles {
            let keys = &self.keys[t[0] as usize..(t[0] + t[1]) as usize];
            out.extend(tile_leads(keys, self.lanes, self.epl));
        }
        out
    }

    /// The column of a key.
    pub fn col(key: u32) -> u32 {
        key & !START
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(rows: &[&[u32]], ncols: usize) -> Csr {
        let mut row_ptr = vec![0u32];
        let mut col_idx = vec![];
        for r in rows {
            col_idx.extend_from_slice(r);
            row_ptr.push(col_idx.len() as u32);
        }
        let values = (0..col_idx.len()).map(|i| i as f32 + 1.0).collect();
        Csr {
            nrows: rows.len(),
            ncols,
            row_ptr,
            col_idx,
            values,
        }
    }

    #[test]
    fn every_short_entry_once_in_row_order_with_leads() {
        let rows: Vec<Vec<u32>> = (0..40u32)
            .map(|r| (0..(r * 7) % 13).map(|c| (c * 3 + r) % 50).collect())
            .collect();
        let refs: Vec<&[u32]> = rows.iter().map(|r| r.as_slice()).collect();
        let x = csr(&refs, 50);
        let (wg, epl, long) = (4, 4, 10);
        let s = build(&x, wg, epl, long, 5).unwrap();
        let leads = s.leads();
        let mut seen = vec![];
        for (ti, t) in s.tiles.iter().enumerate() {
            assert_eq!(t[0] % 4, 0);
            assert_eq!(t[1] % 4, 0);
            assert!(t[1] <= wg * epl && t[3] <= 5 && t[3] >= 1);
            let keys = &s.keys[t[0] as usize..(t[0] + t[1]) as usize];
            let mut row = usize::MAX;
            for (i, &k) in keys.iter().enumerate() {
                if k == PAD {
                    assert!(keys[i..].iter().all(|&k| k == PAD));
                    break;
                }
                if k & START != 0 {
                    row = row.wrapping_add(1);
                }
                if (i as u32).is_multiple_of(epl) {
                    let inv = i as u32 / epl;
                    let word = leads[ti * wg as usize / 2 + inv as usize / 2];
                    assert_eq!((word >> (16 * (inv % 2))) & 0xffff, row as u32);
                }
                let xr = s.rows[t[2] as usize + row] as usize;
                seen.push((xr, Stream::col(k), s.values[t[0] as usize + i]));
            }
            assert_eq!(row + 1, t[3] as usize);
        }
        let mut want = vec![];
        for r in 0..x.nrows {
            let (b, e) = (x.row_ptr[r] as usize, x.row_ptr[r + 1] as usize);
            if e - b <= long as usize {
                want.extend((b..e).map(|i| (r, x.col_idx[i], x.values[i])));
            }
        }
        assert_eq!(seen, want);
        assert_eq!(s.rows_max, s.tiles.iter().map(|t| t[3]).max().unwrap());
        // The long rows, longest first, after the tiles' entries.
        let long_rows: Vec<usize> = (0..x.nrows)
            .filter(|&r| x.row_range(r).len() > long as usize)
            .collect();
        assert_eq!(s.longs.len(), long_rows.len());
        assert!(s.longs.windows(2).all(|p| p[0][3] >= p[1][3]));
        let tiles_end = s.tiles.last().map_or(0, |t| t[0] + t[1]);
        for l in &s.longs {
            assert!(l[0] >= tiles_end && l[0] % 4 == 0 && l[1] == l[3].next_multiple_of(4));
            let r = l[2] as usize;
            let b = x.row_ptr[r] as usize;
            let keys = &s.keys[l[0] as usize..(l[0] + l[1]) as usize];
            for (i, &k) in keys.iter().enumerate() {
                if i < l[3] as usize {
                    assert_eq!(k, x.col_idx[b + i]);
                    assert_eq!(s.values[l[0] as usize + i], x.values[b + i]);
                } else {
                    assert_eq!(k, PAD);
                }
            }
        }
    }

    #[test]
    fn sixteen_bit_keys_keep_columns_starts_and_padding() {
        let keys = [5 | START, 7, 32_765 | START, PAD, 0, 32_765, PAD, PAD];
        let packed = pack16(&keys).unwrap();
        assert_eq!(packed.len(), 4);
        let halves: Vec<u32> = packed.iter().flat_map(|w| [w & 0xffff, w >> 16]).collect();
        assert_eq!(
            halves,
            [
                5 | START16,
                7,
                32_765 | START16,
                PAD16,
                0,
                32_765,
                PAD16,
                PAD16
            ]
        );
        assert!(fits16(32_767) && !fits16(32_768));
        assert_eq!(
            pack16(&[32_766 | START, PAD]).unwrap(),
            [0xfffe | PAD16 << 16]
        );
        assert!(pack16(&[32_767, PAD]).is_err());
        assert!(pack16(&[32_767 | START, PAD]).is_err());
    }

    #[test]
    fn refuses_what_it_cannot_lay_out() {
        let x = csr(&[&[0, 1]], 4);
        assert!(build(&x, 4, 6, 4, 8).is_err());
        assert!(build(&x, 4, 4, 17, 8).is_err());
        assert!(build(&x, 4, 4, 4, 0).is_err());
        let empty = csr(&[&[], &[]], 4);
        let s = build(&empty, 4, 4, 4, 8).unwrap();
        assert!(s.tiles.is_empty() && s.keys.is_empty() && s.rows_max == 0);
    }
}
