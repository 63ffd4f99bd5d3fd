//! CSR+ELL hybrid: a regular ELL part for the first entries of every row, CSR for the rest.

use crate::sparse::{Coo, Csr, Ell};
use crate::{Error, Result};

/// A sparse matrix split in two: the first `width` entries of every row in an [`Ell`] part
/// (rows shorter than `width` are padded, see [`crate::sparse::ELL_PAD`]), the remaining
/// entries of the longer rows in a [`Csr`] overflow part of the same shape.
///
/// The split is canonical: a row has overflow entries only when its ELL row is full, and its
/// overflow columns all come after its ELL columns, so [`Csr::to_csr_ell`] and
/// [`CsrEll::to_csr`] round-trip exactly. Choose `width` with [`CsrEll::width_for_quantile`]
/// (e.g. the 90th percentile of row lengths) so that most rows fit the ELL part.
#[derive(Clone, Debug, PartialEq)]
pub struct CsrEll {
    /// The first `ell.width` entries of every row.
    pub ell: Ell,
    /// The entries past the first `ell.width` of each row.
    pub overflow: Csr,
}

impl CsrEll {
    /// Builds and validates a hybrid from its two parts.
    pub fn new(ell: Ell, overflow: Csr) -> Result<Self> {
        let m = CsrEll { ell, overflow };
        m.validate()?;
        Ok(m)
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.ell.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ell.ncols
    }

    /// Width of the ELL part.
    pub fn width(&self) -> usize {
        self.ell.width
    }

    /// Number of stored entries in both parts.
    pub fn nnz(&self) -> usize {
        self.ell.nnz() + self.overflow.nnz()
    }

    /// The smallest width that holds every row of `csr` of length at or below the
    /// `q`-quantile of the row lengths (`q` in `[0, 1]`: 0 → the shortest row, 1 → the
    /// longest, so no overflow). Fails with [`Error::Option`] for `q` outside `[0, 1]`.
    pub fn width_for_quantile(csr: &Csr, q: f64) -> Result<usize> {
        if !(0.0..=1.0).contains(&q) {
            return Err(Error::Option(format!(
                "ELL width quantile {q} is outside [0, 1]"
            )));
        }
        let mut lens: Vec<u32> = csr.row_ptr.windows(2).map(|w| w[1] - w[0]).collect();
        if lens.is_empty() {
            return Ok(0);
        }
        let k = ((lens.len() - 1) as f64 * q).ceil() as usize;
        let (_, kth, _) = lens.select_nth_unstable(k);
        Ok(*kth as usize)
    }

    /// Checks both parts, that their shapes agree, and that the split is canonical (overflow
    /// only after a full ELL row, overflow columns after the row's ELL columns); the error names
    /// the first bad row.
    pub fn validate(&self) -> Result<()> {
        const WHAT: &str = "CSR+ELL matrix";
        self.ell.validate()?;
        self.overflow.validate()?;
        let (e, o) = (&self.ell, &self.overflow);
        if e.nrows != o.nrows || e.ncols != o.ncols {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "ELL part is {}×{} but the CSR overflow part is {}×{}",
                    e.nrows, e.ncols, o.nrows, o.ncols
                ),
            ));
        }
        for i in 0..e.nrows {
            let r = o.row_range(i);
            if r.is_empty() {
                continue;
            }
            if e.row_len(i) < e.width {
                return Err(Error::invalid(
                    WHAT,
                    format!(
                        "row {i} has {} overflow entries but only {} of {} ELL slots used",
                        r.len(),
                        e.row_len(i),
                        e.width
                    ),
                ));
            }
            if e.width > 0 {
                let last = e.col_idx[(i + 1) * e.width - 1];
                let first = o.col_idx[r.start];
                if first <= last {
                    return Err(Error::invalid(
                        WHAT,
                        format!(
                            "row {i}: overflow column {first} (entry {}) does not follow the last \
                             ELL column {last}",
                            r.start
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Converts to CSR, merging each row's ELL entries and overflow entries.
    pub fn to_csr(&self) -> Csr {
        let (e, o) = (&self.ell, &self.overflow);
        let mut row_ptr = Vec::with_capacity(e.nrows + 1);
        row_ptr.push(0u32);
        let mut col_idx = Vec::with_capacity(self.nnz());
        let mut values = Vec::with_capacity(self.nnz());
        for i in 0..e.nrows {
            let s = e.row_slots(i);
            let n = e.row_len(i);
            col_idx.extend_from_slice(&e.col_idx[s.start..s.start + n]);
            values.extend_from_slice(&e.values[s.start..s.start + n]);
            col_idx.extend_from_slice(&o.col_idx[o.row_range(i)]);
            values.extend_from_slice(&o.values[o.row_range(i)]);
            row_ptr.push(col_idx.len() as u32);
        }
        Csr {
            nrows: e.nrows,
            ncols: e.ncols,
            row_ptr,
            col_idx,
            values,
        }
    }

    /// Converts to COO (row-major order).
    pub fn to_coo(&self) -> Coo {
        self.to_csr().to_coo()
    }
}
