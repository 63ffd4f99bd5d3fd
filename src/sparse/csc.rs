//! Compressed sparse column format.

use crate::sparse::convert::{check_compressed, transpose_compressed};
use crate::sparse::coo::check_index_space;
use crate::sparse::{Coo, Csr};
use crate::Result;

/// A sparse matrix in CSC: `col_ptr` (ncols + 1 offsets), then per column strictly increasing
/// row indices and their values. Validated on construction: a `Csc` built through [`Csc::new`]
/// always satisfies [`Csc::validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct Csc {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Column offsets: column `j` holds entries `col_ptr[j]..col_ptr[j + 1]`.
    pub col_ptr: Vec<u32>,
    /// Row index of each entry, strictly increasing within a column.
    pub row_idx: Vec<u32>,
    /// Value of each entry.
    pub values: Vec<f32>,
}

impl Csc {
    /// Builds and validates a CSC matrix.
    pub fn new(
        nrows: usize,
        ncols: usize,
        col_ptr: Vec<u32>,
        row_idx: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self> {
        let csc = Csc {
            nrows,
            ncols,
            col_ptr,
            row_idx,
            values,
        };
        csc.validate()?;
        Ok(csc)
    }

    /// An empty `nrows × ncols` matrix.
    pub fn empty(nrows: usize, ncols: usize) -> Self {
        Csc {
            nrows,
            ncols,
            col_ptr: vec![0; ncols + 1],
            row_idx: vec![],
            values: vec![],
        }
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Entries `start..end` of column `j`.
    pub fn col_range(&self, j: usize) -> std::ops::Range<usize> {
        self.col_ptr[j] as usize..self.col_ptr[j + 1] as usize
    }

    /// Checks offsets, index ranges, strict ordering (no duplicates) and finiteness; the error
    /// names the first bad entry.
    pub fn validate(&self) -> Result<()> {
        const WHAT: &str = "CSC matrix";
        check_index_space(WHAT, self.nrows, self.ncols, self.values.len())?;
        check_compressed(
            WHAT,
            self.ncols,
            self.nrows,
            &self.col_ptr,
            &self.row_idx,
            &self.values,
            "col_ptr",
            "row",
            &|j| format!("column {j}"),
        )
    }

    /// Converts to CSR (columns sorted within each row).
    pub fn to_csr(&self) -> Csr {
        let (row_ptr, col_idx, values) = transpose_compressed(
            self.ncols,
            self.nrows,
            &self.col_ptr,
            &self.row_idx,
            &self.values,
        );
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr,
            col_idx,
            values,
        }
    }

    /// Converts to COO in column-major order.
    pub fn to_coo(&self) -> Coo {
        let mut cols = Vec::with_capacity(self.nnz());
        for j in 0..self.ncols {
            cols.extend(std::iter::repeat_n(j as u32, self.col_range(j).len()));
        }
        Coo {
            nrows: self.nrows,
            ncols: self.ncols,
            rows: self.row_idx.clone(),
            cols,
            values: self.values.clone(),
        }
    }

    /// The transpose as CSR, without moving any entry (the CSC arrays of A are the CSR arrays
    /// of Aᵀ).
    pub fn transpose(&self) -> Csr {
        Csr {
            nrows: self.ncols,
            ncols: self.nrows,
            row_ptr: self.col_ptr.clone(),
            col_idx: self.row_idx.clone(),
            values: self.values.clone(),
        }
    }
}
