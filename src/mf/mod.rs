//! Matrix factorization by SGD (cuMF_SGD, Xie et al., HPDC 2017): train P (m×k) and Q (n×k)
//! so that r_uv ≈ p_u·q_v on the observed ratings. Per sample e = r − p_u·q_v,
//! p_u += lr·(e·q_v − λ·p_u), q_v += lr·(e·p_u − λ·q_v) (both from the old values), with
//! lr = α / (1 + β·t^1.5) at epoch t (0-based).
//!
//! Schemes: [`Scheme::Hogwild`] (batch-Hogwild!, the default: each worker updates `batch`
//! consecutive shuffled samples from random starts; ≈ nnz updates per epoch) and
//! [`Scheme::Wavefront`] (a grid of blocks, one row of blocks per worker, a column lock so
//! no two workers update one column block at once; exactly nnz updates per epoch; a worker
//! takes the first free column among those it has not visited, in its own random order,
//! and waits only when all of them are held). [`Options::ilp`] > 1 (default 2) has a
//! batch-Hogwild! worker update that many consecutive samples together, every row load in
//! flight at once when no two share a row (exactly the serial result either way);
//! [`Options::stage`] (default on) loads its samples a chunk ahead; [`Options::lanes`] and
//! [`Options::vector`] set lanes per update and words per access.
//! One virtual subgroup does each update (subgroup shuffles, or workgroup memory without
//! them); features are stored as f16 (native, or packed in u32 words) or f32; arithmetic is
//! f32. A [`Trainer`] uploads once; [`Trainer::fit`] records each epoch into one submission,
//! evaluates test RMSE and a divergence guard on the GPU and reads back two scalars;
//! [`Trainer::model`] reads P and Q back as a [`Model`].
//!
//! Two device facts shape the kernels. Mesa's llvmpipe (lavapipe) ends every loop of an
//! invocation once the invocation has run 65,535 loop iterations in all (gallivm's guard
//! against endless loops), silently: a batch-Hogwild! epoch is therefore cut into several
//! dispatches of at most 1,024 updates per worker. And a GPU's per-compute-unit cache
//! (NVIDIA's L1) is not coherent within a dispatch: P and Q carry the `@coherent`
//! decoration where the adapter offers it ([`Options::coherent`]), so that a worker reads
//! the rows other workgroups have stored instead of a stale cached copy.
//! [`Options::instrument`] counts updates (hogwild) and block entries (wavefront).
//! [`Trainer::warm_up`] brings a GPU's clocks up before the timed epochs (epochs at learning
//! rate 0, which leave the model and the sample order as they were).
//!
//! [`MultiTrainer`] trains one model on several devices by cuMF_SGD's block schedule
//! ([`blocks`]): batch-Hogwild! with the same kernel inside blocks that no two devices share
//! at once, Q's blocks passed from device to device through the host.

pub mod blocks;
pub mod cpu;
mod kernels;
mod model;
mod multi;
mod options;
mod prep;

use rand::SeedableRng;
use serde::Serialize;

use crate::gpu::{Batch, Gpu, GpuBuffer};
use crate::io::Ratings;
use crate::{Error, Result};

pub use model::Model;
pub use multi::{DeviceEpoch, MultiEpochMetrics, MultiTrainer};
pub use options::{Options, Precision, Scheme};
pub use prep::{decode, encode};

/// Samples (12 bytes each) per band: the most whose buffer, padded to 16 bytes, fits one
/// storage binding and one buffer (a multiple of 4 samples, 48 bytes, so nothing is padded),
/// and whose word indices fit u32.
pub(crate) fn band_samples(caps: &crate::gpu::Caps) -> usize {
    let bytes = caps.max_storage_binding_bytes.min(caps.max_buffer_bytes);
    let samples = (bytes / 48 * 4).min(u32::MAX as u64 / 3 / 4 * 4);
    samples.max(4) as usize
}

/// What one epoch did.
#[derive(Clone, Debug, Serialize)]
pub struct EpochMetrics {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Learning rate used.
    pub lr: f32,
    /// Updates performed.
    pub updates: u64,
    /// Training time (GPU timestamps when available), seconds.
    pub seconds: f64,
    /// Updates per second.
    pub updates_per_s: f64,
    /// Test RMSE after the epoch, in rating units (`None` without test ratings).
    pub rmse: Option<f64>,
}

/// Counters of an instrumented run (see [`Options::instrument`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Instruments {
    /// Hogwild: updates performed since the trainer was made.
    pub updates: u64,
    /// Wavefront: column-block entries.
    pub entries: u64,
    /// Wavefront: entries that found another worker inside the column (must be 0).
    pub violations: u64,
}

/// A training run on the device: data uploaded once, P and Q resident.
pub struct Trainer<'g> {
    gpu: &'g Gpu,
    options: Options,
    /// σ: ratings and λ are divided by it on the device.
    sigma: f64,
    user_row: Vec<u32>,
    item_row: Vec<u32>,
    /// Training samples in bands, each one storage binding.
    bands: Vec<(GpuBuffer<u32>, u32)>,
    test: Option<(GpuBuffer<u32>, u32)>,
    skipped: usize,
    nnz: u64,
    p: GpuBuffer<u32>,
    q: GpuBuffer<u32>,
    rng: GpuBuffer<u32>,
    layout: kernels::Layout,
    wavefront: Option<kernels::Grid>,
    counters: Option<GpuBuffer<u32>>,
    epoch: usize,
}

impl<'g> Trainer<'g> {
    /// Validates and preprocesses `train` (and `test`, ids as in `train`), checks that
    /// everything fits the device before allocating, and uploads.
    pub fn new(
        gpu: &'g Gpu,
        train: &Ratings,
        test: Option<&Ratings>,
        options: Options,
    ) -> Result<Self> {
        options.validate()?;
        let k = options.k;
        let half = options.precision == Precision::F16;
        let layout = kernels::Layout::choose(gpu, &options)?;
        if options.scheme == Scheme::Hogwild && options.streams != 1 {
            return Err(Error::Option(format!(
                "streams = {}: streams apply to the wavefront scheme only",
                options.streams
            )));
        }
        let invocations = layout.lanes.saturating_mul(options.streams);
        if options.streams == 0 || invocations > gpu.caps.max_invocations_per_workgroup {
            return Err(Error::Option(format!(
                "streams = {}: must be ≥ 1, and {} lanes × streams at most {} invocations \
                 per workgroup",
                options.streams, layout.lanes, gpu.caps.max_invocations_per_workgroup
            )));
        }
        let (m, n) = (train.n_users, train.n_items);
        check_features(gpu, &[("P", m), ("Q", n)], k, half)?;
        let workers = kernels::workers(gpu, &options, m, n)?;
        let data = prep::prepare(
            train,
            test,
            options.permute_ids,
            options.shuffle,
            options.seed,
        )?;
        let nnz = train.len() as u64;
        let band_samples = band_samples(&gpu.caps);
        let mut train_samples = data.train;
        let wavefront = if options.scheme == Scheme::Wavefront {
            if train_samples.len() / 3 > band_samples {
                return Err(Error::TooLarge {
                    what: format!("wavefront training data ({nnz} ratings × 12 bytes)"),
                    needed: format!("{} bytes in one storage binding", nnz * 12),
                    limit: format!(
                        "{} bytes on {} (use the hogwild scheme, which splits it)",
                        gpu.caps.max_storage_binding_bytes, gpu.caps.adapter_name
                    ),
                });
            }
            let cols = options
                .columns
                .unwrap_or(2 * workers)
                .clamp(1, n.max(1) as u32) as usize;
            let (sorted, offsets) = prep::grid(&train_samples, (m, n), (workers as usize, cols));
            train_samples = sorted;
            Some(kernels::Grid::new(
                gpu,
                &offsets,
                workers,
                cols as u32,
                options.instrument,
            )?)
        } else {
            None
        };
        let bands = train_samples
            .chunks(3 * band_samples)
            .map(|c| {
                Ok((
                    GpuBuffer::upload(gpu, "mf.samples", c)?,
                    (c.len() / 3) as u32,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let test_gpu = if data.test.is_empty() {
            None
        } else {
            if data.test.len() / 3 > band_samples {
                return Err(Error::TooLarge {
                    what: format!("test ratings ({} × 12 bytes)", data.test.len() / 3),
                    needed: format!("{} bytes in one storage binding", data.test.len() * 4),
                    limit: format!("{} bytes", gpu.caps.max_storage_binding_bytes),
                });
            }
            Some((
                GpuBuffer::upload(gpu, "mf.test", &data.test)?,
                (data.test.len() / 3) as u32,
            ))
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(options.seed);
        let p = GpuBuffer::upload(gpu, "mf.p", &prep::init_features(m, k, half, &mut rng))?;
        let q = GpuBuffer::upload(gpu, "mf.q", &prep::init_features(n, k, half, &mut rng))?;
        let rng = GpuBuffer::upload(gpu, "mf.rng", &worker_streams(0..workers, options.seed))?;
        let counters = if options.instrument && options.scheme == Scheme::Hogwild {
            Some(GpuBuffer::zeroed(gpu, "mf.counters", 1)?)
        } else {
            None
        };
        Ok(Trainer {
            gpu,
            sigma: data.sigma,
            user_row: data.user_row,
            item_row: data.item_row,
            bands,
            test: test_gpu,
            skipped: data.skipped,
            nnz,
            p,
            q,
            rng,
            layout,
            wavefront,
            counters,
            epoch: 0,
            options,
        })
    }

    /// Test ratings skipped because their user or item has no training rating.
    pub fn skipped_test(&self) -> usize {
        self.skipped
    }

    /// Test ratings evaluated.
    pub fn test_len(&self) -> usize {
        self.test.as_ref().map_or(0, |t| t.1 as usize)
    }

    /// σ, the standard deviation the ratings were divided by.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The worker count in use.
    pub fn workers(&self) -> u32 {
        self.rng.len() as u32
    }

    /// Lanes per update and whether they reduce by subgroup shuffles.
    pub fn lanes(&self) -> (u32, bool) {
        (self.layout.lanes, self.layout.subgroup)
    }

    /// Whether the training kernels bind P and Q `@coherent` (see [`Options::coherent`]).
    pub fn coherent(&self) -> bool {
        self.layout.coherent
    }

    /// Whether the training kernels bind P `@coherent` ([`Options::coherent_p`]).
    pub fn coherent_p(&self) -> bool {
        self.layout.coherent && self.layout.coherent_p
    }

    /// Whether batch-Hogwild! stages its samples in the lanes ([`Options::stage`]).
    pub fn staged(&self) -> bool {
        self.layout.stage && self.options.scheme == Scheme::Hogwild
    }

    /// Samples a worker updates together: [`Options::ilp`] for batch-Hogwild!, 1 for the
    /// wavefront.
    pub fn ilp(&self) -> u32 {
        match self.options.scheme {
            Scheme::Hogwild => self.options.ilp,
            Scheme::Wavefront => 1,
        }
    }

    /// Words a lane loads and stores as one access ([`Options::vector`], as lowered to
    /// divide a lane's words; 1 for the wavefront).
    pub fn vector(&self) -> u32 {
        self.layout.vector
    }

    /// Most updates a batch-Hogwild! worker performs in one dispatch
    /// ([`Options::dispatch_updates`]).
    pub fn dispatch_updates(&self) -> u32 {
        self.layout.dispatch_updates
    }

    /// Invocations per batch-Hogwild! workgroup ([`Options::workgroup`]).
    pub fn workgroup(&self) -> u32 {
        self.layout.workgroup
    }

    /// Whether P and Q use native f16 storage (false: packed words or f32).
    pub fn native_f16(&self) -> bool {
        self.layout.native_f16
    }

    /// Updates one epoch performs: hogwild s·⌈nnz_band/(s·f)⌉·f summed over bands,
    /// wavefront nnz.
    pub fn updates_per_epoch(&self) -> u64 {
        match self.options.scheme {
            Scheme::Wavefront => self.nnz,
            Scheme::Hogwild => kernels::hogwild_updates(
                self.bands.iter().map(|(_, len)| *len as u64),
                self.workers() as u64,
                self.options.batch as u64,
            ),
        }
    }

    /// Records `epochs` training epochs (from the current one) into `batch`.
    pub fn record(&mut self, batch: &mut Batch, epochs: usize) -> Result<()> {
        for _ in 0..epochs {
            let lr = self.options.learning_rate(self.epoch);
            kernels::record_epoch(self, batch, lr)?;
            self.epoch += 1;
        }
        Ok(())
    }

    /// Trains `epochs` epochs; after each, evaluates the test RMSE and the divergence guard
    /// on the GPU (two scalars read back) and calls `callback` with the epoch's metrics.
    /// Fails with [`Error::Diverged`] naming the epoch when P or Q holds NaN or infinity.
    pub fn fit(
        &mut self,
        epochs: usize,
        mut callback: impl FnMut(&EpochMetrics),
    ) -> Result<Vec<EpochMetrics>> {
        // Grown per epoch: `epochs` comes from the command line and may be huge.
        let mut out = Vec::new();
        for _ in 0..epochs {
            let lr = self.options.learning_rate(self.epoch);
            let mut batch = Batch::new(self.gpu);
            self.record(&mut batch, 1)?;
            let time = batch.submit_timed()?;
            let rmse = self.evaluate()?;
            let updates = self.updates_per_epoch();
            let m = EpochMetrics {
                epoch: self.epoch,
                lr,
                updates,
                seconds: time.seconds,
                updates_per_s: updates as f64 / time.seconds.max(1e-12),
                rmse,
            };
            callback(&m);
            out.push(m);
        }
        Ok(out)
    }

    /// Brings the GPU's clocks up before training is timed (after host work an H200 was seen
    /// at ~500 MHz, needing ~0.3 s of load to recover: see [`crate::gpu::WARM_UP_SECONDS`];
    /// a 20-epoch Netflix-shape run trains for about a second). Runs batch-Hogwild!
    /// epochs at learning rate 0, whose every store writes back the value it read (P and Q
    /// keep their values while they are finite), until their times settle as
    /// [`crate::gpu::median_warm`] requires; then restores the workers' PCG states and the
    /// update counter, so that training takes exactly the updates it would have taken
    /// without it. The wavefront (whose schedule state an epoch moves) is warmed by the
    /// runtime's spin kernel instead ([`crate::gpu::warm_clocks`]). Returns the wall-clock
    /// seconds spent.
    pub fn warm_up(&mut self) -> Result<f64> {
        if self.options.scheme != Scheme::Hogwild {
            return crate::gpu::warm_clocks(self.gpu);
        }
        let start = std::time::Instant::now();
        let states = self.rng.read(self.gpu)?;
        let counted = self
            .counters
            .as_ref()
            .map(|c| c.read(self.gpu))
            .transpose()?;
        crate::gpu::median_warm(self.gpu, 1, || {
            let mut batch = Batch::new(self.gpu);
            kernels::record_epoch(self, &mut batch, 0.0)?;
            batch.submit_timed()
        })?;
        self.rng.write(self.gpu, &states)?;
        if let (Some(c), Some(v)) = (&self.counters, counted) {
            c.write(self.gpu, &v)?;
        }
        Ok(start.elapsed().as_secs_f64())
    }

    /// Test RMSE of the current model in rating units (`None` without test ratings), after
    /// checking P and Q for NaN or infinity.
    pub fn evaluate(&self) -> Result<Option<f64>> {
        kernels::evaluate(self)
    }

    /// Counters of an instrumented run (zeros without [`Options::instrument`]).
    pub fn instruments(&self) -> Result<Instruments> {
        let mut i = Instruments::default();
        if let Some(c) = &self.counters {
            i.updates = c.read(self.gpu)?[0] as u64;
        }
        if let Some(g) = &self.wavefront {
            (i.entries, i.violations) = g.check_counts(self.gpu)?;
        }
        Ok(i)
    }

    /// P and Q as stored on the device (device row order, values divided by √σ), decoded to
    /// f32: `(p, q)`, row-major with k features per row.
    pub fn device_features(&self) -> Result<(Vec<f32>, Vec<f32>)> {
        let half = self.options.precision == Precision::F16;
        Ok((
            decode(&self.p.read(self.gpu)?, half),
            decode(&self.q.read(self.gpu)?, half),
        ))
    }

    /// The training samples as the device holds them, one array per band: u32 triplets
    /// (device row u, device row v, bits of r/σ), shuffled (and grid-sorted for wavefront).
    pub fn device_samples(&self) -> Result<Vec<Vec<u32>>> {
        self.bands.iter().map(|(b, _)| b.read(self.gpu)).collect()
    }

    /// The test samples as the device holds them: u32 triplets (device row u, device row v,
    /// bits of r in rating units); empty without test ratings.
    pub fn device_test_samples(&self) -> Result<Vec<u32>> {
        self.test
            .as_ref()
            .map_or(Ok(vec![]), |(b, _)| b.read(self.gpu))
    }

    /// The workers' PCG states (advanced by each epoch).
    pub fn worker_states(&self) -> Result<Vec<u32>> {
        self.rng.read(self.gpu)
    }

    /// λ as the device applies it: λ / σ.
    pub fn device_lambda(&self) -> f32 {
        (self.options.lambda as f64 / self.sigma) as f32
    }

    /// The trained model: P and Q read back, rows in the input's id order, rescaled by √σ
    /// so that p_u·q_v is in rating units.
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

/// Fails with [`Error::TooLarge`] when a feature matrix of `rows` rows × `k` features does
/// not fit one storage binding of `gpu`.
/// Fails with [`Error::TooLarge`] when the factors of `users` × `items` at `options`' rank
/// and precision cannot fit `gpus` (Q whole on each device, P in one row block per device):
/// for callers that know the shape before they build the ratings (generated data).
pub fn check_shape(gpus: &[Gpu], users: usize, items: usize, options: &Options) -> Result<()> {
    let half = options.precision == Precision::F16;
    let p_rows = users.div_ceil(gpus.len().max(1));
    for gpu in gpus {
        check_features(gpu, &[("P", p_rows), ("Q", items)], options.k, half)?;
    }
    Ok(())
}

pub(crate) fn check_features(
    gpu: &Gpu,
    what: &[(&str, usize)],
    k: usize,
    half: bool,
) -> Result<()> {
    let row_bytes = (k * if half { 2 } else { 4 }) as u64;
    for &(what, rows) in what {
        let bytes = rows as u64 * row_bytes;
        let limit = gpu.caps.max_storage_binding_bytes.min(u32::MAX as u64);
        if bytes > limit {
            return Err(Error::TooLarge {
                what: format!("{what} ({rows} rows × {k} features)"),
                needed: format!("{bytes} bytes in one storage binding"),
                limit: format!("{limit} bytes on {}", gpu.caps.adapter_name),
            });
        }
    }
    Ok(())
}

/// Initial PCG states of workers `ids` (a worker's stream depends on its id and the seed).
pub(crate) fn worker_streams(ids: std::ops::Range<u32>, seed: u64) -> Vec<u32> {
    ids.map(|w| crate::gpu::shaders::pcg_hash(w ^ (seed as u32).wrapping_mul(0x9e37_79b9)))
        .collect()
}

/// The model of device-order features `(p, q)` (values divided by √σ): rows gathered into
/// the input's id order through `(user_row, item_row)` and rescaled by √σ.
pub(crate) fn model_from(
    (p, q): (&[f32], &[f32]),
    k: usize,
    sigma: f64,
    (user_row, item_row): (&[u32], &[u32]),
) -> Model {
    let scale = sigma.sqrt() as f32;
    let gather = |dev: &[f32], rows: &[u32]| -> Vec<f32> {
        rows.iter()
            .flat_map(|&r| {
                dev[r as usize * k..(r as usize + 1) * k]
                    .iter()
                    .map(|x| x * scale)
            })
            .collect()
    };
    Model {
        k,
        n_users: user_row.len(),
        n_items: item_row.len(),
        p: gather(p, user_row),
        q: gather(q, item_row),
        user_ids: None,
        item_ids: None,
    }
}
