//! Eq. 5 on the rows X actually has: the sparse row kernel's C chosen by a schedule estimate.
//!
//! Eq. 5 spreads the rows evenly over the resident vectors (one wave of workgroups), which is
//! the best split when every row costs the same. On power-law rows it is not: a vector that
//! draws a few long rows holds its workgroup's slot on the compute unit long after the
//! others finish, and a second wave of smaller workgroups fills those slots. Each workgroup
//! also pays a fixed cost (clearing and flushing its copy of w), which favours fewer. This
//! module weighs the two on X's own row lengths: for each candidate C it costs every vector's
//! rows in loop trips, takes each workgroup's slowest vector plus the fixed cost, places the
//! workgroups in dispatch order on the resident slots (each on the slot that frees first),
//! and adds the long-row passes; the candidate with the shortest estimate wins.
//!
//! Checked against the H100 sweeps of power-law X (500k rows, BENCHMARKS.md, twenty-fourth
//! measurements), it picks C/2 at n = 4,096 (measured 16.4% faster than Eq. 5's C) and
//! Eq. 5's C at n = 1,024 (its half 12.6% slower) and n = 200. In the H200 sweeps that
//! followed (twenty-fifth) its picks were the fastest of 190 and 180 points at n = 4,096 and
//! 1,024.

use crate::sparse::Csr;

/// Candidate C as multiples of Eq. 5's: a quarter, a half, itself, twice.
const C_FACTORS: [(u32, u32); 4] = [(1, 4), (1, 2), (1, 1), (2, 1)];

/// The schedule's inputs besides X: lanes per row `vs`, vectors per workgroup `nv`, resident
/// workgroups, the loop trips per invocation outside the row loop (`fixed`), and the long-row
/// threshold for a given C (rows longer go to the chunked passes, `u32::MAX`: none).
pub struct RowGrid<'a> {
    /// Lanes per row.
    pub vs: u32,
    /// Vectors per workgroup.
    pub nv: u32,
    /// Workgroups resident on the device at once.
    pub resident: u32,
    /// Loop trips per invocation outside the row loop (clearing and flushing w).
    pub fixed: u64,
    /// Long-row threshold at a given C.
    pub long_row: &'a dyn Fn(u32) -> u32,
}

/// Loop trips of one row of `len` entries for a vector of `vs` lanes: the dot product's
/// loads, the scale and the scatter (three trips per `vs` entries), the reduction's log2(VS)
/// shuffles and one for the row itself.
fn row_trips(len: u32, vs: u32) -> u64 {
    1 + 3 * len.div_ceil(vs) as u64 + vs.trailing_zeros() as u64
}

/// The estimated span, in loop trips, of the row kernel at `c` rows per vector: the
/// workgroups placed in order on `resident` slots, then the long-row passes.
pub fn span(x: &Csr, grid: &RowGrid, c: u32) -> u64 {
    let (m, c) = (x.nrows, c.max(1) as usize);
    let long_row = (grid.long_row)(c as u32);
    let per_group = c * grid.nv as usize;
    let groups = m.div_ceil(per_group).max(1);
    let mut slots = std::collections::BinaryHeap::new();
    let resident = (grid.resident.max(1) as usize).min(groups);
    slots.extend(std::iter::repeat_n(std::cmp::Reverse(0u64), resident));
    let mut long_entries = 0u64;
    for g in 0..groups {
        let mut slowest = 0u64;
        for v in 0..grid.nv as usize {
            let first = g * per_group + v * c;
            let mut trips = 0u64;
            for r in first..(first + c).min(m) {
                let len = x.row_ptr[r + 1] - x.row_ptr[r];
                if len > long_row {
                    long_entries += len as u64;
                    trips += 1;
                } else {
                    trips += row_trips(len, grid.vs);
                }
            }
            slowest = slowest.max(trips);
        }
        let std::cmp::Reverse(free) = slots.pop().expect("at least one slot");
        slots.push(std::cmp::Reverse(free + slowest + grid.fixed));
    }
    let end = slots.into_iter().map(|s| s.0).max().unwrap_or(0);
    // The chunked passes spread the long rows' entries over every resident invocation.
    let lanes = grid.resident.max(1) as u64 * (grid.nv * grid.vs).max(1) as u64;
    end + 3 * long_entries.div_ceil(lanes)
}

/// The C among `C_FACTORS` × `c0` (Eq. 5's), at most `c_max` and with at most
/// `max_groups` workgroups, with the shortest [`span`]; ties keep the larger C (fewer
/// workgroups). Returns C and the workgroups that cover X's rows at it.
pub fn rows_per_vector(
    x: &Csr,
    grid: &RowGrid,
    c0: u32,
    c_max: Option<u64>,
    max_groups: u32,
) -> (u32, u32) {
    let groups_at = |c: u32| x.nrows.div_ceil(c as usize * grid.nv as usize).max(1);
    let mut cands: Vec<u32> = C_FACTORS
        .iter()
        .map(|&(num, den)| (c0.saturating_mul(num) / den).max(1))
        .filter(|&c| c_max.is_none_or(|cm| c as u64 <= cm) && groups_at(c) <= max_groups as usize)
        .collect();
    // Largest first, so that a tie keeps the larger C.
    cands.sort_unstable_by(|a, b| b.cmp(a));
    cands.dedup();
    let best = cands
        .into_iter()
        .map(|c| (span(x, grid, c), c))
        .reduce(|best, next| if next.0 < best.0 { next } else { best })
        .map_or(c0, |(_, c)| c);
    (best, groups_at(best) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(lens: &[u32], n: usize) -> Csr {
        let mut row_ptr = vec![0u32];
        let mut col_idx = vec![];
        for &l in lens {
            col_idx.extend(0..l);
            row_ptr.push(col_idx.len() as u32);
        }
        let values = vec![1.0; col_idx.len()];
        Csr {
            nrows: lens.len(),
            ncols: n,
            row_ptr,
            col_idx,
            values,
        }
    }

    fn grid(resident: u32, fixed: u64) -> RowGrid<'static> {
        RowGrid {
            vs: 4,
            nv: 2,
            resident,
            fixed,
            long_row: &|_| u32::MAX,
        }
    }

    #[test]
    fn even_rows_keep_eq5s_single_wave() {
        // 64 rows of 8 over 4 slots of 2 vectors: Eq. 5's C = 8, one wave.
        let x = csr(&[8; 64], 64);
        assert_eq!(rows_per_vector(&x, &grid(4, 10), 8, None, u32::MAX), (8, 4));
    }

    #[test]
    fn one_heavy_row_calls_for_a_second_wave() {
        // A long row in the first vector: with C = 8 its workgroup holds one slot for the
        // whole span; smaller workgroups let the other slots take the rest meanwhile.
        let mut lens = vec![1; 64];
        lens[0] = 400;
        let x = csr(&lens, 512);
        let (c, groups) = rows_per_vector(&x, &grid(4, 2), 8, None, u32::MAX);
        assert!(c < 8, "C = {c}");
        assert_eq!(groups, 64u32.div_ceil(2 * c));
        assert!(span(&x, &grid(4, 2), c) < span(&x, &grid(4, 2), 8));
    }

    #[test]
    fn span_counts_rows_trips_and_fixed_costs() {
        // One slot, one workgroup of 2 vectors × 2 rows: rows of 4 and 9 entries (VS 4)
        // in the first vector: (1 + 3 + 2) + (1 + 9 + 2) = 18; the second vector's rows of
        // 1 and 0: 6 + 3 = 9. The slowest vector plus 5 fixed.
        let x = csr(&[4, 9, 1, 0], 16);
        assert_eq!(span(&x, &grid(1, 5), 2), 18 + 5);
    }

    #[test]
    fn long_rows_leave_the_vectors_for_the_chunked_passes() {
        let x = csr(&[100, 1, 1, 1], 128);
        let g = RowGrid {
            long_row: &|_| 50,
            ..grid(1, 0)
        };
        // The long row costs its vector one trip (1 + 6 with its neighbour), so the second
        // vector's two rows of one (6 + 6) are the slowest; the 100 long entries go over
        // 1 × 8 lanes.
        assert_eq!(span(&x, &g, 2), 12 + 3 * 13);
    }

    #[test]
    fn candidates_respect_the_loop_cap_and_the_grid_limit() {
        let mut lens = vec![1; 64];
        lens[0] = 400;
        let x = csr(&lens, 512);
        // C at most 8: the quarter and half are allowed, twice is not.
        let (c, _) = rows_per_vector(&x, &grid(4, 2), 8, Some(8), u32::MAX);
        assert!(c <= 8);
        // At most 4 workgroups: only C ≥ 8 fits 64 rows of 2 vectors.
        let (c, groups) = rows_per_vector(&x, &grid(4, 2), 8, None, 4);
        assert!(c >= 8 && groups <= 4, "C = {c}, groups = {groups}");
    }
}
