//! Dense row-major matrices on the host.

use crate::sparse::check_finite;
use crate::{Error, Result};

/// A dense row-major `nrows × ncols` matrix of `f32`.
#[derive(Clone, Debug, PartialEq)]
pub struct Dense {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Row-major values, `nrows * ncols` of them.
    pub data: Vec<f32>,
}

impl Dense {
    /// Builds and validates a dense matrix (length and finiteness).
    pub fn new(nrows: usize, ncols: usize, data: Vec<f32>) -> Result<Self> {
        let d = Dense { nrows, ncols, data };
        d.validate()?;
        Ok(d)
    }

    /// Checks the length and that every value is finite.
    pub fn validate(&self) -> Result<()> {
        let expected = self.nrows.checked_mul(self.ncols);
        if expected != Some(self.data.len()) {
            return Err(Error::invalid(
                "dense matrix",
                format!(
                    "{} values for a {}×{} matrix",
                    self.data.len(),
                    self.nrows,
                    self.ncols
                ),
            ));
        }
        check_finite("dense matrix", &self.data)
    }

    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.ncols..(i + 1) * self.ncols]
    }
}
