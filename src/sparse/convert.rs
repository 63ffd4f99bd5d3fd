//! Conversions between the host formats (CSR, COO, CSC, ELL, DCSR, CSR+ELL, dense), and the
//! validation and transposition helpers the compressed formats share.
//!
//! Every conversion is exact: converting to another sparse format and back returns the same
//! arrays. The dense round trip drops stored zeros (see [`Csr::to_dense`]).

use crate::sparse::coo::check_index_space;
use crate::sparse::csr_ell::CsrEll;
use crate::sparse::{check_finite, Coo, Csc, Csr, Dcsr, Dense, Ell, ELL_PAD};
use crate::{Error, Result};

/// Validates one compressed axis: `ptr` has `n_major + 1` offsets running from 0 to
/// `idx.len()` without decreasing, minor indices are in range and strictly increasing within
/// each major slice, `values` is as long as `idx` and finite. `major_name(k)` names slice `k`
/// in messages (e.g. `"column 3"`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_compressed(
    what: &str,
    n_major: usize,
    n_minor: usize,
    ptr: &[u32],
    idx: &[u32],
    values: &[f32],
    ptr_name: &str,
    minor: &str,
    major_name: &dyn Fn(usize) -> String,
) -> Result<()> {
    if ptr.len() != n_major + 1 {
        return Err(Error::invalid(
            what,
            format!(
                "{ptr_name} has {} entries, expected {}",
                ptr.len(),
                n_major + 1
            ),
        ));
    }
    if idx.len() != values.len() {
        return Err(Error::invalid(
            what,
            format!("{} {minor} indices but {} values", idx.len(), values.len()),
        ));
    }
    if ptr[0] != 0 || ptr[n_major] as usize != values.len() {
        return Err(Error::invalid(
            what,
            format!(
                "{ptr_name} must run from 0 to nnz = {}, found {}..{}",
                values.len(),
                ptr[0],
                ptr[n_major]
            ),
        ));
    }
    // The whole of ptr first, so offsets that rise past nnz and fall back by the end are
    // reported as such rather than as the disorder a too-long slice then shows.
    if let Some(k) = ptr.windows(2).position(|w| w[0] > w[1]) {
        return Err(Error::invalid(
            what,
            format!("{ptr_name} decreases at {}", major_name(k)),
        ));
    }
    for k in 0..n_major {
        let (start, end) = (ptr[k] as usize, ptr[k + 1] as usize);
        let mut prev: Option<u32> = None;
        for (e, &c) in idx.iter().enumerate().take(end).skip(start) {
            if c as usize >= n_minor {
                return Err(Error::invalid(
                    what,
                    format!(
                        "{minor} {c} of entry {e} ({}) is out of range ({minor} count = {n_minor})",
                        major_name(k)
                    ),
                ));
            }
            if let Some(p) = prev {
                if c <= p {
                    let kind = if c == p { "duplicate" } else { "unsorted" };
                    return Err(Error::invalid(
                        what,
                        format!(
                            "{kind} {minor} {c} after {p} in {} (entry {e})",
                            major_name(k)
                        ),
                    ));
                }
            }
            prev = Some(c);
        }
    }
    check_finite(what, values)
}

/// Transposes a compressed matrix of `n_major` slices over `n_minor` minor indices by a stable
/// counting sort: returns `(ptr, idx, values)` of the transpose, minor slices sorted.
pub(crate) fn transpose_compressed(
    n_major: usize,
    n_minor: usize,
    ptr: &[u32],
    idx: &[u32],
    values: &[f32],
) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let nnz = values.len();
    let mut tptr = vec![0u32; n_minor + 1];
    for &c in idx {
        tptr[c as usize + 1] += 1;
    }
    for j in 0..n_minor {
        tptr[j + 1] += tptr[j];
    }
    let mut next = tptr.clone();
    let mut tidx = vec![0u32; nnz];
    let mut tvalues = vec![0f32; nnz];
    for k in 0..n_major {
        for e in ptr[k] as usize..ptr[k + 1] as usize {
            let c = idx[e] as usize;
            let dst = next[c] as usize;
            next[c] += 1;
            tidx[dst] = k as u32;
            tvalues[dst] = values[e];
        }
    }
    (tptr, tidx, tvalues)
}

impl Csr {
    /// Converts to CSC (the same entries stored column by column, rows sorted in each column).
    pub fn to_csc(&self) -> Csc {
        let (col_ptr, row_idx, values) = transpose_compressed(
            self.nrows,
            self.ncols,
            &self.row_ptr,
            &self.col_idx,
            &self.values,
        );
        Csc {
            nrows: self.nrows,
            ncols: self.ncols,
            col_ptr,
            row_idx,
            values,
        }
    }

    /// The length of the longest row (0 for a matrix without rows).
    pub fn max_row_len(&self) -> usize {
        self.row_ptr
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// Converts to ELL with the smallest width, the longest row's length. Fails with
    /// [`Error::TooLarge`] when `nrows × width` slots exceed the `u32` index space.
    pub fn to_ell(&self) -> Result<Ell> {
        self.to_ell_with_width(self.max_row_len())
    }

    /// Converts to ELL of the given `width` (≥ the longest row, or [`Error::Option`]); slots past
    /// each row's entries hold the padding column [`ELL_PAD`] and the value 0.
    pub fn to_ell_with_width(&self, width: usize) -> Result<Ell> {
        let longest = self.max_row_len();
        if width < longest {
            return Err(Error::Option(format!(
                "ELL width {width} is shorter than the longest row ({longest} entries)"
            )));
        }
        let slots = ell_slots("ELL matrix", self.nrows, self.ncols, width)?;
        let mut col_idx = vec![ELL_PAD; slots];
        let mut values = vec![0f32; slots];
        for i in 0..self.nrows {
            let r = self.row_range(i);
            let n = r.len();
            col_idx[i * width..i * width + n].copy_from_slice(&self.col_idx[r.clone()]);
            values[i * width..i * width + n].copy_from_slice(&self.values[r]);
        }
        Ok(Ell {
            nrows: self.nrows,
            ncols: self.ncols,
            width,
            col_idx,
            values,
        })
    }

    /// Converts to DCSR, keeping only the non-empty rows.
    pub fn to_dcsr(&self) -> Dcsr {
        let mut row_ids = Vec::new();
        let mut row_ptr = vec![0u32];
        for i in 0..self.nrows {
            if self.row_ptr[i + 1] > self.row_ptr[i] {
                row_ids.push(i as u32);
                row_ptr.push(self.row_ptr[i + 1]);
            }
        }
        Dcsr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ids,
            row_ptr,
            col_idx: self.col_idx.clone(),
            values: self.values.clone(),
        }
    }

    /// Splits into the CSR+ELL hybrid: the first `width` entries of every row go to the ELL
    /// part (padded), the rest of each row to the CSR overflow part. See
    /// [`CsrEll::width_for_quantile`] for choosing `width`. Fails with [`Error::TooLarge`] when
    /// `nrows × width` slots exceed the `u32` index space.
    pub fn to_csr_ell(&self, width: usize) -> Result<CsrEll> {
        let slots = ell_slots("CSR+ELL matrix", self.nrows, self.ncols, width)?;
        let mut ell_cols = vec![ELL_PAD; slots];
        let mut ell_values = vec![0f32; slots];
        let mut row_ptr = Vec::with_capacity(self.nrows + 1);
        row_ptr.push(0u32);
        let mut col_idx = Vec::new();
        let mut values = Vec::new();
        for i in 0..self.nrows {
            let r = self.row_range(i);
            let split = r.start + r.len().min(width);
            let n = split - r.start;
            ell_cols[i * width..i * width + n].copy_from_slice(&self.col_idx[r.start..split]);
            ell_values[i * width..i * width + n].copy_from_slice(&self.values[r.start..split]);
            col_idx.extend_from_slice(&self.col_idx[split..r.end]);
            values.extend_from_slice(&self.values[split..r.end]);
            row_ptr.push(col_idx.len() as u32);
        }
        Ok(CsrEll {
            ell: Ell {
                nrows: self.nrows,
                ncols: self.ncols,
                width,
                col_idx: ell_cols,
                values: ell_values,
            },
            overflow: Csr {
                nrows: self.nrows,
                ncols: self.ncols,
                row_ptr,
                col_idx,
                values,
            },
        })
    }

    /// Converts to a dense row-major matrix (absent entries are 0). Stored zeros become plain
    /// zeros, so [`Dense::to_csr`] drops them on the way back.
    ///
    /// # Panics
    /// When `nrows × ncols` overflows `usize`.
    pub fn to_dense(&self) -> Dense {
        let cells = self
            .nrows
            .checked_mul(self.ncols)
            .expect("nrows × ncols overflows usize");
        let mut data = vec![0f32; cells];
        for i in 0..self.nrows {
            for e in self.row_range(i) {
                data[i * self.ncols + self.col_idx[e] as usize] = self.values[e];
            }
        }
        Dense {
            nrows: self.nrows,
            ncols: self.ncols,
            data,
        }
    }
}

/// `nrows × width`, checked against the `u32` index space.
pub(crate) fn ell_slots(what: &str, nrows: usize, ncols: usize, width: usize) -> Result<usize> {
    let slots = nrows.saturating_mul(width);
    check_index_space(what, nrows, ncols, slots)?;
    Ok(slots)
}

impl Dense {
    /// Converts to CSR keeping every value that is not zero (`0.0` and `-0.0` are dropped;
    /// NaN is kept, and then fails [`Csr::validate`]).
    pub fn to_csr(&self) -> Csr {
        let mut row_ptr = Vec::with_capacity(self.nrows + 1);
        row_ptr.push(0u32);
        let mut col_idx = Vec::new();
        let mut values = Vec::new();
        for i in 0..self.nrows {
            for (j, &v) in self.row(i).iter().enumerate() {
                if v != 0.0 {
                    col_idx.push(j as u32);
                    values.push(v);
                }
            }
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
}

impl From<&Csr> for Csc {
    fn from(m: &Csr) -> Self {
        m.to_csc()
    }
}

impl From<&Csc> for Csr {
    fn from(m: &Csc) -> Self {
        m.to_csr()
    }
}

impl TryFrom<&Csr> for Ell {
    type Error = Error;
    fn try_from(m: &Csr) -> Result<Self> {
        m.to_ell()
    }
}

impl From<&Ell> for Csr {
    fn from(m: &Ell) -> Self {
        m.to_csr()
    }
}

impl From<&Csr> for Dcsr {
    fn from(m: &Csr) -> Self {
        m.to_dcsr()
    }
}

impl From<&Dcsr> for Csr {
    fn from(m: &Dcsr) -> Self {
        m.to_csr()
    }
}

impl From<&CsrEll> for Csr {
    fn from(m: &CsrEll) -> Self {
        m.to_csr()
    }
}

impl From<&Csr> for Dense {
    fn from(m: &Csr) -> Self {
        m.to_dense()
    }
}

impl From<&Dense> for Csr {
    fn from(m: &Dense) -> Self {
        m.to_csr()
    }
}

impl From<&Coo> for Csc {
    /// Sums duplicates, like [`Coo::to_csr`].
    fn from(m: &Coo) -> Self {
        m.to_csr().to_csc()
    }
}

impl From<&Coo> for Dcsr {
    /// Sums duplicates, like [`Coo::to_csr`].
    fn from(m: &Coo) -> Self {
        m.to_csr().to_dcsr()
    }
}

impl From<&Csc> for Coo {
    fn from(m: &Csc) -> Self {
        m.to_coo()
    }
}

impl From<&Ell> for Coo {
    fn from(m: &Ell) -> Self {
        m.to_csr().to_coo()
    }
}

impl From<&Dcsr> for Coo {
    fn from(m: &Dcsr) -> Self {
        m.to_coo()
    }
}

impl From<&CsrEll> for Coo {
    fn from(m: &CsrEll) -> Self {
        m.to_csr().to_coo()
    }
}
