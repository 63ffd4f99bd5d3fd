//! Row bands: S cut into runs of rows whose slice of A and whose nonzeros each fit one
//! storage binding, so an SDDMM larger than one binding (a 75,000² matrix at 10% density,
//! A of 2,000,000 × 512) runs as one dispatch per band. B is bound whole and must fit.

use std::ops::Range;

use crate::sparse::Csr;
use crate::{Error, Result};

/// One band: rows of S (and of A) and the CSR positions of their nonzeros.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// Rows of S.
    pub rows: Range<usize>,
    /// CSR positions of the band's nonzeros.
    pub nnz: Range<usize>,
}

/// The bands of `s` for dense rows of `stride` floats, storage bindings of at most
/// `binding` bytes starting at multiples of `align` bytes. One band when everything fits.
/// Every band starts at a row whose offset in A is a multiple of `align`, holds at most
/// `binding / 4 − align / 4` nonzeros (room to start the output window at an aligned byte
/// below the band's first nonzero) and at most `binding` bytes of A. Bands without
/// nonzeros are left out.
pub fn row_bands(s: &Csr, stride: usize, binding: u64, align: u64) -> Result<Vec<Band>> {
    row_bands_with(s, stride, binding, align, &|_, _| 0)
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
    let row_bytes = 4 * stride.max(1) as u64;
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
    // Rows per step so that every band starts at an aligned byte of A.
    let step = (align / gcd(align, row_bytes)) as usize;
    let max_rows = (binding / row_bytes) as usize / step * step;
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
            return Err(Error::TooLarge {
                what: format!(
                    "rows {}..{} of S (K padded to {stride})",
                    rows.start, rows.end
                ),
                needed: format!(
                    "{} nonzeros and {} bytes of A in one storage binding",
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
    fn a_row_group_beyond_one_binding_is_a_clear_error() {
        let s = csr(&[200, 1], 256);
        match row_bands(&s, 8, 512, 64) {
            Err(Error::TooLarge { what, .. }) => assert!(what.contains("rows 0..2"), "{what}"),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }
}
