//! ELLPACK format: every row padded to the same width.

use crate::sparse::convert::ell_slots;
use crate::sparse::{Coo, Csr};
use crate::{Error, Result};

/// The column index of a padding slot in [`Ell`] (and the ELL part of
/// [`CsrEll`](crate::sparse::CsrEll)). No real column can have it: column indices are below
/// `ncols ≤ u32::MAX`.
pub const ELL_PAD: u32 = u32::MAX;

/// A sparse matrix in ELLPACK: `nrows × width` row-major arrays of column indices and values.
///
/// Row `i` occupies slots `i * width..(i + 1) * width`: first its entries, columns strictly
/// increasing, then padding up to `width`. A padding slot has column [`ELL_PAD`] (`u32::MAX`)
/// and value `0.0`, so a kernel may either stop at the first pad or multiply through it (after
/// clamping the column). [`Csr::to_ell`] picks the smallest width, the longest row's length.
#[derive(Clone, Debug, PartialEq)]
pub struct Ell {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Slots per row.
    pub width: usize,
    /// Column index of each slot, `nrows * width` of them; [`ELL_PAD`] marks padding.
    pub col_idx: Vec<u32>,
    /// Value of each slot, `nrows * width` of them; 0 in padding.
    pub values: Vec<f32>,
}

impl Ell {
    /// Builds and validates an ELL matrix.
    pub fn new(
        nrows: usize,
        ncols: usize,
        width: usize,
        col_idx: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self> {
        let ell = Ell {
            nrows,
            ncols,
            width,
            col_idx,
            values,
        };
        ell.validate()?;
        Ok(ell)
    }

    /// An empty `nrows × ncols` matrix of width 0.
    pub fn empty(nrows: usize, ncols: usize) -> Self {
        Ell {
            nrows,
            ncols,
            width: 0,
            col_idx: vec![],
            values: vec![],
        }
    }

    /// Number of stored entries (slots that are not padding).
    pub fn nnz(&self) -> usize {
        self.col_idx.iter().filter(|&&c| c != ELL_PAD).count()
    }

    /// Number of slots, entries and padding: `nrows * width`.
    pub fn slots(&self) -> usize {
        self.nrows * self.width
    }

    /// Slots `start..end` of row `i` (entries and padding).
    pub fn row_slots(&self, i: usize) -> std::ops::Range<usize> {
        i * self.width..(i + 1) * self.width
    }

    /// Number of entries of row `i` (its slots before the first padding).
    pub fn row_len(&self, i: usize) -> usize {
        self.col_idx[self.row_slots(i)]
            .iter()
            .position(|&c| c == ELL_PAD)
            .unwrap_or(self.width)
    }

    /// Checks array lengths, then row by row: columns in range and strictly increasing, padding
    /// only after the entries, padding values exactly 0, entry values finite. The error names
    /// the first bad slot.
    pub fn validate(&self) -> Result<()> {
        const WHAT: &str = "ELL matrix";
        let slots = ell_slots(WHAT, self.nrows, self.ncols, self.width)?;
        if self.col_idx.len() != slots || self.values.len() != slots {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "{} column indices and {} values, expected nrows × width = {} × {} = {slots}",
                    self.col_idx.len(),
                    self.values.len(),
                    self.nrows,
                    self.width
                ),
            ));
        }
        for i in 0..self.nrows {
            let mut prev: Option<u32> = None;
            let mut padding = false;
            for s in self.row_slots(i) {
                let (c, v) = (self.col_idx[s], self.values[s]);
                if c == ELL_PAD {
                    padding = true;
                    if v != 0.0 {
                        return Err(Error::invalid(
                            WHAT,
                            format!("padding slot {s} (row {i}) has value {v}, expected 0"),
                        ));
                    }
                    continue;
                }
                if padding {
                    return Err(Error::invalid(
                        WHAT,
                        format!("column {c} at slot {s} (row {i}) follows padding"),
                    ));
                }
                if c as usize >= self.ncols {
                    return Err(Error::invalid(
                        WHAT,
                        format!(
                            "column {c} at slot {s} (row {i}) is out of range (ncols = {})",
                            self.ncols
                        ),
                    ));
                }
                if let Some(p) = prev {
                    if c <= p {
                        let kind = if c == p { "duplicate" } else { "unsorted" };
                        return Err(Error::invalid(
                            WHAT,
                            format!("{kind} column {c} after {p} in row {i} (slot {s})"),
                        ));
                    }
                }
                if !v.is_finite() {
                    return Err(Error::invalid(
                        WHAT,
                        format!("value {v} at slot {s} (row {i}) is not finite"),
                    ));
                }
                prev = Some(c);
            }
        }
        Ok(())
    }

    /// Converts to CSR, dropping the padding.
    pub fn to_csr(&self) -> Csr {
        let mut row_ptr = Vec::with_capacity(self.nrows + 1);
        row_ptr.push(0u32);
        let mut col_idx = Vec::new();
        let mut values = Vec::new();
        for i in 0..self.nrows {
            let s = self.row_slots(i);
            let n = self.row_len(i);
            col_idx.extend_from_slice(&self.col_idx[s.start..s.start + n]);
            values.extend_from_slice(&self.values[s.start..s.start + n]);
            row_ptr.push(col_idx.len() as u32);
        }
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr,
            col_idx,
            values,
        }
    }

    /// Converts to COO (row-major order, padding dropped).
    pub fn to_coo(&self) -> Coo {
        self.to_csr().to_coo()
    }
}
