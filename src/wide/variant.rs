//! Variants of the flow kernel's per-chunk work, selectable so one GPU job can compare them
//! (issue 12: async time goes per chunk, ≈ 80 µs per 64-sample chunk on the H200), and
//! timing-only switches that drop a stage to attribute that time.
//!
//! Every [`FlowVariant`] computes the same update as the default kernel (tests compare each
//! with the f64 twin); [`Diag`] switches make the results wrong on purpose and are for
//! timing alone.

use crate::{Error, Result};

/// Timing-only switches of the flow kernel. **Results are not valid** with any of them on
/// (except `no_tile`, which only reads every feature-sorted edge globally); never a default.
/// All five together leave the per-chunk fixed costs: the schedule and metadata reads, Loss,
/// the barriers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Diag {
    /// Skip Apply (no parameter moves).
    pub skip_apply: bool,
    /// Skip Aggregate's edge loop (the Accums stay 0).
    pub skip_aggregate: bool,
    /// Skip the importance cache's copy (the cache holds whatever was there).
    pub no_hot_copy: bool,
    /// Skip the feature-sorted edge tile (Apply reads every edge globally; still correct).
    pub no_tile: bool,
    /// Skip the bias and loss sums of a chunk (the bias stays, the chunk's loss reads 0).
    pub skip_tail: bool,
    /// Async: no storage barrier between a workgroup's chunks (its next chunk may read
    /// parameters before its own updates land; not part of `fixed`). The same kernel as
    /// the valid variant [`FlowVariant::no_fence`], kept for the timing-only sets.
    pub no_storage_barrier: bool,
    /// Apply's global adds of the features below [`Diag::add_split`] dropped; their sums
    /// are still computed (an add happens only for a NaN sum).
    pub skip_hot_adds: bool,
    /// Apply's global adds of the other features dropped, their sums still computed.
    pub skip_cold_adds: bool,
    /// The feature id splitting `skip_hot_adds` from `skip_cold_adds` (0: the importance
    /// cache's size); `add-split=N` in a list.
    pub add_split: u32,
}

impl Diag {
    /// The switches by name, as the CLI's `--diag` takes them.
    pub const NAMES: [&'static str; 9] = [
        "skip-apply",
        "skip-aggregate",
        "no-hot-copy",
        "no-tile",
        "skip-tail",
        "no-storage-barrier",
        "skip-hot-adds",
        "skip-cold-adds",
        "fixed",
    ];

    /// Parses a comma-separated list of [`Diag::NAMES`] (`fixed`: all of them) and
    /// `add-split=N`.
    pub fn parse(list: &str) -> Result<Self> {
        let mut d = Diag::default();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some(n) = name.strip_prefix("add-split=") {
                d.add_split = n.parse().map_err(|_| {
                    Error::Option(format!("--diag {name}: add-split takes a feature id"))
                })?;
                continue;
            }
            match name {
                "skip-apply" => d.skip_apply = true,
                "skip-aggregate" => d.skip_aggregate = true,
                "no-hot-copy" => d.no_hot_copy = true,
                "no-tile" => d.no_tile = true,
                "skip-tail" => d.skip_tail = true,
                "no-storage-barrier" => d.no_storage_barrier = true,
                "skip-hot-adds" => d.skip_hot_adds = true,
                "skip-cold-adds" => d.skip_cold_adds = true,
                "fixed" => {
                    d.skip_apply = true;
                    d.skip_aggregate = true;
                    d.no_hot_copy = true;
                    d.no_tile = true;
                    d.skip_tail = true;
                }
                other => {
                    return Err(Error::Option(format!(
                        "--diag {other}: expected one of {}, or add-split=N",
                        Diag::NAMES.join(", ")
                    )))
                }
            }
        }
        if d.add_split > 0 && !(d.skip_hot_adds || d.skip_cold_adds) {
            return Err(Error::Option(format!(
                "--diag add-split={}: it splits skip-hot-adds from skip-cold-adds; name one",
                d.add_split
            )));
        }
        Ok(d)
    }

    /// Whether any switch is on (the run's results are then not valid).
    pub fn any(&self) -> bool {
        *self != Diag::default()
    }

    /// The switches that are on, by name, and `add-split=N` where set.
    pub fn names(&self) -> Vec<String> {
        let on = [
            self.skip_apply,
            self.skip_aggregate,
            self.no_hot_copy,
            self.no_tile,
            self.skip_tail,
            self.no_storage_barrier,
            self.skip_hot_adds,
            self.skip_cold_adds,
        ];
        // NAMES ends with `fixed`, which the zip leaves out.
        let mut names: Vec<String> = Diag::NAMES
            .iter()
            .zip(on)
            .filter(|(_, o)| *o)
            .map(|(n, _)| n.to_string())
            .collect();
        if self.add_split > 0 {
            names.push(format!("add-split={}", self.add_split));
        }
        names
    }

    /// The flow kernel's defines.
    pub(crate) fn defines(&self) -> Vec<&'static str> {
        let mut d = vec![];
        for (on, name) in [
            (self.skip_apply, "DIAG_SKIP_APPLY"),
            (self.skip_aggregate, "DIAG_SKIP_AGGREGATE"),
            (self.no_hot_copy, "DIAG_NO_HOT_COPY"),
            (self.no_tile, "DIAG_NO_TILE"),
            (self.skip_tail, "DIAG_SKIP_TAIL"),
            (self.no_storage_barrier, "NO_FENCE"),
            (self.skip_hot_adds, "DIAG_SKIP_HOT_ADDS"),
            (self.skip_cold_adds, "DIAG_SKIP_COLD_ADDS"),
        ] {
            if on {
                d.push(name);
            }
        }
        d
    }
}

/// Candidate changes to the flow kernel's per-chunk work. Each gives the default kernel's
/// update (up to f32 summation order); [`FlowVariant::default`] is the kernel as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowVariant {
    /// Async: reload the importance cache every this many chunks of a workgroup (≥ 1; 1:
    /// every chunk). In between the workgroup adds its own updates of the cached features
    /// into its copy too, so it sees its own steps and misses only the other workgroups'
    /// for up to this many chunks (async reads stale parameters anyway). The step scale does
    /// not count those chunks: on the H200 with 8 racing workgroups at lr 0.5, R = 8 ended at
    /// validation logloss 0.93–1.01 against sync mode's 0.535 (R = 2: 0.536), and R = 16
    /// failed a criteo-s `--check`. Keep R small.
    pub hot_every: u32,
    /// The importance cache's and the edge tile's copies with 8 loads in flight per
    /// invocation before their stores (else one load, then its store, per iteration).
    pub copy_ilp: bool,
    /// Aggregate loads 8 of a lane's edges before their parameters (else edge, then its
    /// parameter, one after another).
    pub agg_ilp: bool,
    /// Apply takes 4 of an invocation's work items at once: their segment bounds,
    /// features and step scales loaded together before the sums (else one item's loads,
    /// then its sum, then the next item's).
    pub apply_ilp: bool,
    /// Apply's walk over a segment's edges past the edge tile (read from global memory)
    /// loads 8 edges before their sums (the same sums in the same order; else one edge's
    /// load, then its sum). A long segment past the tile otherwise waits on one load per
    /// edge (per packed word with `slot_bits` < 32). Not with `apply_whole`, whose walk is
    /// its own.
    pub walk_ilp: bool,
    /// The chunk's bias and loss sums by the last two invocations with four partial sums
    /// each (else invocation 0, which also walks the hottest feature's segment, serially).
    pub tail_spread: bool,
    /// Async: parameter reads as plain loads through a second, non-atomic binding of the
    /// parameter buffer (else atomic loads); the updates stay atomic adds. Both bindings are
    /// writable (a read-only one would conflict with the atomic binding's usage), an alias
    /// the WebGPU specification forbids and wgpu's native backends accept; a GPU's per-SM
    /// cache may serve these reads stale for the rest of the dispatch.
    pub plain_reads: bool,
    /// With `plain_reads`: that second binding carries the `@coherent` decoration, so the
    /// plain loads bypass per-compute-unit caches (NVIDIA's L1 would otherwise serve a
    /// parameter as it was when first cached, for the whole epoch's dispatch). Needs the
    /// adapter's `coherent` capability. Also the persistent sync kernel's variant (its
    /// parameter reads as coherent plain loads instead of atomic loads: exact either way).
    pub coherent_reads: bool,
    /// Async: parameter reads (Aggregate, Loss, the importance cache's copy, Apply's L2 and
    /// FM terms) from a separate **snapshot** buffer bound read-only, into which the live
    /// parameters are copied before each dispatch; the updates stay atomic adds into the
    /// live buffer. No buffer is bound twice (the spec-valid form of `plain_reads`), and a
    /// read lags the live parameters by at most the chunks of one dispatch: the epoch is cut
    /// into dispatches of P · [`FlowVariant::snapshot_rounds`] chunks (P persistent
    /// workgroups) unless [`crate::wide::Options::async_span`] sets the dispatch size, and
    /// the step scale assumes that whole dispatch in flight.
    pub snapshot_reads: bool,
    /// With `snapshot_reads` and no `async_span`: chunks per persistent workgroup in one
    /// dispatch (k, ≥ 1), so a dispatch holds P · k chunks and reads are stale by at most
    /// that many; more rounds, fewer dispatches and copies but staler reads. The step scale
    /// gives a hot feature about one step per dispatch, so where P is capped at the epoch's
    /// chunks / [`crate::wide::MIN_WINDOWS`] an epoch holds MIN_WINDOWS / k such steps.
    pub snapshot_rounds: u32,
    /// Feature-sorted segments cut into pieces of at most this many edges (0: whole), each
    /// piece its own Apply work item and global add, so no invocation walks a hot
    /// feature's whole chunk-long segment. Fixed when the data are chunked. In async mode
    /// a piece's Apply may read a parameter (FM's v_jf, the L2 term) that an earlier piece
    /// of the same feature has just moved, as it may read another workgroup's update;
    /// features in the importance cache read the chunk's snapshot.
    pub max_segment: usize,
    /// Words of the feature-sorted edge tile in workgroup memory (one per one-hot edge, two
    /// per valued edge; edges past it are read globally); 0: 2,048 (8 KiB). A larger tile
    /// leaves less workgroup memory to the importance cache.
    pub edge_tile_words: usize,
    /// Async, one-hot training data: the bits of each feature-sorted edge's sample slot, 32
    /// (a word each), 16 (two per word: a chunk holds at most 1,024 samples) or 8 (four per
    /// word: chunks of at most 256 samples), so that array's bytes shrink and the edge tile
    /// holds 2 or 4 times the edges. Fixed when the data are chunked; data with other
    /// values than 1 keep their 32-bit (slot, value) edges.
    pub slot_bits: u32,
    /// Apply by one invocation per segment for all of its feature's parameters (else one
    /// per (segment, parameter)): the same sums and adds, the segment's bounds, edges and
    /// step scale read once instead of once per parameter (FM k = 10: 11 times), fewer
    /// invocations busy. Not with `apply_ilp`.
    pub apply_whole: bool,
    /// Apply every feature from [`FlowVariant::edge_features`] on (the re-indexed order's
    /// less frequent ones) edge by edge: the lane that aggregated an
    /// edge adds its gradient (one global add per edge and parameter), with no segment index
    /// or feature-sorted edge read for it; the features below the bound keep their segments
    /// (the chunk's first ones), whose sums save adds. A feature seen about once per chunk
    /// has segments of ≈ 1 edge, so it takes as many adds either way and 12 bytes per edge
    /// fewer this way (its 4-byte feature-sorted edge and 8 bytes of segment index). Needs
    /// whole segments (max_segment 0) and `hot_every` 1. In async mode a later edge of a
    /// feature in the same chunk may read (FM's v_jf, the L2 term) what an earlier one has
    /// just moved, as it may read another workgroup's update.
    pub edge_apply: bool,
    /// With `edge_apply`: features 0 .. this keep their segments (0: the cost rule's count,
    /// [`crate::wide::plan::hot_features`] without the workgroup-memory cap, i.e. those
    /// expected at least once per chunk).
    pub edge_features: usize,
    /// Async: no storage barrier (a device-scope fence) between a workgroup's chunks, only
    /// the workgroup barrier its arrays need: the workgroup goes on to its next chunk
    /// without waiting until its global adds are acknowledged, so that chunk may read
    /// parameters before its own last updates land, as it reads every other workgroup's
    /// (async reads are stale anyway; the step scale assumes P chunks in flight, this
    /// adds at most the workgroup's own one). Sync mode orders updates by dispatches or grid
    /// barriers and keeps its fences.
    pub no_fence: bool,
    /// Async: the epoch's device-side parameter copies (the divergence guard's at the
    /// epoch's start, snapshot reads' before each dispatch) by a compute dispatch
    /// ([`crate::gpu::WordCopy`]) instead of a transfer command. On the H200 the guard's
    /// transfer copy added 0.03 ms (LR, 4 MB) and 0.34 ms (FM k = 10, 44 MB) to the epoch,
    /// ≈ 0.26 TB/s of bytes read and written, where a kernel's copy reaches ≈ 4 TB/s
    /// (`wgsparse roofline`).
    pub kernel_copies: bool,
    /// Async with `plain_reads`: Apply's updates of the cold features (the tail from
    /// [`crate::wide::plan::cold_from`], each expected in at most one of the S · B samples in
    /// flight) as plain read-modify-writes through the plain-reads binding instead of atomic
    /// adds, Hogwild!-style: such a feature rarely has two writers at once, and when it does
    /// one update may be lost (as may one that a per-SM cache hid from the read). The other
    /// features and the bias stay atomic adds. Slower on the H200, whose f32 atomic adds
    /// need no round trip (criteo-s: LR 2.69 against 2.57 ms per epoch, FM k = 10 11.43
    /// against 10.76): meant for devices whose f32 adds are a compare-exchange loop.
    pub plain_writes: bool,
    /// With `plain_writes`: the cold tail from this feature on (clamped to the feature
    /// count; 0: [`crate::wide::plan::cold_from`]'s bound). Features are re-indexed by
    /// descending frequency, so the N most frequent stay atomic adds: a bound below the rule's
    /// writes features plainly that several samples in flight may hold (more lost updates,
    /// fewer atomics). Not fixed at build: [`crate::wide::Trainer::restart_with`] rewrites it.
    pub cold_from: usize,
}

/// What [`FlowVariant::build_key`] returns: (max_segment, snapshot_reads, snapshot rounds or
/// 0, slot bits).
pub type BuildKey = (usize, bool, u32, u32);

/// [`FlowVariant::snapshot_rounds`] by default: a dispatch holds 4 chunks per persistent
/// workgroup (criteo-s on the H200, P = 1,024: 18 dispatches and 18 copies of 4 MB per
/// epoch), reads stale by at most 4 · P chunks.
pub const SNAPSHOT_ROUNDS: u32 = 4;

impl Default for FlowVariant {
    fn default() -> Self {
        FlowVariant {
            hot_every: 1,
            copy_ilp: false,
            agg_ilp: false,
            apply_ilp: false,
            walk_ilp: false,
            tail_spread: false,
            plain_reads: false,
            coherent_reads: false,
            snapshot_reads: false,
            snapshot_rounds: SNAPSHOT_ROUNDS,
            max_segment: 0,
            edge_tile_words: 0,
            slot_bits: 32,
            apply_whole: false,
            edge_apply: false,
            edge_features: 0,
            no_fence: false,
            kernel_copies: false,
            plain_writes: false,
            cold_from: 0,
        }
    }
}

impl FlowVariant {
    /// The edge tile's words ([`FlowVariant::edge_tile_words`], 0 read as the default).
    pub fn tile_words(&self) -> usize {
        match self.edge_tile_words {
            0 => crate::wide::engine::EDGE_TILE_WORDS,
            w => w,
        }
    }

    /// The settings fixed when a trainer is built, which [`crate::wide::Trainer::restart_with`]
    /// cannot change: the segment cut and the slots' width (the chunked data), and with
    /// snapshot reads the rounds per dispatch (the schedule, the step scale and the
    /// snapshot buffer). Not [`FlowVariant::cold_from`]: a word of the per-part uniform that
    /// `restart_with` rewrites.
    pub fn build_key(&self) -> BuildKey {
        let rounds = if self.snapshot_reads {
            self.snapshot_rounds
        } else {
            0
        };
        (
            self.max_segment,
            self.snapshot_reads,
            rounds,
            self.slot_bits,
        )
    }

    /// Whether the feature-sorted slots are packed several to a word
    /// ([`FlowVariant::slot_bits`] below 32).
    pub fn packed_slots(&self) -> bool {
        self.slot_bits < 32
    }

    /// Fails with [`Error::Option`] on an out-of-range or conflicting setting.
    pub fn check(&self, sync: bool) -> Result<()> {
        if self.hot_every == 0 {
            return Err(Error::Option("hot_every must be ≥ 1".into()));
        }
        if sync && (self.hot_every > 1 || (self.plain_reads && !self.coherent_reads)) {
            return Err(Error::Option(
                "hot_every > 1 and plain_reads (without coherent_reads) are async-mode variants"
                    .into(),
            ));
        }
        if self.snapshot_reads && sync {
            return Err(Error::Option(
                "snapshot_reads is an async-mode variant (sync mode reads parameters that do \
                 not move during a dispatch)"
                    .into(),
            ));
        }
        if self.apply_whole && self.apply_ilp {
            return Err(Error::Option(
                "apply_whole and apply_ilp are two ways of cutting Apply's work: choose one".into(),
            ));
        }
        if self.apply_whole && self.walk_ilp {
            return Err(Error::Option(
                "walk_ilp speeds Apply's per-parameter walks; apply_whole walks each segment \
                 its own way: choose one"
                    .into(),
            ));
        }
        if self.edge_apply && (self.max_segment > 0 || self.hot_every > 1) {
            return Err(Error::Option(
                "edge_apply needs whole segments (max_segment 0) and hot_every 1".into(),
            ));
        }
        if self.edge_features > 0 && !self.edge_apply {
            return Err(Error::Option(
                "edge_features bounds edge_apply's segmented features: it needs edge_apply".into(),
            ));
        }
        if self.kernel_copies && sync {
            return Err(Error::Option(
                "kernel_copies moves async mode's guard and snapshot copies: sync mode makes none"
                    .into(),
            ));
        }
        if self.no_fence && sync {
            return Err(Error::Option(
                "no_fence is an async-mode variant (sync mode's updates are ordered by its \
                 dispatches or grid barriers)"
                    .into(),
            ));
        }
        if !matches!(self.slot_bits, 8 | 16 | 32) {
            return Err(Error::Option(format!(
                "slot bits {}: 32, 16 or 8",
                self.slot_bits
            )));
        }
        if self.packed_slots() && sync {
            return Err(Error::Option(format!(
                "slot{} is an async-mode layout of the feature-sorted edges",
                self.slot_bits
            )));
        }
        if self.snapshot_reads && self.plain_reads {
            return Err(Error::Option(
                "snapshot_reads and plain_reads are two ways of reading the parameters: choose one"
                    .into(),
            ));
        }
        if self.snapshot_rounds == 0 {
            return Err(Error::Option("snapshot_rounds must be ≥ 1".into()));
        }
        if self.plain_writes && sync {
            return Err(Error::Option(
                "plain_writes is an async-mode variant (sync mode's updates are mini-batch \
                 gradients summed by atomics)"
                    .into(),
            ));
        }
        if self.plain_writes && !self.plain_reads {
            return Err(Error::Option(
                "plain_writes writes through the plain-reads binding: it needs plain_reads \
                 (not atomic or snapshot reads)"
                    .into(),
            ));
        }
        if self.cold_from > 0 && !self.plain_writes {
            return Err(Error::Option(
                "cold_from bounds plain_writes' cold tail: it needs plain_writes".into(),
            ));
        }
        if self.coherent_reads && !self.plain_reads {
            return Err(Error::Option(
                "coherent_reads decorates the plain-reads binding: it needs plain_reads".into(),
            ));
        }
        if self.hot_every > 1 && self.max_segment > 0 {
            // Two pieces of one cached feature would update its cached copy at once.
            return Err(Error::Option(
                "hot_every > 1 needs whole segments (max_segment 0)".into(),
            ));
        }
        Ok(())
    }

    /// The flow kernel's defines for mode `sync`.
    pub(crate) fn defines(&self, sync: bool) -> Vec<&'static str> {
        let mut d = vec![];
        for (on, name) in [
            (self.copy_ilp, "COPY_ILP"),
            (self.agg_ilp, "AGG_ILP"),
            (self.apply_ilp, "APPLY_ILP"),
            (self.walk_ilp, "WALK_ILP"),
            (self.apply_whole, "APPLY_WHOLE"),
            (self.edge_apply, "EDGE_APPLY"),
            (!sync && self.no_fence, "NO_FENCE"),
            (self.tail_spread, "TAIL_SPREAD"),
            (!sync && self.plain_reads, "PLAIN_READS"),
            (
                !sync && self.plain_reads && self.coherent_reads,
                "COHERENT_READS",
            ),
            (
                !sync && self.plain_reads && self.plain_writes,
                "PLAIN_WRITES",
            ),
            (!sync && self.snapshot_reads, "SNAPSHOT_READS"),
            (!sync && self.hot_every > 1, "HOT_LOCAL"),
        ] {
            if on {
                d.push(name);
            }
        }
        d
    }

    /// Parses a run of a variant sweep: comma-separated `default`, `hot-every=R`,
    /// `copy-ilp`, `agg-ilp`, `apply-ilp`, `walk-ilp`, `tail-spread`, `plain-reads`, `coherent-reads`, `snapshot-reads`,
    /// `snapshot-rounds=K` (with snapshot reads), `max-segment=N`, `tile-words=N`, `slot16`, `slot8`, `apply-whole`,
    /// `edge-apply`, `edge-apply=N` (N segmented features), `no-fence`, `kernel-copies`,
    /// `plain-writes` (with plain reads), `plain-writes=N` (features N.. cold) and `diag=A+B`
    /// (A, B … from [`Diag::NAMES`]); unnamed settings keep their defaults.
    pub fn parse_run(run: &str) -> Result<(Self, Diag)> {
        let mut v = FlowVariant::default();
        let mut d = Diag::default();
        let number = |key: &str, value: &str| -> Result<usize> {
            value
                .parse()
                .map_err(|_| Error::Option(format!("run {run:?}: {key}={value} is not a count")))
        };
        for token in run.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match token.split_once('=') {
                None if token == "default" => {}
                None if token == "copy-ilp" => v.copy_ilp = true,
                None if token == "agg-ilp" => v.agg_ilp = true,
                None if token == "apply-ilp" => v.apply_ilp = true,
                None if token == "walk-ilp" => v.walk_ilp = true,
                None if token == "tail-spread" => v.tail_spread = true,
                None if token == "plain-reads" => v.plain_reads = true,
                None if token == "coherent-reads" => {
                    v.plain_reads = true;
                    v.coherent_reads = true
                }
                Some(("hot-every", r)) => {
                    v.hot_every = u32::try_from(number("hot-every", r)?)
                        .map_err(|_| Error::Option(format!("run {run:?}: hot-every={r}")))?
                }
                None if token == "snapshot-reads" => v.snapshot_reads = true,
                None if token == "slot16" => v.slot_bits = 16,
                None if token == "slot8" => v.slot_bits = 8,
                None if token == "apply-whole" => v.apply_whole = true,
                None if token == "edge-apply" => v.edge_apply = true,
                None if token == "no-fence" => v.no_fence = true,
                None if token == "kernel-copies" => v.kernel_copies = true,
                None if token == "plain-writes" => v.plain_writes = true,
                Some(("plain-writes", n)) => {
                    v.plain_writes = true;
                    v.cold_from = number("plain-writes", n)?
                }
                Some(("edge-apply", n)) => {
                    v.edge_apply = true;
                    v.edge_features = number("edge-apply", n)?
                }
                Some(("snapshot-rounds", k)) => {
                    v.snapshot_reads = true;
                    v.snapshot_rounds = u32::try_from(number("snapshot-rounds", k)?)
                        .map_err(|_| Error::Option(format!("run {run:?}: snapshot-rounds={k}")))?
                }
                Some(("max-segment", n)) => v.max_segment = number("max-segment", n)?,
                Some(("tile-words", n)) => v.edge_tile_words = number("tile-words", n)?,
                Some(("diag", list)) => d = Diag::parse(&list.replace('+', ","))?,
                _ => {
                    return Err(Error::Option(format!(
                        "run {run:?}: unknown setting {token:?} (default, hot-every=R, \
                         copy-ilp, agg-ilp, apply-ilp, walk-ilp, tail-spread, plain-reads, coherent-reads, snapshot-reads, snapshot-rounds=K, max-segment=N, \
                         tile-words=N, slot16, slot8, apply-whole, edge-apply, edge-apply=N, no-fence, kernel-copies, plain-writes, plain-writes=N, \
                         diag=A+B)"
                    )))
                }
            }
        }
        Ok((v, d))
    }

    /// The `wgsparse wide train` flags that select this variant.
    pub fn flags(&self) -> Vec<String> {
        let mut f = vec![];
        if self.hot_every > 1 {
            f.extend(["--hot-every".into(), self.hot_every.to_string()]);
        }
        for (on, name) in [
            (self.copy_ilp, "--copy-ilp"),
            (self.agg_ilp, "--agg-ilp"),
            (self.apply_ilp, "--apply-ilp"),
            (self.walk_ilp, "--walk-ilp"),
            (self.tail_spread, "--tail-spread"),
            (self.plain_reads, "--plain-reads"),
            (self.coherent_reads, "--coherent-reads"),
            (self.snapshot_reads, "--snapshot-reads"),
        ] {
            if on {
                f.push(name.into());
            }
        }
        if self.snapshot_reads && self.snapshot_rounds != SNAPSHOT_ROUNDS {
            f.extend(["--snapshot-rounds".into(), self.snapshot_rounds.to_string()]);
        }
        if self.max_segment > 0 {
            f.extend(["--max-segment".into(), self.max_segment.to_string()]);
        }
        if self.edge_tile_words > 0 {
            f.extend(["--tile-words".into(), self.edge_tile_words.to_string()]);
        }
        if self.packed_slots() {
            f.push(format!("--slot{}", self.slot_bits));
        }
        if self.apply_whole {
            f.push("--apply-whole".into());
        }
        if self.edge_apply {
            f.push("--edge-apply".into());
        }
        if self.edge_features > 0 {
            f.extend(["--edge-features".into(), self.edge_features.to_string()]);
        }
        if self.no_fence {
            f.push("--no-fence".into());
        }
        if self.kernel_copies {
            f.push("--kernel-copies".into());
        }
        if self.plain_writes {
            f.push("--plain-writes".into());
        }
        if self.cold_from > 0 {
            f.extend(["--cold-from".into(), self.cold_from.to_string()]);
        }
        f
    }

    /// A short name of the settings that differ from the default (e.g. for reports).
    pub fn label(&self) -> String {
        let mut parts = vec![];
        if self.hot_every > 1 {
            parts.push(format!("hot-every={}", self.hot_every));
        }
        for (on, name) in [
            (self.copy_ilp, "copy-ilp"),
            (self.agg_ilp, "agg-ilp"),
            (self.apply_ilp, "apply-ilp"),
            (self.walk_ilp, "walk-ilp"),
            (self.tail_spread, "tail-spread"),
            (self.plain_reads && !self.coherent_reads, "plain-reads"),
            (self.coherent_reads, "coherent-reads"),
            (
                self.snapshot_reads && self.snapshot_rounds == SNAPSHOT_ROUNDS,
                "snapshot-reads",
            ),
        ] {
            if on {
                parts.push(name.into());
            }
        }
        if self.snapshot_reads && self.snapshot_rounds != SNAPSHOT_ROUNDS {
            parts.push(format!("snapshot-rounds={}", self.snapshot_rounds));
        }
        if self.max_segment > 0 {
            parts.push(format!("max-segment={}", self.max_segment));
        }
        if self.edge_tile_words > 0 {
            parts.push(format!("tile-words={}", self.edge_tile_words));
        }
        if self.packed_slots() {
            parts.push(format!("slot{}", self.slot_bits));
        }
        if self.apply_whole {
            parts.push("apply-whole".into());
        }
        match (self.edge_apply, self.edge_features) {
            (true, 0) => parts.push("edge-apply".into()),
            (true, n) => parts.push(format!("edge-apply={n}")),
            _ => {}
        }
        if self.no_fence {
            parts.push("no-fence".into());
        }
        if self.kernel_copies {
            parts.push("kernel-copies".into());
        }
        match (self.plain_writes, self.cold_from) {
            (true, 0) => parts.push("plain-writes".into()),
            (true, n) => parts.push(format!("plain-writes={n}")),
            _ => {}
        }
        if parts.is_empty() {
            "default".into()
        } else {
            parts.join(",")
        }
    }
}
