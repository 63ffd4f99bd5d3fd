//! Column panels: a CSR matrix cut into matrices of its shape, each holding the entries of one
//! range of columns. A product by a panel gathers only its slice of the vector, so a vector far
//! beyond the cache is read a cache-sized window at a time (the fused pattern's `transpose`
//! variant at the KDD2010 shape).

use std::ops::Range;

use crate::sparse::bucket::{par_fill, par_map};
use crate::sparse::Csr;

/// The column ranges of `count` panels of equal width over `ncols` columns (some empty where
/// `count > ncols`). `count` must be at least 1.
pub fn panel_bounds(ncols: usize, count: usize) -> Vec<Range<u32>> {
    let at = |k: usize| (ncols as u64 * k as u64 / count as u64) as u32;
    (0..count).map(|k| at(k)..at(k + 1)).collect()
}

impl Csr {
    /// `self` cut into `count` matrices of its shape (at least 1), panel k holding the entries
    /// in columns [`panel_bounds`]`(ncols, count)[k]`, in CSR order: the panels sum to `self`.
    pub fn column_panels(&self, count: usize) -> Vec<Csr> {
        panel_bounds(self.ncols, count)
            .into_iter()
            .map(|cut| self.column_panel(cut))
            .collect()
    }

    /// The matrix of `self`'s shape holding its entries in columns `cut`, in CSR order (one
    /// panel of [`Csr::column_panels`], built alone so a caller holds one copy at a time).
    /// Parallel over rows: at the KDD2010 shape a panel of X or Xᵀ is 10⁸ entries.
    pub fn column_panel(&self, cut: Range<u32>) -> Csr {
        // Per row: where its run of columns in `cut` starts and its length (columns increase
        // within a row, so the panel's entries are one run of it).
        let runs: Vec<(u32, u32)> = par_map(self.nrows, |r| {
            let row = self.row_range(r);
            let cols = &self.col_idx[row.clone()];
            let from = cols.partition_point(|&c| c < cut.start);
            let len = cols[from..].partition_point(|&c| c < cut.end);
            ((row.start + from) as u32, len as u32)
        });
        let mut row_ptr = Vec::with_capacity(self.nrows + 1);
        row_ptr.push(0u32);
        let mut end = 0u32;
        for &(_, len) in &runs {
            end += len;
            row_ptr.push(end);
        }
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            col_idx: gather_runs(&row_ptr, &runs, &self.col_idx),
            values: gather_runs(&row_ptr, &runs, &self.values),
            row_ptr,
        }
    }
}

/// The runs `runs[r]` (source start, length) of `src` laid end to end, run r at
/// `row_ptr[r]` (their prefix sums), filled in parallel over the output.
fn gather_runs<T: Copy + Default + Send + Sync>(
    row_ptr: &[u32],
    runs: &[(u32, u32)],
    src: &[T],
) -> Vec<T> {
    let mut out = vec![T::default(); *row_ptr.last().unwrap_or(&0) as usize];
    par_fill(&mut out, |offset, mut chunk| {
        // The run holding `offset`: the last to start at or before it (empty runs before
        // it start there too and are passed over).
        let mut r = row_ptr.partition_point(|&p| p as usize <= offset) - 1;
        let mut k = offset - row_ptr[r] as usize;
        while !chunk.is_empty() {
            let (start, len) = (runs[r].0 as usize, runs[r].1 as usize);
            let take = (len - k).min(chunk.len());
            let (head, rest) = chunk.split_at_mut(take);
            head.copy_from_slice(&src[start + k..start + k + take]);
            (chunk, r, k) = (rest, r + 1, 0);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_partition_the_entries_by_column() {
        let x = crate::gen::power_law(300, 70, 2_000, 1.1, 5).unwrap();
        for count in [1, 2, 3, 7, 70, 100] {
            let bounds = panel_bounds(x.ncols, count);
            assert_eq!(bounds.first().unwrap().start, 0);
            assert_eq!(bounds.last().unwrap().end as usize, x.ncols);
            let panels = x.column_panels(count);
            assert_eq!(panels.len(), count);
            for (p, cut) in panels.iter().zip(&bounds) {
                p.validate().unwrap();
                assert!(p.col_idx.iter().all(|c| cut.contains(c)));
            }
            // Row by row, the panels' entries in order are the row's.
            for r in 0..x.nrows {
                let joined: Vec<(u32, f32)> = panels
                    .iter()
                    .flat_map(|p| p.row_range(r).map(|e| (p.col_idx[e], p.values[e])))
                    .collect();
                let want: Vec<(u32, f32)> = x
                    .row_range(r)
                    .map(|e| (x.col_idx[e], x.values[e]))
                    .collect();
                assert_eq!(joined, want, "row {r}, {count} panels");
            }
        }
    }

    #[test]
    fn large_panels_filled_in_parallel_keep_every_rows_run() {
        // Enough entries for the parallel fill to cut its output into chunks, with empty rows
        // (more rows than a power law of this density fills) and runs crossing chunk edges.
        let x = crate::gen::power_law(60_000, 3_000, 400_000, 1.2, 11).unwrap();
        assert!(x.row_ptr.windows(2).any(|w| w[0] == w[1]), "no empty row");
        let bounds = panel_bounds(x.ncols, 3);
        let panels = x.column_panels(3);
        for (p, cut) in panels.iter().zip(&bounds) {
            p.validate().unwrap();
            for r in 0..x.nrows {
                let want: Vec<(u32, f32)> = x
                    .row_range(r)
                    .filter(|&e| cut.contains(&x.col_idx[e]))
                    .map(|e| (x.col_idx[e], x.values[e]))
                    .collect();
                let got: Vec<(u32, f32)> = p
                    .row_range(r)
                    .map(|e| (p.col_idx[e], p.values[e]))
                    .collect();
                assert_eq!(got, want, "row {r}, columns {cut:?}");
            }
        }
        assert_eq!(panels.iter().map(Csr::nnz).sum::<usize>(), x.nnz());
    }
}
