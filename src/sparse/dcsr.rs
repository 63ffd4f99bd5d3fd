//! Doubly compressed sparse row format: CSR over the non-empty rows only.

use crate::sparse::convert::check_compressed;
use crate::sparse::coo::check_index_space;
use crate::sparse::{Coo, Csr};
use crate::{Error, Result};

/// A sparse matrix in DCSR: the ids of the non-empty rows, strictly increasing, and CSR arrays
/// over those rows only. Used to prune empty rows: a kernel launches one work item per stored
/// row instead of per row. Every listed row is non-empty, so the form is canonical and
/// [`Csr::to_dcsr`] / [`Dcsr::to_csr`] round-trip exactly.
#[derive(Clone, Debug, PartialEq)]
pub struct Dcsr {
    /// Number of rows of the matrix (stored or not).
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Ids of the non-empty rows, strictly increasing.
    pub row_ids: Vec<u32>,
    /// Offsets over the stored rows: stored row `k` (row `row_ids[k]` of the matrix) holds
    /// entries `row_ptr[k]..row_ptr[k + 1]`; `row_ids.len() + 1` entries.
    pub row_ptr: Vec<u32>,
    /// Column index of each entry, strictly increasing within a row.
    pub col_idx: Vec<u32>,
    /// Value of each entry.
    pub values: Vec<f32>,
}

impl Dcsr {
    /// Builds and validates a DCSR matrix.
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ids: Vec<u32>,
        row_ptr: Vec<u32>,
        col_idx: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self> {
        let m = Dcsr {
            nrows,
            ncols,
            row_ids,
            row_ptr,
            col_idx,
            values,
        };
        m.validate()?;
        Ok(m)
    }

    /// An empty `nrows × ncols` matrix (no stored rows).
    pub fn empty(nrows: usize, ncols: usize) -> Self {
        Dcsr {
            nrows,
            ncols,
            row_ids: vec![],
            row_ptr: vec![0],
            col_idx: vec![],
            values: vec![],
        }
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Number of stored (non-empty) rows.
    pub fn stored_rows(&self) -> usize {
        self.row_ids.len()
    }

    /// Entries `start..end` of stored row `k` (matrix row `row_ids[k]`).
    pub fn stored_range(&self, k: usize) -> std::ops::Range<usize> {
        self.row_ptr[k] as usize..self.row_ptr[k + 1] as usize
    }

    /// Checks row ids (in range, strictly increasing), offsets (every stored row non-empty),
    /// column ranges and ordering, and finiteness; the error names the first bad entry.
    pub fn validate(&self) -> Result<()> {
        const WHAT: &str = "DCSR matrix";
        check_index_space(WHAT, self.nrows, self.ncols, self.values.len())?;
        let mut prev: Option<u32> = None;
        for (k, &r) in self.row_ids.iter().enumerate() {
            if r as usize >= self.nrows {
                return Err(Error::invalid(
                    WHAT,
                    format!(
                        "row id {r} at stored row {k} is out of range (nrows = {})",
                        self.nrows
                    ),
                ));
            }
            if let Some(p) = prev {
                if r <= p {
                    let kind = if r == p { "duplicate" } else { "unsorted" };
                    return Err(Error::invalid(
                        WHAT,
                        format!("{kind} row id {r} after {p} at stored row {k}"),
                    ));
                }
            }
            prev = Some(r);
        }
        let ids = &self.row_ids;
        check_compressed(
            WHAT,
            ids.len(),
            self.ncols,
            &self.row_ptr,
            &self.col_idx,
            &self.values,
            "row_ptr",
            "column",
            &|k| format!("row {} (stored row {k})", ids[k]),
        )?;
        for (k, (&r, w)) in ids.iter().zip(self.row_ptr.windows(2)).enumerate() {
            if w[0] == w[1] {
                return Err(Error::invalid(
                    WHAT,
                    format!("stored row {k} (row {r}) is empty"),
                ));
            }
        }
        Ok(())
    }

    /// Converts to CSR (the pruned rows come back empty).
    pub fn to_csr(&self) -> Csr {
        let mut row_ptr = vec![0u32; self.nrows + 1];
        for (k, &r) in self.row_ids.iter().enumerate() {
            row_ptr[r as usize + 1] = self.row_ptr[k + 1] - self.row_ptr[k];
        }
        for i in 0..self.nrows {
            row_ptr[i + 1] += row_ptr[i];
        }
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr,
            col_idx: self.col_idx.clone(),
            values: self.values.clone(),
        }
    }

    /// Converts to COO (row-major order).
    pub fn to_coo(&self) -> Coo {
        let mut rows = Vec::with_capacity(self.nnz());
        for (k, &r) in self.row_ids.iter().enumerate() {
            rows.extend(std::iter::repeat_n(r, self.stored_range(k).len()));
        }
        Coo {
            nrows: self.nrows,
            ncols: self.ncols,
            rows,
            cols: self.col_idx.clone(),
            values: self.values.clone(),
        }
    }
}
