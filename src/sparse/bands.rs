//! Row bands: a CSR matrix cut into runs of rows whose entries, and whose slice of a
//! row-aligned array (`stride` floats per row: SDDMM's A, the fused pattern's v), each fit one
//! storage binding, so a kernel over more entries than one binding runs as one dispatch per
//! band, each binding a window of the entry arrays that starts at an aligned offset
//! ([`Band::window`]). SDDMM (a 75,000² S at 10% density, A of 2,000,000 × 512) and the
//! fused pattern on sparse X (the KDD2010 shape) use it.

use std::ops::Range;

use crate::sparse::Csr;
use crate::{Error, Result};

/// One band: rows of the matrix (and of the row-aligned array) and the CSR positions of their
/// nonzeros.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// Rows of the matrix.
    pub rows: Range<usize>,
    /// CSR positions of the band's nonzeros.
    pub nnz: Range<usize>,
}

impl Band {
    /// The band's window of an entry array (4 bytes per entry), in entries: it starts at the
    /// last multiple of `align` bytes at or below the band's first nonzero and ends after its
    /// last, so it can be bound at an aligned offset. Entry `e` of the band (CSR position
    /// `nnz.start + e`) is element `nnz.start − window.start + e` of the bound window.
    pub fn window(&self, align: u64) -> Range<usize> {
        let per = (align.max(4) / 4) as usize;
        self.nnz.start / per * per..self.nnz.end
    }
}

/// The bands of `s` for dense rows of `stride` floats, storage bindings of at most
/// `binding` bytes starting at multiples of `align` bytes. One band when everything fits.
/// Every band starts at a row whose offset in A is a multiple of `align`, holds at most
/// `binding / 4 − align / 4` nonzeros (room to start the output window at an aligned byte
/// below the band's first nonzero, [`Band::window`]) and at most `binding` bytes of the
/// row-aligned array. Bands without nonzeros are left out.
pub fn row_bands(s: &Csr, stride: usize, binding: u64, align: u64) -> Result<Vec<Band>> {
    row_bands_with(s, stride, binding, align, &|_, _| 0)
}

/// The bands of `s` when no row-indexed array is bound per band (row-indexed vectors bound
/// whole, indexed from the band's first row): bands start at any row and hold at most
/// `binding / 4 − align / 4` nonzeros ([`Band::window`]), so only a single row with more
/// nonzeros is refused. Bands without nonzeros are left out.
pub fn entry_bands(s: &Csr, binding: u64, align: u64) -> Result<Vec<Band>> {
    bands(s, 0, binding, align, &|_, _| 0)
}

/// [`row_bands`] for a layout with one more per-band array: a band of `rows` rows and `nnz`
/// nonzeros also needs `array_bytes(rows, nnz)` bytes in one binding (the row-run kernel's
/// runs, up to one per nonzero).
pub fn row_bands_with(
    s: &Csr,
    stride: usize,
    binding: u64,
    align: u64,
    array_bytes: &dyn Fn(usize, usize) -> u64,
) -> Result<Vec<Band>> {
    bands(s, 4 * stride.max(1) as u64, binding, align, array_bytes)
}

/// Rows per step of a row-aligned array of `row_bytes` per row so that every band starting at
/// a multiple of it starts at a multiple of `align` bytes: `align / gcd(align, row_bytes)`
/// (1 when `row_bytes` is 0). Rows of 4·n bytes with n odd step by `align / 4` rows.
pub fn row_step(row_bytes: u64, align: u64) -> usize {
    match row_bytes {
        0 => 1,
        _ => {
            let align = align.max(4);
            (align / gcd(align, row_bytes)) as usize
        }
    }
}

/// The bands for a row-aligned array of `row_bytes` per row (0: none, bands start at any row).
fn bands(
    s: &Csr,
    row_bytes: u64,
    binding: u64,
    align: u64,
    array_bytes: &dyn Fn(usize, usize) -> u64,
) -> Result<Vec<Band>> {
    let stride = row_bytes / 4;
    let nnz_of = |r: &Range<usize>| (s.row_ptr[r.end] - s.row_ptr[r.start]) as usize;
    let band = |rows: Range<usize>| Band {
        nnz: s.row_ptr[rows.start] as usize..s.row_ptr[rows.end] as usize,
        rows,
    };
    if s.nrows as u64 * row_bytes <= binding
        && s.nnz() as u64 * 4 <= binding
        && array_bytes(s.nrows, s.nnz()) <= binding
    {
        return Ok(vec![band(0..s.nrows)]);
    }
    let align = align.max(4);
    // Rows per step so that every band starts at an aligned byte of the row-aligned array.
    let (step, max_rows) = match row_bytes {
        0 => (1, usize::MAX),
        _ => {
            let step = row_step(row_bytes, align);
            (step, (binding / row_bytes) as usize / step * step)
        }
    };
    let max_nnz = (binding / 4).saturating_sub(align / 4) as usize;
    let mut bands = Vec::new();
    let mut start = 0;
    while start < s.nrows {
        let mut end = start;
        while end < s.nrows {
            let next = (end + step).min(s.nrows);
            let nnz = nnz_of(&(start..next));
            if next - start > max_rows || nnz > max_nnz || array_bytes(next - start, nnz) > binding
            {
                break;
            }
            end = next;
        }
        if end == start {
            let rows = start..(start + step).min(s.nrows);
            // Name the row when one row alone holds more entries than a band may.
            let heavy = rows.clone().max_by_key(|&r| nnz_of(&(r..r + 1)));
            if let Some(r) = heavy.filter(|&r| nnz_of(&(r..r + 1)) > max_nnz) {
                return Err(Error::TooLarge {
                    what: format!(
                        "row {r} of the sparse matrix ({} entries)",
                        nnz_of(&(r..r + 1))
                    ),
                    needed: format!(
                        "its entries in one storage binding (a band holds at most {max_nnz})"
                    ),
                    limit: format!("{binding} bytes"),
                });
            }
            return Err(Error::TooLarge {
                what: format!(
                    "rows {}..{} of the sparse matrix ({stride} floats per row of the dense operand)",
                    rows.start, rows.end
                ),
                needed: format!(
                    "{} nonzeros and {} bytes of the dense rows in one storage binding",
                    nnz_of(&rows),
                    rows.len() as u64 * row_bytes
                ),
                limit: format!("{binding} bytes"),
            });
        }
        if nnz_of(&(start..end)) > 0 {
            bands.push(band(start..end));
        }
        start = end;
    }
    Ok(bands)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(row_lens: &[u32], ncols: usize) -> Csr {
        let mut row_ptr = vec![0u32];
        let mut col_idx = Vec::new();
        for &n in row_lens {
            col_idx.extend(0..n);
            row_ptr.push(col_idx.len() as u32);
        }
        let values = vec![1.0; col_idx.len()];
        Csr::new(row_lens.len(), ncols, row_ptr, col_idx, values).unwrap()
    }

    #[test]
    fn everything_in_one_band_when_it_fits() {
        let s = csr(&[3, 0, 5], 8);
        let b = row_bands(&s, 8, 1 << 20, 256).unwrap();
        assert_eq!(
            b,
            vec![Band {
                rows: 0..3,
                nnz: 0..8
            }]
        );
    }

    #[test]
    fn bands_cover_every_nonzero_within_the_limits() {
        let lens: Vec<u32> = (0..500).map(|i| (i * 7 % 13) as u32).collect();
        let s = csr(&lens, 16);
        let (binding, align, stride) = (512u64, 64u64, 8usize);
        let bands = row_bands(&s, stride, binding, align).unwrap();
        assert!(bands.len() > 1);
        let mut next_nnz = 0;
        for b in &bands {
            assert_eq!((b.rows.start * stride * 4) as u64 % align, 0, "{b:?}");
            assert!((b.rows.len() * stride * 4) as u64 <= binding, "{b:?}");
            assert!(b.nnz.len() as u64 * 4 <= binding - align, "{b:?}");
            assert!(!b.nnz.is_empty());
            // Bands skipped in between hold no nonzeros.
            assert_eq!(s.row_ptr[b.rows.start] as usize, b.nnz.start);
            assert!(b.nnz.start >= next_nnz);
            next_nnz = b.nnz.end;
        }
        assert_eq!(next_nnz, s.nnz());
        let covered: usize = bands.iter().map(|b| b.nnz.len()).sum();
        assert_eq!(covered, s.nnz());
    }

    #[test]
    fn windows_start_aligned_at_or_below_the_first_nonzero() {
        let lens: Vec<u32> = (0..300).map(|i| (i * 5 % 11) as u32).collect();
        let s = csr(&lens, 16);
        let bands = row_bands(&s, 1, 1024, 64).unwrap();
        assert!(bands.len() > 2, "{bands:?}");
        for b in bands {
            let w = b.window(64);
            assert_eq!(w.start % 16, 0, "{b:?}");
            assert!(
                w.start <= b.nnz.start && b.nnz.start - w.start < 16,
                "{b:?}"
            );
            assert_eq!(w.end, b.nnz.end);
            assert!(w.len() * 4 <= 1024, "{b:?}");
        }
    }

    #[test]
    fn entry_bands_start_at_any_row() {
        // Rows of 40 entries, 60 per band at most (64 − 16 / 4): one row per band.
        let s = csr(&[40, 40, 40, 0, 40], 64);
        let b = entry_bands(&s, 256, 16).unwrap();
        let rows: Vec<_> = b.iter().map(|b| b.rows.clone()).collect();
        assert_eq!(rows, vec![0..1, 1..2, 2..4, 4..5]);
        for b in &b {
            assert!(b.window(16).len() <= 64, "{b:?}");
        }
        match entry_bands(&csr(&[3, 61, 5], 64), 256, 16) {
            Err(Error::TooLarge { what, .. }) => assert!(what.contains("row 1 "), "{what}"),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }

    #[test]
    fn row_steps_align_rows_of_any_width() {
        for (n, align, step) in [
            (8u64, 256u64, 8usize),
            (28, 256, 16),
            (29, 256, 64),
            (7, 256, 64),
            (7, 16, 4),
            (1, 4, 1),
            (28, 4, 1),
        ] {
            let got = row_step(4 * n, align);
            assert_eq!(got, step, "n = {n}, align = {align}");
            // The least such step: every smaller one misses the alignment.
            assert!((got as u64 * 4 * n).is_multiple_of(align));
            assert!((1..got).all(|k| !(k as u64 * 4 * n).is_multiple_of(align)));
        }
        assert_eq!(row_step(0, 256), 1);
    }

    #[test]
    fn a_single_row_beyond_one_band_is_named() {
        let s = csr(&[3, 200, 1], 256);
        match row_bands(&s, 1, 512, 16) {
            Err(Error::TooLarge { what, .. }) => assert!(what.contains("row 1 "), "{what}"),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }

    #[test]
    fn a_row_group_beyond_one_binding_is_a_clear_error() {
        // Rows step by 2 (64-byte aligned rows of 32 bytes): 200 entries, 100 per row.
        let s = csr(&[100, 100], 256);
        match row_bands(&s, 8, 512, 64) {
            Err(Error::TooLarge { what, .. }) => assert!(what.contains("rows 0..2"), "{what}"),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }
}
