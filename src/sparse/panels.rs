//! Column panels: a CSR matrix cut into matrices of its shape, each holding the entries of one
//! range of columns. A product by a panel gathers only its slice of the vector, so a vector far
//! beyond the cache is read a cache-sized window at a time (the fused pattern's `transpose`
//! variant at the KDD2010 shape).

use std::ops::Range;

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
    pub fn column_panel(&self, cut: Range<u32>) -> Csr {
        let mut row_ptr = Vec::with_capacity(self.nrows + 1);
        let (mut col_idx, mut values) = (vec![], vec![]);
        row_ptr.push(0);
        for r in 0..self.nrows {
            let row = self.row_range(r);
            let cols = &self.col_idx[row.clone()];
            // Columns increase within a row: the panel's entries are one run of it.
            let from = cols.partition_point(|&c| c < cut.start);
            let to = from + cols[from..].partition_point(|&c| c < cut.end);
            col_idx.extend_from_slice(&cols[from..to]);
            values.extend_from_slice(&self.values[row.start + from..row.start + to]);
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
}
