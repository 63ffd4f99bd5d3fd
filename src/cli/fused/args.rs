//! `wgsparse fused`'s arguments.

use std::path::PathBuf;

use clap::ValueEnum;

use wgsparse::fused::{Atomics, Pattern, UnitTiles};

#[derive(Clone, Copy, PartialEq, ValueEnum)]
pub(crate) enum PatternArg {
    Xty,
    Xtxy,
    Xtvxy,
    XtxyBz,
    Full,
}

impl PatternArg {
    pub(crate) fn pattern(self) -> Pattern {
        match self {
            PatternArg::Xty => Pattern::Xty,
            PatternArg::Xtxy => Pattern::Xtxy,
            PatternArg::Xtvxy => Pattern::Xtvxy,
            PatternArg::XtxyBz => Pattern::XtxyBz,
            PatternArg::Full => Pattern::Full,
        }
    }
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
pub(crate) enum VariantArg {
    Auto,
    All,
    Fused,
    Sorted,
    Split,
    Stream,
    Transpose,
    Unfused,
    TwoPass,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
pub(crate) enum FoldArg {
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ReorderArg {
    Auto,
    On,
    Off,
}

/// Xᵀ's row order for `--xt-order`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum XtOrderArg {
    Plan,
    Caller,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum AtomicsArg {
    Auto,
    Native,
    Cas,
}

impl From<AtomicsArg> for Atomics {
    fn from(a: AtomicsArg) -> Self {
        match a {
            AtomicsArg::Auto => Atomics::Auto,
            AtomicsArg::Native => Atomics::Native,
            AtomicsArg::Cas => Atomics::Cas,
        }
    }
}

/// Arguments of `wgsparse fused`.
#[derive(clap::Args)]
pub struct FusedArgs {
    /// Matrix Market file for X (sparse).
    #[arg(long)]
    pub(crate) matrix: Option<PathBuf>,
    /// Folder of raw CSR arrays for X (`wgsparse gen … --raw`, or --export).
    #[arg(long, conflicts_with = "matrix")]
    pub(crate) matrix_raw: Option<PathBuf>,
    /// LIBSVM file: X is its feature matrix.
    #[arg(long, conflicts_with_all = ["matrix", "matrix_raw"])]
    pub(crate) libsvm: Option<PathBuf>,
    /// Generated input when no file is given: sparse-200, sparse-1024, sparse-4096, kdd2010,
    /// dense-32, dense-200, dense-1000, dense-2000, higgs, demo.
    #[arg(long, default_value = "demo")]
    pub(crate) gen: String,
    /// Scale the generated input's rows (and nonzeros) by this factor in (0, 1].
    #[arg(long, default_value_t = 1.0)]
    pub(crate) scale: f64,
    /// Seed of the generated X and vectors.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Instantiation(s), comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "full")]
    pub(crate) pattern: Vec<PatternArg>,
    /// Variant(s), comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "auto")]
    pub(crate) variant: Vec<VariantArg>,
    /// Global f32 additions.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) atomics: AtomicsArg,
    /// f32 additions into the workgroup copy of w (native: Vulkan's
    /// shaderSharedFloat32AtomicAdd; cas: compare-exchange loops).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) wg_atomics: AtomicsArg,
    /// Sparse `stream`: the workgroup copy of w as exact fixed-point integer sums (two words a
    /// column, scaled by each tile's bounds) instead of f32 adds (default off; `auto` times
    /// both).
    #[arg(long, value_enum)]
    pub(crate) wg_fixed: Option<FoldArg>,
    /// Lanes per row VS.
    #[arg(long)]
    pub(crate) vs: Option<u32>,
    /// Workgroup size.
    #[arg(long)]
    pub(crate) wg: Option<u32>,
    /// Rows per vector C.
    #[arg(long)]
    pub(crate) c: Option<u32>,
    /// Dense: elements per lane TL.
    #[arg(long)]
    pub(crate) tl: Option<u32>,
    /// Dense: rows a vector loads before reducing them, 1, 2 or 4 (default 1; `auto` tunes
    /// it).
    #[arg(long)]
    pub(crate) rows_in_flight: Option<u32>,
    /// Sparse: aggregate w in global memory even when it fits workgroup memory.
    #[arg(long)]
    pub(crate) global_w: bool,
    /// Sparse, w in global memory: columns with the most entries aggregated in workgroup
    /// memory (default: as many as fit; 0: none). With w in workgroup memory: that many of
    /// them copied per vector (hot copies; default none).
    #[arg(long)]
    pub(crate) hot_cols: Option<u32>,
    /// Sparse fused kernels: rows with more entries than this are split over workgroups
    /// (default: the launch model's threshold, C·μ and at least 1024, or for sorted the tile
    /// size; `auto` tunes it;
    /// 4294967295: never).
    #[arg(long)]
    pub(crate) long_row: Option<u32>,
    /// Sparse `fused`: entries per lane (1–4) kept in registers from a row's dot product to
    /// its scatter (default none; `auto` tunes it).
    #[arg(long)]
    pub(crate) regs: Option<u32>,
    /// Sparse `fused` with --regs: load the next row's entries, its factor and the bounds of
    /// the row after it before this row's reduction and scatter (a software pipeline over a
    /// vector's rows); sparse `stream`: load the next tile's entries and row factors before
    /// this tile's row sums and scatter; `transpose` in row tiles: resident workgroups, the
    /// next tile's loads during this tile's gathers; `auto` tunes it.
    #[arg(long)]
    pub(crate) prefetch: bool,
    /// Sparse `stream`: entries per invocation, 4 or 8 (default 4, at workgroups of 512); `transpose`: its gathers in
    /// row tiles of this many entries per invocation (1, 2, 4 or 8; default 4 at a workgroup of
    /// 256; 0: the row kernel, VS lanes per row).
    #[arg(long)]
    pub(crate) epl: Option<u32>,
    /// Sparse `stream`: workgroups in its grid, at most one per tile (default: one per
    /// resident slot by the device model; `auto` tunes it).
    #[arg(long)]
    pub(crate) groups: Option<u32>,
    /// Sparse `split`: rows per row tile of the column-split layout (default: 4,096 or the
    /// most X's columns allow; `auto` tunes it). Sparse `stream`: rows per tile at most
    /// (default: as many as workgroup memory holds beside w).
    #[arg(long)]
    pub(crate) row_tile: Option<u32>,
    /// Sparse `split`: the scatter's 16-bit layout (row offsets beside values, a marker per
    /// run of a column; default on where it applies; `auto` tunes it). Sparse `stream`: keys
    /// of 16 bits (default off; X of at most 32,767 columns).
    #[arg(long, value_enum)]
    pub(crate) key16: Option<FoldArg>,
    /// Sparse `stream`: y copied into workgroup memory beside w for the dot products' gathers
    /// (default off: slower on an H200, where the scatter already loads workgroup memory;
    /// refused where a tile would keep fewer than 32 rows).
    #[arg(long, value_enum)]
    pub(crate) stream_y: Option<FoldArg>,
    /// Sparse `stream`: copies of w in workgroup memory, 1, 2, 4 or 8 (default 1; auto times 2, 4).
    #[arg(long)]
    pub(crate) wg_copies: Option<u32>,
    /// Sparse `stream`: tiles taken by units of lanes within a subgroup, with no barrier:
    /// off (default), on (units of the least subgroup size) or a power of two of lanes up to
    /// it; needs subgroup operations; not with --wg-fixed, --prefetch or --row-tile.
    #[arg(long, default_value = "off", value_parser = unit_tiles)]
    pub(crate) unit_tiles: UnitTiles,
    /// Sparse `transpose`: both gathers summed over this many column panels (1–64; default 1),
    /// each reading a slice of its vector (y, then X·y) at a time.
    #[arg(long)]
    pub(crate) panels: Option<u32>,
    /// Sparse `transpose` on re-indexed columns: Xᵀ's rows in the caller's order (default;
    /// its pass writes w directly, a run gathers y alone) or the plan's (hot columns first, w
    /// permuted back).
    #[arg(long, value_enum)]
    pub(crate) xt_order: Option<XtOrderArg>,
    /// Reduce row dot products through workgroup memory, not subgroup shuffles.
    #[arg(long)]
    pub(crate) no_subgroups: bool,
    /// Sparse fused and sorted: the folded sequence (long-row dot pre-pass initialising w,
    /// long-row chunks in the main kernel: fewer dispatches); `off` keeps the separate passes.
    #[arg(long, value_enum, default_value = "on")]
    pub(crate) fold: FoldArg,
    /// Sparse: re-index X's columns by descending entry count at plan time (hot columns
    /// contiguous in y and w; each run gathers y and z and scatters w, timed with it). `auto`:
    /// on where w is beyond workgroup memory, X has at least 2^20 columns and its top 1% of
    /// columns hold at least 30% of the entries (the tuner times both near that edge).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) reorder_cols: ReorderArg,
    /// Timing only, results not valid: switches of the sparse fused, sorted and stream kernels
    /// with w in workgroup memory, comma separated: skip-wg-adds (no adds into the workgroup
    /// copy of w), plain-wg-adds (plain load and store for compare-exchange), skip-flush (no
    /// flush into global w), int-wg-adds (integer adds of the bits); with --wg-fixed on,
    /// fixed-no-global (never the global fallback), fixed-lo-only (the low word's add only);
    /// on `stream`, skip-row-factors (every tile row's factor 1, none loaded), direct-rows (v
    /// read at the tile row, X's row number not loaded). Not with --check, --export, tuning.
    #[arg(long)]
    pub(crate) diag: Option<String>,
    /// Search (VS, workgroup size, C) around the model; report the model's distance to the best.
    #[arg(long)]
    pub(crate) sweep: bool,
    /// With --sweep: write an SVG plot of time against C per (variant, VS) to this file
    /// (`-PATTERN` is added before the extension when several patterns are given).
    #[arg(long, requires = "sweep")]
    pub(crate) plot: Option<PathBuf>,
    /// Skip the autotuner for `auto` (the model's configuration alone). By default `auto`
    /// times the model's VS and workgroup size and their neighbours once per adapter and
    /// shape bucket and caches the fastest (WGSPARSE_CACHE_DIR).
    #[arg(long)]
    pub(crate) no_tune: bool,
    /// Check every run against the f64 CPU twin.
    #[arg(long)]
    pub(crate) check: bool,
    /// Also measure copy bandwidth and report each run's fraction of it.
    #[arg(long)]
    pub(crate) roofline: bool,
    /// Timed repetitions (median reported, after warm-up).
    #[arg(long, default_value_t = 20)]
    pub(crate) reps: usize,
    /// Measure each plan this many times on the same operands (`passes_ms`: each pass's
    /// median; whether a plan's time holds within one process).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) passes: u32,
    /// Runs back to back in each timed submission, its time divided by them (default 1: a
    /// run per submission, the GPU idle while the host waits on it; more keep the GPU busy
    /// between runs, as a solver's batch does); timed plans, not a sweep's points. JSON:
    /// each measurement's `runs_per_submit`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) runs_per_submit: u32,
    /// Before timing each plan, run a compute-bound spin kernel until the clocks settle
    /// (`gpu::warm_clocks`, at least 0.5 s) besides the plan's own warm-up: an A/B for a
    /// plan that times slow (`warm_up` in the JSON shows whether its own warm-up ramped).
    #[arg(long)]
    pub(crate) spin_first: bool,
    /// Before timing each plan, leave the device idle this many seconds (0 to 60) after
    /// building it, so its clocks fall: whether the warm-up brings them back before timing
    /// (`passes_ms`: a first pass slower than the later ones says it did not).
    #[arg(long, default_value_t = 0.0, value_parser = settle_seconds)]
    pub(crate) settle: f64,
    /// Write X, the full pattern's y, v, z, α, β and this run's w as raw arrays into this
    /// folder (for benches/peers/fused_peer.py).
    #[arg(long)]
    pub(crate) export: Option<PathBuf>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Treat storage bindings as at most this many bytes (below the adapter's limit): X is cut
    /// into more row bands (`bands` in the JSON), to time the banded path on any input.
    #[arg(long)]
    pub(crate) max_binding_bytes: Option<u64>,
}

/// `--unit-tiles`: off, on or a count of lanes.
pub(crate) fn unit_tiles(s: &str) -> std::result::Result<UnitTiles, String> {
    match s {
        "off" => Ok(UnitTiles::Off),
        "on" => Ok(UnitTiles::Subgroup),
        _ => s
            .parse()
            .map(UnitTiles::Lanes)
            .map_err(|_| format!("{s:?}: expected off, on or a count of lanes")),
    }
}

/// `--settle`'s seconds: a finite number from 0 to 60.
pub(crate) fn settle_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=60.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!("{v} seconds: expected 0 to 60")),
        Err(e) => Err(format!("{s:?}: {e}")),
    }
}
