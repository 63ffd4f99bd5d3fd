//! The training loop: data resident on the device, one submission per epoch, validation
//! each epoch, early stop, parameters in and out in the original feature order.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;

use crate::gpu::{Batch, Gpu, GpuBuffer};
use crate::sparse::Csr;
use crate::wide::engine::{
    cache_budget, DeviceChunks, HostArrays, Kernels, MetricsConfig, Schedule, StageKernels,
    AUC_BINS, AUC_RANGE, METRICS_WG,
};
use crate::wide::metrics::labels_pm1;
use crate::wide::plan::{
    async_scale, chunk_for_batch, hot_features, split_rows, Chunks, FeatureOrder,
};
use crate::wide::{ModelSpec, Options};
use crate::{Error, Result};

mod eval;

pub use eval::Eval;
use eval::Valid;

/// What one epoch measured.
#[derive(Clone, Debug, Serialize)]
pub struct EpochStats {
    /// 1-based epoch.
    pub epoch: usize,
    /// Mean training loss over the epoch (each sample's loss at the parameters its
    /// mini-batch saw).
    pub train_loss: f64,
    /// Mean validation loss of the model's own loss, when there is validation data.
    pub valid_loss: Option<f64>,
    /// Mean validation log loss log(1 + e^{−yŷ}) (equal to `valid_loss` for LR and FM).
    pub logloss: Option<f64>,
    /// Validation AUC of ŷ from GPU histograms (`None` without validation data or with one
    /// class only).
    pub auc: Option<f64>,
    /// The AUC's error bound (see [`Eval::auc_bound`]).
    pub auc_bound: Option<f64>,
    /// Seconds of device time of the epoch's training submission (timestamp queries when the
    /// adapter has them, else wall clock around submit and wait).
    pub seconds: f64,
    /// Whether `seconds` came from timestamp queries.
    pub from_timestamps: bool,
}

/// Trains one wide model on the GPU (see the module docs for the engine).
pub struct Trainer<'g> {
    gpu: &'g Gpu,
    spec: ModelSpec,
    options: Options,
    order: FeatureOrder,
    kernels: Kernels,
    /// Features in the importance cache.
    hot: usize,
    /// The stage baseline's kernels (stage mode only).
    stage: Option<StageKernels>,
    /// The training data in parts that each fit one storage binding.
    parts: Vec<Part>,
    /// Samples per chunk.
    chunk: usize,
    params: GpuBuffer<f32>,
    grad: GpuBuffer<f32>,
    /// Async: the step scales of the first features, the bias's last.
    scale: Option<GpuBuffer<f32>>,
    /// Async: mini-batches whose updates read stale parameters at once (S).
    in_flight: f64,
    /// Async: persistent workgroups per dispatch (P).
    groups: usize,
    /// The staging ring's two slots (each sized for the largest part), when streaming.
    ring: Option<[Slot; 2]>,
    valid: Option<Valid>,
    epoch: usize,
    rng: rand::rngs::StdRng,
    history: Vec<f64>,
    /// The order of the last epoch: (part, its chunk order), parts in the order they ran.
    last_order: Vec<(usize, Vec<u32>)>,
}

/// Training samples that fit one storage binding, with their dispatches.
struct Part {
    data: DeviceChunks,
    config: wgpu::Buffer,
    sched: Schedule,
    /// The part's first training sample.
    first: usize,
    /// Per-sample Accums of the stage baseline.
    accs: Option<GpuBuffer<f32>>,
    /// Staging ring: the part's arrays on the host, written into a slot before it runs.
    host: Option<HostArrays>,
    /// The dispatches of the part's share of an epoch (made on first use), bound to its own
    /// arrays (index 0) or to ring slot 0 or 1.
    steps: [Vec<Step>; 2],
}

/// A ring slot's arrays: meta, sample-sorted and feature-sorted edges.
type Slot = [GpuBuffer<u32>; 3];

/// A recorded dispatch: kernel, bind group, grid.
type Step = (
    std::sync::Arc<crate::gpu::Kernel>,
    wgpu::BindGroup,
    [u32; 3],
);

/// Initial parameters in the original feature order: the first parameter of each feature
/// and the bias at 0, the others N(0, init_std²) from `seed`.
pub fn initial_params(spec: &ModelSpec, n_features: usize, seed: u64) -> Result<Vec<f32>> {
    let np = spec.params_per_feature;
    let len = n_features
        .checked_mul(np)
        .and_then(|l| l.checked_add(1))
        .ok_or_else(|| Error::Option("parameter count overflows".into()))?;
    let mut p = crate::limits::try_vec("wide parameters", len, 0.0f32)?;
    if np > 1 && spec.init_std > 0.0 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let d = Normal::new(0.0f32, spec.init_std).expect("checked std");
        for j in 0..n_features {
            for v in &mut p[j * np + 1..(j + 1) * np] {
                *v = d.sample(&mut rng);
            }
        }
    }
    Ok(p)
}

/// Async mode keeps at least this many windows of chunks in flight per epoch: the persistent
/// workgroups are capped at the epoch's chunks / MIN_WINDOWS, so hot features (whose steps
/// the scale shrinks to about one per window) still take that many steps per epoch. On a
/// small data set a GPU would otherwise hold the whole epoch in flight (full-batch steps).
/// The f64 twin's sweep converged with ≥ 20 windows per epoch for LR, closer to sync's
/// logloss with more.
pub const MIN_WINDOWS: usize = 64;

/// Async mode's persistent workgroups: `async_groups`, at most the epoch's chunks /
/// [`MIN_WINDOWS`] (at least 1).
fn async_groups(options: &Options, total_chunks: usize) -> usize {
    options.async_groups.min(total_chunks / MIN_WINDOWS).max(1)
}

/// Async mode's mini-batches in flight: the chunks one dispatch's persistent workgroups
/// hold at once (at most [`async_groups`], at most the dispatch's chunks) in mini-batches;
/// 1 in sync mode; `async_in_flight` when given.
fn in_flight(options: &Options, chunk: usize, total_chunks: usize) -> f64 {
    if options.sync {
        return 1.0;
    }
    if let Some(s) = options.async_in_flight {
        return s;
    }
    let per_batch = (options.batch / chunk).max(1);
    let per_dispatch = match options.async_span {
        0 => total_chunks,
        span => span.saturating_mul(per_batch),
    };
    let chunks = async_groups(options, total_chunks)
        .min(per_dispatch)
        .min(total_chunks)
        .max(1);
    (chunks as f64 / per_batch as f64).max(1.0)
}

/// Fails with [`Error::Invalid`] naming the first label that is not a finite number.
fn check_labels(what: &str, y: &[f32]) -> Result<()> {
    match y.iter().position(|l| !l.is_finite()) {
        Some(i) => Err(Error::invalid(what, format!("sample {i}: {}", y[i]))),
        None => Ok(()),
    }
}

impl<'g> Trainer<'g> {
    /// Uploads `train` (labels > 0 positive, others negative) and optional validation data
    /// with `n_features` features, chunked once; parameters start at [`initial_params`].
    pub fn new(
        gpu: &'g Gpu,
        spec: &ModelSpec,
        n_features: usize,
        train: (&Csr, &[f32]),
        valid: Option<(&Csr, &[f32])>,
        options: Options,
    ) -> Result<Self> {
        spec.check()?;
        options.check()?;
        if spec.accums > crate::wide::model::MAX_ACCUMS {
            return Err(Error::Option(format!(
                "model {}: too many Accums",
                spec.name
            )));
        }
        for (what, x, y) in [
            ("training", Some(train.0), Some(train.1)),
            ("validation", valid.map(|v| v.0), valid.map(|v| v.1)),
        ] {
            if let (Some(x), Some(y)) = (x, y) {
                if x.nrows != y.len() {
                    return Err(Error::Shape(format!(
                        "{} {what} labels for {} samples",
                        y.len(),
                        x.nrows
                    )));
                }
            }
        }
        check_labels("training labels", train.1)?;
        if let Some((_, y)) = valid {
            check_labels("validation labels", y)?;
        }
        let lanes = options.lanes;
        let chunk = chunk_for_batch(options.batch, options.max_chunk);
        if train.0.ncols > n_features {
            return Err(Error::Shape(format!(
                "training data has {} feature columns, the model {n_features}",
                train.0.ncols
            )));
        }
        // The parameters are bound whole: a feature index in the billions is refused here,
        // before the per-feature orders and parameters are built on the host.
        let n_params = n_features
            .checked_mul(spec.params_per_feature)
            .and_then(|l| l.checked_add(1))
            .unwrap_or(usize::MAX);
        GpuBuffer::<f32>::check_binding(gpu, "wide parameters", n_params)?;
        let order = if options.reindex {
            FeatureOrder::by_frequency_of(train.0, n_features)
        } else {
            FeatureOrder::identity(n_features)
        };
        let labels = labels_pm1(train.1);
        let bias_index = n_features * spec.params_per_feature;
        // One-hot data (every value 1, as CTR data) is stored without its values.
        let one_hot = options.drop_ones && train.0.values.iter().all(|&v| v == 1.0);
        let valid_one_hot =
            options.drop_ones && valid.is_some_and(|v| v.0.values.iter().all(|&x| x == 1.0));
        let ranges = split_rows(train.0, chunk, gpu.caps.max_storage_binding_bytes)?;
        // Sample count of each feature (re-indexed): the cost rule's and async mode's input.
        let mut counts = crate::limits::try_vec("wide feature counts", order.len(), 0u32)?;
        for &j in &train.0.col_idx {
            counts[order.new_of_old[j as usize] as usize] += 1;
        }
        let total_chunks = train.0.nrows.div_ceil(chunk);
        let in_flight = in_flight(&options, chunk, total_chunks);
        let groups = async_groups(&options, total_chunks);
        let scale = if options.sync {
            None
        } else {
            let (mut s, bias) = if options.async_scale {
                async_scale(&counts, train.0.nrows, in_flight)
            } else {
                (vec![], 1.0)
            };
            s.push(bias);
            Some(GpuBuffer::upload(gpu, "wide.scale", &s)?)
        };
        let scaled = scale.as_ref().map_or(0, |s| s.len() - 1) as u32;
        let mut parts = vec![];
        let mut ring_lens = [1usize; 3];
        for r in &ranges {
            let band;
            let x = if ranges.len() == 1 {
                train.0
            } else {
                band = train.0.row_band(r.clone());
                &band
            };
            let chunks = Chunks::build(x, &labels[r.clone()], &order, chunk)?;
            let (data, host) = if options.ring {
                let h = HostArrays::of(&chunks, one_hot)?;
                for (m, len) in
                    ring_lens
                        .iter_mut()
                        .zip([h.meta.len(), h.sedge.len(), h.fedge.len()])
                {
                    *m = (*m).max(len);
                }
                (DeviceChunks::ring_part(gpu, &chunks)?, Some(h))
            } else {
                (DeviceChunks::upload(gpu, &chunks, false, one_hot)?, None)
            };
            drop(chunks);
            let config = gpu.uniform(
                "wide.config",
                &crate::wide::engine::Config {
                    scaled,
                    l2: options.l2,
                    ..data.config(bias_index, options.lr, options.batch)
                },
            );
            let per = match (options.sync, options.async_span) {
                (true, _) => options.batch / chunk,
                (false, 0) => data.host.n_chunks,
                (false, span) => (span.saturating_mul(options.batch / chunk)).max(1),
            };
            let sched = Schedule::new(gpu, "wide.sched", data.host.n_chunks, per)?;
            let accs = if options.stage {
                let len = data
                    .host
                    .n_samples
                    .checked_mul(spec.accums + 2)
                    .ok_or_else(|| Error::Option("stage Accums overflow".into()))?;
                Some(GpuBuffer::filled(gpu, "wide.stage.accs", len, f32::NAN)?)
            } else {
                None
            };
            parts.push(Part {
                data,
                config,
                sched,
                first: r.start,
                accs,
                host,
                steps: [vec![], vec![]],
            });
        }
        let ring = if options.ring {
            let slot = || -> Result<Slot> {
                let name = ["wide.ring.meta", "wide.ring.sedge", "wide.ring.fedge"];
                Ok([
                    GpuBuffer::zeroed(gpu, name[0], ring_lens[0])?,
                    GpuBuffer::zeroed(gpu, name[1], ring_lens[1])?,
                    GpuBuffer::zeroed(gpu, name[2], ring_lens[2])?,
                ])
            };
            Some([slot()?, slot()?])
        } else {
            None
        };
        let n_chunks: usize = parts.iter().map(|p| p.data.host.n_chunks).sum();
        let budget = cache_budget(gpu, spec, chunk, lanes) / spec.params_per_feature;
        let hot = match options.cache {
            Some(h) => h.min(budget),
            None => hot_features(&counts, n_chunks, budget),
        }
        .min(n_features);
        drop(counts);
        let kernels = Kernels::new(
            gpu,
            spec,
            chunk,
            lanes,
            options.native_atomics,
            hot,
            (one_hot, valid_one_hot),
        )?;
        let stage = if options.stage {
            Some(StageKernels::new(
                gpu,
                spec,
                chunk,
                lanes,
                options.native_atomics,
                one_hot,
            )?)
        } else {
            None
        };
        let valid = match valid {
            Some((x, y)) => {
                if x.ncols > n_features {
                    return Err(Error::Shape(format!(
                        "validation data has {} feature columns, the model {n_features}",
                        x.ncols
                    )));
                }
                let labels = labels_pm1(y);
                let c = Chunks::build(x, &labels, &order, chunk)?;
                let d = DeviceChunks::upload(gpu, &c, true, valid_one_hot)?;
                let config = gpu.uniform("wide.valid.config", &d.config(bias_index, 0.0, 1));
                let sched = Schedule::new(gpu, "wide.valid.sched", c.n_chunks, c.n_chunks)?;
                let ids: Vec<u32> = (0..c.n_chunks as u32).collect();
                sched.write(gpu, &ids, None)?;
                let groups = (c.n_samples as u32).div_ceil(METRICS_WG).max(1);
                Some(Valid {
                    metrics: gpu.uniform(
                        "wide.metrics",
                        &MetricsConfig {
                            n_samples: c.n_samples as u32,
                            label_off: c.offsets.label,
                            bins: AUC_BINS,
                            range: AUC_RANGE,
                        },
                    ),
                    hist: GpuBuffer::zeroed(gpu, "wide.hist", 2 * AUC_BINS as usize)?,
                    partial: GpuBuffer::filled(gpu, "wide.partial", 2 * groups as usize, f32::NAN)?,
                    data: d,
                    config,
                    sched,
                    labels,
                })
            }
            None => None,
        };
        let mut t = Trainer {
            gpu,
            spec: spec.clone(),
            params: GpuBuffer::zeroed(gpu, "wide.params", bias_index + 1)?,
            grad: GpuBuffer::zeroed(gpu, "wide.grad", bias_index + 1)?,
            scale,
            in_flight,
            groups,
            ring,
            rng: rand::rngs::StdRng::seed_from_u64(options.seed),
            options,
            order,
            kernels,
            hot,
            stage,
            parts,
            chunk,
            valid,
            epoch: 0,
            history: vec![],
            last_order: vec![],
        };
        t.grad.fill(gpu, 0.0)?;
        let init = initial_params(spec, n_features, t.options.seed)?;
        t.set_params(&init)?;
        Ok(t)
    }

    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.order.len()
    }

    /// The model descriptor.
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// Samples per chunk (one workgroup's share).
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Parts the training data is cut into (each fits one storage binding).
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// Features in the importance cache.
    pub fn hot_features(&self) -> usize {
        self.hot
    }

    /// Async: mini-batches whose updates read stale parameters at once (S = P · chunk /
    /// batch, P the persistent workgroups, fewer when a dispatch holds fewer chunks), as the
    /// step scale assumes; 1 in sync mode.
    pub fn in_flight(&self) -> f64 {
        self.in_flight
    }

    /// Async: persistent workgroups per dispatch ([`Options::async_groups`], at most the
    /// epoch's chunks / [`MIN_WINDOWS`]).
    pub fn async_groups(&self) -> usize {
        self.groups
    }

    /// Async: features whose step is scaled (the prefix of the re-indexed order), 0 in sync
    /// mode or with the scale off.
    pub fn scaled_features(&self) -> usize {
        self.scale.as_ref().map_or(0, |s| s.len() - 1)
    }

    /// Overwrites the parameters (original feature order, bias last).
    pub fn set_params(&mut self, params: &[f32]) -> Result<()> {
        let np = self.spec.params_per_feature;
        if params.len() != self.params.len() {
            return Err(Error::Shape(format!(
                "{} parameters given, the model has {}",
                params.len(),
                self.params.len()
            )));
        }
        let mut p = vec![0.0f32; params.len()];
        for (old, &new) in self.order.new_of_old.iter().enumerate() {
            let (o, n) = (old * np, new as usize * np);
            p[n..n + np].copy_from_slice(&params[o..o + np]);
        }
        p[self.params.len() - 1] = params[params.len() - 1];
        self.params.write(self.gpu, &p)
    }

    /// Reads the parameters back (original feature order, bias last).
    pub fn params(&self) -> Result<Vec<f32>> {
        let np = self.spec.params_per_feature;
        let p = self.params.read(self.gpu)?;
        let mut out = vec![0.0f32; p.len()];
        for (old, &new) in self.order.new_of_old.iter().enumerate() {
            let (o, n) = (old * np, new as usize * np);
            out[o..o + np].copy_from_slice(&p[n..n + np]);
        }
        out[p.len() - 1] = p[p.len() - 1];
        Ok(out)
    }

    /// `0..n` as u32, shuffled when the options say so.
    fn order(&mut self, n: usize) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..n as u32).collect();
        if self.options.shuffle {
            ids.shuffle(&mut self.rng);
        }
        ids
    }

    /// One epoch over the training data in one submission (parts in shuffled order, each
    /// part's chunks in shuffled order); returns (mean training loss, device time).
    pub fn train_epoch(&mut self) -> Result<(f64, crate::gpu::GpuTime)> {
        let gpu = self.gpu;
        let sync = self.options.sync;
        let part_order = self.order(self.parts.len());
        let mut last = vec![];
        for &p in &part_order {
            let p = p as usize;
            let ids = self.order(self.parts[p].data.host.n_chunks);
            let part = &self.parts[p];
            let (n, chunk) = (part.data.host.n_samples, self.chunk);
            let samples = move |c: u32| chunk.min(n - c as usize * chunk);
            part.sched
                .write(gpu, &ids, if sync { Some(&samples) } else { None })?;
            part.data.out.fill(gpu, f32::NAN)?;
            last.push((p, ids));
        }
        let time = if self.ring.is_some() {
            self.ring_epoch(&part_order)?
        } else {
            for p in 0..self.parts.len() {
                if self.parts[p].steps[0].is_empty() {
                    let d = &self.parts[p].data;
                    self.parts[p].steps[0] =
                        self.epoch_steps(&self.parts[p], [&d.meta, &d.sedge, &d.fedge])?;
                }
            }
            let mut batch = Batch::new(gpu);
            for &p in &part_order {
                for (kernel, bg, grid) in &self.parts[p as usize].steps[0] {
                    batch.dispatch(kernel, bg.clone(), *grid)?;
                }
            }
            batch.submit_timed()?
        };
        self.last_order = last;
        let mut total = 0.0;
        let mut n = 0;
        for part in &self.parts {
            total += part
                .data
                .out
                .read(gpu)?
                .iter()
                .map(|&l| l as f64)
                .sum::<f64>();
            n += part.data.host.n_samples;
        }
        Ok((total / n.max(1) as f64, time))
    }

    /// The staging ring's epoch: each part in turn is written into the next slot and its
    /// dispatches submitted without waiting, so the host writes part i + 1 (into the other
    /// slot) while the device trains part i; the queue orders each write after the
    /// submissions that read its slot before. Wall-clock time, transfers included.
    fn ring_epoch(&mut self, part_order: &[u32]) -> Result<crate::gpu::GpuTime> {
        let gpu = self.gpu;
        let start = std::time::Instant::now();
        for (pos, &p) in part_order.iter().enumerate() {
            let (p, slot) = (p as usize, pos % 2);
            let ring = self.ring.as_ref().expect("ring mode");
            if self.parts[p].steps[slot].is_empty() {
                let r = &ring[slot];
                self.parts[p].steps[slot] =
                    self.epoch_steps(&self.parts[p], [&r[0], &r[1], &r[2]])?;
            }
            let ring = self.ring.as_ref().expect("ring mode");
            let part = &self.parts[p];
            let host = part.host.as_ref().expect("ring parts keep their arrays");
            for (buffer, words) in ring[slot]
                .iter()
                .zip([&host.meta, &host.sedge, &host.fedge])
            {
                buffer.write_prefix(gpu, words)?;
            }
            let mut batch = Batch::new(gpu);
            for (kernel, bg, grid) in &part.steps[slot] {
                batch.dispatch(kernel, bg.clone(), *grid)?;
            }
            batch.submit_nowait()?;
        }
        gpu.wait()?;
        Ok(crate::gpu::GpuTime::wall(start.elapsed().as_secs_f64()))
    }

    /// The dispatches of an epoch bound to `arrays` (meta, sample-sorted, feature-sorted
    /// edges), made once: the schedule's entries keep their offsets and only their contents
    /// change from epoch to epoch.
    fn epoch_steps(&self, part: &Part, arrays: [&GpuBuffer<u32>; 3]) -> Result<Vec<Step>> {
        let [meta, sedge, fedge] = arrays;
        let gpu = self.gpu;
        let k = &self.kernels;
        let sync = self.options.sync;
        let mut steps = vec![];
        for (b, &count) in part.sched.counts.iter().enumerate() {
            let groups = if sync { count } else { count.min(self.groups) };
            let grid = gpu.grid(groups as u32)?;
            if let (Some(sk), Some(accs)) = (&self.stage, &part.accs) {
                for kernel in [&sk.aggregate, &sk.loss, &sk.grad] {
                    let bg = kernel.bind_ranges(
                        gpu,
                        &[
                            part.config.as_entire_buffer_binding(),
                            part.sched.entry(b),
                            meta.raw().as_entire_buffer_binding(),
                            sedge.raw().as_entire_buffer_binding(),
                            self.params.raw().as_entire_buffer_binding(),
                            accs.raw().as_entire_buffer_binding(),
                            self.grad.raw().as_entire_buffer_binding(),
                            part.data.out.raw().as_entire_buffer_binding(),
                        ],
                    )?;
                    steps.push((kernel.clone(), bg, grid));
                }
            } else {
                let flow = if sync { &k.flow_sync } else { &k.flow_async };
                // Async binds the parameters read-write at 5 and the step scales at 6.
                let sixth = match &self.scale {
                    Some(s) if !sync => s,
                    _ => &self.grad,
                };
                let bg = flow.bind_ranges(
                    gpu,
                    &[
                        part.config.as_entire_buffer_binding(),
                        part.sched.entry(b),
                        meta.raw().as_entire_buffer_binding(),
                        sedge.raw().as_entire_buffer_binding(),
                        fedge.raw().as_entire_buffer_binding(),
                        self.params.raw().as_entire_buffer_binding(),
                        sixth.raw().as_entire_buffer_binding(),
                        part.data.out.raw().as_entire_buffer_binding(),
                    ],
                )?;
                steps.push((flow.clone(), bg, grid));
            }
            if sync {
                let bg = k.apply.bind_ranges(
                    gpu,
                    &[
                        part.config.as_entire_buffer_binding(),
                        part.sched.entry(b),
                        meta.raw().as_entire_buffer_binding(),
                        self.params.raw().as_entire_buffer_binding(),
                        self.grad.raw().as_entire_buffer_binding(),
                    ],
                )?;
                steps.push((k.apply.clone(), bg, grid));
            }
        }
        Ok(steps)
    }

    /// One epoch and its validation.
    pub fn epoch(&mut self) -> Result<EpochStats> {
        let (train_loss, time) = self.train_epoch()?;
        self.epoch += 1;
        if !train_loss.is_finite() {
            return Err(Error::Diverged {
                epoch: self.epoch,
                message: format!("training loss {train_loss}"),
            });
        }
        let eval = self.evaluate()?;
        Ok(EpochStats {
            epoch: self.epoch,
            train_loss,
            valid_loss: eval.map(|e| e.loss),
            logloss: eval.map(|e| e.logloss),
            auc: eval.and_then(|e| e.auc),
            auc_bound: eval.map(|e| e.auc_bound),
            seconds: time.seconds,
            from_timestamps: time.from_timestamps,
        })
    }

    /// Up to `epochs` epochs, `callback` after each; stops early as [`Trainer::stop_after`].
    pub fn fit(
        &mut self,
        epochs: usize,
        mut callback: impl FnMut(&EpochStats),
    ) -> Result<Vec<EpochStats>> {
        let mut all = vec![];
        for _ in 0..epochs {
            let s = self.epoch()?;
            callback(&s);
            let stop = self.stop_after(&s);
            all.push(s);
            if stop {
                break;
            }
        }
        Ok(all)
    }

    /// Records epoch `s`'s validation loss; true when training should stop (the options ask
    /// for early stop and it exceeds the mean of the previous 10 epochs' validation losses).
    pub fn stop_after(&mut self, s: &EpochStats) -> bool {
        let stop = match s.valid_loss {
            Some(l) if self.options.early_stop && self.history.len() >= 10 => {
                let last = &self.history[self.history.len() - 10..];
                l > last.iter().sum::<f64>() / 10.0
            }
            _ => false,
        };
        if let Some(l) = s.valid_loss {
            self.history.push(l);
        }
        stop
    }

    /// The mini-batches of the last epoch as training-sample indices, in the order they ran:
    /// consecutive runs of `batch / chunk` chunks of the shuffled chunk order (in async mode
    /// the same grouping, which the chunks' updates did not wait for). With these the f64 twin
    /// replays the epoch as exact mini-batch SGD ([`crate::wide::cpu::Sgd`]).
    pub fn last_minibatches(&self) -> Vec<Vec<usize>> {
        let chunk = self.chunk;
        let per = (self.options.batch / chunk).max(1);
        let mut out = vec![];
        for (p, ids) in &self.last_order {
            let part = &self.parts[*p];
            let (n, first) = (part.data.host.n_samples, part.first);
            for cs in ids.chunks(per) {
                out.push(
                    cs.iter()
                        .flat_map(|&c| {
                            let s0 = c as usize * chunk;
                            first + s0..first + (s0 + chunk).min(n)
                        })
                        .collect(),
                );
            }
        }
        out
    }
}

impl Trainer<'_> {
    /// The trained model, read back (original feature order).
    pub fn model(&self) -> Result<crate::wide::WideModel> {
        Ok(crate::wide::WideModel {
            name: self.spec.name.clone(),
            accums: self.spec.accums,
            params_per_feature: self.spec.params_per_feature,
            n_features: self.n_features(),
            params: self.params()?,
        })
    }
}
