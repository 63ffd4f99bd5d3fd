//! Cutting S into parts of equal nonzeros for several devices (cuSDDMM's column partition, or
//! a row partition where that balances better).
//!
//! A part is a matrix of its own (rows and columns renumbered from 0) with the ranges of A's
//! and B's rows it reads, and the place of each of its nonzeros in S's CSR order, so the
//! parts' outputs gather back into P exactly.

use std::ops::Range;

use serde::Serialize;

use crate::sparse::Csr;
use crate::{limits, Error, Result};

/// How S is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Cut {
    /// Contiguous row bands: a part reads its own rows of A and every row of B; its output
    /// is a contiguous range of S's CSR arrays.
    Rows,
    /// Contiguous column bands (cuSDDMM): a part reads every row of A and its own rows of B;
    /// its outputs are scattered over S's CSR arrays.
    Columns,
}

impl Cut {
    /// The CLI name (`rows`, `columns`).
    pub fn name(self) -> &'static str {
        match self {
            Cut::Rows => "rows",
            Cut::Columns => "columns",
        }
    }
}

/// Where a part's nonzeros sit in S's CSR arrays.
#[derive(Clone, Debug, PartialEq)]
pub enum Places {
    /// Consecutive, from this offset (row cut).
    From(usize),
    /// One index per nonzero of the part, in the part's CSR order (column cut).
    Each(Vec<u32>),
}

/// One part of S.
#[derive(Clone, Debug)]
pub struct Part {
    /// Rows of A (= rows of S) the part reads; its row 0 is S's row `rows.start`.
    pub rows: Range<usize>,
    /// Rows of B (= columns of S) the part reads; its column 0 is S's column `cols.start`.
    pub cols: Range<usize>,
    /// The part as a matrix of its own.
    pub s: Csr,
    /// Where its nonzeros go in S's CSR order.
    pub places: Places,
}

impl Part {
    /// Writes the part's output values (its CSR order) into `p` (S's CSR order).
    pub fn scatter(&self, values: &[f32], p: &mut [f32]) {
        match &self.places {
            Places::From(offset) => p[*offset..*offset + values.len()].copy_from_slice(values),
            Places::Each(places) => {
                for (&at, &v) in places.iter().zip(values) {
                    p[at as usize] = v;
                }
            }
        }
    }
}

/// Boundaries `0 = b_0 ≤ b_1 ≤ … ≤ b_parts = counts.len() - 1` over a prefix-sum array
/// `counts` (nonzeros before each row or column) so that part p holds about nnz / parts
/// nonzeros: b_p is the first index whose prefix reaches p·nnz / parts. A row or column
/// heavier than a part stays whole, so parts can come out uneven or empty.
fn balanced_bounds(prefix: &[u64], parts: usize) -> Vec<usize> {
    let n = prefix.len() - 1;
    let total = prefix[n];
    let mut bounds = Vec::with_capacity(parts + 1);
    bounds.push(0);
    for p in 1..parts {
        let target = (total as u128 * p as u128 / parts as u128) as u64;
        let b = prefix.partition_point(|&c| c < target).min(n);
        bounds.push(b.max(*bounds.last().unwrap()));
    }
    bounds.push(n);
    bounds
}

/// Cuts `s` into `parts` parts of about equal nonzeros along `cut`.
pub fn partition(s: &Csr, parts: usize, cut: Cut) -> Result<Vec<Part>> {
    if parts == 0 {
        return Err(Error::Option("S must be cut into at least one part".into()));
    }
    match cut {
        Cut::Rows => Ok(by_rows(s, parts)),
        Cut::Columns => by_columns(s, parts),
    }
}

fn by_rows(s: &Csr, parts: usize) -> Vec<Part> {
    let prefix: Vec<u64> = s.row_ptr.iter().map(|&p| p as u64).collect();
    let bounds = balanced_bounds(&prefix, parts);
    bounds
        .windows(2)
        .map(|w| Part {
            rows: w[0]..w[1],
            cols: 0..s.ncols,
            s: s.row_band(w[0]..w[1]),
            places: Places::From(s.row_ptr[w[0]] as usize),
        })
        .collect()
}

fn by_columns(s: &Csr, parts: usize) -> Result<Vec<Part>> {
    let mut prefix = vec![0u64; s.ncols + 1];
    for &c in &s.col_idx {
        prefix[c as usize + 1] += 1;
    }
    for j in 0..s.ncols {
        prefix[j + 1] += prefix[j];
    }
    let bounds = balanced_bounds(&prefix, parts);
    // Which part owns each column.
    let mut owner = vec![0u32; s.ncols];
    for (p, w) in bounds.windows(2).enumerate() {
        owner[w[0]..w[1]].fill(p as u32);
    }
    let mut out: Vec<Part> = Vec::with_capacity(parts);
    for w in bounds.windows(2) {
        let nnz = (prefix[w[1]] - prefix[w[0]]) as usize;
        let mut row_ptr =
            limits::try_with_capacity::<u32>("a column part's row offsets", s.nrows + 1)?;
        row_ptr.push(0);
        out.push(Part {
            rows: 0..s.nrows,
            cols: w[0]..w[1],
            s: Csr {
                nrows: s.nrows,
                ncols: w[1] - w[0],
                row_ptr,
                col_idx: limits::try_with_capacity("a column part's column indices", nnz)?,
                values: limits::try_with_capacity("a column part's values", nnz)?,
            },
            places: Places::Each(limits::try_with_capacity(
                "a column part's output places",
                nnz,
            )?),
        });
    }
    // One pass over S in CSR order: each part receives its entries of every row in order,
    // so its columns stay sorted within rows.
    for i in 0..s.nrows {
        for e in s.row_range(i) {
            let c = s.col_idx[e] as usize;
            let part = &mut out[owner[c] as usize];
            part.s.col_idx.push((c - part.cols.start) as u32);
            part.s.values.push(s.values[e]);
            if let Places::Each(places) = &mut part.places {
                places.push(e as u32);
            }
        }
        for part in &mut out {
            part.s.row_ptr.push(part.s.col_idx.len() as u32);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Csr {
        // 4×5: row 1 is heavy, column 2 is heavy.
        Csr::new(
            4,
            5,
            vec![0, 2, 7, 8, 10],
            vec![0, 2, 0, 1, 2, 3, 4, 2, 2, 4],
            (1..=10).map(|v| v as f32).collect(),
        )
        .unwrap()
    }

    fn gathered(s: &Csr, parts: &[Part]) -> Vec<f32> {
        let mut p = vec![f32::NAN; s.nnz()];
        for part in parts {
            part.s.validate().unwrap();
            part.scatter(&part.s.values, &mut p);
        }
        p
    }

    #[test]
    fn every_cut_gathers_back_to_s() {
        let s = sample();
        for cut in [Cut::Rows, Cut::Columns] {
            for parts in 1..=6 {
                let ps = partition(&s, parts, cut).unwrap();
                assert_eq!(ps.len(), parts);
                assert_eq!(ps.iter().map(|p| p.s.nnz()).sum::<usize>(), s.nnz());
                assert_eq!(gathered(&s, &ps), s.values, "{cut:?} into {parts}");
            }
        }
    }

    #[test]
    fn parts_are_balanced_and_cover_the_ranges() {
        let s = sample();
        let ps = partition(&s, 2, Cut::Rows).unwrap();
        assert_eq!((ps[0].rows.clone(), ps[1].rows.clone()), (0..2, 2..4));
        let ps = partition(&s, 2, Cut::Columns).unwrap();
        assert_eq!(ps[0].cols.end, ps[1].cols.start);
        // The heavy column 2 (4 of 10 nonzeros) stays whole.
        assert!(ps.iter().all(|p| p.s.nnz() <= 7));
    }

    #[test]
    fn more_parts_than_rows_leaves_empty_parts() {
        let s = sample();
        let ps = partition(&s, 9, Cut::Rows).unwrap();
        assert!(ps.iter().any(|p| p.s.nnz() == 0));
        assert_eq!(gathered(&s, &ps), s.values);
        assert!(partition(&s, 0, Cut::Rows).is_err());
    }
}
