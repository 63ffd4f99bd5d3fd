//! cuMF_SGD's multi-device block schedule. The ratings (ids already permuted by prep) are cut
//! into a G×G grid of user × item blocks, the boundaries chosen so that every row block and
//! every column block holds about nnz / G ratings. In round r device g trains block
//! (g, (g + r) mod G); an epoch is G rounds. Within a round no two devices share a row block
//! (each has its own g) or a column block ((g + r) mod G is a permutation of the devices), so
//! the Hogwild! races stay inside one device, and over an epoch every block is trained once.
//!
//! Device g keeps row block g of P for good; after each round it passes the column block of
//! Q it holds to device g − 1, which trains that block in the next round
//! ((g − 1) + (r + 1) = g + r). After the G-th pass of an epoch device g holds column block
//! g again.

use crate::{Error, Result};

/// The column block device `device` trains in round `round` of `g` devices.
pub fn column_block(device: usize, round: usize, g: usize) -> usize {
    (device + round) % g
}

/// The device a device passes its column block of Q to after a round.
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

/// Ratings cut into a G×G grid of blocks.
#[derive(Clone, Debug)]
pub struct Grid {
    /// G.
    pub g: usize,
    /// Row (user) block boundaries, G + 1 device rows.
    pub rows: Vec<u32>,
    /// Column (item) block boundaries, G + 1 device rows.
    pub cols: Vec<u32>,
    /// Sample offsets of the blocks in row-major block order, G² + 1.
    pub offsets: Vec<usize>,
}

impl Grid {
    /// Samples of block (row block `rb`, column block `cb`) as a range of sample indices.
    pub fn block(&self, rb: usize, cb: usize) -> std::ops::Range<usize> {
        let b = rb * self.g + cb;
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
/// into a `g × g` grid balanced by ratings. Returns the samples sorted by block (a stable
/// counting sort: the shuffled order is kept inside each block) and the grid.
pub fn cut(samples: &[u32], (m, n): (usize, usize), g: usize) -> Result<(Vec<u32>, Grid)> {
    let nnz = samples.len() / 3;
    let (mut per_row, mut per_col) = (vec![0u64; m], vec![0u64; n]);
    for s in 0..nnz {
        per_row[samples[3 * s] as usize] += 1;
        per_col[samples[3 * s + 1] as usize] += 1;
    }
    let rows = balanced_bounds(&per_row, g, "users")?;
    let cols = balanced_bounds(&per_col, g, "items")?;
    let block = |s: usize| find(&rows, samples[3 * s]) * g + find(&cols, samples[3 * s + 1]);
    let mut offsets = vec![0usize; g * g + 1];
    let blocks: Vec<u32> = (0..nnz).map(|s| block(s) as u32).collect();
    for &b in &blocks {
        offsets[b as usize + 1] += 1;
    }
    for b in 0..g * g {
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
            rows,
            cols,
            offsets,
        },
    ))
}

/// What one device did in one round of an instrumented multi-device run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Touch {
    /// Epoch (0-based).
    pub epoch: usize,
    /// Round within the epoch.
    pub round: usize,
    /// The device.
    pub device: usize,
    /// The row block of P the device holds (and updated).
    pub row_block: usize,
    /// The column block of Q the device's Q buffer held when it trained (carried with the
    /// buffer from device to device, not recomputed from the schedule).
    pub col_block: usize,
    /// The block whose samples the device trained, as (row block, column block).
    pub samples: (usize, usize),
}

/// Checks a record of touches: in every (epoch, round) no two devices share a row block or a
/// column block, every device trained the samples of the blocks it held, and every block was
/// trained exactly once per epoch. Returns the first violation found.
pub fn check_touches(
    touches: &[Touch],
    g: usize,
    epochs: usize,
) -> std::result::Result<(), String> {
    for e in 0..epochs {
        let mut trained = vec![0usize; g * g];
        for r in 0..g {
            let round: Vec<&Touch> = touches
                .iter()
                .filter(|t| t.epoch == e && t.round == r)
                .collect();
            if round.len() != g {
                return Err(format!(
                    "epoch {e} round {r}: {} devices trained",
                    round.len()
                ));
            }
            let (mut rows, mut cols) = (vec![false; g], vec![false; g]);
            for t in round {
                if t.samples != (t.row_block, t.col_block) {
                    return Err(format!("{t:?}: trained samples of a block it did not hold"));
                }
                if std::mem::replace(&mut rows[t.row_block], true) {
                    return Err(format!(
                        "epoch {e} round {r}: row block {} shared",
                        t.row_block
                    ));
                }
                if std::mem::replace(&mut cols[t.col_block], true) {
                    return Err(format!(
                        "epoch {e} round {r}: column block {} shared",
                        t.col_block
                    ));
                }
                trained[t.row_block * g + t.col_block] += 1;
            }
        }
        if let Some(b) = trained.iter().position(|&c| c != 1) {
            return Err(format!(
                "epoch {e}: block ({}, {}) trained {} times",
                b / g,
                b % g,
                trained[b]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates the schedule with Q blocks carried as tags through the passes.
    fn simulate(g: usize, epochs: usize) -> Vec<Touch> {
        let mut held: Vec<usize> = (0..g).collect();
        let mut out = vec![];
        for epoch in 0..epochs {
            for round in 0..g {
                for (device, &c) in held.iter().enumerate() {
                    out.push(Touch {
                        epoch,
                        round,
                        device,
                        row_block: device,
                        col_block: c,
                        samples: (device, column_block(device, round, g)),
                    });
                }
                let mut next = vec![usize::MAX; g];
                for (device, &c) in held.iter().enumerate() {
                    next[pass_to(device, g)] = c;
                }
                held = next;
            }
        }
        out
    }

    #[test]
    fn the_schedule_never_shares_a_block_and_covers_each_once() {
        for g in 1..=9 {
            let touches = simulate(g, 3);
            check_touches(&touches, g, 3).unwrap_or_else(|e| panic!("G = {g}: {e}"));
        }
    }

    #[test]
    fn the_checker_catches_a_shared_column_and_a_missed_block() {
        let mut touches = simulate(3, 1);
        touches[1].col_block = touches[0].col_block;
        touches[1].samples.1 = touches[0].col_block;
        assert!(check_touches(&touches, 3, 1)
            .unwrap_err()
            .contains("column block"));
        let mut touches = simulate(3, 1);
        touches[0].samples = (0, 2);
        assert!(check_touches(&touches, 3, 1).is_err());
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
        for g in [1, 2, 3, 4] {
            let (sorted, grid) = cut(&samples, (m, n), g).unwrap();
            assert_eq!(grid.offsets[g * g], nnz);
            let mut seen = vec![0u32; nnz];
            for rb in 0..g {
                for cb in 0..g {
                    for s in grid.block(rb, cb) {
                        let (u, v) = (sorted[3 * s] as usize, sorted[3 * s + 1] as usize);
                        assert!(grid.row_range(rb).contains(&u));
                        assert!(grid.col_range(cb).contains(&v));
                        seen[sorted[3 * s + 2] as usize] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "G = {g}");
        }
    }
}
