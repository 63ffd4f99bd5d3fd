//! Coordinate format: parallel arrays of (row, col, value).

use crate::sparse::{check_finite, Csr};
use crate::{Error, Result};

/// A sparse matrix as coordinate triplets. Entries may be in any order; duplicates are
/// allowed here and summed when converting to compressed formats.
#[derive(Clone, Debug, PartialEq)]
pub struct Coo {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Row index of each entry.
    pub rows: Vec<u32>,
    /// Column index of each entry.
    pub cols: Vec<u32>,
    /// Value of each entry.
    pub values: Vec<f32>,
}

impl Coo {
    /// Builds and validates a COO matrix: equal array lengths, indices in range, finite values.
    pub fn new(
        nrows: usize,
        ncols: usize,
        rows: Vec<u32>,
        cols: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self> {
        let coo = Coo {
            nrows,
            ncols,
            rows,
            cols,
            values,
        };
        coo.validate()?;
        Ok(coo)
    }

    /// An empty `nrows × ncols` matrix.
    pub fn empty(nrows: usize, ncols: usize) -> Self {
        Coo {
            nrows,
            ncols,
            rows: vec![],
            cols: vec![],
            values: vec![],
        }
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Checks lengths, index ranges and finiteness; the error names the first bad entry.
    pub fn validate(&self) -> Result<()> {
        const WHAT: &str = "COO matrix";
        if self.rows.len() != self.values.len() || self.cols.len() != self.values.len() {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "array lengths differ: {} rows, {} cols, {} values",
                    self.rows.len(),
                    self.cols.len(),
                    self.values.len()
                ),
            ));
        }
        check_index_space(WHAT, self.nrows, self.ncols, self.nnz())?;
        for (e, (&r, &c)) in self.rows.iter().zip(&self.cols).enumerate() {
            if r as usize >= self.nrows || c as usize >= self.ncols {
                return Err(Error::invalid(
                    WHAT,
                    format!(
                        "entry {e} at ({r}, {c}) is outside the {}×{} shape",
                        self.nrows, self.ncols
                    ),
                ));
            }
        }
        check_finite(WHAT, &self.values)
    }

    /// [`Coo::to_csr`], first checking the host memory it takes (row offsets for every row,
    /// the sort order and the entries) against [`crate::limits::host_budget`]: for readers,
    /// whose dimensions come from a file.
    pub fn try_to_csr(&self) -> Result<Csr> {
        let words = (self.nrows as u128 + 1) + 3 * self.nnz() as u128;
        let bytes = u64::try_from(words * 4).unwrap_or(u64::MAX);
        crate::limits::check_host(
            &format!(
                "CSR of a {}×{} matrix with {} entries",
                self.nrows,
                self.ncols,
                self.nnz()
            ),
            bytes,
        )?;
        Ok(self.to_csr())
    }

    /// Converts to CSR: entries sorted by (row, col), duplicates summed.
    pub fn to_csr(&self) -> Csr {
        let mut order: Vec<u32> = (0..self.nnz() as u32).collect();
        order.sort_unstable_by_key(|&e| (self.rows[e as usize], self.cols[e as usize]));
        let mut row_ptr = vec![0u32; self.nrows + 1];
        let mut col_idx = Vec::with_capacity(self.nnz());
        let mut values: Vec<f32> = Vec::with_capacity(self.nnz());
        let mut last: Option<(u32, u32)> = None;
        for &e in &order {
            let (r, c, v) = (
                self.rows[e as usize],
                self.cols[e as usize],
                self.values[e as usize],
            );
            if last == Some((r, c)) {
                *values.last_mut().expect("a previous entry exists") += v;
                continue;
            }
            last = Some((r, c));
            row_ptr[r as usize + 1] += 1;
            col_idx.push(c);
            values.push(v);
        }
        for i in 0..self.nrows {
            row_ptr[i + 1] += row_ptr[i];
        }
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr,
            col_idx,
            values,
        }
    }

    /// The transpose (rows and columns swapped).
    pub fn transpose(&self) -> Coo {
        Coo {
            nrows: self.ncols,
            ncols: self.nrows,
            rows: self.cols.clone(),
            cols: self.rows.clone(),
            values: self.values.clone(),
        }
    }
}

/// Indices are `u32` on the device: dimensions and nnz must fit.
pub(crate) fn check_index_space(what: &str, nrows: usize, ncols: usize, nnz: usize) -> Result<()> {
    let max = u32::MAX as usize;
    if nrows > max || ncols > max || nnz > max {
        return Err(Error::TooLarge {
            what: format!("{what} of {nrows}×{ncols} with {nnz} nonzeros"),
            needed: "indices beyond 32 bits".into(),
            limit: format!("{max} per dimension and nonzeros (u32 indices)"),
        });
    }
    Ok(())
}
