//! Compressed sparse row format.

use crate::sparse::coo::check_index_space;
use crate::sparse::{check_finite, Coo};
use crate::{Error, Result};

/// A sparse matrix in CSR: `row_ptr` (nrows + 1 offsets), then per row strictly increasing
/// column indices and their values. Validated on construction: a `Csr` built through
/// [`Csr::new`] always satisfies [`Csr::validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct Csr {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Row offsets: row `i` holds entries `row_ptr[i]..row_ptr[i + 1]`.
    pub row_ptr: Vec<u32>,
    /// Column index of each entry, strictly increasing within a row.
    pub col_idx: Vec<u32>,
    /// Value of each entry.
    pub values: Vec<f32>,
}

impl Csr {
    /// Builds and validates a CSR matrix.
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<u32>,
        col_idx: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self> {
        let csr = Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        };
        csr.validate()?;
        Ok(csr)
    }

    /// An empty `nrows × ncols` matrix.
    pub fn empty(nrows: usize, ncols: usize) -> Self {
        Csr {
            nrows,
            ncols,
            row_ptr: vec![0; nrows + 1],
            col_idx: vec![],
            values: vec![],
        }
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Fraction of entries that are stored: nnz / (nrows · ncols).
    pub fn density(&self) -> f64 {
        let cells = self.nrows as f64 * self.ncols as f64;
        if cells == 0.0 {
            0.0
        } else {
            self.nnz() as f64 / cells
        }
    }

    /// Entries `start..end` of row `i`.
    pub fn row_range(&self, i: usize) -> std::ops::Range<usize> {
        self.row_ptr[i] as usize..self.row_ptr[i + 1] as usize
    }

    /// Checks offsets, index ranges, strict ordering (no duplicates) and finiteness.
    pub fn validate(&self) -> Result<()> {
        const WHAT: &str = "CSR matrix";
        check_index_space(WHAT, self.nrows, self.ncols, self.values.len())?;
        if self.row_ptr.len() != self.nrows + 1 {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "row_ptr has {} entries, expected nrows + 1 = {}",
                    self.row_ptr.len(),
                    self.nrows + 1
                ),
            ));
        }
        if self.col_idx.len() != self.values.len() {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "{} column indices but {} values",
                    self.col_idx.len(),
                    self.values.len()
                ),
            ));
        }
        if self.row_ptr[0] != 0 || self.row_ptr[self.nrows] as usize != self.values.len() {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "row_ptr must run from 0 to nnz = {}, found {}..{}",
                    self.values.len(),
                    self.row_ptr[0],
                    self.row_ptr[self.nrows]
                ),
            ));
        }
        for i in 0..self.nrows {
            if self.row_ptr[i] > self.row_ptr[i + 1] {
                return Err(Error::invalid(
                    WHAT,
                    format!("row_ptr decreases at row {i}"),
                ));
            }
            let mut prev: Option<u32> = None;
            for e in self.row_range(i) {
                let c = self.col_idx[e];
                if c as usize >= self.ncols {
                    return Err(Error::invalid(
                        WHAT,
                        format!(
                            "column {c} of entry {e} (row {i}) is out of range (ncols = {})",
                            self.ncols
                        ),
                    ));
                }
                if let Some(p) = prev {
                    if c <= p {
                        let kind = if c == p { "duplicate" } else { "unsorted" };
                        return Err(Error::invalid(
                            WHAT,
                            format!("{kind} column {c} after {p} in row {i} (entry {e})"),
                        ));
                    }
                }
                prev = Some(c);
            }
        }
        check_finite(WHAT, &self.values)
    }

    /// Converts to COO (row-major order).
    pub fn to_coo(&self) -> Coo {
        let mut rows = Vec::with_capacity(self.nnz());
        for i in 0..self.nrows {
            rows.extend(std::iter::repeat_n(i as u32, self.row_range(i).len()));
        }
        Coo {
            nrows: self.nrows,
            ncols: self.ncols,
            rows,
            cols: self.col_idx.clone(),
            values: self.values.clone(),
        }
    }

    /// The row index of every entry (the COO row array).
    pub fn row_indices(&self) -> Vec<u32> {
        self.to_coo().rows
    }

    /// The transpose, as CSR (counting sort by column; stable, so columns stay sorted).
    pub fn transpose(&self) -> Csr {
        let mut row_ptr = vec![0u32; self.ncols + 1];
        for &c in &self.col_idx {
            row_ptr[c as usize + 1] += 1;
        }
        for j in 0..self.ncols {
            row_ptr[j + 1] += row_ptr[j];
        }
        let mut next = row_ptr.clone();
        let mut col_idx = vec![0u32; self.nnz()];
        let mut values = vec![0f32; self.nnz()];
        for i in 0..self.nrows {
            for e in self.row_range(i) {
                let c = self.col_idx[e] as usize;
                let dst = next[c] as usize;
                next[c] += 1;
                col_idx[dst] = i as u32;
                values[dst] = self.values[e];
            }
        }
        Csr {
            nrows: self.ncols,
            ncols: self.nrows,
            row_ptr,
            col_idx,
            values,
        }
    }
}
