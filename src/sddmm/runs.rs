//! Row runs for the `row_run` kernel: S's columns cut into panels of `tj`, and every row's
//! nonzeros within a panel cut into runs of at most `max_len`, each run owned by one virtual
//! subgroup that holds the row of A in registers while it streams the run's rows of B. A
//! row's nonzeros within a panel are contiguous in CSR order (columns are sorted), so runs
//! index S's CSR arrays directly and P is written in CSR order without a permutation.

/// The runs of a CSR pattern (`row_ptr`, `col_idx`): `(row, first nonzero, end, 0)` for
/// every run of at most `max_len` nonzeros of one row within one column panel of width `tj`,
/// panel after panel (so the dispatch streams one panel of B through the cache at a time),
/// and within a panel longest first (so the workgroups of one panel take similar runs;
/// ties in CSR order). Bucketed in O(nnz + panels · max_len).
pub fn row_runs(row_ptr: &[u32], col_idx: &[u32], max_len: usize, tj: usize) -> Vec<[u32; 4]> {
    let max_len = max_len.max(1);
    let tj = tj.max(1);
    let nrows = row_ptr.len().saturating_sub(1);
    let n_panels = col_idx.iter().max().map_or(1, |&c| c as usize / tj + 1);
    // Bucket of a run: panel-major, then longest first.
    let bucket = |panel: usize, len: usize| panel * max_len + (max_len - len);
    let each_run = |mut visit: Box<dyn FnMut(usize, usize, usize, usize) + '_>| {
        for r in 0..nrows {
            let (mut e, end) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            while e < end {
                let panel = col_idx[e] as usize / tj;
                let panel_end = ((panel + 1) * tj).min(u32::MAX as usize + 1);
                // The row's nonzeros in this panel: columns are sorted within the row.
                let stop = e + col_idx[e..end].partition_point(|&c| (c as usize) < panel_end);
                while e < stop {
                    let len = (stop - e).min(max_len);
                    visit(panel, r, e, len);
                    e += len;
                }
            }
        }
    };
    let mut count = vec![0usize; n_panels * max_len + 1];
    each_run(Box::new(|panel, _, _, len| {
        count[bucket(panel, len) + 1] += 1
    }));
    for i in 1..count.len() {
        count[i] += count[i - 1];
    }
    let mut runs = vec![[0u32; 4]; count[count.len() - 1]];
    each_run(Box::new(|panel, r, e, len| {
        let slot = &mut count[bucket(panel, len)];
        runs[*slot] = [r as u32, e as u32, (e + len) as u32, 0];
        *slot += 1;
    }));
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// row_ptr and col_idx of rows with the given sorted columns.
    fn csr(rows: &[&[u32]]) -> (Vec<u32>, Vec<u32>) {
        let mut row_ptr = vec![0u32];
        let mut cols = vec![];
        for r in rows {
            cols.extend_from_slice(r);
            row_ptr.push(cols.len() as u32);
        }
        (row_ptr, cols)
    }

    fn check_cover(row_ptr: &[u32], cols: &[u32], runs: &[[u32; 4]], max_len: u32, tj: u32) {
        let mut covered = vec![0u32; cols.len()];
        for &[row, first, end, pad] in runs {
            assert!(end > first && end - first <= max_len && pad == 0);
            assert!(first >= row_ptr[row as usize] && end <= row_ptr[row as usize + 1]);
            let panel = cols[first as usize] / tj;
            assert!(cols[first as usize..end as usize]
                .iter()
                .all(|c| c / tj == panel));
            for e in first..end {
                covered[e as usize] += 1;
            }
        }
        assert!(covered.iter().all(|&c| c == 1), "{covered:?}");
        // Panel-major, longest first within a panel.
        for w in runs.windows(2) {
            let (p0, p1) = (cols[w[0][1] as usize] / tj, cols[w[1][1] as usize] / tj);
            assert!(p0 < p1 || (p0 == p1 && w[0][2] - w[0][1] >= w[1][2] - w[1][1]));
        }
    }

    #[test]
    fn runs_cover_every_nonzero_once_longest_first() {
        // Rows of 0, 1, 7, 3, 0, 16 and 5 nonzeros in one panel, runs of at most 4.
        let rows: Vec<Vec<u32>> = [0u32, 1, 7, 3, 0, 16, 5]
            .iter()
            .map(|&n| (0..n).map(|c| c * 2).collect())
            .collect();
        let refs: Vec<&[u32]> = rows.iter().map(|r| r.as_slice()).collect();
        let (row_ptr, cols) = csr(&refs);
        let runs = row_runs(&row_ptr, &cols, 4, 1000);
        check_cover(&row_ptr, &cols, &runs, 4, 1000);
        // 1 + (4+3) + 3 + (4·4) + (4+1) nonzeros in 1 + 2 + 1 + 4 + 2 runs.
        assert_eq!(runs.len(), 10);
    }

    #[test]
    fn runs_stop_at_panel_boundaries() {
        let (row_ptr, cols) = csr(&[&[0, 1, 2, 9, 10, 11, 12, 30], &[], &[5, 19, 20, 21]]);
        let runs = row_runs(&row_ptr, &cols, 3, 10);
        check_cover(&row_ptr, &cols, &runs, 3, 10);
        // Row 0: {0,1,2} {9} | {10,11,12} | {30}; row 2: {5} | {19} | {20,21}.
        assert_eq!(runs.len(), 7);
        assert_eq!(runs[0], [0, 0, 3, 0]);
    }

    #[test]
    fn empty_matrix_has_no_runs() {
        assert!(row_runs(&[0, 0, 0], &[], 8, 4).is_empty());
        assert!(row_runs(&[0], &[], 8, 4).is_empty());
    }
}
