//! Wide models (LR, FM, LSVM, LSR) trained by mini-batch SGD with cuWide's flow-based
//! Aggregate–Loss–Apply engine (Miao et al., TKDE 2020).
//!
//! # Models: the ALA interface
//! A model is WGSL defining three functions — Aggregate (a sample's Accums from its features
//! and the parameters), Loss ((ŷ, ℓ, dℓ/dŷ) from the Accums, bias and label) and Apply
//! (∂ŷ/∂θ from the Accums and a feature value) — plus a [`ModelSpec`] naming its sizes. The
//! engine's kernels `#import wide/model`; the preprocessor substitutes the spec's source for
//! that name ([`crate::gpu::preprocess::preprocess_with`]), so a model defined outside the
//! crate needs no change to the engine. [`Model`] ships LR, FM (k ≤ 32), LSVM and LSR; the
//! three linear models share `wide/linear.wgsl` and differ by their `wide/loss_*` import.
//!
//! # The engine (design and why)
//! - **Plan, once per data set** ([`plan`]): features re-indexed by descending frequency;
//!   samples cut into chunks of C consecutive samples (C divides the mini-batch); each chunk
//!   stored twice, sample-sorted `(feature, value)` for Aggregate and feature-sorted
//!   `(sample slot, value)` with one segment per distinct feature for Apply (built on the
//!   host's threads, runs of chunks each, the same on any thread count). Both are 8 bytes
//!   per nonzero (4 for one-hot data, whose values are all 1 and dropped), so an epoch reads
//!   the data twice (the ≈ 2 ms/epoch bar on the criteo-s shape: ≈ 1.5 GB of one-hot edges
//!   at ≈ 4 TB/s plus the segment index and the parameter traffic).
//! - **One workgroup per chunk** (`shaders/wide/flow.wgsl`): LANES invocations per sample
//!   walk its edges, each lane holding a partial of every Accum — the paper's R replicas, in
//!   registers rather than shared-memory words, reduced by subgroup shuffles (a workgroup-
//!   memory butterfly without subgroups). Aggregate needs no atomics at all this way. Lane 0
//!   runs Loss and leaves the Accums and dℓ/dŷ in workgroup memory (cross-stage caching);
//!   Apply then runs over the chunk's segments, one invocation per (segment, parameter)
//!   summing the segment's gradient, and adds it to global memory once (native f32 atomics,
//!   or a CAS loop; both paths tested). A hot feature's segment is as long as the chunk and
//!   one invocation walks it, so the chunk's feature-sorted edges (up to 8 KiB) are copied
//!   into workgroup memory with the importance cache first: the walk reads workgroup memory,
//!   not a global load per edge (edges past the tile are read globally).
//! - **Sync mode** (exact mini-batch SGD, the default) with the dispatch sync kernel
//!   ([`SyncKernel::Dispatch`], the stage-like reference): per mini-batch one `wide/flow`
//!   dispatch accumulates the gradient and one `wide/apply` dispatch moves the parameters
//!   and zeroes the gradient by atomic exchange: 2 dispatches per mini-batch (≈ 6.4 µs at the
//!   H200's ≈ 3.2 µs per dispatch, ≈ 29 ms per criteo-s epoch of 4,513 mini-batches of 1024,
//!   before each dispatch's own latency: a mini-batch of 1024 is only 32 workgroups). Sync
//!   mode cannot reach 2 ms/epoch at batch 1024; that bar needs async mode (at batch 16,384
//!   the 282 mini-batches still cost ≈ 1.8 ms of dispatch overhead). On the H200 a flow
//!   dispatch of one mini-batch took ≈ 45 µs against ≈ 3 µs for a bare one: its time is one
//!   workgroup's serial path (the timed region holds no host work: timestamps around the
//!   pass, bind groups made once, schedules written before it); smaller chunks
//!   ([`Options::max_chunk`]) spread a mini-batch over more workgroups and shorten the
//!   segments, and `benches/peers/wide_diag.sh` measures both.
//! - **Persistent sync kernel** ([`SyncKernel::Persistent`], the default on discrete
//!   GPUs): one `wide/flow` dispatch (PERSISTENT) per part (or per [`Options::sync_span`]
//!   mini-batches) of G workgroups ([`Options::sync_groups`]) that take the mini-batches in
//!   order: they share a mini-batch's chunks adding into the gradient, meet at a grid-wide
//!   barrier (an atomic arrival count and generation in one word), take each touched
//!   parameter's gradient by atomic exchange and move it, meet again, and go on. Parameters
//!   are read and written by atomics in that kernel, so no per-compute-unit cache serves a
//!   read stale after the barrier. G = 1 needs no barrier and runs on any adapter; G > 1
//!   needs every workgroup resident at once, so it is refused beyond the resident
//!   workgroups ([`crate::gpu::Residency`]) and on adapters that are not discrete GPUs
//!   (lavapipe runs workgroups on a small thread pool, where a spinning workgroup could
//!   wait for one never started). The kernel counts the mini-batches it completed and the
//!   trainer checks the count each epoch: llvmpipe (lavapipe) ends a shader invocation's
//!   loops after 65,535 iterations in all, so a long span there stops early, and is
//!   reported as an error instead of trained on.
//! - **Async mode**: the whole epoch is one dispatch (or one per
//!   [`Options::async_span`] mini-batches) of P persistent workgroups
//!   ([`Options::async_groups`]), workgroup w taking chunks w, w + P, …, each adding
//!   −lr·scale_j·g into the parameters as it finishes its chunk (the released kernel's
//!   Hogwild-like scheme, with the staleness bounded). About S = P·chunk/batch mini-batches
//!   read stale parameters at once; their plain sum diverges for the hot features (the
//!   H200's whole-epoch dispatch did at lr 0.5), so feature j's step is scaled by
//!   1 / max(1, p_j·S), p_j its share of the samples ([`plan::async_scale`]; the f64 twin's
//!   simulation of S stale mini-batches in `tests/wide_async.rs` chose it).
//! - **Snapshot reads** ([`FlowVariant::snapshot_reads`], async only): every parameter
//!   read (Aggregate, Loss, the importance cache's copy, Apply's L2/FM terms) comes from a
//!   second buffer bound read-only, into which the live parameters are copied before each
//!   dispatch (a buffer-to-buffer copy, ≈ 4 MB for criteo-s LR); updates stay atomic adds
//!   into the live buffer. Unlike `plain_reads` nothing is bound twice (spec-valid), and
//!   the staleness is bounded: a read lags by at most its dispatch's chunks, so the epoch
//!   is cut into dispatches of P · k chunks (k = [`FlowVariant::snapshot_rounds`], default
//!   4; [`Options::async_span`] overrides) and the step scale assumes S = that dispatch's
//!   mini-batches (every chunk of it reads the same point). Per epoch that is
//!   ⌈chunks / (P·k)⌉ dispatches and copies (criteo-s, P = 1,024, k = 4: 18); a per-SM
//!   cache may keep serving the snapshot all dispatch long, which is now exact.
//! - **Async reads by default** ([`Options::asynchronous`]): plain loads through a second
//!   binding of the parameter buffer ([`FlowVariant::plain_reads`]; on wgpu's native
//!   backends only, [`aliasing_allowed`]), with the divergence guard
//!   ([`Options::read_guard`]): the parameters copied on the device at each epoch's start,
//!   and an epoch whose loss diverges trained again from the copy with atomic reads.
//!   Snapshot reads, the spec-valid alternative, lost to them in convergence on the H200
//!   (criteo-s LR 0.6349 against 0.5900 at 4 rounds; FM k = 10 diverged).
//! - **Recording**: a whole epoch is recorded into one submission; chunk order is shuffled
//!   each epoch (samples inside a chunk stay put); the per-dispatch chunk lists live in one
//!   schedule buffer bound at aligned offsets; the bind groups are made once and reused.
//! - **Stage baseline** ([`Options::stage`], the paper's cuWide-stage): per mini-batch
//!   `wide/stage_aggregate`, `wide/stage_loss` and `wide/stage_grad` (one atomic per edge and
//!   parameter from the sample-sorted edges) pass Accums and dℓ/dŷ through global memory,
//!   then `wide/apply`: 4 dispatches per mini-batch.
//! - **Importance cache** ([`Options::cache`]): the parameters of the first H features (the
//!   most frequent, thanks to the re-indexing) are copied into workgroup memory at the start
//!   of each chunk and Aggregate/Apply read them there; H follows the paper's cost rule
//!   ([`plan::hot_features`]: average degree per chunk ≥ th) within the workgroup memory
//!   left. Only reads are cached: Apply's segment sums already make one global add per
//!   feature and chunk.
//! - **Variants and attribution** ([`variant`]): candidate changes to the flow kernel's
//!   per-chunk work ([`FlowVariant`]: loads in flight in the copies, Aggregate and Apply,
//!   the chunk's tail off invocation 0, plain async reads, the cache reloaded every R
//!   chunks, split segments, the edge tile's size, 16- or 8-bit feature-sorted slots, Apply's
//!   walk past the tile 8 edges at a time, Apply by whole segments,
//!   Apply edge by edge past the segmented features, no fence between a workgroup's
//!   chunks, the guard's and snapshots' copies by a dispatch, Hogwild!-style plain writes
//!   of the cold features), each equal to
//!   the f64 twin's steps (plain writes: with one workgroup; they may lose a racing
//!   update), and
//!   timing-only switches that drop a stage ([`Diag`], results not valid);
//!   `wgsparse wide sweep` times them on data chunked once ([`Trainer::restart_with`]).
//!   On the criteo-s shape (chunks of 64 samples) the cost rule caches 232 features (48% of
//!   the edges; 928 bytes copied per chunk), a chunk holds ≈ 1,450 segments and 2,560
//!   feature-sorted edges (the default tile: 2,048).
//! - **Where an async LR epoch goes** (criteo-s, counted from the code and the chunked data,
//!   not measured; per-chunk figures from the generator's distribution on a tenth of the
//!   shape): 72,199 chunks of 64 samples × 8 lanes over 1,024 persistent workgroups, one
//!   dispatch per epoch after the guard's 4 MB copy, no grid barrier, 3 workgroup barriers
//!   and 1 storage barrier per chunk. A chunk holds 2,560 edges in 1,452 segments: 200 of
//!   the 232 cached features (1,225 edges; the longest, feature 0's, 64 edges walked by one
//!   invocation) and 1,252 of the rest (1,335 edges, 94% single). Streamed per epoch
//!   (one-hot): sample-sorted edges 739 MB, feature-sorted 739 MB, segment index 839 MB, row
//!   pointers and labels 37 MB, 2.35 GB in all (0.56 ms at 4.2 TB/s); scattered: 96 M
//!   parameter gathers (the uncached features' edges, served by L1/L2: the 4 MB vector
//!   fits L2) and 105 M f32 atomic adds (one per segment, one bias add per chunk). The
//!   validation pass runs after the timed submission. At 2.6 ms per epoch the stream is a
//!   fifth of the time; [`FlowVariant::edge_apply`] halves it (1.25 GB: no segment index
//!   or feature-sorted edge for the features past the cached ones) and cuts Apply's work
//!   items from 1,452 to 200 per chunk for 6% more adds (1,535). The default is now chunks
//!   of 256 samples × 4 lanes with 8-bit slots ([`Options::asynchronous`]): 18,050 chunks of
//!   ≈ 10,240 edges in ≈ 4,640 segments (84 M adds an epoch instead of 105 M), the
//!   feature-sorted edges 185 MB instead of 739 MB.
//! - **Validation** each epoch on the GPU: ŷ and ℓ per sample, loss sums per workgroup and
//!   per-class score histograms (`wide/metrics`); the AUC comes from the histograms with an
//!   error bound (half the within-bin pairs), [`Trainer::evaluate_exact`] gives the exact one.
//! - **Beyond one binding**: training data larger than a storage binding is cut into parts
//!   of whole chunks ([`plan::split_rows`]), each with its own buffers and dispatches, all
//!   resident and recorded in the epoch's one submission (parts in shuffled order);
//!   [`mod@predict`] goes part by part too.
//! - **Staging ring** ([`Options::ring`], for data beyond device memory): the parts stay on
//!   the host and stream through two device slots each epoch: each part is laid out (on
//!   the host's cores) in its slot's reused staging buffers, its prefix copied into the
//!   slot and its dispatches submitted without waiting, so the host fills the next part
//!   while the device trains (the queue orders each copy after the work that read the
//!   slot). The staging buffers take host-visible memory of 2 × the slot bytes. The copies
//!   are on the one queue, so the device does not overlap them with training; no host
//!   thread builds parts ahead yet (they are chunked once, at setup).
//!
//! Not yet built: validation data beyond one binding.

pub mod cpu;
mod demo;
mod engine;
mod io;
pub mod metrics;
mod model;
pub mod plan;
pub mod predict;
mod segments;
pub mod sync;
mod trainer;
pub mod variant;

pub use demo::demo_row;
pub use io::{read_data, write_labels, WideModel, VERSION as MODEL_FILE_VERSION};
pub use model::{Loss, Model, ModelSpec, MAX_ACCUMS, MAX_FM_K};
pub use predict::predict;
pub use sync::SyncKernel;
pub use trainer::{aliasing_allowed, initial_params, EpochStats, Eval, Trainer, MIN_WINDOWS};
pub use variant::{Diag, FlowVariant};

use crate::{Error, Result};

/// Training options (defaults: the paper's lr 0.5 and mini-batch 1024, sync mode).
#[derive(Clone, Debug)]
pub struct Options {
    /// Samples per mini-batch.
    pub batch: usize,
    /// Learning rate.
    pub lr: f32,
    /// Sync (exact mini-batch SGD) or async (updates per chunk).
    pub sync: bool,
    /// Sync: one dispatch per mini-batch's gradient and one per its update, or the
    /// persistent kernel covering many mini-batches per dispatch; by default
    /// ([`SyncKernel::Auto`]) the persistent one on a discrete GPU. The stage baseline
    /// always dispatches per mini-batch.
    pub sync_kernel: SyncKernel,
    /// Sync, persistent kernel: its workgroups G (0, the default: a mini-batch's chunks, at
    /// most one per compute unit, on a discrete GPU; 1 elsewhere). G > 1 needs a
    /// grid-wide barrier, refused on adapters that are not discrete GPUs
    /// ([`sync::grid_barrier_allowed`]) and beyond the resident workgroups.
    pub sync_groups: usize,
    /// Sync, persistent kernel: mini-batches per dispatch (0, the default: all of a part's,
    /// one dispatch per part and epoch).
    pub sync_span: usize,
    /// Async: mini-batches of chunks per dispatch (dispatches in one pass run one after
    /// another); 0 (the default) puts the whole epoch in one dispatch, or with snapshot
    /// reads P · [`FlowVariant::snapshot_rounds`] chunks in each (a snapshot read is stale
    /// by up to its dispatch's chunks: with one dispatch per epoch, a whole epoch).
    pub async_span: usize,
    /// Async: persistent workgroups per dispatch (P, at most the epoch's chunks /
    /// [`MIN_WINDOWS`] and, on a GPU, at most the workgroups it holds at once, by the estimate
    /// of [`sync::resident_groups`]: more would run in a second wave), each taking every P-th chunk of the dispatch, so about P chunks
    /// (S = P · chunk / batch mini-batches) read stale parameters at once, whatever the span. cuWide's released kernel launches one workgroup per chunk
    /// and diverged on the H200 at lr 0.5 (every resident workgroup's update from one stale
    /// w); P also fixes the S that [`Options::async_scale`] scales for.
    pub async_groups: usize,
    /// Async: scale each feature's step by 1 / max(1, p_j · S) ([`plan::async_scale`]) so
    /// hot features take about one mini-batch step per S mini-batches in flight (the plain
    /// sum of S steps from one stale point diverges); off, every step is taken whole.
    pub async_scale: bool,
    /// Async: the S the step scale assumes, when not the default P · chunk / batch (e.g. a
    /// device holding fewer than P workgroups at once).
    pub async_in_flight: Option<f64>,
    /// L2 regularization λ: every sample's loss gains (λ/2) Σ_{j in the sample} ‖θ_j‖² (the
    /// bias is not regularized), so only the parameters a mini-batch touches move for it.
    pub l2: f32,
    /// Stream the training data's parts (each fitting one storage binding) through a
    /// double-buffered staging ring of two device slots each epoch instead of keeping every
    /// part resident: device memory for two parts, host-to-device copies every epoch, and
    /// reused staging buffers of host-visible memory as large as both slots (2 × the slot
    /// bytes) besides the parts' host arrays.
    pub ring: bool,
    /// The stage baseline (separate aggregate / loss / gradient dispatches through global
    /// memory, then the apply) instead of the flow kernel; sync mode only.
    pub stage: bool,
    /// Invocations per sample in Aggregate (a power of two, 1 ..= 32).
    pub lanes: u32,
    /// Largest chunk (samples per workgroup); the chunk is the largest divisor of `batch`
    /// up to this, and `chunk · lanes` ≤ [`MAX_WORKGROUP`].
    pub max_chunk: usize,
    /// Native f32 atomics when the adapter has them (else the CAS loop).
    pub native_atomics: bool,
    /// Features whose parameters the flow kernel caches in workgroup memory (the importance
    /// cache): `None` picks them by the cost rule ([`plan::hot_features`]), `Some(0)` turns
    /// the cache off; always capped by workgroup memory.
    pub cache: Option<usize>,
    /// Shuffle the chunk order each epoch.
    pub shuffle: bool,
    /// Store one-hot data (every value 1) without its values: 4 bytes per edge, not 8.
    pub drop_ones: bool,
    /// Re-index features by descending frequency.
    pub reindex: bool,
    /// Stop once the validation loss exceeds the mean of the last 10 epochs'.
    pub early_stop: bool,
    /// Seed of the initial parameters and of the chunk order.
    pub seed: u64,
    /// Candidate variants of the flow kernel's per-chunk work (each gives the same update).
    pub variant: FlowVariant,
    /// Timing-only switches of the flow kernel: **results are not valid** with any on.
    pub diag: Diag,
    /// Async with plain reads ([`FlowVariant::plain_reads`]): the divergence guard's
    /// tolerance. The parameters are copied on the device at each epoch's start; an epoch
    /// whose training or validation loss is not finite, or whose validation loss (training
    /// loss without validation data) exceeds the previous epoch's (the first epoch: the
    /// initial model's validation loss) by more than this fraction, is trained again from
    /// that copy with atomic reads, which the trainer keeps from then on
    /// ([`EpochStats::redone`]). `None`: no guard and no copy.
    pub read_guard: Option<f64>,
}

/// The edge tile of async FM-shaped models ([`Options::asynchronous_for`]): 512 words (2 KiB
/// of one-hot edges) instead of 2,048. A chunk's 2,560 criteo-s edges mostly spill to global
/// reads then, but the smaller workgroup footprint made FM k = 10 23% faster on the H200
/// (8.30 against 10.80 ms per epoch; presumably a smaller shared-memory carve-out leaves
/// more L1 to the parameter gathers); 384 words was slower again (11.6 ms) and LR gained
/// nothing (2.56 against 2.58 ms).
pub const FM_TILE_WORDS: usize = 512;

/// The most invocations of a flow workgroup: `chunk · lanes` (the adapters' common limit).
pub const MAX_WORKGROUP: usize = 1024;

/// [`Options::asynchronous`]'s largest chunk: 256 samples, the most 8-bit slots number.
pub const ASYNC_CHUNK: usize = 256;

/// [`Options::asynchronous_for`]'s largest chunk for FM-shaped models: 64 samples.
pub const ASYNC_FM_CHUNK: usize = 64;

/// [`Options::read_guard`] by default: a 2% rise of the validation loss in one epoch.
pub const READ_GUARD: f64 = 0.02;

impl Options {
    /// Async mode with its own chunking: 256 samples per workgroup (below). Async time goes per
    /// chunk, not per edge (on the H200, criteo-s LR with atomic reads: 19.7 ms per epoch at
    /// 32 × 8, 11.2 ms at 64 × 4, 11.0 ms at 128 × 8), while sync mode wants more, smaller
    /// chunks per mini-batch.
    ///
    /// Parameters are read with plain loads (updates stay atomic adds) at 8 invocations per
    /// sample: on the H200, criteo-s LR 2.58 ms per epoch against 5.31 with atomic reads,
    /// validation logloss unchanged (`--check` passed). Plain reads bind the parameter
    /// buffer twice, both writable ([`FlowVariant::plain_reads`]): wgpu's native backends
    /// accept that alias, the WebGPU specification does not, so the trainer reads atomically
    /// on any other backend ([`aliasing_allowed`]). A per-SM cache may serve such
    /// reads stale for the rest of the dispatch; the divergence guard
    /// ([`Options::read_guard`]) trains an epoch again with atomic reads when its loss rises.
    /// The guard's copy is a compute dispatch ([`FlowVariant::kernel_copies`]): on the H200,
    /// criteo-s LR 2.56 ms per epoch against 2.60 with a transfer copy, FM k = 10 10.89
    /// against 11.34.
    ///
    /// Chunks of [`ASYNC_CHUNK`] samples × 4 lanes with 8-bit feature-sorted slots
    /// ([`FlowVariant::slot_bits`], four to a word, so the 2,048-word edge tile holds 8,189
    /// of a chunk's ≈ 10,240 one-hot edges): a chunk of 256 merges more of Apply's global
    /// adds than one of 64 (45% of the edges against 57%), and the packed slots keep the
    /// longer segments' walks in workgroup memory. Workgroups of 1,024 invocations, 264 of
    /// them on a 132-unit GPU (the resident cap of [`Options::async_groups`]), fill its
    /// threads; 256 × 2 held half of them. On an H200, criteo-s LR 1.75–1.82 ms per epoch
    /// against 1.99–2.03 at 256 × 2 and 2.58–2.62 at 64 × 8 with 32-bit slots (the default
    /// before either), `--check` passed (logloss 0.59409, the f64 twin 0.59415). A chunk of
    /// more than 256 samples needs 16-bit slots (the CLI switches to them, and to fewer
    /// lanes, when `--max-chunk` is raised past 256 without `--slot8` or `--lanes`).
    pub fn asynchronous() -> Self {
        Options {
            sync: false,
            lanes: 4,
            max_chunk: ASYNC_CHUNK,
            variant: FlowVariant {
                plain_reads: true,
                kernel_copies: true,
                slot_bits: 8,
                ..FlowVariant::default()
            },
            ..Default::default()
        }
    }

    /// This mode's largest chunk narrowed for `lanes` invocations per sample, so that
    /// `chunk · lanes` stays within [`MAX_WORKGROUP`] (what `wgsparse wide train` takes when
    /// `--lanes` is given without `--max-chunk`).
    pub fn max_chunk_for(&self, lanes: u32) -> usize {
        self.max_chunk.min(MAX_WORKGROUP / lanes.max(1) as usize)
    }

    /// This mode's lanes narrowed for chunks of up to `max_chunk` samples, so that
    /// `max_chunk · lanes` stays within [`MAX_WORKGROUP`] (at least 1; what `wgsparse wide
    /// train` takes when `--max-chunk` is given without `--lanes`).
    pub fn lanes_for(&self, max_chunk: usize) -> u32 {
        let most = (MAX_WORKGROUP / max_chunk.max(1)).max(1);
        self.lanes.min(most.min(u32::MAX as usize) as u32)
    }

    /// (lanes, largest chunk) from those asked: one given narrows this mode's default of
    /// the other ([`Options::max_chunk_for`], [`Options::lanes_for`]); neither, the mode's.
    pub fn fit_workgroup(&self, lanes: Option<u32>, max_chunk: Option<usize>) -> (u32, usize) {
        match (lanes, max_chunk) {
            (Some(l), c) => (l, c.unwrap_or(self.max_chunk_for(l))),
            (None, Some(c)) => (self.lanes_for(c), c),
            (None, None) => (self.lanes, self.max_chunk),
        }
    }

    /// [`Options::asynchronous`] with the fastest settings measured for `spec`'s shape of
    /// model. Models with several parameters per feature (FM): 4 invocations per sample, the
    /// importance cache off, plain reads alone (on the H200, FM k = 10 criteo-s with k + 2
    /// Accums: 11.32 ms per epoch, against 11.85 with the four per-chunk ILP variants on as
    /// well, 13.44 at 8 lanes and 26.6 with atomic reads and the cache), and an edge tile of
    /// [`FM_TILE_WORDS`]: 8.36 ms against 10.88 with the 2,048-word tile in the same job,
    /// in chunks of [`ASYNC_FM_CHUNK`] samples with 32-bit slots (LR's larger chunks and
    /// packed slots are not timed on FM).
    pub fn asynchronous_for(spec: &ModelSpec) -> Self {
        let base = Options::asynchronous();
        if spec.params_per_feature == 1 {
            return base;
        }
        Options {
            lanes: 4,
            max_chunk: ASYNC_FM_CHUNK,
            cache: Some(0),
            variant: FlowVariant {
                edge_tile_words: FM_TILE_WORDS,
                slot_bits: 32,
                ..base.variant
            },
            ..base
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            batch: 1024,
            lr: 0.5,
            sync: true,
            sync_kernel: SyncKernel::Auto,
            sync_groups: 0,
            sync_span: 0,
            async_span: 0,
            async_groups: 1024,
            async_scale: true,
            async_in_flight: None,
            l2: 0.0,
            ring: false,
            stage: false,
            lanes: 8,
            max_chunk: 32,
            native_atomics: true,
            cache: None,
            shuffle: true,
            drop_ones: true,
            reindex: true,
            early_stop: true,
            seed: 1,
            variant: FlowVariant::default(),
            diag: Diag::default(),
            read_guard: Some(READ_GUARD),
        }
    }
}

impl Options {
    /// Whether training runs the persistent sync kernel (sync mode, flow engine, the
    /// persistent [`Options::sync_kernel`]; [`SyncKernel::Auto`] is resolved by the
    /// trainer, [`sync::resolve`]).
    pub fn persistent_sync(&self) -> bool {
        self.sync && !self.stage && self.sync_kernel == SyncKernel::Persistent
    }

    /// Fails with [`Error::Option`] on an out-of-range option.
    pub fn check(&self) -> Result<()> {
        if self.batch == 0 {
            return Err(Error::Option("batch must be ≥ 1".into()));
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(Error::Option(format!("lr {} must be > 0", self.lr)));
        }
        if self.stage && !self.sync {
            return Err(Error::Option(
                "the stage baseline runs in sync mode only".into(),
            ));
        }
        let may_persist = self.sync && !self.stage && self.sync_kernel != SyncKernel::Dispatch;
        if !may_persist && (self.sync_groups > 0 || self.sync_span > 0) {
            return Err(Error::Option(format!(
                "sync_groups {} and sync_span {} size the persistent sync kernel: not with \
                 async mode, the stage baseline or the dispatch sync kernel",
                self.sync_groups, self.sync_span
            )));
        }
        if self.sync && !may_persist && self.variant.coherent_reads {
            return Err(Error::Option(
                "coherent_reads in sync mode is a variant of the persistent sync kernel: not \
                 with the stage baseline or the dispatch sync kernel (whose parameters do not \
                 move during a dispatch)"
                    .into(),
            ));
        }
        if self
            .async_in_flight
            .is_some_and(|s| !(s.is_finite() && s >= 1.0))
        {
            return Err(Error::Option(format!(
                "async_in_flight {:?} must be ≥ 1",
                self.async_in_flight
            )));
        }
        if !(self.l2.is_finite() && self.l2 >= 0.0) {
            return Err(Error::Option(format!("l2 {} must be ≥ 0", self.l2)));
        }
        if self
            .read_guard
            .is_some_and(|g| !(g.is_finite() && g >= 0.0))
        {
            return Err(Error::Option(format!(
                "read_guard {:?} must be a fraction ≥ 0",
                self.read_guard
            )));
        }
        if self.async_groups == 0 {
            return Err(Error::Option("async_groups must be ≥ 1".into()));
        }
        if !self.lanes.is_power_of_two() || self.lanes > 32 {
            return Err(Error::Option(format!(
                "lanes {} must be a power of two ≤ 32",
                self.lanes
            )));
        }
        self.variant.check(self.sync)?;
        if self.max_chunk == 0 || self.max_chunk * self.lanes as usize > MAX_WORKGROUP {
            return Err(Error::Option(format!(
                "max_chunk {} × lanes {} must be within 1 ..= {MAX_WORKGROUP}",
                self.max_chunk, self.lanes
            )));
        }
        Ok(())
    }
}
