//! Compressed sparse row format.

use crate::sparse::convert::check_compressed;
use crate::sparse::coo::check_index_space;
use crate::sparse::Coo;
use crate::Result;

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
        // The shared check bounds each row's range by the arrays: row offsets that rise past
        // nnz and fall back by the end are reported, never indexed.
        check_compressed(
            WHAT,
            self.nrows,
            self.ncols,
            &self.row_ptr,
            &self.col_idx,
            &self.values,
            "row_ptr",
            "column",
            &|i| format!("row {i}"),
        )
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
        let mut rows = Vec::with_capacity(self.nnz());
        for (i, w) in self.row_ptr.windows(2).enumerate() {
            rows.extend(std::iter::repeat_n(i as u32, (w[1] - w[0]) as usize));
        }
        rows
    }

    /// Rows `rows` of this matrix as a matrix of their own (same columns; row offsets
    /// rebased to 0).
    pub fn row_band(&self, rows: std::ops::Range<usize>) -> Csr {
        let (lo, hi) = (
            self.row_ptr[rows.start] as usize,
            self.row_ptr[rows.end] as usize,
        );
        Csr {
            nrows: rows.len(),
            ncols: self.ncols,
            row_ptr: self.row_ptr[rows.start..=rows.end]
                .iter()
                .map(|&p| p - lo as u32)
                .collect(),
            col_idx: self.col_idx[lo..hi].to_vec(),
            values: self.values[lo..hi].to_vec(),
        }
    }

    /// The transpose, as CSR (stable counting sort by column, so columns stay sorted).
    pub fn transpose(&self) -> Csr {
        self.transpose_with_map().0
    }

    /// The transpose with column c of `self` as row `row_of(c)` (`row_of` a permutation of
    /// `0..ncols`): the transpose of `self` with its columns renumbered, columns sorted.
    pub fn transpose_by(&self, row_of: impl Fn(u32) -> usize + Sync) -> Csr {
        self.transposed(row_of).0
    }

    /// The transpose and, for each of its entries (in its CSR order), the index of the same
    /// entry in this matrix's CSR order. Parallel over row ranges.
    pub fn transpose_with_map(&self) -> (Csr, Vec<u32>) {
        self.transposed(|c| c as usize)
    }

    /// [`Csr::transpose_by`] with the entry map of [`Csr::transpose_with_map`].
    fn transposed(&self, row_of: impl Fn(u32) -> usize + Sync) -> (Csr, Vec<u32>) {
        let b = crate::sparse::bucket::bucket_entries(self, self.ncols, row_of);
        let mut values = vec![0f32; self.nnz()];
        crate::sparse::bucket::par_fill(&mut values, |offset, chunk| {
            for (k, v) in chunk.iter_mut().enumerate() {
                *v = self.values[b.entry[offset + k] as usize];
            }
        });
        let t = Csr {
            nrows: self.ncols,
            ncols: self.nrows,
            row_ptr: b.start.iter().map(|&x| x as u32).collect(),
            col_idx: b.row,
            values,
        };
        (t, b.entry)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn transpose_by_renumbers_the_columns_as_rows() {
        let x = crate::gen::power_law(200, 60, 1_500, 1.1, 9).unwrap();
        let t = x.transpose();
        assert_eq!(x.transpose_by(|c| c as usize), t);
        // Column c as row (c · 7 + 3) mod 60 (7 is prime to 60): that row is column c's.
        let row_of = |c: u32| (c as usize * 7 + 3) % 60;
        let p = x.transpose_by(row_of);
        p.validate().unwrap();
        for c in 0..60 {
            let (want, got) = (t.row_range(c), p.row_range(row_of(c as u32)));
            assert_eq!(
                t.col_idx[want.clone()],
                p.col_idx[got.clone()],
                "column {c}"
            );
            assert_eq!(t.values[want], p.values[got], "column {c}");
        }
    }
}
