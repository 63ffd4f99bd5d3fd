//! The flow engine on the device: chunked data resident in buffers, the `wide/flow` and
//! `wide/apply` kernels compiled with the model spliced in, and the schedules that say which
//! chunks each dispatch covers.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Binding, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::wide::plan::Chunks;
use crate::wide::{ModelSpec, Options};
use crate::{Error, Result};

/// The uniform block of `wide/flow` and `wide/apply` (layout of WGSL `Config`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(crate) struct Config {
    pub n_samples: u32,
    pub chunk: u32,
    pub bias_index: u32,
    pub row_off: u32,
    pub seg_ptr_off: u32,
    pub seg_feat_off: u32,
    pub seg_edge_off: u32,
    pub label_off: u32,
    pub lr: f32,
    pub inv_batch: f32,
    /// Async: features with a step scale (the bias's follows theirs).
    pub scaled: u32,
    /// L2 regularization λ per sample's touched parameters.
    pub l2: f32,
    /// Async: the cold tail's first feature ([`crate::wide::plan::cold_from`]).
    pub cold: u32,
    /// To 64 bytes.
    pub pad: [u32; 3],
}

/// A data set's chunks on the device, with the per-chunk or per-sample output.
pub(crate) struct DeviceChunks {
    pub host: ChunksInfo,
    pub meta: GpuBuffer<u32>,
    /// Sample-sorted edges: (feature, value bits) pairs, or features alone when one-hot.
    pub sedge: GpuBuffer<u32>,
    /// Feature-sorted edges: (slot, value bits) pairs, or slots alone when one-hot.
    pub fedge: GpuBuffer<u32>,
    /// Loss sum per chunk (training) or (ŷ, ℓ) per sample (prediction).
    pub out: GpuBuffer<f32>,
}

/// The sizes of a [`Chunks`] kept once its arrays are uploaded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunksInfo {
    pub n_samples: usize,
    pub chunk: usize,
    pub n_chunks: usize,
    pub offsets: crate::wide::plan::MetaOffsets,
}

/// A chunked data set's arrays as the kernels read them, kept on the host (the staging
/// ring's parts): index words, then the sample- and feature-sorted edges (one word per edge
/// when one-hot, else two).
pub(crate) struct HostArrays {
    pub meta: Vec<u32>,
    pub sedge: Vec<u32>,
    pub fedge: Vec<u32>,
}

/// The feature-sorted edges' slots in `bits` (16 or 8) each, 32 / `bits` per word: edge e
/// in part e mod (32 / bits) of word e / (32 / bits), the low bits first (the kernels'
/// PACKED_SLOTS). Fails with [`Error::Option`] on a slot that does not fit (a chunk of more
/// samples than `bits` can number).
pub(crate) fn pack_slots(what: &str, e: &[[u32; 2]], bits: u32) -> Result<Vec<u32>> {
    if !matches!(bits, 8 | 16) {
        return Err(Error::Option(format!(
            "{what}: slots of {bits} bits (16 or 8)"
        )));
    }
    let per = (32 / bits) as usize;
    let limit = 1u32 << bits;
    if let Some(p) = e.iter().position(|q| q[0] >= limit) {
        return Err(Error::Option(format!(
            "{what}: edge {p}'s sample slot {} does not fit {bits} bits (chunks of at most \
             {limit} samples)",
            e[p][0]
        )));
    }
    let mut v = crate::limits::try_with_capacity(what, e.len().div_ceil(per))?;
    v.extend(e.chunks(per).map(|p| {
        p.iter()
            .enumerate()
            .fold(0u32, |w, (i, q)| w | q[0] << (i as u32 * bits))
    }));
    Ok(v)
}

impl HostArrays {
    /// `c`'s arrays; `one_hot` drops the values, `slot_bits` below 32 (with `one_hot`)
    /// packs the feature-sorted slots ([`pack_slots`]).
    pub fn of(c: &Chunks, one_hot: bool, slot_bits: u32) -> Result<Self> {
        let edges = |what: &str, e: &[[u32; 2]]| -> Result<Vec<u32>> {
            let per = if one_hot { 1 } else { 2 };
            let mut v = crate::limits::try_with_capacity(what, per * e.len())?;
            if one_hot {
                v.extend(e.iter().map(|p| p[0]));
            } else {
                v.extend_from_slice(bytemuck::cast_slice(e));
            }
            Ok(v)
        };
        Ok(HostArrays {
            meta: c.meta.clone(),
            sedge: edges("wide sample-sorted edges", &c.sedge)?,
            fedge: if one_hot && slot_bits < 32 {
                pack_slots("wide feature-sorted slots", &c.fedge, slot_bits)?
            } else {
                edges("wide feature-sorted edges", &c.fedge)?
            },
        })
    }
}

impl ChunksInfo {
    /// The sizes of `c`.
    pub fn of(c: &Chunks) -> Self {
        ChunksInfo {
            n_samples: c.n_samples,
            chunk: c.chunk,
            n_chunks: c.n_chunks,
            offsets: c.offsets,
        }
    }
}

impl DeviceChunks {
    /// Uploads `c`; `predict` sizes the output per sample instead of per chunk; `one_hot`
    /// (every value of the data set is 1, for the kernels' ONE_HOT) drops the values;
    /// `slot_bits` below 32 (with `one_hot`) packs the feature-sorted slots ([`pack_slots`]).
    pub fn upload(
        gpu: &Gpu,
        c: &Chunks,
        predict: bool,
        one_hot: bool,
        slot_bits: u32,
    ) -> Result<Self> {
        let edges = |label: &str, e: &[[u32; 2]]| -> Result<GpuBuffer<u32>> {
            if one_hot {
                let first: Vec<u32> = e.iter().map(|p| p[0]).collect();
                GpuBuffer::upload(gpu, label, &first)
            } else {
                GpuBuffer::upload(gpu, label, bytemuck::cast_slice(e))
            }
        };
        let out_len = if predict { 2 * c.n_samples } else { c.n_chunks };
        Ok(DeviceChunks {
            host: ChunksInfo::of(c),
            meta: GpuBuffer::upload(gpu, "wide.meta", &c.meta)?,
            sedge: edges("wide.sedge", &c.sedge)?,
            fedge: if one_hot && slot_bits < 32 {
                let packed = pack_slots("wide.fedge", &c.fedge, slot_bits)?;
                GpuBuffer::upload(gpu, "wide.fedge", &packed)?
            } else {
                edges("wide.fedge", &c.fedge)?
            },
            out: GpuBuffer::filled(gpu, "wide.out", out_len, f32::NAN)?,
        })
    }

    /// A part streamed through the staging ring: its sizes and training output on the
    /// device, its arrays in a ring slot when it runs (the ones here are one-word
    /// placeholders, never bound).
    pub fn ring_part(gpu: &Gpu, c: &Chunks) -> Result<Self> {
        Ok(DeviceChunks {
            host: ChunksInfo::of(c),
            meta: GpuBuffer::zeroed(gpu, "wide.ring.none", 1)?,
            sedge: GpuBuffer::zeroed(gpu, "wide.ring.none", 1)?,
            fedge: GpuBuffer::zeroed(gpu, "wide.ring.none", 1)?,
            out: GpuBuffer::filled(gpu, "wide.out", c.n_chunks, f32::NAN)?,
        })
    }

    /// The uniform block for this data set.
    pub fn config(&self, bias_index: usize, lr: f32, batch: usize) -> Config {
        let o = self.host.offsets;
        Config {
            n_samples: self.host.n_samples as u32,
            chunk: self.host.chunk as u32,
            bias_index: bias_index as u32,
            row_off: o.row,
            seg_ptr_off: o.seg_ptr,
            seg_feat_off: o.seg_feat,
            seg_edge_off: o.seg_edge,
            label_off: o.label,
            lr,
            inv_batch: 1.0 / batch.max(1) as f32,
            scaled: 0,
            l2: 0.0,
            cold: 0,
            pad: [0; 3],
        }
    }
}

/// The compiled kernels of one model on one device.
pub(crate) struct Kernels {
    /// Sync mode's flow kernel: one mini-batch per dispatch, or with the persistent sync
    /// kernel ([`crate::wide::SyncKernel::Persistent`]) many (bound as `FLOW_PERSISTENT`).
    pub flow_sync: Arc<Kernel>,
    pub flow_async: Arc<Kernel>,
    pub predict: Arc<Kernel>,
    pub apply: Arc<Kernel>,
    /// Whether (training, prediction) data hold only ones, as compiled.
    pub one_hot: (bool, bool),
}

/// The stage baseline's kernels: aggregate, loss, gradient (then `wide/apply`).
pub(crate) struct StageKernels {
    pub aggregate: Arc<Kernel>,
    pub loss: Arc<Kernel>,
    pub grad: Arc<Kernel>,
}

const STAGE: &[Binding] = &[
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];

impl StageKernels {
    /// Compiles the stage baseline for `model` (same sizes and paths as [`Kernels::new`];
    /// `one_hot` for training data of ones only).
    pub fn new(
        gpu: &Gpu,
        model: &ModelSpec,
        chunk: usize,
        lanes: u32,
        native_atomics: bool,
        one_hot: bool,
    ) -> Result<Self> {
        let sources = [("wide/model", model.wgsl.as_str())];
        let mut defines = vec![];
        if gpu.caps.shuffle_fits(lanes) {
            defines.push("SUBGROUP");
        }
        if native_atomics && gpu.caps.f32_atomics {
            defines.push("F32_ATOMIC");
        }
        if one_hot {
            defines.push("ONE_HOT");
        }
        let constants = vec![
            ("WG", (chunk as u32 * lanes) as f64),
            ("LANES", lanes as f64),
            ("CHUNK_WG", chunk as f64),
        ];
        let k = |name: &'static str| {
            gpu.kernel_with(
                &KernelSpec {
                    name,
                    defines: defines.clone(),
                    constants: constants.clone(),
                    bindings: STAGE,
                },
                &sources,
            )
        };
        Ok(StageKernels {
            aggregate: k("wide/stage_aggregate")?,
            loss: k("wide/stage_loss")?,
            grad: k("wide/stage_grad")?,
        })
    }
}

const FLOW_SYNC: &[Binding] = &[
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
];
/// The persistent sync kernel: the parameters read-write at 5 (atomic loads and stores),
/// the grid barrier's word at 8.
const FLOW_PERSISTENT: &[Binding] = FLOW_PERSISTENT_COHERENT.split_at(9).0;
/// … with coherent reads: the parameters bound again at 9 for `@coherent` plain loads.
const FLOW_PERSISTENT_COHERENT: &[Binding] = &[
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];
const FLOW_ASYNC: &[Binding] = &FLOW_ASYNC_BASE;
const FLOW_ASYNC_BASE: [Binding; 8] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::Read,
    Binding::ReadWrite,
];
/// Async with plain parameter reads: the parameters bound a second time, non-atomic, at 8.
/// Bindings 5 and 8 then alias one buffer, both writable (a read-only view would conflict
/// with 5's storage-write usage): Vulkan allows aliased descriptors and wgpu's native
/// backends accept them, the WebGPU specification (and Dawn) reject writable aliases, so the
/// trainer binds this only where [`crate::wide::aliasing_allowed`] says so. Reads through 8
/// may be served from a per-compute-unit cache, stale for the rest of the dispatch; the
/// trainer's divergence guard ([`crate::wide::Options::read_guard`]) answers for that.
const FLOW_ASYNC_PLAIN: &[Binding] = &flow_async_reading_at_8(Binding::ReadWrite);
/// Async with snapshot reads: the snapshot (a separate copy of the parameters) read-only at 8.
const FLOW_ASYNC_SNAPSHOT: &[Binding] = &flow_async_reading_at_8(Binding::Read);

/// The async flow kernel's bindings with the parameter view it reads from at 8.
const fn flow_async_reading_at_8(view: Binding) -> [Binding; 9] {
    let mut b = [view; 9];
    let mut i = 0;
    while i < FLOW_ASYNC_BASE.len() {
        b[i] = FLOW_ASYNC_BASE[i];
        i += 1;
    }
    b
}
const APPLY: &[Binding] = &[
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
];

/// Workgroup size of `wide/apply`.
const APPLY_WG: u32 = 256;

impl Kernels {
    /// Compiles the engine for `model` with `chunk` samples per workgroup and `lanes`
    /// invocations per sample; `features` = (hot, rule): the first `hot` features'
    /// parameters are cached in workgroup memory, and with
    /// [`crate::wide::FlowVariant::edge_apply`] the first `rule` (or the variant's own
    /// `edge_features`) keep Apply's segments; `one_hot` says (training, prediction) data
    /// hold only ones. From `options`: native f32 atomics when asked and the adapter has
    /// them (else the CAS loop), the training kernels' variant and timing-only switches
    /// (prediction takes neither).
    pub fn new(
        gpu: &Gpu,
        model: &ModelSpec,
        chunk: usize,
        lanes: u32,
        features: (usize, usize),
        one_hot: (bool, bool),
        options: &Options,
    ) -> Result<Self> {
        let (hot, seg_rule) = features;
        let v = &options.variant;
        let seg_hot = match (v.edge_apply, v.edge_features) {
            (false, _) => 0,
            (true, 0) => seg_rule,
            (true, n) => n,
        }
        .min(u32::MAX as usize);
        let native_atomics = options.native_atomics;
        let sources = [("wide/model", model.wgsl.as_str())];
        let wg = chunk as u32 * lanes;
        let mut defines = vec![];
        if gpu.caps.shuffle_fits(lanes) {
            defines.push("SUBGROUP");
        }
        if native_atomics && gpu.caps.f32_atomics {
            defines.push("F32_ATOMIC");
        }
        let constants = vec![
            ("WG", wg as f64),
            ("LANES", lanes as f64),
            ("ACC_WG", (chunk * model.accums) as f64),
            ("CHUNK_WG", chunk as f64),
            ("HOT", hot as f64),
            ("HOT_WG", (hot * model.params_per_feature).max(1) as f64),
            (
                "EDGE_WG",
                edge_tile(one_hot.0, options.variant.tile_words()) as f64,
            ),
            ("HOT_EVERY", options.variant.hot_every as f64),
            ("SEG_HOT", seg_hot as f64),
            ("ADD_SPLIT", options.diag.add_split as f64),
        ];
        if options.variant.coherent_reads && !gpu.caps.coherent {
            return Err(Error::Option(format!(
                "coherent_reads: {} offers no @coherent decoration (MEMORY_DECORATION_COHERENT)",
                gpu.caps.adapter_name
            )));
        }
        let flow = |extra: Option<&'static str>, one_hot: bool, bindings: &'static [Binding]| {
            let mut d = defines.clone();
            d.extend(extra);
            if extra != Some("PREDICT") {
                // The persistent sync kernel takes the parameter-read variants as async does
                // (the sync-mode checks leave it coherent reads alone).
                let live = matches!(extra, Some("ASYNC") | Some("PERSISTENT"));
                d.extend(options.variant.defines(!live));
                d.extend(options.diag.defines());
            }
            if one_hot {
                d.push("ONE_HOT");
                // The training data's slots packed (FlowVariant::slot_bits; prediction reads
                // no feature-sorted edges).
                if options.variant.packed_slots() && extra != Some("PREDICT") {
                    d.push("PACKED_SLOTS");
                    if options.variant.slot_bits == 8 {
                        d.push("SLOT8");
                    }
                }
            }
            gpu.kernel_with(
                &KernelSpec {
                    name: "wide/flow",
                    defines: d,
                    constants: constants.clone(),
                    bindings,
                },
                &sources,
            )
        };
        let persistent = options.persistent_sync();
        Ok(Kernels {
            flow_sync: if persistent {
                let bindings = if options.variant.plain_reads {
                    FLOW_PERSISTENT_COHERENT
                } else {
                    FLOW_PERSISTENT
                };
                flow(Some("PERSISTENT"), one_hot.0, bindings)?
            } else {
                flow(None, one_hot.0, FLOW_SYNC)?
            },
            flow_async: flow(
                Some("ASYNC"),
                one_hot.0,
                if options.variant.plain_reads {
                    FLOW_ASYNC_PLAIN
                } else if options.variant.snapshot_reads {
                    FLOW_ASYNC_SNAPSHOT
                } else {
                    FLOW_ASYNC
                },
            )?,
            predict: flow(Some("PREDICT"), one_hot.1, FLOW_SYNC)?,
            apply: gpu.kernel_with(
                &KernelSpec {
                    name: "wide/apply",
                    defines: vec![],
                    constants: vec![("WG", APPLY_WG as f64)],
                    bindings: APPLY,
                },
                &sources,
            )?,
            one_hot,
        })
    }
}

/// A schedule: dispatch entries of `[chunks, samples, chunks per mini-batch, 0, chunk ids …]`
/// (the third word for the persistent sync kernel, else 0), each starting at
/// a multiple of `stride` words so it can be bound at its own offset.
pub(crate) struct Schedule {
    pub buffer: GpuBuffer<u32>,
    /// Words per entry (a multiple of the storage offset alignment).
    pub stride: usize,
    /// Chunk count of each entry.
    pub counts: Vec<usize>,
    /// Chunks per mini-batch inside an entry, written into its header's third word (the
    /// persistent sync kernel's entries hold many mini-batches); 0 otherwise.
    pub batch_chunks: usize,
}

impl Schedule {
    /// Entries of at most `per` chunks each over `chunks` chunk positions.
    pub fn new(gpu: &Gpu, label: &str, chunks: usize, per: usize) -> Result<Self> {
        // An entry never holds more than every chunk: a --batch beyond the data (4294967295)
        // sizes the entries by the data, not by the batch.
        let per = per.clamp(1, chunks.max(1));
        let align_words = (gpu.caps.storage_offset_alignment as usize).max(16) / 4;
        let stride = (4 + per).div_ceil(align_words) * align_words;
        let entries = chunks.div_ceil(per).max(1);
        let counts = (0..entries)
            .map(|b| per.min(chunks - (b * per).min(chunks)))
            .collect();
        Ok(Schedule {
            buffer: GpuBuffer::zeroed(gpu, label, entries * stride)?,
            stride,
            counts,
            batch_chunks: 0,
        })
    }

    /// Entries of `span` mini-batches of `batch_chunks` chunks each (`span` 0: every chunk
    /// in one entry) for the persistent sync kernel, which takes an entry's mini-batches in
    /// order (the last one of a part may be short).
    pub fn of_minibatches(
        gpu: &Gpu,
        label: &str,
        chunks: usize,
        batch_chunks: usize,
        span: usize,
    ) -> Result<Self> {
        let batch_chunks = batch_chunks.clamp(1, chunks.max(1));
        let per = match span {
            0 => chunks,
            s => s.saturating_mul(batch_chunks),
        };
        Ok(Schedule {
            batch_chunks,
            ..Schedule::new(gpu, label, chunks, per)?
        })
    }

    /// Writes the chunk ids in `order` (entry b takes the next `counts[b]`), each entry's
    /// header naming its samples when `samples_of` is given (sync) or 0 (async).
    pub fn write(
        &self,
        gpu: &Gpu,
        order: &[u32],
        samples_of: Option<&dyn Fn(u32) -> usize>,
    ) -> Result<()> {
        let mut words = vec![0u32; self.buffer.len()];
        let mut next = 0;
        for (b, &count) in self.counts.iter().enumerate() {
            let e = &mut words[b * self.stride..(b + 1) * self.stride];
            let ids = &order[next..next + count];
            next += count;
            e[0] = count as u32;
            e[1] = samples_of.map_or(0, |f| ids.iter().map(|&c| f(c)).sum::<usize>() as u32);
            e[2] = self.batch_chunks as u32;
            e[4..4 + count].copy_from_slice(ids);
        }
        self.buffer.write(gpu, &words)
    }

    /// The binding of entry `b`.
    pub fn entry(&self, b: usize) -> wgpu::BufferBinding<'_> {
        wgpu::BufferBinding {
            buffer: self.buffer.raw(),
            offset: (b * self.stride * 4) as u64,
            size: std::num::NonZeroU64::new((self.stride * 4) as u64),
        }
    }
}

/// Words of the flow kernel's feature-sorted edge tile by default (8 KiB).
pub(crate) const EDGE_TILE_WORDS: usize = 2048;

/// Edges in the flow kernel's tile of `words` words: one word each when one-hot, else two.
pub(crate) fn edge_tile(one_hot: bool, words: usize) -> usize {
    if one_hot {
        words
    } else {
        (words / 2).max(1)
    }
}

/// Workgroup words of the flow kernel besides the importance cache, with a slack of 64.
fn fixed_words(model: &ModelSpec, chunk: usize, lanes: u32, tile_words: usize) -> usize {
    chunk * model.accums + 2 * chunk + (chunk * lanes as usize) + tile_words + 64
}

/// Bytes of the flow kernel's workgroup memory with `hot` features in the importance cache
/// (the residency estimate's input).
pub(crate) fn workgroup_bytes(
    model: &ModelSpec,
    chunk: usize,
    lanes: u32,
    tile_words: usize,
    hot: usize,
) -> u32 {
    let words = fixed_words(model, chunk, lanes, tile_words) + hot * model.params_per_feature;
    (4 * words).min(u32::MAX as usize) as u32
}

/// Largest importance cache (parameters) that fits beside the flow kernel's other
/// workgroup arrays (the edge tile of `tile_words` included), at most 16 KiB.
pub(crate) fn cache_budget(
    gpu: &Gpu,
    model: &ModelSpec,
    chunk: usize,
    lanes: u32,
    tile_words: usize,
) -> usize {
    let words = gpu.caps.max_workgroup_storage_bytes as usize / 4;
    words
        .saturating_sub(fixed_words(model, chunk, lanes, tile_words))
        .min(4096)
}

/// Fails with [`crate::Error::Option`] when the flow kernel's workgroup arrays (the edge tile
/// of `tile_words` words included, no cache) exceed the adapter's workgroup memory.
pub(crate) fn check_workgroup_words(
    gpu: &Gpu,
    model: &ModelSpec,
    chunk: usize,
    lanes: u32,
    tile_words: usize,
) -> Result<()> {
    let need = fixed_words(model, chunk, lanes, tile_words);
    let have = gpu.caps.max_workgroup_storage_bytes as usize / 4;
    if need > have {
        return Err(crate::Error::Option(format!(
            "the flow kernel's workgroup arrays (edge tile {tile_words} words, chunk {chunk} × \
             lanes {lanes}) need {need} words, the adapter has {have}"
        )));
    }
    Ok(())
}

/// Bins of the validation score histograms (per class).
pub(crate) const AUC_BINS: u32 = 16384;
/// The histograms cover ŷ in [−AUC_RANGE, AUC_RANGE] (clamped outside).
pub(crate) const AUC_RANGE: f32 = 16.0;
/// Workgroup size of `wide/metrics`.
pub(crate) const METRICS_WG: u32 = 256;

/// The uniform block of `wide/metrics`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(crate) struct MetricsConfig {
    pub n_samples: u32,
    pub label_off: u32,
    pub bins: u32,
    pub range: f32,
}

/// The `wide/metrics` kernel.
pub(crate) fn metrics_kernel(gpu: &Gpu) -> Result<Arc<Kernel>> {
    gpu.kernel(&KernelSpec {
        name: "wide/metrics",
        defines: vec![],
        constants: vec![("WG", METRICS_WG as f64)],
        bindings: &[
            Binding::Uniform,
            Binding::Read,
            Binding::Read,
            Binding::ReadWrite,
            Binding::ReadWrite,
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_pack_two_per_word_low_half_first() {
        let e = [[5u32, 9], [1023, 0], [0, 1], [65535, 7], [17, 3]];
        let w = pack_slots("test", &e, 16).unwrap();
        assert_eq!(w, vec![5 | 1023 << 16, 65535 << 16, 17]);
        for (i, p) in e.iter().enumerate() {
            assert_eq!((w[i / 2] >> ((i % 2) * 16)) & 0xffff, p[0]);
        }
    }

    #[test]
    fn slots_pack_four_per_word_low_byte_first() {
        let e = [[5u32, 9], [255, 0], [0, 1], [128, 7], [17, 3], [1, 1]];
        let w = pack_slots("test", &e, 8).unwrap();
        assert_eq!(w, vec![5 | 255 << 8 | 128 << 24, 17 | 1 << 8]);
        for (i, p) in e.iter().enumerate() {
            assert_eq!((w[i / 4] >> ((i % 4) * 8)) & 0xff, p[0]);
        }
    }

    #[test]
    fn slots_too_wide_for_their_bits_are_refused() {
        let err = pack_slots("test", &[[3u32, 0], [256, 0]], 8).unwrap_err();
        assert!(
            err.to_string().contains("edge 1's sample slot 256"),
            "{err}"
        );
        assert!(pack_slots("test", &[[65536u32, 0]], 16).is_err());
        assert!(pack_slots("test", &[[1u32, 0]], 4).is_err());
    }
}
