//! MF trained on several devices by cuMF_SGD's block schedule ([`super::blocks`]): the
//! ratings cut into G row blocks × G·c column blocks; device g holds row block g of P and
//! trains, at step s, column block (g·c + s) mod G·c, by batch-Hogwild! with the
//! single-device kernel (the samples carry block-local user rows and global item rows; each
//! device holds all of Q's rows, of which only the blocks it holds are current). Three host
//! threads serve each device ([`epoch`]): a trainer submits the steps and queues a copy of
//! each trained Q block into a staging buffer, a sender reads the copies back and sends them
//! over a channel to device g − 1, and a receiver writes the blocks arriving from device
//! g + 1 into Q (ordered before the trainer's next submission), so the host's copies run
//! beside the kernels. With c ≥ 2 a block has c − 1 steps to travel; c = 1 is cuMF_SGD's G×G
//! grid, where every device waits for its neighbour between rounds. After each epoch the
//! model is evaluated on the devices ([`eval`]): each device copies its own column blocks of
//! Q into the other devices' Q, then every device checks its P and Q for NaN or infinity
//! and scores the test ratings of its row block; only the sums come back. P and Q are
//! gathered to the host only for the model ([`MultiTrainer::model`]).
//! [`MultiTrainer::warm_up`] brings every device's clocks up before the timed epochs.

mod epoch;
mod eval;

use std::time::Instant;

use serde::Serialize;

use super::blocks::{self, Touch};
use super::kernels::{self, Layout};
use super::{check_features, decode, model_from, prep, worker_streams};
use super::{Model, Options, Precision, Scheme};
use crate::gpu::{Gpu, GpuBuffer, Staging};
use crate::io::Ratings;
use crate::{Error, Result};

/// One device's share of a multi-device epoch.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceEpoch {
    /// The device (its row block of P).
    pub device: usize,
    /// Updates it performed.
    pub updates: u64,
    /// Host wall time of its epoch: training, passing and receiving Q blocks, seconds.
    pub seconds: f64,
    /// The part of `seconds` its thread waited for a neighbour's Q block, seconds.
    pub wait_seconds: f64,
}

/// What one multi-device epoch did.
#[derive(Clone, Debug, Serialize)]
pub struct MultiEpochMetrics {
    /// What a one-device epoch reports too, for all devices together (`seconds`: host wall
    /// time of the epoch's steps and passes, the devices running at once); flattened in JSON.
    #[serde(flatten)]
    pub common: super::EpochMetrics,
    /// Host wall time of evaluating on the devices (Q's blocks shared between them, the
    /// divergence guard and the test error), seconds (not in `seconds`).
    pub eval_seconds: f64,
    /// Per device.
    pub devices: Vec<DeviceEpoch>,
}

/// One device: its row block of P, all rows of Q, its samples.
struct Shard<'g> {
    gpu: &'g Gpu,
    layout: Layout,
    p: GpuBuffer<u32>,
    /// Every row of Q; the column blocks in `held` are current.
    q: GpuBuffer<u32>,
    /// Per column block: `Some(trainings it has seen)` while this device holds its current
    /// copy (the count travels with the block).
    held: Vec<Option<u64>>,
    /// Per column block: the block's samples (local user rows, global item rows) in bands.
    blocks: Vec<Vec<(GpuBuffer<u32>, u32)>>,
    rng: GpuBuffer<u32>,
    counters: Option<GpuBuffer<u32>>,
    /// Two staging buffers for passing Q blocks (none on a single device).
    staging: Vec<Staging<u32>>,
    /// The test samples of its row block (local user rows, global item rows, bits of r in
    /// rating units) in bands.
    test: Vec<(GpuBuffer<u32>, u32)>,
}

impl Shard<'_> {
    /// Fails unless device `d` holds the current copies of its own `c` column blocks (as it
    /// does between epochs); `kernel` names the step asking.
    fn check_holds_own(&self, d: usize, c: usize, kernel: &str) -> Result<()> {
        match (d * c..(d + 1) * c).find(|&j| self.held[j].is_none()) {
            Some(j) => Err(Error::Check {
                kernel: kernel.into(),
                message: format!("device {d} does not hold Q block {j}"),
            }),
            None => Ok(()),
        }
    }
}

/// A multi-device training run: data uploaded once, each device's P and Q blocks resident.
pub struct MultiTrainer<'g> {
    options: Options,
    grid: blocks::Grid,
    shards: Vec<Shard<'g>>,
    sigma: f64,
    user_row: Vec<u32>,
    item_row: Vec<u32>,
    /// Test samples, over all devices.
    test_len: usize,
    skipped: usize,
    epoch: usize,
    touches: Vec<Touch>,
}

impl<'g> MultiTrainer<'g> {
    /// Validates and preprocesses `train` (and `test`, ids as in `train`) as [`super::Trainer`]
    /// does, cuts the ratings into G × G·`split` blocks (G = `gpus.len()`), checks that each
    /// device's share fits it, and uploads every device's share (all devices at once). Only
    /// [`Scheme::Hogwild`] runs inside the blocks. The initial features and device 0's worker
    /// streams are the single-device trainer's, so one device trains as [`super::Trainer`].
    pub fn new(
        gpus: &'g [Gpu],
        train: &Ratings,
        test: Option<&Ratings>,
        options: Options,
        split: usize,
    ) -> Result<Self> {
        options.validate()?;
        if split == 0 {
            return Err(Error::Option(
                "split: column blocks per device must be at least 1".into(),
            ));
        }
        if gpus.is_empty() {
            return Err(Error::Option("multi-device MF needs a device".into()));
        }
        if options.scheme != Scheme::Hogwild {
            return Err(Error::Option(
                "several devices train by batch-Hogwild! inside each block: use the hogwild scheme"
                    .into(),
            ));
        }
        let g = gpus.len();
        let (m, n, k) = (train.n_users, train.n_items, options.k);
        let half = options.precision == Precision::F16;
        let data = prep::prepare(
            train,
            test,
            options.permute_ids,
            options.shuffle,
            options.seed,
        )?;
        let (samples, grid) = blocks::cut(&data.train, (m, n), g, split)?;
        drop(data.train);
        let max_rows = |b: &[u32]| b.windows(2).map(|w| (w[1] - w[0]) as usize).max();
        let (p_rows, q_rows) = (max_rows(&grid.rows), max_rows(&grid.cols));
        let (p_rows, q_rows) = (p_rows.unwrap_or(0), q_rows.unwrap_or(0));
        for gpu in gpus {
            check_features(gpu, &[("a row block of P", p_rows), ("Q", n)], k, half)?;
        }
        let workers = kernels::workers(&gpus[0], &options, p_rows, q_rows * split)?;
        // The single-device trainer's initial features, then each block's rows of them.
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(options.seed);
        let p_all = prep::init_features(m, k, half, &mut rng);
        let q_all = prep::init_features(n, k, half, &mut rng);
        let words = if half { k / 2 } else { k };
        let test_len = data.test.len() / 3;
        let tests = eval::split_test(&data.test, &grid);
        drop(data.test);
        let layouts = gpus
            .iter()
            .map(|gpu| Layout::choose(gpu, &options))
            .collect::<Result<Vec<_>>>()?;
        let shards = std::thread::scope(|scope| {
            let handles: Vec<_> = gpus
                .iter()
                .zip(layouts)
                .zip(&tests)
                .enumerate()
                .map(|(d, ((gpu, layout), test))| {
                    let (grid, samples, options) = (&grid, &samples, &options);
                    let (p_all, q_all) = (&p_all, &q_all);
                    scope.spawn(move || -> Result<Shard<'g>> {
                        let rows = grid.row_range(d);
                        let p = GpuBuffer::upload(
                            gpu,
                            "mf.multi.p",
                            &p_all[rows.start * words..rows.end * words],
                        )?;
                        let q = GpuBuffer::upload(gpu, "mf.multi.q", q_all)?;
                        let gc = grid.col_blocks();
                        let mut held = vec![None; gc];
                        for h in &mut held[d * grid.c..(d + 1) * grid.c] {
                            *h = Some(0);
                        }
                        let staging = if grid.g > 1 {
                            (0..2)
                                .map(|_| Staging::new(gpu, "mf.multi.staging", q_rows * words))
                                .collect::<Result<Vec<_>>>()?
                        } else {
                            vec![]
                        };
                        let band = super::band_samples(&gpu.caps);
                        let mut per_block = Vec::with_capacity(gc);
                        for c in 0..gc {
                            let local: Vec<u32> = grid
                                .block(d, c)
                                .flat_map(|s| {
                                    [
                                        samples[3 * s] - rows.start as u32,
                                        samples[3 * s + 1],
                                        samples[3 * s + 2],
                                    ]
                                })
                                .collect();
                            per_block.push(upload_bands(gpu, "mf.multi.samples", &local, band)?);
                        }
                        let ids = d as u32 * workers..(d as u32 + 1) * workers;
                        Ok(Shard {
                            gpu,
                            layout,
                            p,
                            q,
                            held,
                            blocks: per_block,
                            rng: GpuBuffer::upload(
                                gpu,
                                "mf.rng",
                                &worker_streams(ids, options.seed),
                            )?,
                            counters: if options.instrument {
                                Some(GpuBuffer::zeroed(gpu, "mf.counters", 1)?)
                            } else {
                                None
                            },
                            staging,
                            test: upload_bands(gpu, "mf.multi.test", test, band)?,
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a device thread panicked"))
                .collect::<Result<Vec<_>>>()
        })?;
        Ok(MultiTrainer {
            options,
            grid,
            shards,
            sigma: data.sigma,
            user_row: data.user_row,
            item_row: data.item_row,
            test_len,
            skipped: data.skipped,
            epoch: 0,
            touches: vec![],
        })
    }

    /// Devices (G).
    pub fn devices(&self) -> usize {
        self.shards.len()
    }

    /// The block grid.
    pub fn grid(&self) -> &blocks::Grid {
        &self.grid
    }

    /// Workers per device.
    pub fn workers(&self) -> u32 {
        self.shards[0].rng.len() as u32
    }

    /// Lanes per update and whether they reduce by subgroup shuffles (device 0).
    pub fn lanes(&self) -> (u32, bool) {
        (self.shards[0].layout.lanes, self.shards[0].layout.subgroup)
    }

    /// Words a lane loads and stores as one access on device 0 ([`Options::vector`] as
    /// lowered to divide a lane's words).
    pub fn vector(&self) -> u32 {
        self.shards[0].layout.vector
    }

    /// Whether device 0's training kernels bind P and Q `@coherent`.
    pub fn coherent(&self) -> bool {
        self.shards[0].layout.coherent
    }

    /// Whether device 0 stores P and Q as native f16.
    pub fn native_f16(&self) -> bool {
        self.shards[0].layout.native_f16
    }

    /// Test ratings skipped because their user or item has no training rating.
    pub fn skipped_test(&self) -> usize {
        self.skipped
    }

    /// Test ratings evaluated.
    pub fn test_len(&self) -> usize {
        self.test_len
    }

    /// σ, the standard deviation the ratings were divided by.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// Updates device `d` performs per epoch (batch-Hogwild!'s count over its G blocks).
    pub fn device_updates_per_epoch(&self, d: usize) -> u64 {
        let sh = &self.shards[d];
        kernels::hogwild_updates(
            sh.blocks.iter().flatten().map(|(_, n)| *n as u64),
            sh.rng.len() as u64,
            self.options.batch as u64,
        )
    }

    /// Sample bands (storage bindings) device `d` trains from, over all its blocks.
    pub fn device_bands(&self, d: usize) -> usize {
        self.shards[d].blocks.iter().map(Vec::len).sum()
    }

    /// Test sample bands (storage bindings) device `d` scores.
    pub fn device_test_bands(&self, d: usize) -> usize {
        self.shards[d].test.len()
    }

    /// Updates all devices perform per epoch.
    pub fn updates_per_epoch(&self) -> u64 {
        (0..self.devices())
            .map(|d| self.device_updates_per_epoch(d))
            .sum()
    }

    /// What every device trained in every round so far (recorded only with
    /// [`Options::instrument`]); check it with [`blocks::check_touches`].
    pub fn touches(&self) -> &[Touch] {
        &self.touches
    }

    /// Updates each device has counted (instrumented runs; zeros otherwise).
    pub fn device_update_counts(&self) -> Result<Vec<u64>> {
        self.shards
            .iter()
            .map(|sh| {
                sh.counters
                    .as_ref()
                    .map_or(Ok(0), |c| Ok(c.read(sh.gpu)?[0] as u64))
            })
            .collect()
    }

    /// Words (u32) per feature row.
    fn words(&self) -> usize {
        if self.options.precision == Precision::F16 {
            self.options.k / 2
        } else {
            self.options.k
        }
    }

    /// Trains `epochs` epochs; after each, checks P and Q for NaN or infinity and scores the
    /// test ratings on the devices ([`MultiTrainer::evaluate`]), then calls `callback` with
    /// the epoch's metrics. Fails with [`Error::Diverged`] naming the epoch when P or Q holds
    /// NaN or infinity.
    pub fn fit(
        &mut self,
        epochs: usize,
        mut callback: impl FnMut(&MultiEpochMetrics),
    ) -> Result<Vec<MultiEpochMetrics>> {
        // Grown per epoch: `epochs` comes from the command line and may be huge.
        let mut out = Vec::new();
        for _ in 0..epochs {
            let lr = self.options.learning_rate(self.epoch);
            let t = Instant::now();
            let (devices, touches) = self.train_epoch()?;
            let seconds = t.elapsed().as_secs_f64();
            if self.options.instrument {
                self.touches.extend(touches);
            }
            let t = Instant::now();
            let rmse = self.evaluate()?;
            let updates: u64 = devices.iter().map(|d| d.updates).sum();
            let m = MultiEpochMetrics {
                common: super::EpochMetrics {
                    epoch: self.epoch,
                    lr,
                    updates,
                    seconds,
                    updates_per_s: updates as f64 / seconds.max(1e-12),
                    rmse,
                },
                eval_seconds: t.elapsed().as_secs_f64(),
                devices,
            };
            callback(&m);
            out.push(m);
        }
        Ok(out)
    }

    /// Brings every device's clocks up before the timed epochs, all devices at once (the
    /// runtime's spin kernel, [`crate::gpu::warm_clocks`], which leaves the model and the
    /// workers' states as they were). Returns the wall-clock seconds spent.
    pub fn warm_up(&mut self) -> Result<f64> {
        let start = Instant::now();
        crate::gpu::each(&self.shards, |_, sh| crate::gpu::warm_clocks(sh.gpu))?;
        Ok(start.elapsed().as_secs_f64())
    }

    /// P and Q in device row order (values divided by √σ), gathered from the devices and
    /// decoded to f32: `(p, q)`, row-major with k features per row. Between epochs device g
    /// holds column block g.
    pub fn device_features(&self) -> Result<(Vec<f32>, Vec<f32>)> {
        let half = self.options.precision == Precision::F16;
        let (words, c) = (self.words(), self.grid.c);
        let grid = &self.grid;
        let parts = crate::gpu::each(&self.shards, |d, sh| {
            sh.check_holds_own(d, c, "mf multi-device gather")?;
            // Only the device's own column blocks are current.
            let rows = grid.cols[d * c] as usize..grid.cols[(d + 1) * c] as usize;
            let staging = Staging::new(sh.gpu, "mf.multi.gather", rows.len() * words)?;
            let copy = staging.copy_from(sh.gpu, &sh.q, rows.start * words..rows.end * words)?;
            let q = staging.collect(sh.gpu, copy)?;
            Ok((sh.p.read(sh.gpu)?, q))
        })?;
        let (mut p, mut q) = (vec![], vec![]);
        for (pw, qw) in parts {
            p.extend(decode(&pw, half));
            q.extend(decode(&qw, half));
        }
        Ok((p, q))
    }

    /// The trained model: P and Q gathered, rows in the input's id order, rescaled by √σ.
    pub fn model(&self) -> Result<Model> {
        let (p, q) = self.device_features()?;
        Ok(model_from(
            (&p, &q),
            self.options.k,
            self.sigma,
            (&self.user_row, &self.item_row),
        ))
    }
}

/// Uploads samples (u32 triplets) in bands of at most `band` samples, each one storage
/// binding: (buffer, samples).
fn upload_bands(
    gpu: &Gpu,
    label: &str,
    samples: &[u32],
    band: usize,
) -> Result<Vec<(GpuBuffer<u32>, u32)>> {
    samples
        .chunks(3 * band)
        .map(|c| Ok((GpuBuffer::upload(gpu, label, c)?, (c.len() / 3) as u32)))
        .collect()
}
