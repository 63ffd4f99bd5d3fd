//! Building a trainer: the options' and labels' checks, the training data cut into parts
//! and uploaded, async mode's window and step scales, validation data on the device.

use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

use super::ring::Slot;
use super::{Part, Trainer, Valid};
use crate::gpu::{Gpu, GpuBuffer, WordCopy};
use crate::sparse::Csr;
use crate::wide::engine::{
    cache_budget, check_workgroup_words, workgroup_bytes, DeviceChunks, HostArrays, Kernels,
    MetricsConfig, Schedule, StageKernels, AUC_BINS, AUC_RANGE, METRICS_WG,
};
use crate::wide::metrics::labels_pm1;
use crate::wide::plan::{
    async_scale, chunk_for_batch, cold_from, hot_features, split_rows, Chunks, FeatureOrder,
};
use crate::wide::sync::{persistent_groups, resident_groups};
use crate::wide::{ModelSpec, Options};
use crate::{Error, Result};
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

/// The cold tail's first feature in effect: [`crate::wide::FlowVariant::cold_from`] clamped
/// to `n_features` where set, else `rule` ([`cold_from`]'s); 0 in sync mode.
pub(super) fn cold_bound(options: &Options, rule: usize, n_features: usize) -> usize {
    match options.variant.cold_from {
        _ if options.sync => 0,
        0 => rule,
        n => n.min(n_features),
    }
}

/// Async mode's persistent workgroups: `async_groups`, at most the epoch's chunks /
/// [`MIN_WINDOWS`] and at most `resident`, the flow kernel's workgroups a GPU holds at once
/// ([`resident_groups`]), at least 1. A persistent workgroup past the resident ones
/// starts only when one of those has finished all its chunks, so its chunks run in a second,
/// nearly empty wave: on an H100, criteo-s LR at 128 × 4 took 2.93–2.95 ms per epoch with
/// 564 workgroups against 2.19–2.20 with the 528 resident.
fn async_groups(options: &Options, total_chunks: usize, resident: usize) -> usize {
    options
        .async_groups
        .min(total_chunks / MIN_WINDOWS)
        .min(resident)
        .max(1)
}

/// Async mode's chunks per dispatch: `async_span` mini-batches' worth; without a span the
/// whole epoch (`epoch_chunks`, a part's with the data in parts), or with snapshot reads
/// P · [`crate::wide::FlowVariant::snapshot_rounds`] (the bound on a read's staleness).
fn async_per_dispatch(
    options: &Options,
    chunk: usize,
    epoch_chunks: usize,
    groups: usize,
) -> usize {
    match options.async_span {
        0 if options.variant.snapshot_reads => {
            groups.saturating_mul(options.variant.snapshot_rounds as usize)
        }
        0 => epoch_chunks,
        span => span.saturating_mul(options.batch / chunk),
    }
    .max(1)
}

/// Async mode's mini-batches in flight: the chunks one dispatch's `groups` persistent
/// workgroups ([`async_groups`]) hold at once (at most the dispatch's chunks) in mini-batches;
/// with snapshot reads every chunk of a dispatch reads the parameters as it began, so the
/// dispatch's chunks; 1 in sync mode; `async_in_flight` when given.
fn in_flight(options: &Options, chunk: usize, total_chunks: usize, groups: usize) -> f64 {
    if options.sync {
        return 1.0;
    }
    if let Some(s) = options.async_in_flight {
        return s;
    }
    let per_batch = (options.batch / chunk).max(1);
    let per_dispatch = async_per_dispatch(options, chunk, total_chunks, groups);
    let chunks = if options.variant.snapshot_reads {
        per_dispatch
    } else {
        groups.min(per_dispatch)
    }
    .min(total_chunks)
    .max(1);
    (chunks as f64 / per_batch as f64).max(1.0)
}

/// The flow kernel's workgroups resident at once for `options` with `hot` features cached,
/// and the compute units ([`resident_groups`] of its invocations and workgroup memory).
fn flow_residency(
    gpu: &Gpu,
    spec: &ModelSpec,
    options: &Options,
    chunk: usize,
    hot: usize,
) -> (usize, usize) {
    let shared = workgroup_bytes(
        spec,
        chunk,
        options.lanes,
        options.variant.tile_words(),
        hot,
    );
    resident_groups(gpu, (chunk * options.lanes as usize) as u32, shared)
}

/// The persistent sync kernel's workgroups G for `options` with `hot` features cached
/// ([`crate::wide::sync::persistent_groups`], bounded by the flow kernel's resident
/// workgroups, [`flow_residency`]); 0 when training does not run that kernel.
pub(super) fn sync_groups(
    gpu: &Gpu,
    spec: &ModelSpec,
    options: &Options,
    chunk: usize,
    hot: usize,
) -> Result<usize> {
    if !options.persistent_sync() {
        return Ok(0);
    }
    persistent_groups(
        gpu,
        options.sync_groups,
        (options.batch / chunk).max(1),
        flow_residency(gpu, spec, options, chunk, hot),
    )
}

/// Fails with [`Error::Invalid`] naming the first label that is not a finite number.
fn check_labels(what: &str, y: &[f32]) -> Result<()> {
    match y.iter().position(|l| !l.is_finite()) {
        Some(i) => Err(Error::invalid(what, format!("sample {i}: {}", y[i]))),
        None => Ok(()),
    }
}

/// Wall-clock seconds of a setup's phases, in order, a phase met again adding to its entry.
struct Phases {
    last: std::time::Instant,
    list: Vec<(&'static str, f64)>,
}

impl Phases {
    fn new() -> Self {
        Phases {
            last: std::time::Instant::now(),
            list: vec![],
        }
    }

    /// Ends phase `name` (the time since the last mark).
    fn mark(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        let s = (now - self.last).as_secs_f64();
        self.last = now;
        match self.list.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => *t += s,
            None => self.list.push((name, s)),
        }
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
        let mut phases = Phases::new();
        spec.check()?;
        // Checked with the sync kernel resolved (its variants depend on it).
        let options = Options {
            sync_kernel: crate::wide::sync::resolve(&options),
            ..options
        };
        // Plain reads bind the parameters twice, both writable: atomic reads where the
        // backend is not known to accept that alias.
        let options = super::guard::reads_for_backend(&gpu.caps.backend, options);
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
        // A sample's Aggregate is one loop over its features by `lanes` invocations, in the
        // training kernel and in the validation's prediction kernel alike: under a loop cap a
        // sample that would loop past the budget is refused rather than summed short.
        for (what, x) in [
            ("training", Some(train.0)),
            ("validation", valid.map(|v| v.0)),
        ] {
            let Some(x) = x else { continue };
            let longest = (0..x.nrows)
                .map(|r| (x.row_ptr[r + 1] - x.row_ptr[r]) as usize)
                .max()
                .unwrap_or(0);
            let iterations = crate::wide::predict::iterations(longest, lanes, spec);
            if !crate::gpu::loop_cap::fits(gpu.caps.loop_cap, iterations) {
                return Err(crate::gpu::loop_cap::over_budget(
                    &gpu.caps,
                    &format!(
                        "wide {what} data (a sample of {longest} features over {lanes} lanes; \
                         more lanes per sample shorten it)"
                    ),
                    iterations,
                ));
            }
        }
        let chunk = chunk_for_batch(options.batch, options.max_chunk);
        // A slot of `slot_bits` numbers at most 2^bits samples in a chunk.
        let slot_bits = options.variant.slot_bits;
        if slot_bits < 32 && chunk > 1usize << slot_bits {
            let most = 1usize << slot_bits;
            return Err(Error::Option(format!(
                "slot{slot_bits}: chunks of {chunk} samples; {slot_bits}-bit slots number at \
                 most {most} (--max-chunk {most})"
            )));
        }
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
        // Snapshot reads bind a second buffer of the same length (read-only, at 8).
        if options.variant.snapshot_reads && !options.sync {
            GpuBuffer::<f32>::check_binding(gpu, "wide parameter snapshot", n_params)?;
        }
        phases.mark("checks");
        // Samples holding each feature: the re-indexing's key, and (in the new order) the
        // cost rule's and async mode's input.
        let old_counts = crate::sparse::order::column_counts(train.0, n_features);
        let order = if options.reindex {
            FeatureOrder::by_counts(&old_counts)?
        } else {
            FeatureOrder::identity(n_features)?
        };
        phases.mark("feature order");
        let labels = labels_pm1(train.1);
        let bias_index = n_features * spec.params_per_feature;
        // One-hot data (every value 1, as CTR data) is stored without its values.
        let one_hot = options.drop_ones && train.0.values.iter().all(|&v| v == 1.0);
        let valid_one_hot =
            options.drop_ones && valid.is_some_and(|v| v.0.values.iter().all(|&x| x == 1.0));
        let ranges = split_rows(train.0, chunk, gpu.caps.max_storage_binding_bytes)?;
        let counts = order.permute_counts(&old_counts)?;
        drop(old_counts);
        let total_chunks = train.0.nrows.div_ceil(chunk);
        // The importance cache: its size sets the flow kernel's workgroup memory, and with it
        // the workgroups resident at once (parts are whole chunks: their chunks sum to
        // `total_chunks`).
        let tile_words = options.variant.tile_words();
        check_workgroup_words(gpu, spec, chunk, lanes, tile_words)?;
        let budget = cache_budget(gpu, spec, chunk, lanes, tile_words) / spec.params_per_feature;
        let hot_rule = hot_features(&counts, total_chunks, budget).min(n_features);
        let seg_rule = hot_features(&counts, total_chunks, n_features);
        let hot = match options.cache {
            Some(h) => h.min(budget),
            None => hot_rule,
        }
        .min(n_features);
        // A CPU device runs workgroups on a thread pool, one after another: no resident set
        // to stay within.
        let resident = if gpu.caps.device_type == "Cpu" {
            usize::MAX
        } else {
            flow_residency(gpu, spec, &options, chunk, hot).0
        };
        let groups = async_groups(&options, total_chunks, resident);
        let in_flight = in_flight(&options, chunk, total_chunks, groups);
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
        let cold_rule = if options.sync {
            0
        } else {
            cold_from(&counts, train.0.nrows, in_flight, options.batch)
        };
        let cold = cold_bound(&options, cold_rule, n_features);
        let mut parts = vec![];
        let mut ring_lens = [1usize; 3];
        phases.mark("feature counts");
        for r in &ranges {
            let band;
            let x = if ranges.len() == 1 {
                train.0
            } else {
                band = train.0.row_band(r.clone());
                &band
            };
            let chunks = Chunks::build_split(
                x,
                &labels[r.clone()],
                &order,
                chunk,
                options.variant.max_segment,
            )?;
            phases.mark("chunks");
            let (data, host) = if options.ring {
                let h = HostArrays::of(&chunks, one_hot, options.variant.slot_bits)?;
                for (m, len) in
                    ring_lens
                        .iter_mut()
                        .zip([h.meta.len(), h.sedge.len(), h.fedge.len()])
                {
                    *m = (*m).max(len);
                }
                (DeviceChunks::ring_part(gpu, &chunks)?, Some(h))
            } else {
                (
                    DeviceChunks::upload(gpu, &chunks, false, one_hot, options.variant.slot_bits)?,
                    None,
                )
            };
            drop(chunks);
            let config = gpu.uniform(
                "wide.config",
                &crate::wide::engine::Config {
                    scaled,
                    l2: options.l2,
                    cold: cold as u32,
                    ..data.config(bias_index, options.lr, options.batch)
                },
            );
            let n_chunks = data.host.n_chunks;
            let sched = if options.persistent_sync() {
                let per_batch = options.batch / chunk;
                Schedule::of_minibatches(gpu, "wide.sched", n_chunks, per_batch, options.sync_span)?
            } else {
                let per = if options.sync {
                    options.batch / chunk
                } else {
                    async_per_dispatch(&options, chunk, n_chunks, groups)
                };
                Schedule::new(gpu, "wide.sched", n_chunks, per)?
            };
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
            phases.mark("upload");
        }
        let ring = if options.ring {
            Some([Slot::new(gpu, ring_lens)?, Slot::new(gpu, ring_lens)?])
        } else {
            None
        };
        let n_chunks: usize = parts.iter().map(|p| p.data.host.n_chunks).sum();
        debug_assert_eq!(n_chunks, total_chunks);
        drop(counts);
        let sync_groups = sync_groups(gpu, spec, &options, chunk, hot)?;
        phases.mark("upload");
        let kernels = Kernels::new(
            gpu,
            spec,
            chunk,
            lanes,
            (hot, seg_rule),
            (one_hot, valid_one_hot),
            &options,
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
        phases.mark("kernels");
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
                let d = DeviceChunks::upload(gpu, &c, true, valid_one_hot, 32)?;
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
        phases.mark("validation");
        let mut t = Trainer {
            gpu,
            spec: spec.clone(),
            params: GpuBuffer::zeroed(gpu, "wide.params", bias_index + 1)?,
            grad: GpuBuffer::zeroed(gpu, "wide.grad", bias_index + 1)?,
            snapshot: if options.variant.snapshot_reads && !options.sync {
                Some(GpuBuffer::zeroed(gpu, "wide.snapshot", bias_index + 1)?)
            } else {
                None
            },
            scale,
            cold,
            cold_rule,
            in_flight,
            groups,
            sync_groups,
            grid_word: if options.persistent_sync() {
                Some(GpuBuffer::zeroed(gpu, "wide.grid_word", 4)?)
            } else {
                None
            },
            ring,
            rng: rand::rngs::StdRng::seed_from_u64(options.seed),
            options,
            order,
            kernels,
            hot,
            hot_rule,
            seg_rule,
            stage,
            parts,
            chunk,
            valid,
            epoch: 0,
            history: vec![],
            last_order: vec![],
            backup: None,
            backup_copy: None,
            snapshot_copy: None,
            guard_ref: None,
            setup_phases: vec![],
        };
        if let Some(snap) = &t.snapshot {
            t.snapshot_copy = Some(WordCopy::new(gpu, &t.params, snap, t.params.len())?);
        }
        t.grad.fill(gpu, 0.0)?;
        let init = initial_params(spec, n_features, t.options.seed)?;
        t.set_params(&init)?;
        phases.mark("parameters");
        t.setup_phases = phases.list;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The persistent workgroups take the tightest of the asked count, the epoch's chunks /
    /// MIN_WINDOWS and the resident ones (the H100 figures of `async_groups`' doc).
    #[test]
    fn async_groups_stay_within_windows_and_residency() {
        let options = Options {
            async_groups: 1024,
            ..Options::asynchronous()
        };
        // 128-sample chunks of criteo-s: 36,099 chunks, 564 by the windows, 528 resident.
        assert_eq!(async_groups(&options, 36_099, usize::MAX), 564);
        assert_eq!(async_groups(&options, 36_099, 528), 528);
        // 256-sample chunks: 282 by the windows, 264 resident at 1,024 invocations.
        assert_eq!(async_groups(&options, 18_050, 264), 264);
        assert_eq!(async_groups(&options, 18_050, 528), 282);
        // The asked count binds; never below one.
        let few = Options {
            async_groups: 100,
            ..options.clone()
        };
        assert_eq!(async_groups(&few, 18_050, 264), 100);
        assert_eq!(async_groups(&options, 10, 0), 1);
        // The step scale's S follows the capped count: 264 · 256 / 1,024.
        let groups = async_groups(&options, 18_050, 264);
        assert_eq!(in_flight(&options, 256, 18_050, groups), 66.0);
    }
}
