//! cuMF_SGD's multi-device block schedule. The ratings (ids already permuted by prep) are cut
//! into G row blocks × G·c column blocks (c ≥ 1 column blocks per device), the boundaries
//! chosen so that the blocks of each kind hold about equal ratings. At step s (0 ≤ s < G·c)
//! device g trains block (g, (g·c + s) mod G·c); an epoch is G·c steps. Within a step no
//! two devices share a row block (each has its own g) or a column block (their column blocks
//! differ by multiples of c), so the Hogwild! races stay inside one device; over an epoch
//! every block is trained once. With c = 1 this is cuMF_SGD's G×G grid of G rounds.
//!
//! Device g keeps row block g of P for good. After training a column block at step s it
//! passes that block of Q to device g − 1, which trains it at step s + c
//! ((g − 1)·c + s + c = g·c + s): with c ≥ 2 the block has c − 1 steps to travel while both
//! devices keep training, so the transfers overlap the kernels. Between epochs device g holds
//! column blocks g·c … g·c + c − 1.

use crate::{Error, Result};

/// The column block device `device` trains at step `step` of `g` devices with `c` column
/// blocks each.
pub fn column_block(device: usize, step: usize, g: usize, c: usize) -> usize {
    (device * c + step) % (g * c)
}

/// The device a device passes a column block of Q to after training it.
pub fn pass_to(device: usize, g: usize) -> usize {
    (device + g - 1) % g
}

/// `parts + 1` boundaries cutting `counts.len()` rows into `parts` contiguous ranges of about
/// equal total count (each range at least one row). Fails when there are fewer rows than parts.
pub fn balanced_bounds(counts: &[u64], parts: usize, what: &str) -> Result<Vec<u32>> {
    let rows = counts.len();
    if parts == 0 || rows < parts {
        return Err(Error::Option(format!(
            "{parts} devices need at least {parts} {what} (have {rows}), one block each"
        )));
    }
    let total: u64 = counts.iter().sum();
    let mut bounds = Vec::with_capacity(parts + 1);
    bounds.push(0u32);
    let (mut row, mut acc) = (0usize, 0u64);
    for p in 1..parts {
        let target = total as u128 * p as u128 / parts as u128;
        // At least one row in this range, and enough rows left for the ranges after it.
        let lo = bounds[p - 1] as usize + 1;
        let hi = rows - (parts - p);
        while row < lo || (row < hi && ((acc + counts[row]) as u128) <= target) {
            acc += counts[row];
            row += 1;
        }
        bounds.push(row as u32);
    }
    bounds.push(rows as u32);
    Ok(bounds)
}

/// The block index (row block, column block) of a row under `bounds`.
fn find(bounds: &[u32], x: u32) -> usize {
    bounds.partition_point(|&b| b <= x) - 1
}

/// Ratings cut into a G × G·c grid of blocks.
#[derive(Clone, Debug)]
pub struct Grid {
    /// G, the devices (row blocks).
    pub g: usize,
    /// c, column blocks per device.
    pub c: usize,
    /// Row (user) block boundaries, G + 1 device rows.
    pub rows: Vec<u32>,
    /// Column (item) block boundaries, G·c + 1 device rows.
    pub cols: Vec<u32>,
    /// Sample offsets of the blocks in row-major block order, G·G·c + 1.
    pub offsets: Vec<usize>,
}

impl Grid {
    /// Column blocks (G·c).
    pub fn col_blocks(&self) -> usize {
        self.g * self.c
    }

    /// Samples of block (row block `rb`, column block `cb`) as a range of sample indices.
    pub fn block(&self, rb: usize, cb: usize) -> std::ops::Range<usize> {
        let b = rb * self.col_blocks() + cb;
        self.offsets[b]..self.offsets[b + 1]
    }

    /// Rows of row block `rb`.
    pub fn row_range(&self, rb: usize) -> std::ops::Range<usize> {
        self.rows[rb] as usize..self.rows[rb + 1] as usize
    }

    /// Rows of column block `cb`.
    pub fn col_range(&self, cb: usize) -> std::ops::Range<usize> {
        self.cols[cb] as usize..self.cols[cb + 1] as usize
    }
}

/// Cuts `samples` (u32 triplets: device row u, device row v, bits of r) of an `m × n` matrix
/// into a `g × g·c` grid balanced by ratings. Returns the samples sorted by block (a stable
/// counting sort: the shuffled order is kept inside each block) and the grid.
pub fn cut(
    samples: &[u32],
    (m, n): (usize, usize),
    g: usize,
    c: usize,
) -> Result<(Vec<u32>, Grid)> {
    let nnz = samples.len() / 3;
    let (mut per_row, mut per_col) = (vec![0u64; m], vec![0u64; n]);
    for s in 0..nnz {
        per_row[samples[3 * s] as usize] += 1;
        per_col[samples[3 * s + 1] as usize] += 1;
    }
    let rows = balanced_bounds(&per_row, g, "users")?;
    let gc = g * c;
    let cols = balanced_bounds(&per_col, gc, "items")?;
    let block = |s: usize| find(&rows, samples[3 * s]) * gc + find(&cols, samples[3 * s + 1]);
    let mut offsets = vec![0usize; g * gc + 1];
    let blocks: Vec<u32> = (0..nnz).map(|s| block(s) as u32).collect();
    for &b in &blocks {
        offsets[b as usize + 1] += 1;
    }
    for b in 0..g * gc {
        offsets[b + 1] += offsets[b];
    }
    let mut next = offsets.clone();
    let mut sorted = crate::limits::try_vec("the block-sorted ratings", samples.len(), 0u32)?;
    for (s, &b) in blocks.iter().enumerate() {
        let at = next[b as usize];
        next[b as usize] += 1;
        sorted[3 * at..3 * at + 3].copy_from_slice(&samples[3 * s..3 * s + 3]);
    }
    Ok((
        sorted,
        Grid {
            g,
            c,
            rows,
            cols,
            offsets,
        },
    ))
}

/// What one device did at one step of an instrumented multi-device run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Touch {
    /// Epoch (0-based).
    pub epoch: usize,
    /// Step within the epoch.
    pub step: usize,
    /// The device.
    pub device: usize,
    /// The row block of P the device holds (and updated).
    pub row_block: usize,
    /// The column block of Q it trained.
    pub col_block: usize,
    /// How many trainings of that column block the Q rows it trained on had seen (a counter
    /// carried with the block from device to device, not taken from the schedule).
    pub version: u64,
}

/// Checks a record of touches: at every (epoch, step) G devices trained, no two sharing a row
/// block or a column block; every block was trained exactly once per epoch; and every
/// training of a column block saw all the earlier ones (versions 0, 1, 2, … in step order),
/// so no device trained a stale copy of Q. Returns the first violation found.
pub fn check_touches(
    touches: &[Touch],
    (g, c): (usize, usize),
    epochs: usize,
) -> std::result::Result<(), String> {
    let gc = g * c;
    let mut version = vec![0u64; gc];
    for e in 0..epochs {
        let mut trained = vec![0usize; g * gc];
        for s in 0..gc {
            let step: Vec<&Touch> = touches
                .iter()
                .filter(|t| t.epoch == e && t.step == s)
                .collect();
            if step.len() != g {
                return Err(format!(
                    "epoch {e} step {s}: {} devices trained",
                    step.len()
                ));
            }
            let (mut rows, mut cols) = (vec![false; g], vec![false; gc]);
            for t in step {
                if t.row_block >= g || t.col_block >= gc {
                    return Err(format!("{t:?}: no such block"));
                }
                if std::mem::replace(&mut rows[t.row_block], true) {
                    return Err(format!(
                        "epoch {e} step {s}: row block {} shared",
                        t.row_block
                    ));
                }
                if std::mem::replace(&mut cols[t.col_block], true) {
                    return Err(format!(
                        "epoch {e} step {s}: column block {} shared",
                        t.col_block
                    ));
                }
                if t.version != version[t.col_block] {
                    return Err(format!(
                        "{t:?}: trained on a copy of column block {} that had seen {} of its {} \
                         trainings",
                        t.col_block, t.version, version[t.col_block]
                    ));
                }
                version[t.col_block] += 1;
                trained[t.row_block * gc + t.col_block] += 1;
            }
        }
        if let Some(b) = trained.iter().position(|&n| n != 1) {
            return Err(format!(
                "epoch {e}: block ({}, {}) trained {} times",
                b / gc,
                b % gc,
                trained[b]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates the schedule: versions carried with the column blocks through the passes.
    fn simulate(g: usize, c: usize, epochs: usize) -> Vec<Touch> {
        let gc = g * c;
        // Where each column block's current copy is, and how often it has been trained.
        let mut at: Vec<usize> = (0..gc).map(|j| j / c).collect();
        let mut version = vec![0u64; gc];
        let mut out = vec![];
        for epoch in 0..epochs {
            for step in 0..gc {
                for device in 0..g {
                    let j = column_block(device, step, g, c);
                    assert_eq!(
                        at[j], device,
                        "G {g} c {c}: block {j} is not on device {device}"
                    );
                    out.push(Touch {
                        epoch,
                        step,
                        device,
                        row_block: device,
                        col_block: j,
                        version: version[j],
                    });
                    version[j] += 1;
                    at[j] = pass_to(device, g);
                }
            }
        }
        out
    }

    #[test]
    fn the_schedule_never_shares_a_block_and_covers_each_once() {
        for g in 1..=7 {
            for c in 1..=4 {
                let touches = simulate(g, c, 3);
                check_touches(&touches, (g, c), 3)
                    .unwrap_or_else(|e| panic!("G = {g}, c = {c}: {e}"));
            }
        }
    }

    #[test]
    fn the_checker_catches_a_shared_column_a_missed_block_and_a_stale_copy() {
        let mut touches = simulate(3, 2, 1);
        touches[1].col_block = touches[0].col_block;
        assert!(check_touches(&touches, (3, 2), 1)
            .unwrap_err()
            .contains("column block"));
        let mut touches = simulate(3, 1, 2);
        let last = touches.len() - 1;
        touches[last].version -= 1;
        assert!(check_touches(&touches, (3, 1), 2)
            .unwrap_err()
            .contains("copy"));
        let touches = simulate(3, 1, 1);
        assert!(check_touches(&touches[1..], (3, 1), 1).is_err());
    }

    #[test]
    fn bounds_balance_counts_and_keep_every_range_nonempty() {
        let counts: Vec<u64> = (0..1000).map(|i| 1 + (i * 7919 % 97) as u64).collect();
        let total: u64 = counts.iter().sum();
        for parts in [1, 2, 3, 7] {
            let b = balanced_bounds(&counts, parts, "rows").unwrap();
            assert_eq!((b[0], b[parts]), (0, 1000));
            for p in 0..parts {
                let s: u64 = counts[b[p] as usize..b[p + 1] as usize].iter().sum();
                assert!(b[p] < b[p + 1]);
                assert!(
                    (s as f64 - total as f64 / parts as f64).abs() <= 97.0,
                    "{parts}: {s}"
                );
            }
        }
        // A heavy first row: later ranges still get a row each.
        let b = balanced_bounds(&[1000, 1, 1, 1], 3, "rows").unwrap();
        assert_eq!(b, vec![0, 1, 2, 4]);
        assert!(balanced_bounds(&[1, 1], 3, "users").is_err());
    }

    #[test]
    fn every_rating_falls_in_exactly_one_block_inside_its_ranges() {
        let (m, n, nnz) = (50usize, 40usize, 2000usize);
        let mut samples = vec![];
        let mut x = 12345u32;
        for s in 0..nnz {
            x = x.wrapping_mul(747796405).wrapping_add(2891336453);
            // Power-law-ish rows: low ids far more often.
            let u = ((x >> 8) % 1000) * ((x >> 20) % 1000) / 20_000 % m as u32;
            samples.extend([u, (x >> 4) % n as u32, s as u32]);
        }
        for (g, c) in [(1, 1), (2, 1), (2, 3), (3, 2), (4, 1)] {
            let (sorted, grid) = cut(&samples, (m, n), g, c).unwrap();
            assert_eq!(grid.offsets[g * g * c], nnz);
            let mut seen = vec![0u32; nnz];
            for rb in 0..g {
                for cb in 0..g * c {
                    for s in grid.block(rb, cb) {
                        let (u, v) = (sorted[3 * s] as usize, sorted[3 * s + 1] as usize);
                        assert!(grid.row_range(rb).contains(&u));
                        assert!(grid.col_range(cb).contains(&v));
                        seen[sorted[3 * s + 2] as usize] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&k| k == 1), "G = {g}, c = {c}");
        }
    }
}
