//! The training loop: data resident on the device, one submission per epoch, validation
//! each epoch, early stop, parameters in and out in the original feature order.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

use crate::gpu::{Gpu, GpuBuffer};
use crate::wide::engine::{
    cache_budget, check_workgroup_words, DeviceChunks, HostArrays, Kernels, Schedule, StageKernels,
};
use crate::wide::plan::FeatureOrder;
use crate::wide::{Diag, FlowVariant, ModelSpec, Options, SyncKernel};
use crate::{Error, Result};

mod build;
mod eval;
mod guard;
mod record;
mod ring;

pub use build::{initial_params, MIN_WINDOWS};
pub use eval::Eval;
use eval::Valid;
pub use guard::aliasing_allowed;

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
    /// Whether the divergence guard ([`Options::read_guard`]) found the epoch's plain-read
    /// training diverging and trained it again from its start with atomic reads (kept for
    /// the epochs after); `seconds` then covers both.
    pub redone: bool,
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
    /// Features the cost rule caches ([`crate::wide::plan::hot_features`]).
    hot_rule: usize,
    /// Features the cost rule would cache with no workgroup-memory cap: those that keep
    /// Apply's segments under [`FlowVariant::edge_apply`] by default.
    seg_rule: usize,
    /// The stage baseline's kernels (stage mode only).
    stage: Option<StageKernels>,
    /// The training data in parts that each fit one storage binding.
    parts: Vec<Part>,
    /// Samples per chunk.
    chunk: usize,
    params: GpuBuffer<f32>,
    grad: GpuBuffer<f32>,
    /// Async with snapshot reads: the copy of `params` each dispatch reads (bound read-only),
    /// refreshed before each dispatch.
    snapshot: Option<GpuBuffer<f32>>,
    /// Async: the step scales of the first features, the bias's last.
    scale: Option<GpuBuffer<f32>>,
    /// Async: the cold tail's first feature in effect, each part's `Config.cold`
    /// ([`FlowVariant::cold_from`] or the rule's); 0 in sync mode.
    cold: usize,
    /// Async: [`crate::wide::plan::cold_from`]'s bound on the training data; 0 in sync mode.
    cold_rule: usize,
    /// Async: mini-batches whose updates read stale parameters at once (S).
    in_flight: f64,
    /// Async: persistent workgroups per dispatch (P).
    groups: usize,
    /// Sync, persistent kernel: its workgroups (G); 0 with the other kernels.
    sync_groups: usize,
    /// Sync, persistent kernel: the grid barrier's word (arrivals and generation).
    grid_word: Option<GpuBuffer<u32>>,
    /// The staging ring's two slots (each sized for the largest part, with staging buffers
    /// as large), when streaming.
    ring: Option<[ring::Slot; 2]>,
    valid: Option<Valid>,
    epoch: usize,
    rng: rand::rngs::StdRng,
    history: Vec<f64>,
    /// The order of the last epoch: (part, its chunk order), parts in the order they ran.
    last_order: Vec<(usize, Vec<u32>)>,
    /// The divergence guard's copy of the parameters at the epoch's start (made on first use).
    backup: Option<GpuBuffer<f32>>,
    /// [`FlowVariant::kernel_copies`]: the guard's copy as a dispatch (made with `backup`).
    backup_copy: Option<crate::gpu::WordCopy>,
    /// [`FlowVariant::kernel_copies`]: the snapshot's copy as a dispatch (with `snapshot`).
    snapshot_copy: Option<crate::gpu::WordCopy>,
    /// The divergence guard's reference loss (the last accepted epoch's).
    guard_ref: Option<f64>,
    /// Wall-clock seconds of [`Trainer::new`]'s phases, in order.
    setup_phases: Vec<(&'static str, f64)>,
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

/// A recorded dispatch: kernel, bind group, grid, and whether the parameters are copied
/// into the snapshot before it (async with snapshot reads).
type Step = (
    std::sync::Arc<crate::gpu::Kernel>,
    wgpu::BindGroup,
    [u32; 3],
    bool,
);

impl<'g> Trainer<'g> {
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.order.len()
    }

    /// The model descriptor.
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// Wall-clock seconds of the setup's phases ([`Trainer::new`]), in order: checks, feature
    /// order, feature counts, chunks (built on the host), upload, kernels, validation,
    /// parameters.
    pub fn setup_phases(&self) -> &[(&'static str, f64)] {
        &self.setup_phases
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

    /// With [`FlowVariant::edge_apply`]: the features (0 .. this) whose Apply goes by
    /// segments, the others going edge by edge; `None` without it.
    pub fn segment_features(&self) -> Option<usize> {
        let v = &self.options.variant;
        v.edge_apply.then_some(match v.edge_features {
            0 => self.seg_rule,
            n => n,
        })
    }

    /// Async: mini-batches whose updates read stale parameters at once (S = P · chunk /
    /// batch, P the persistent workgroups, fewer when a dispatch holds fewer chunks; with
    /// snapshot reads a whole dispatch's chunks), as the step scale assumes; 1 in sync mode.
    pub fn in_flight(&self) -> f64 {
        self.in_flight
    }

    /// Flow-kernel dispatches per epoch (sync: one per mini-batch with the dispatch sync
    /// kernel or the stage baseline's aggregate, one per part or span of mini-batches with
    /// the persistent one; async: one per span, or per P · k chunks with snapshot reads,
    /// each after its snapshot copy).
    pub fn epoch_dispatches(&self) -> usize {
        self.parts.iter().map(|p| p.sched.counts.len()).sum()
    }

    /// Every dispatch of an epoch: [`Trainer::epoch_dispatches`] times 2 with the dispatch
    /// sync kernel (flow, apply), 4 with the stage baseline (aggregate, loss, gradient,
    /// apply), 1 otherwise.
    pub fn epoch_dispatches_all(&self) -> usize {
        let per = match self.sync_kernel() {
            Some(_) if self.options.stage => 4,
            Some(SyncKernel::Dispatch) => 2,
            _ => 1,
        };
        per * self.epoch_dispatches()
    }

    /// Sync mode's kernel (the stage baseline counts as dispatching per mini-batch);
    /// `None` in async mode.
    pub fn sync_kernel(&self) -> Option<SyncKernel> {
        match self.options.sync {
            false => None,
            true if self.options.persistent_sync() => Some(SyncKernel::Persistent),
            true => Some(SyncKernel::Dispatch),
        }
    }

    /// The persistent sync kernel's workgroups (G); 0 with the other kernels.
    pub fn sync_groups(&self) -> usize {
        self.sync_groups
    }

    /// Runs the next epochs of the persistent sync kernel with `groups` workgroups (G, as
    /// [`Options::sync_groups`]: 0 the default; checked as at build) on the same schedule,
    /// so benchmarks compare G on data chunked once. Not a restart: the parameters stay.
    pub fn set_sync_groups(&mut self, groups: usize) -> Result<()> {
        let options = Options {
            sync_groups: groups,
            ..self.options.clone()
        };
        options.check()?;
        let g = build::sync_groups(self.gpu, &self.spec, &options, self.chunk, self.hot)?;
        self.options = options;
        if g != self.sync_groups {
            self.sync_groups = g;
            for part in &mut self.parts {
                part.steps = [vec![], vec![]];
            }
        }
        Ok(())
    }

    /// Async: persistent workgroups per dispatch ([`Options::async_groups`], at most the
    /// epoch's chunks / [`MIN_WINDOWS`] and at most the flow kernel's resident workgroups).
    pub fn async_groups(&self) -> usize {
        self.groups
    }

    /// Async: features whose step is scaled (the prefix of the re-indexed order), 0 in sync
    /// mode or with the scale off.
    pub fn scaled_features(&self) -> usize {
        self.scale.as_ref().map_or(0, |s| s.len() - 1)
    }

    /// Async: the first feature of the cold tail, which [`FlowVariant::plain_writes`] writes
    /// without atomics ([`FlowVariant::cold_from`] where set, else
    /// [`crate::wide::plan::cold_from`]; re-indexed order), 0 in sync mode.
    pub fn cold_from(&self) -> usize {
        self.cold
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

    /// Switches the flow kernel to `variant` with the timing-only switches `diag`, `lanes`
    /// invocations per sample and the importance cache at `cache` features (`None`: the
    /// cost rule; capped by workgroup memory as [`Options::cache`]) on the same chunked
    /// data, and starts training over: initial parameters, epoch 0, the chunk order's seed
    /// again (so runs compare on the same orders). `variant.max_segment` must be the one the
    /// data were chunked with, and snapshot reads the built trainer's
    /// ([`FlowVariant::build_key`]); the cold tail's bound ([`FlowVariant::cold_from`]) is
    /// rewritten in each part's uniform. For benchmarks that time variants without building
    /// the data again.
    pub fn restart_with(
        &mut self,
        variant: FlowVariant,
        diag: Diag,
        lanes: u32,
        cache: Option<usize>,
    ) -> Result<()> {
        if self.stage.is_some() {
            return Err(Error::Option(
                "restart_with switches the flow kernel: not in stage mode".into(),
            ));
        }
        if variant.max_segment != self.options.variant.max_segment {
            return Err(Error::Option(format!(
                "max_segment {} differs from the chunked data's {}",
                variant.max_segment, self.options.variant.max_segment
            )));
        }
        if variant.build_key() != self.options.variant.build_key() {
            return Err(Error::Option(format!(
                "snapshot reads ({}) differ from the built trainer's ({}): its schedule, step \
                 scale and snapshot are fixed at build",
                variant.label(),
                self.options.variant.label()
            )));
        }
        let options = Options {
            variant,
            diag,
            lanes,
            cache,
            ..self.options.clone()
        };
        let options = guard::reads_for_backend(&self.gpu.caps.backend, options);
        options.check()?;
        if self.chunk * lanes as usize > 1024 {
            return Err(Error::Option(format!(
                "chunk {} × lanes {lanes} exceeds 1024 invocations",
                self.chunk
            )));
        }
        let tile_words = variant.tile_words();
        check_workgroup_words(self.gpu, &self.spec, self.chunk, lanes, tile_words)?;
        let budget = cache_budget(self.gpu, &self.spec, self.chunk, lanes, tile_words)
            / self.spec.params_per_feature;
        let hot = cache
            .unwrap_or(self.hot_rule)
            .min(budget)
            .min(self.n_features());
        // The persistent sync kernel's G is bounded by the resident workgroups, which the
        // lanes and the cache change.
        let sync_groups = build::sync_groups(self.gpu, &self.spec, &options, self.chunk, hot)?;
        self.kernels = Kernels::new(
            self.gpu,
            &self.spec,
            self.chunk,
            lanes,
            (hot, self.seg_rule),
            self.kernels.one_hot,
            &options,
        )?;
        self.sync_groups = sync_groups;
        self.hot = hot;
        // The cold bound is a word of each part's uniform, not of the kernels or the data:
        // rewritten here (queued before the next submission) rather than fixed at build.
        self.cold = build::cold_bound(&options, self.cold_rule, self.n_features());
        let at = std::mem::offset_of!(crate::wide::engine::Config, cold) as u64;
        for part in &mut self.parts {
            part.steps = [vec![], vec![]];
            self.gpu
                .write_uniform_at(&part.config, at, &(self.cold as u32));
        }
        self.options = options;
        self.rng = rand::rngs::StdRng::seed_from_u64(self.options.seed);
        self.epoch = 0;
        self.history.clear();
        self.last_order.clear();
        self.guard_ref = None;
        self.grad.fill(self.gpu, 0.0)?;
        let init = initial_params(&self.spec, self.n_features(), self.options.seed)?;
        self.set_params(&init)
    }

    /// Sets the async divergence guard's tolerance ([`Options::read_guard`]; `None`: no
    /// guard and no epoch-start copy), from the next epoch on. For benchmarks that time
    /// the guard's copy.
    pub fn set_read_guard(&mut self, read_guard: Option<f64>) -> Result<()> {
        Options {
            read_guard,
            ..self.options.clone()
        }
        .check()?;
        self.options.read_guard = read_guard;
        Ok(())
    }

    /// The async divergence guard's tolerance ([`Options::read_guard`]).
    pub fn read_guard(&self) -> Option<f64> {
        self.options.read_guard
    }

    /// The flow kernel's variant, timing-only switches and invocations per sample.
    pub fn flow(&self) -> (FlowVariant, Diag, u32) {
        (self.options.variant, self.options.diag, self.options.lanes)
    }

    /// `0..n` as u32, shuffled when the options say so.
    fn order(&mut self, n: usize) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..n as u32).collect();
        if self.options.shuffle {
            ids.shuffle(&mut self.rng);
        }
        ids
    }

    /// One epoch and its validation. With async plain reads and [`Options::read_guard`],
    /// an epoch whose losses diverge is trained again from its start with atomic reads.
    pub fn epoch(&mut self) -> Result<EpochStats> {
        let guard = self.guard_on();
        let reference = if guard { self.guard_reference()? } else { None };
        let (mut train_loss, mut time) = self.train_epoch()?;
        let mut eval = if train_loss.is_finite() {
            self.evaluate()?
        } else {
            None
        };
        let rise = self.options.read_guard.unwrap_or(0.0);
        let redone = guard && guard::diverged(train_loss, eval.map(|e| e.loss), reference, rise);
        if redone {
            self.restore_atomic()?;
            let (loss, again) = self.train_epoch()?;
            train_loss = loss;
            time.seconds += again.seconds;
            time.from_timestamps &= again.from_timestamps;
            eval = if loss.is_finite() {
                self.evaluate()?
            } else {
                None
            };
        }
        self.epoch += 1;
        if !train_loss.is_finite() {
            return Err(Error::Diverged {
                epoch: self.epoch,
                message: format!(
                    "training loss {train_loss}{}",
                    if redone {
                        " (trained again with atomic reads after plain reads diverged)"
                    } else {
                        ""
                    }
                ),
            });
        }
        self.guard_accept(train_loss, eval.as_ref());
        Ok(EpochStats {
            epoch: self.epoch,
            train_loss,
            valid_loss: eval.map(|e| e.loss),
            logloss: eval.map(|e| e.logloss),
            auc: eval.and_then(|e| e.auc),
            auc_bound: eval.map(|e| e.auc_bound),
            seconds: time.seconds,
            from_timestamps: time.from_timestamps,
            redone,
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
