//! Loop iterations per invocation of the fused kernels, estimated from a plan's known
//! quantities, so the launch model keeps them under a software device's loop budget
//! ([`crate::gpu::loop_cap`]: llvmpipe silently ends an invocation's loops after 65,535
//! iterations in all). Every loop a kernel runs counts, compare-exchange retries included
//! (one iteration per add at least); rows count by the average entries per row, which a
//! vector's C strided rows approach. GPUs have no budget and nothing here changes their grids.

/// Entries per lane of a row of `mu` entries on average over `vs` lanes.
fn per_lane(mu: f64, vs: u32) -> u64 {
    (mu.max(1.0) / vs as f64).ceil() as u64
}

/// One row of a sparse row kernel (`fused.sparse`, `fused.spmv`) per invocation: the row
/// loop, the dot product, the vector's reduction (at most VS steps without subgroups), the
/// scatter (a compare-exchange loop per add), and for the two-pass variant the `nv` vectors'
/// turns.
pub fn sparse_row(mu: f64, vs: u32, nv: u32, two_pass: bool) -> u64 {
    let l = per_lane(mu, vs);
    1 + l + vs as u64 + 2 * l + if two_pass { nv as u64 } else { 0 }
}

/// One row of the dense kernel per invocation: its TL elements in three passes (load, dot,
/// scatter into the lane's partial w) and the reduction; with `rif` rows in flight, a trip of
/// each of the step's three row loops more.
pub fn dense_row(tl: u32, vs: u32, rif: u32) -> u64 {
    1 + 3 * tl as u64 + vs as u64 + if rif > 1 { 3 } else { 0 }
}

/// Per invocation outside the row loop: clearing, flushing (a compare-exchange loop per
/// column) and finishing a workgroup copy of `n` columns over `wg` invocations.
pub fn workgroup_w(n: usize, wg: u32) -> u64 {
    4 * n.div_ceil(wg.max(1) as usize).max(1) as u64
}

/// One tile of the sorted kernel per invocation: its EPL entries loaded, reduced over equal
/// columns (a segmented scan of at most 5 steps) and added (compare-exchange), and the
/// tile's rows taken `wg / vs` at a time (dot product, reduction, scale), with rows of `mu`
/// entries on average.
pub fn sorted_tile(epl: u32, wg: u32, vs: u32, mu: f64) -> u64 {
    let nv = (wg / vs.max(1)).max(1) as u64;
    let rows = ((epl * wg) as f64 / mu.max(1.0)).ceil() as u64;
    let trips = rows.div_ceil(nv) + 1;
    10 * epl as u64 + trips * (3 + vs as u64)
}

/// One tile of the stream kernel per invocation: its EPL entries loaded, summed per row
/// segment and added (a compare-exchange loop each, and one per segment), and its share of
/// the tile's `rows` factors and of the `rmax` row sums cleared for a later tile.
pub fn stream_tile(epl: u32, wg: u32, rows: u32, rmax: u32) -> u64 {
    let wg = wg.max(1) as u64;
    2 + 6 * epl as u64 + (rows as u64).div_ceil(wg) + (rmax as u64).div_ceil(wg)
}

/// One unit tile of the stream kernel per invocation: its EPL entries loaded, summed per row
/// segment with their factors loaded, the chain of heads and the scale's broadcast (at most
/// log₂ of the subgroup size rounds each), and its adds (a compare-exchange loop each).
pub fn unit_tile(epl: u32, subgroup: u32) -> u64 {
    let rounds = u64::from(subgroup.max(2).ilog2());
    2 + 8 * epl as u64 + 2 * rounds
}

/// One chunk of the column-split scatter (`fused.split`) per invocation: `epl` rounds, each a
/// load, the 16-bit layout's marker search (at most 4 words), a segmented sum (at most 7
/// steps, subgroups up to 128 lanes) and an add (compare-exchange).
pub fn split_chunk(epl: u32) -> u64 {
    2 + 16 * epl as u64
}

/// One long-row chunk of the folded sequence, taken by a whole workgroup after its rows or
/// tiles: the row's dot product from its chunk partials (at most
/// [`crate::fused::long::FOLD_CHUNKS_MAX`]) and the chunk's `len` entries over `wg`
/// invocations, a compare-exchange loop each.
pub fn folded_chunk(len: u32, wg: u32) -> u64 {
    1 + crate::fused::long::FOLD_CHUNKS_MAX as u64 + 2 * len.div_ceil(wg.max(1)) as u64
}

/// The most rows per vector (or tiles per workgroup) that keep `per_row` iterations each
/// plus `fixed` within `budget`; `None` without a budget. `Some(0)`: not even one fits.
pub fn max_per_invocation(budget: Option<u64>, per_row: u64, fixed: u64) -> Option<u64> {
    budget.map(|b| b.saturating_sub(fixed) / per_row.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::loop_cap::budget;

    #[test]
    fn without_a_cap_nothing_is_bounded() {
        for per_row in [1, 40, 1 << 20] {
            assert_eq!(max_per_invocation(budget(None), per_row, 1 << 30), None);
        }
    }

    #[test]
    fn with_llvmpipes_cap_rows_fit_half_of_it() {
        let b = budget(Some(65_535));
        let per = sparse_row(41.0, 8, 8, true);
        // 1 + 6 + 8 + 12 + 8.
        assert_eq!(per, 35);
        let c = max_per_invocation(b, per, workgroup_w(4096, 64)).unwrap();
        assert!(c * per + workgroup_w(4096, 64) <= 32_767);
        assert!((c + 1) * per + workgroup_w(4096, 64) > 32_767);
        assert_eq!(max_per_invocation(b, 40_000, 0), Some(0));
    }

    #[test]
    fn estimates_grow_with_their_quantities() {
        assert!(sparse_row(100.0, 8, 8, false) > sparse_row(10.0, 8, 8, false));
        assert!(sparse_row(10.0, 8, 8, true) > sparse_row(10.0, 8, 8, false));
        assert!(dense_row(16, 32, 1) > dense_row(1, 32, 1));
        assert!(dense_row(4, 8, 2) > dense_row(4, 8, 1));
        assert!(sorted_tile(8, 256, 8, 2.0) > sorted_tile(8, 256, 8, 40.0));
        assert!(workgroup_w(8192, 256) > workgroup_w(256, 256));
        assert!(folded_chunk(8192, 256) > folded_chunk(16, 256));
        // A chunk of 16 entries: the turn, 64 partials, one entry and its add per invocation.
        assert_eq!(folded_chunk(16, 256), 1 + 64 + 2);
    }
}
