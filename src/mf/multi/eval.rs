//! Evaluation on the devices after a multi-device epoch: Q's current blocks shared between
//! the devices, then on each device the divergence guard over its P and Q and the test
//! error of its test ratings (those of its row block), the squared errors summed on the host.

use super::{MultiTrainer, Shard};
use crate::mf::blocks::Grid;
use crate::mf::kernels::{self, Eval};
use crate::Result;

/// Each device's test samples: those whose user lies in its row block, the user as a row of
/// the block (as its training samples), the item and rating as in `test` (device rows, r in
/// rating units).
pub(super) fn split_test(test: &[u32], grid: &Grid) -> Vec<Vec<u32>> {
    let mut parts = vec![vec![]; grid.g];
    for s in test.chunks_exact(3) {
        // The last block starting at or before u (blocks may be empty: equal bounds).
        let d = grid.rows.partition_point(|&b| b <= s[0]) - 1;
        parts[d].extend([s[0] - grid.rows[d], s[1], s[2]]);
    }
    parts
}

impl MultiTrainer<'_> {
    /// Makes every device's whole Q current between epochs: each device d copies its own c
    /// column blocks (current then) through its two staging buffers into the Q of every
    /// device but d and d + 1. Device d + 1 needs none: its last c steps of every epoch
    /// train d's blocks (`blocks::column_block`), and it sent those very copies to d
    /// unchanged, so its own copies are current (and before the first epoch every copy is
    /// the initial Q). So nothing moves on one or two devices.
    ///
    /// Overwriting the rows of blocks a device does not hold is safe: a device trains a
    /// block only once it holds it, and in an epoch it holds a block other than its own
    /// only after its receiver has written the block's current copy into Q (`held` marks
    /// it only then, `epoch::train_steps`), so what is written here is always overwritten
    /// before it is trained. `held` is left as it is: the blocks written here are not held.
    fn share_q(&self) -> Result<()> {
        let g = self.grid.g;
        if g <= 2 {
            return Ok(());
        }
        let (grid, words, c) = (&self.grid, self.words(), self.grid.c);
        let shards = &self.shards;
        crate::gpu::each(shards, |d, sh| {
            sh.check_holds_own(d, c, "mf multi-device evaluation")?;
            let own: Vec<usize> = (d * c..(d + 1) * c).collect();
            let to: Vec<&Shard> = (0..g)
                .filter(|&e| e != d && e != (d + 1) % g)
                .map(|e| &shards[e])
                .collect();
            for group in own.chunks(sh.staging.len()) {
                // Both copies queued before the first is waited for.
                let copies = group
                    .iter()
                    .zip(&sh.staging)
                    .map(|(&j, staging)| {
                        let rows = grid.col_range(j);
                        let range = rows.start * words..rows.end * words;
                        let copy = staging.copy_from(sh.gpu, &sh.q, range)?;
                        Ok((rows.start * words, staging, copy))
                    })
                    .collect::<Result<Vec<_>>>()?;
                for (at, staging, copy) in copies {
                    let block = staging.view(staging.wait(sh.gpu, copy)?)?;
                    for other in &to {
                        other.q.write_at(other.gpu, at, &block)?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Test RMSE of the current model in rating units (`None` without test ratings), after
    /// checking P and Q for NaN or infinity; fails with [`crate::Error::Diverged`] naming the epoch
    /// when they hold one. Evaluated on the devices: Q's blocks shared first, then every
    /// device checks its P and its (now whole) Q and scores its test ratings, all at once;
    /// two scalars per device come back (the squared errors summed in f32 on each device).
    pub fn evaluate(&self) -> Result<Option<f64>> {
        self.share_q()?;
        let sigma = self.sigma;
        let scores = crate::gpu::each(&self.shards, |_, sh| {
            kernels::score(&Eval {
                gpu: sh.gpu,
                layout: &sh.layout,
                p: &sh.p,
                q: &sh.q,
                test: &sh.test,
                sigma,
            })
        })?;
        if scores.iter().any(|s| s.diverged) {
            return Err(kernels::diverged(&self.options, self.epoch));
        }
        let n = self.test_len;
        let sse: f64 = scores.iter().map(|s| s.sse).sum();
        Ok((n > 0).then(|| (sse / n as f64).sqrt()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::gpu::GpuOptions;
    use crate::io::Ratings;
    use crate::mf::{Options, Precision};
    use crate::{Error, Gpu};

    /// Three devices on the test adapter (lavapipe on CI).
    fn devices() -> &'static [Gpu] {
        static GPUS: OnceLock<Vec<Gpu>> = OnceLock::new();
        GPUS.get_or_init(|| {
            let options = GpuOptions {
                share_adapters: true,
                ..Default::default()
            };
            Gpu::several(Some(3), &options).unwrap_or_else(|e| panic!("{e}"))
        })
    }

    /// NaN in an f32 word, and in both halves of an f16 word.
    const NAN: u32 = 0x7fc0_7e00;

    /// Where a NaN is planted: (device, in P (else in Q), row).
    type Site = fn(&MultiTrainer) -> (usize, bool, usize);

    /// What evaluation gives after one epoch on `g` devices and a NaN planted at `at`.
    fn plant(g: usize, precision: Precision, at: Site) -> Result<Option<f64>> {
        let data = crate::gen::planted_ratings(90, 70, 4_000, 3, 0.1, 11).unwrap();
        let (train, test): (Ratings, Ratings) = ((&data.train).into(), (&data.test).into());
        let options = Options {
            precision,
            k: 32,
            workers: Some(4),
            batch: 8,
            ..Default::default()
        };
        let mut t = MultiTrainer::new(&devices()[..g], &train, Some(&test), options, 2).unwrap();
        t.fit(1, |_| {}).unwrap();
        let (d, in_p, row) = at(&t);
        let sh = &t.shards[d];
        let buffer = if in_p { &sh.p } else { &sh.q };
        buffer
            .write_at(sh.gpu, row * t.words() + 1, &[NAN])
            .unwrap();
        t.evaluate()
    }

    #[test]
    fn a_nan_in_p_or_in_a_held_block_of_q_is_divergence_naming_the_epoch() {
        for precision in [Precision::F16, Precision::F32] {
            for g in [1, 2, 3] {
                let cases: [Site; 2] = [
                    // The last row of the last device's block of P.
                    |t| {
                        let d = t.devices() - 1;
                        (d, true, t.grid.row_range(d).len() - 1)
                    },
                    // The first row of the last device's last own column block of Q.
                    |t| {
                        let d = t.devices() - 1;
                        (d, false, t.grid.col_range(t.grid.col_blocks() - 1).start)
                    },
                ];
                for case in cases {
                    match plant(g, precision, case) {
                        Err(Error::Diverged { epoch: 1, .. }) => {}
                        other => panic!("{precision:?}, G = {g}: {other:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn a_nan_in_a_stale_copy_of_a_block_is_overwritten_not_reported() {
        // Device 0's copy of device 1's block is stale after an epoch on three devices (device
        // 2 trained it last); the copy shared before scoring replaces it.
        for precision in [Precision::F16, Precision::F32] {
            let r = plant(3, precision, |t| {
                (0, false, t.grid.col_range(t.grid.c).start)
            });
            assert!(
                r.as_ref().is_ok_and(|r| r.is_some_and(f64::is_finite)),
                "{precision:?}: {r:?}"
            );
        }
    }
}
