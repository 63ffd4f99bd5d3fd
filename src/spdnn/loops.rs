//! Loop iterations one invocation of the SpDNN kernels runs at worst, for the loop budget of
//! a software device ([`crate::gpu::loop_cap`]: llvmpipe silently ends an invocation's loops
//! after 65,535 iterations in all). Constant-trip loops (ROWS, RV, T, the four rows of a
//! vec4) count too: nothing guarantees they are unrolled.
//!
//! What grows with the input: N (`spdnn.layer` walks N / WG outputs, `spdnn.compact` copies
//! N / WG floats of a row, `spdnn.sliced` stages N / S slices) and the in-degree of W's
//! columns (`spdnn.layer` loops over the ELL width, the largest in-degree of the layer;
//! `spdnn.sliced` over the words of its outputs' segments, which one heavy column fills).
//! The scan and `spdnn.select` / `spdnn.reset` loops are constant per invocation.

use crate::gpu::loop_cap;
use crate::sparse::Csr;
use crate::spdnn::Tiling;
use crate::Caps;

/// The largest in-degree of `w`'s columns (the dense-rows ELL width).
pub fn max_in_degree(w: &Csr) -> usize {
    let mut count = vec![0u32; w.ncols];
    for &c in &w.col_idx {
        count[c as usize] += 1;
    }
    count.into_iter().max().unwrap_or(0) as usize
}

/// `spdnn.layer`: staging `rows` rows of `n` floats (when `staged`), then ⌈n / wg⌉ outputs,
/// each `width` slots of `rows` products and `rows` stores, then `rows` flags.
pub fn layer(n: usize, wg: u32, rows: u32, staged: bool, width: usize) -> u64 {
    let (n, wg, rows) = (n as u64, wg.max(1) as u64, rows as u64);
    let stage = if staged { (rows * n).div_ceil(wg) } else { 0 };
    stage + n.div_ceil(wg) * (1 + width as u64 * (1 + rows) + rows) + rows
}

/// `spdnn.compact`: one row of `n` floats copied over `wg` invocations.
pub fn compact(n: usize, wg: u32) -> u64 {
    (n as u64).div_ceil(wg.max(1) as u64)
}

/// The largest words per lane one invocation of `spdnn.sliced` walks, over the slices and
/// its T outputs: the segments of `seg` (a layer's sliced ELL for `tiling` over `n`
/// neurons) are laid out (block, slice, t, group), each `lanes` words wide a step. With
/// `together` (`--segments-together`) a slice's T segments run in one loop as long as the
/// longest: T times its turns.
pub fn sliced_words(seg: &[u32], tiling: &Tiling, n: usize, together: bool) -> u64 {
    let slices = n.div_ceil(tiling.slice.max(1) as usize);
    let blocks = n.div_ceil(tiling.block().max(1));
    let groups = (tiling.wg / tiling.lanes.max(1)).max(1) as usize;
    let per_block = slices * tiling.t as usize * groups;
    let lanes = tiling.lanes.max(1) as u64;
    (0..blocks)
        .flat_map(|b| (0..groups).map(move |g| (b, g)))
        .map(|(b, g)| {
            let turns = |st: usize| {
                let q = b * per_block + st * groups + g;
                match (seg.get(q), seg.get(q + 1)) {
                    (Some(&lo), Some(&hi)) => u64::from(hi - lo).div_ceil(lanes),
                    _ => 0,
                }
            };
            let t = tiling.t as usize;
            (0..slices)
                .map(|sl| {
                    let each = (sl * t..(sl + 1) * t).map(turns);
                    if together {
                        t as u64 * each.max().unwrap_or(0)
                    } else {
                        each.sum::<u64>()
                    }
                })
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

/// `spdnn.sliced`: the tile's rows and constancy (4·RV, T·RV vec4s of four rows), per slice
/// the staging of S columns of RV vec4s (`tiling.unroll` columns a turn: U loads, then U
/// stores, of RV vec4s each, after a per-row setup), a loop over the T outputs' bounds (and,
/// with `prefetch`, one more loading the next slice's), and `words` (from [`sliced_words`])
/// of RV sums each; `together`, a slice's T segments in one loop, adds that loop's turns
/// (words / T).
pub fn sliced(tiling: &Tiling, n: usize, words: u64, (together, prefetch): (bool, bool)) -> u64 {
    let (t, rv, u) = (
        tiling.t as u64,
        tiling.rv as u64,
        tiling.unroll.max(1) as u64,
    );
    let slices = n.div_ceil(tiling.slice.max(1) as usize) as u64;
    let columns = tiling.slice as u64;
    let (setup, stage) = if u == 1 {
        (0, columns.div_ceil(tiling.wg.max(1) as u64) * (1 + rv * 5))
    } else {
        let turns = columns.div_ceil(tiling.wg.max(1) as u64 * u);
        (4 * rv + 5 * rv, turns * (1 + 2 * u * (1 + rv)))
    };
    let prefetch = u64::from(together && prefetch);
    let fixed = 8 + 4 * 4 * rv + 3 * t * rv * 5 + rv * 5 + setup + prefetch * t;
    let turns = if together {
        words.div_ceil(t.max(1))
    } else {
        0
    };
    fixed + slices * (1 + stage + t * (1 + prefetch)) + words * (1 + rv) + turns
}

/// `spdnn.thesis_multiply`, 1D: a buffer row of `width` cleared and activated over `wg`
/// invocations, and a left row of up to `left` entries taken `wg / lanes` at a time, each
/// entry a right row of up to `right` entries over `lanes` lanes (an add each: a
/// compare-exchange loop at least one turn long).
pub fn thesis_1d(width: usize, wg: u32, lanes: u32, left: usize, right: usize) -> u64 {
    let (wg, lanes) = (wg.max(1) as u64, lanes.max(1) as u64);
    let groups = (wg / lanes).max(1);
    2 * (width as u64).div_ceil(wg)
        + (left as u64).div_ceil(groups) * (1 + 2 * (right as u64).div_ceil(lanes))
}

/// `spdnn.thesis_multiply`, 2D: a TR × TC tile's sums cleared and written over `wg`
/// invocations, and its TR rows' left entries (up to TR · `left`) staged `wg` at a time,
/// each staging locating the entries' rows (TR) and taking them `wg / lanes` at a time: a
/// binary search into a right row of up to `right` entries, then its entries within the
/// tile's TC columns (sorted and distinct, so at most TC) over `lanes` lanes, an add each.
pub fn thesis_2d(wg: u32, lanes: u32, (tr, tc): (u32, u32), left: usize, right: usize) -> u64 {
    let (wg, lanes) = (wg.max(1) as u64, lanes.max(1) as u64);
    let (tr, tc, right) = (tr as u64, tc as u64, right as u64);
    let groups = (wg / lanes).max(1);
    let search = 64 - right.leading_zeros() as u64;
    let walk = 1 + right.min(tc).div_ceil(lanes);
    let per_entry = 1 + search + 2 * walk;
    let stages = (tr * left as u64).div_ceil(wg);
    2 * (tr * tc).div_ceil(wg) + stages * (1 + tr + wg.div_ceil(groups) * per_entry)
}

/// `spdnn.thesis_flush` (and the smaller `spdnn.thesis_count`): a buffer row of `width`
/// over `wg` invocations, each turn a scan of log2(wg) steps.
pub fn thesis_flush(width: usize, wg: u32) -> u64 {
    let turns = (width as u64).div_ceil(wg.max(1) as u64);
    turns * (1 + u64::from(wg.max(1).trailing_zeros()))
}

/// The refusal of `kernel` under `caps`' loop cap, naming what made it loop.
pub fn refuse(caps: &Caps, kernel: &str, iterations: u64) -> crate::Error {
    loop_cap::over_budget(caps, kernel, iterations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_counts_grow_with_n_rows_and_width() {
        // N = 1,024 over 256 invocations, 32 slots of 4 rows: 4 outputs of 1 + 32·5 + 4.
        assert_eq!(layer(1024, 256, 4, false, 32), 4 * 165 + 4);
        assert_eq!(layer(1024, 256, 4, true, 32), 16 + 4 * 165 + 4);
        // The challenge's largest layer (N = 65,536, width 32) at 8 rows: past llvmpipe's
        // budget; at 2 rows within it.
        let b = loop_cap::budget(Some(65_535)).unwrap();
        assert!(layer(65_536, 256, 8, false, 32) > b);
        assert!(layer(65_536, 256, 2, false, 32) <= b);
        assert_eq!(compact(65_536, 256), 256);
    }

    #[test]
    fn in_degree_is_the_heaviest_column() {
        let w = Csr {
            nrows: 3,
            ncols: 3,
            row_ptr: vec![0, 2, 3, 5],
            col_idx: vec![0, 2, 2, 1, 2],
            values: vec![1.0; 5],
        };
        assert_eq!(max_in_degree(&w), 3);
    }

    #[test]
    fn thesis_counts_grow_with_the_rows_they_walk() {
        // The challenge's N = 65,536, 32 per row of W: 1D over 32 lanes fits llvmpipe's
        // budget even with Y's rows full; 2D (1 lane, 4 × 512 tiles) does not.
        let b = loop_cap::budget(Some(65_535)).unwrap();
        assert_eq!(
            thesis_1d(65_536, 256, 32, 65_536, 32),
            2 * 256 + 8192 * (1 + 2)
        );
        assert!(thesis_1d(65_536, 256, 32, 65_536, 32) <= b);
        assert!(thesis_2d(256, 1, (4, 512), 65_536, 32) > b);
        assert!(thesis_2d(256, 1, (4, 512), 1024, 32) <= b);
        // A right row longer than a tile is walked only within the tile.
        assert_eq!(
            thesis_2d(256, 32, (4, 512), 100, 1 << 20),
            thesis_2d(256, 32, (4, 512), 100, (1 << 20) + 7)
        );
        assert_eq!(thesis_flush(1024, 256), 4 * 9);
    }

    #[test]
    fn sliced_words_sum_an_invocations_segments() {
        // 2 blocks × 2 slices × T = 1 × 2 groups of 4 lanes (wg 8).
        let tiling = Tiling {
            wg: 8,
            t: 1,
            rv: 1,
            slice: 8,
            lanes: 4,
            unroll: 1,
        };
        // Segment words: block 0 (slice 0: 8, 4; slice 1: 12, 0), block 1 (4, 4; 4, 40).
        let widths = [8u32, 4, 12, 0, 4, 4, 4, 40];
        let mut seg = vec![0u32];
        for w in widths {
            seg.push(seg.last().unwrap() + w);
        }
        // (block 0, group 0): (8 + 12) / 4 = 5; (block 1, group 1): (4 + 40) / 4 = 11.
        assert_eq!(sliced_words(&seg, &tiling, 16, false), 11);
        // Together, T = 1: the same turns.
        assert_eq!(sliced_words(&seg, &tiling, 16, true), 11);
        assert!(sliced(&tiling, 16, 11, (false, false)) > sliced(&tiling, 16, 5, (false, false)));
        // One block, one slice, T = 2, one group of 4 lanes: segments of 4 and 20 words take
        // 1 + 5 turns one after another, 2 × 5 together (the short one idles).
        let tiling = Tiling {
            wg: 4,
            t: 2,
            rv: 1,
            slice: 8,
            lanes: 4,
            unroll: 1,
        };
        let seg = [0u32, 4, 24];
        assert_eq!(sliced_words(&seg, &tiling, 8, false), 6);
        assert_eq!(sliced_words(&seg, &tiling, 8, true), 10);
        // Together, the loop's own 5 turns come on top of the 10 words; prefetching the next
        // slice's bounds, a second loop over T per slice and one before the first.
        let apart = sliced(&tiling, 8, 6, (false, false));
        let together = sliced(&tiling, 8, 10, (true, false));
        assert_eq!(together - apart, 4 * 2 + 5);
        assert_eq!(sliced(&tiling, 8, 10, (true, true)) - together, 2 + 2);
        // Prefetching needs segments together: apart it changes nothing.
        assert_eq!(sliced(&tiling, 8, 6, (false, true)), apart);
        // Staging 2 columns a turn: one turn of 2 loads and 2 stores of one vec4 (9), not
        // 2 turns of one column of 4 rows (12), after a setup over the 4 rows and the vec4 (9).
        let unrolled = Tiling {
            unroll: 2,
            ..tiling
        };
        assert_eq!(sliced(&unrolled, 8, 6, (false, false)), apart - 12 + 9 + 9);
    }
}
