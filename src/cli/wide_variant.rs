//! The flow kernel's variant flags of `wgsparse wide train` ([`wide::FlowVariant`] and the
//! timing-only [`wide::Diag`]), and how they combine with a mode's defaults.

use wgsparse::wide;
use wgsparse::Result;

/// Flags that select a [`wide::FlowVariant`] (flattened into `wide train`).
#[derive(clap::Args)]
pub struct VariantArgs {
    /// Async: reload the importance cache every R chunks of a workgroup (its own updates
    /// go into its copy in between). R = 8 diverged on an H200 at lr 0.5; keep R ≤ 2.
    #[arg(long, default_value_t = 1)]
    hot_every: u32,
    /// Copy the importance cache and the edge tile with 8 loads in flight per invocation.
    #[arg(long)]
    copy_ilp: bool,
    /// Aggregate: load 8 of a lane's edges before their parameters.
    #[arg(long)]
    agg_ilp: bool,
    /// Apply: 4 work items' loads in flight per invocation.
    #[arg(long)]
    apply_ilp: bool,
    /// Apply: a segment's edges past the edge tile loaded 8 at a time before their sums.
    #[arg(long, conflicts_with = "apply_whole")]
    walk_ilp: bool,
    /// A chunk's bias and loss sums by two invocations other than the first.
    #[arg(long)]
    tail_spread: bool,
    /// Async: read the parameters with plain loads (updates stay atomic; the default
    /// with --async).
    #[arg(long, conflicts_with = "atomic_reads")]
    plain_reads: bool,
    /// Async: read the parameters with atomic loads (the default before plain reads;
    /// slower, never stale).
    #[arg(long)]
    atomic_reads: bool,
    /// Async, plain reads: no divergence guard (no epoch-start copy of the parameters,
    /// no epoch trained again with atomic reads when its loss rises).
    #[arg(long)]
    no_read_guard: bool,
    /// Async, with --plain-reads: bind those reads `@coherent` (past per-SM caches).
    #[arg(long, requires = "plain_reads")]
    coherent_reads: bool,
    /// Async: read the parameters from a read-only snapshot copied from them before each
    /// dispatch (reads stale by at most one dispatch's chunks; updates stay atomic).
    #[arg(long, conflicts_with_all = ["plain_reads", "atomic_reads"])]
    snapshot_reads: bool,
    /// Async, with --snapshot-reads and no --async-span: chunks per persistent workgroup
    /// in one dispatch (a dispatch holds async-groups × this many chunks).
    #[arg(long, default_value_t = wide::variant::SNAPSHOT_ROUNDS, requires = "snapshot_reads")]
    snapshot_rounds: u32,
    /// Cut each feature's segment of a chunk into pieces of at most N edges (0: whole).
    #[arg(long, default_value_t = 0)]
    max_segment: usize,
    /// Words of the flow kernel's feature-sorted edge tile (0: the mode's default, 2048, or
    /// 512 for async FM).
    #[arg(long, default_value_t = 0)]
    tile_words: usize,
    /// Async, one-hot data: the feature-sorted edges' slots 16 bits each, two per word.
    #[arg(long, conflicts_with_all = ["slot8", "slot32"])]
    slot16: bool,
    /// The feature-sorted edges' slots a word each (sync mode's layout; async LR's default
    /// packs them 8 bits each).
    #[arg(long, conflicts_with = "slot8")]
    slot32: bool,
    /// Async, one-hot data, chunks of at most 256 samples: the slots 8 bits each, four per
    /// word.
    #[arg(long)]
    slot8: bool,
    /// Apply by one invocation per segment for all of its feature's parameters.
    #[arg(long, conflicts_with = "apply_ilp")]
    apply_whole: bool,
    /// Apply the features past the segmented ones (--edge-features, default the cost
    /// rule's) edge by edge from Aggregate's lanes, without their segment index.
    #[arg(long)]
    edge_apply: bool,
    /// With --edge-apply: features 0 .. N keep Apply's segments (0: the cost rule).
    #[arg(long, default_value_t = 0, requires = "edge_apply")]
    edge_features: usize,
    /// Async: no storage barrier between a workgroup's chunks (it goes on without
    /// waiting for its own global adds to land).
    #[arg(long)]
    no_fence: bool,
    /// Async: the guard's and snapshots' parameter copies by a compute dispatch (the
    /// async default; kept so older command lines still parse).
    #[arg(long, conflicts_with = "transfer_copies")]
    kernel_copies: bool,
    /// Async: the guard's and snapshots' parameter copies by a transfer command instead
    /// of a compute dispatch.
    #[arg(long)]
    transfer_copies: bool,
    /// Async, plain reads: Apply's updates of the cold features (each expected in at
    /// most one sample in flight) as plain read-modify-writes instead of atomic adds,
    /// Hogwild!-style (a racing update may be lost); the other features and the bias
    /// stay atomic. Slower on an H200 (native f32 atomics); meant for devices whose f32
    /// adds are a compare-exchange loop.
    #[arg(long, conflicts_with_all = ["atomic_reads", "snapshot_reads"])]
    plain_writes: bool,
    /// With --plain-writes: features N.. are cold, the N most frequent stay atomic (0:
    /// those each expected in at most one sample in flight, `wide::plan::cold_from`).
    #[arg(long, default_value_t = 0, requires = "plain_writes")]
    cold_from: usize,
    /// Timing only, results NOT valid: drop parts of the flow kernel (comma-separated:
    /// skip-apply, skip-aggregate, no-hot-copy, no-tile, skip-tail, no-storage-barrier,
    /// skip-hot-adds and skip-cold-adds (Apply's adds of the features below or from
    /// add-split=N, default the importance cache's size); fixed: the first five).
    #[arg(long, hide = true)]
    diag: Option<String>,
}

impl VariantArgs {
    /// Whether --slot8, --slot16 or --slot32 was given (else the slots' width is the mode's).
    pub fn slot_width_given(&self) -> bool {
        self.slot8 || self.slot16 || self.slot32
    }

    /// The variant and timing switches these flags ask for, on top of `base`'s defaults
    /// (async mode reads plainly unless atomic or snapshot reads are asked for).
    pub fn resolve(&self, base: &wide::Options) -> Result<(wide::FlowVariant, wide::Diag)> {
        let b = &base.variant;
        let plain_reads =
            self.plain_reads || (b.plain_reads && !self.atomic_reads && !self.snapshot_reads);
        let variant = wide::FlowVariant {
            hot_every: self.hot_every,
            copy_ilp: self.copy_ilp || b.copy_ilp,
            agg_ilp: self.agg_ilp || b.agg_ilp,
            apply_ilp: self.apply_ilp || b.apply_ilp,
            walk_ilp: self.walk_ilp || b.walk_ilp,
            tail_spread: self.tail_spread || b.tail_spread,
            plain_reads,
            coherent_reads: self.coherent_reads,
            snapshot_reads: self.snapshot_reads,
            snapshot_rounds: self.snapshot_rounds,
            max_segment: self.max_segment,
            // 0 keeps the mode's tile (FM-shaped async models: `wide::FM_TILE_WORDS`).
            edge_tile_words: if self.tile_words > 0 {
                self.tile_words
            } else {
                b.edge_tile_words
            },
            slot_bits: if self.slot8 {
                8
            } else if self.slot16 {
                16
            } else if self.slot32 {
                32
            } else {
                b.slot_bits
            },
            apply_whole: self.apply_whole || b.apply_whole,
            edge_apply: self.edge_apply || b.edge_apply,
            edge_features: self.edge_features,
            no_fence: self.no_fence,
            kernel_copies: !self.transfer_copies && (self.kernel_copies || b.kernel_copies),
            plain_writes: self.plain_writes,
            cold_from: self.cold_from,
        };
        let diag = match &self.diag {
            Some(d) => wide::Diag::parse(d)?,
            None => wide::Diag::default(),
        };
        Ok((variant, diag))
    }

    /// The divergence guard: `base`'s unless --no-read-guard.
    pub fn read_guard(&self, base: &wide::Options) -> Option<f64> {
        if self.no_read_guard {
            None
        } else {
            base.read_guard
        }
    }
}
