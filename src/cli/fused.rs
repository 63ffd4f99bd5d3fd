//! `wgsparse fused`: time (and check, sweep) the pattern α·Xᵀ(v ⊙ (X·y)) + β·z.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use serde_json::json;

use wgsparse::fused::bench::{self, Input, Measurement, Operands, Reference};
use wgsparse::fused::transpose::PassFacts;
use wgsparse::fused::{Atomics, Diag, Options, Pattern, Plan, Reorder, UnitTiles, Variant};
use wgsparse::{io, report, Error, Gpu, Result};

mod export;

use export::export;
pub(crate) use export::{export_matrix, write_f32};

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum PatternArg {
    Xty,
    Xtxy,
    Xtvxy,
    XtxyBz,
    Full,
}

impl PatternArg {
    fn pattern(self) -> Pattern {
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
enum VariantArg {
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
enum FoldArg {
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum)]
enum ReorderArg {
    Auto,
    On,
    Off,
}

/// Xᵀ's row order for `--xt-order`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum XtOrderArg {
    Plan,
    Caller,
}

#[derive(Clone, Copy, ValueEnum)]
enum AtomicsArg {
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
    matrix: Option<PathBuf>,
    /// Folder of raw CSR arrays for X (`wgsparse gen … --raw`, or --export).
    #[arg(long, conflicts_with = "matrix")]
    matrix_raw: Option<PathBuf>,
    /// LIBSVM file: X is its feature matrix.
    #[arg(long, conflicts_with_all = ["matrix", "matrix_raw"])]
    libsvm: Option<PathBuf>,
    /// Generated input when no file is given: sparse-200, sparse-1024, sparse-4096, kdd2010,
    /// dense-32, dense-200, dense-1000, dense-2000, higgs, demo.
    #[arg(long, default_value = "demo")]
    gen: String,
    /// Scale the generated input's rows (and nonzeros) by this factor in (0, 1].
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Seed of the generated X and vectors.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Instantiation(s), comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "full")]
    pattern: Vec<PatternArg>,
    /// Variant(s), comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "auto")]
    variant: Vec<VariantArg>,
    /// Global f32 additions.
    #[arg(long, value_enum, default_value = "auto")]
    atomics: AtomicsArg,
    /// f32 additions into the workgroup copy of w (native: Vulkan's
    /// shaderSharedFloat32AtomicAdd; cas: compare-exchange loops).
    #[arg(long, value_enum, default_value = "auto")]
    wg_atomics: AtomicsArg,
    /// Sparse `stream`: the workgroup copy of w as exact fixed-point integer sums (two words a
    /// column, scaled by each tile's bounds) instead of f32 adds (default off; `auto` times
    /// both).
    #[arg(long, value_enum)]
    wg_fixed: Option<FoldArg>,
    /// Lanes per row VS.
    #[arg(long)]
    vs: Option<u32>,
    /// Workgroup size.
    #[arg(long)]
    wg: Option<u32>,
    /// Rows per vector C.
    #[arg(long)]
    c: Option<u32>,
    /// Dense: elements per lane TL.
    #[arg(long)]
    tl: Option<u32>,
    /// Dense: rows a vector loads before reducing them, 1, 2 or 4 (default 1; `auto` tunes
    /// it).
    #[arg(long)]
    rows_in_flight: Option<u32>,
    /// Sparse: aggregate w in global memory even when it fits workgroup memory.
    #[arg(long)]
    global_w: bool,
    /// Sparse, w in global memory: columns with the most entries aggregated in workgroup
    /// memory (default: as many as fit; 0: none). With w in workgroup memory: that many of
    /// them copied per vector (hot copies; default none).
    #[arg(long)]
    hot_cols: Option<u32>,
    /// Sparse fused kernels: rows with more entries than this are split over workgroups
    /// (default: the launch model's threshold, C·μ and at least 1024, or for sorted the tile
    /// size; `auto` tunes it;
    /// 4294967295: never).
    #[arg(long)]
    long_row: Option<u32>,
    /// Sparse `fused`: entries per lane (1–4) kept in registers from a row's dot product to
    /// its scatter (default none; `auto` tunes it).
    #[arg(long)]
    regs: Option<u32>,
    /// Sparse `fused` with --regs: load the next row's entries, its factor and the bounds of
    /// the row after it before this row's reduction and scatter (a software pipeline over a
    /// vector's rows); sparse `stream`: load the next tile's entries and row factors before
    /// this tile's row sums and scatter; `transpose` in row tiles: resident workgroups, the
    /// next tile's loads during this tile's gathers; `auto` tunes it.
    #[arg(long)]
    prefetch: bool,
    /// Sparse `stream`: entries per invocation, 4 or 8 (default 4, at workgroups of 512); `transpose`: its gathers in
    /// row tiles of this many entries per invocation (1, 2, 4 or 8; default 4 at a workgroup of
    /// 256; 0: the row kernel, VS lanes per row).
    #[arg(long)]
    epl: Option<u32>,
    /// Sparse `stream`: workgroups in its grid, at most one per tile (default: one per
    /// resident slot by the device model; `auto` tunes it).
    #[arg(long)]
    groups: Option<u32>,
    /// Sparse `split`: rows per row tile of the column-split layout (default: 4,096 or the
    /// most X's columns allow; `auto` tunes it). Sparse `stream`: rows per tile at most
    /// (default: as many as workgroup memory holds beside w).
    #[arg(long)]
    row_tile: Option<u32>,
    /// Sparse `split`: the scatter's 16-bit layout (row offsets beside values, a marker per
    /// run of a column; default on where it applies; `auto` tunes it). Sparse `stream`: keys
    /// of 16 bits (default off; X of at most 32,767 columns).
    #[arg(long, value_enum)]
    key16: Option<FoldArg>,
    /// Sparse `stream`: y copied into workgroup memory beside w for the dot products' gathers
    /// (default off: slower on an H200, where the scatter already loads workgroup memory;
    /// refused where a tile would keep fewer than 32 rows).
    #[arg(long, value_enum)]
    stream_y: Option<FoldArg>,
    /// Sparse `stream`: copies of w in workgroup memory, 1, 2, 4 or 8 (default 1; auto times 2, 4).
    #[arg(long)]
    wg_copies: Option<u32>,
    /// Sparse `stream`: tiles taken by units of lanes within a subgroup, with no barrier:
    /// off (default), on (units of the least subgroup size) or a power of two of lanes up to
    /// it; needs subgroup operations; not with --wg-fixed, --prefetch or --row-tile.
    #[arg(long, default_value = "off", value_parser = unit_tiles)]
    unit_tiles: UnitTiles,
    /// Sparse `transpose`: both gathers summed over this many column panels (1–64; default 1),
    /// each reading a slice of its vector (y, then X·y) at a time.
    #[arg(long)]
    panels: Option<u32>,
    /// Sparse `transpose` on re-indexed columns: Xᵀ's rows in the caller's order (default;
    /// its pass writes w directly, a run gathers y alone) or the plan's (hot columns first, w
    /// permuted back).
    #[arg(long, value_enum)]
    xt_order: Option<XtOrderArg>,
    /// Reduce row dot products through workgroup memory, not subgroup shuffles.
    #[arg(long)]
    no_subgroups: bool,
    /// Sparse fused and sorted: the folded sequence (long-row dot pre-pass initialising w,
    /// long-row chunks in the main kernel: fewer dispatches); `off` keeps the separate passes.
    #[arg(long, value_enum, default_value = "on")]
    fold: FoldArg,
    /// Sparse: re-index X's columns by descending entry count at plan time (hot columns
    /// contiguous in y and w; each run gathers y and z and scatters w, timed with it). `auto`:
    /// on where w is beyond workgroup memory, X has at least 2^20 columns and its top 1% of
    /// columns hold at least 30% of the entries (the tuner times both near that edge).
    #[arg(long, value_enum, default_value = "auto")]
    reorder_cols: ReorderArg,
    /// Timing only, results not valid: switches of the sparse fused, sorted and stream kernels
    /// with w in workgroup memory, comma separated: skip-wg-adds (no adds into the workgroup
    /// copy of w), plain-wg-adds (plain load and store for compare-exchange), skip-flush (no
    /// flush into global w), int-wg-adds (integer adds of the bits); with --wg-fixed on,
    /// fixed-no-global (never the global fallback), fixed-lo-only (the low word's add only);
    /// on `stream`, skip-row-factors (every tile row's factor 1, none loaded), direct-rows (v
    /// read at the tile row, X's row number not loaded). Not with --check, --export, tuning.
    #[arg(long)]
    diag: Option<String>,
    /// Search (VS, workgroup size, C) around the model; report the model's distance to the best.
    #[arg(long)]
    sweep: bool,
    /// With --sweep: write an SVG plot of time against C per (variant, VS) to this file
    /// (`-PATTERN` is added before the extension when several patterns are given).
    #[arg(long, requires = "sweep")]
    plot: Option<PathBuf>,
    /// Skip the autotuner for `auto` (the model's configuration alone). By default `auto`
    /// times the model's VS and workgroup size and their neighbours once per adapter and
    /// shape bucket and caches the fastest (WGSPARSE_CACHE_DIR).
    #[arg(long)]
    no_tune: bool,
    /// Check every run against the f64 CPU twin.
    #[arg(long)]
    check: bool,
    /// Also measure copy bandwidth and report each run's fraction of it.
    #[arg(long)]
    roofline: bool,
    /// Timed repetitions (median reported, after warm-up).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Measure each plan this many times on the same operands (`passes_ms`: each pass's
    /// median; whether a plan's time holds within one process).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    passes: u32,
    /// Before timing each plan, run a compute-bound spin kernel until the clocks settle
    /// (`gpu::warm_clocks`, at least 0.5 s) besides the plan's own warm-up: an A/B for a
    /// plan that times slow (`warm_up` in the JSON shows whether its own warm-up ramped).
    #[arg(long)]
    spin_first: bool,
    /// Before timing each plan, leave the device idle this many seconds (0 to 60) after
    /// building it, so its clocks fall: whether the warm-up brings them back before timing
    /// (`passes_ms`: a first pass slower than the later ones says it did not).
    #[arg(long, default_value_t = 0.0, value_parser = settle_seconds)]
    settle: f64,
    /// Write X, the full pattern's y, v, z, α, β and this run's w as raw arrays into this
    /// folder (for benches/peers/fused_peer.py).
    #[arg(long)]
    export: Option<PathBuf>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    /// Treat storage bindings as at most this many bytes (below the adapter's limit): X is cut
    /// into more row bands (`bands` in the JSON), to time the banded path on any input.
    #[arg(long)]
    max_binding_bytes: Option<u64>,
}

/// `--unit-tiles`: off, on or a count of lanes.
fn unit_tiles(s: &str) -> std::result::Result<UnitTiles, String> {
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
fn settle_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=60.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!("{v} seconds: expected 0 to 60")),
        Err(e) => Err(format!("{s:?}: {e}")),
    }
}

fn load(a: &FusedArgs) -> Result<(String, Input)> {
    if let Some(dir) = &a.matrix_raw {
        return Ok((
            dir.display().to_string(),
            Input::Sparse(io::read_csr_binary(dir)?),
        ));
    }
    if let Some(p) = &a.matrix {
        return Ok((
            p.display().to_string(),
            Input::Sparse(io::read_matrix_market(p)?),
        ));
    }
    if let Some(p) = &a.libsvm {
        return Ok((
            p.display().to_string(),
            Input::Sparse(io::read_libsvm(p)?.features),
        ));
    }
    let name = if a.scale < 1.0 {
        format!("{}@{}", a.gen, a.scale)
    } else {
        a.gen.clone()
    };
    Ok((name, bench::generate(&a.gen, a.scale, a.seed)?))
}

fn variants(list: &[VariantArg]) -> Vec<Variant> {
    let mut out = vec![];
    for v in list {
        match v {
            VariantArg::Auto => out.push(Variant::Auto),
            VariantArg::All => out.extend(Variant::CONCRETE),
            VariantArg::Fused => out.push(Variant::Fused),
            VariantArg::Unfused => out.push(Variant::Unfused),
            VariantArg::TwoPass => out.push(Variant::TwoPass),
            VariantArg::Sorted => out.push(Variant::Sorted),
            VariantArg::Split => out.push(Variant::Split),
            VariantArg::Stream => out.push(Variant::Stream),
            VariantArg::Transpose => out.push(Variant::Transpose),
        }
    }
    out.dedup();
    out
}

/// (pattern, variant, measurement or why it did not run).
type Outcome = (Pattern, Variant, std::result::Result<Measurement, String>);

/// Runs `wgsparse fused`.
pub fn run(a: FusedArgs) -> Result<ExitCode> {
    let gpu = Gpu::new_with(&wgsparse::gpu::GpuOptions {
        max_binding_bytes: a.max_binding_bytes,
        ..Default::default()
    })?;
    // Host wall-clock phases (generation or loading, export, each plan and measurement), so a
    // slow step on a large input shows where its time went.
    let clock = std::time::Instant::now();
    // What runs now, on stderr where it is a terminal (generation, tuning and sweeps of large
    // inputs take minutes).
    let bar = super::spinner(!a.json, "loading X");
    // Each phase's message with the time since it began.
    let say = |msg: String| {
        if let Some(b) = &bar {
            b.set_message(msg);
            b.reset_elapsed();
        }
    };
    let (name, input) = load(&a)?;
    let load_s = clock.elapsed().as_secs_f64();
    let x = input.matrix();
    let (m, n) = x.shape();
    let base = Options {
        atomics: a.atomics.into(),
        wg_atomics: a.wg_atomics.into(),
        wg_fixed: a.wg_fixed.map(|k| k == FoldArg::On),
        subgroups: !a.no_subgroups,
        workgroup_w: a.global_w.then_some(false),
        hot_cols: a.hot_cols,
        long_row: a.long_row,
        vs: a.vs,
        workgroup: a.wg,
        rows_per_vector: a.c,
        tl: a.tl,
        rows_in_flight: a.rows_in_flight,
        fold: a.fold == FoldArg::On,
        regs: a.regs,
        prefetch: a.prefetch,
        epl: a.epl,
        row_tile: a.row_tile,
        key16: a.key16.map(|k| k == FoldArg::On),
        y_shared: a.stream_y.map(|k| k == FoldArg::On),
        wg_copies: a.wg_copies,
        unit_tiles: a.unit_tiles,
        panels: a.panels,
        xt_caller: a.xt_order.map(|o| o == XtOrderArg::Caller),
        groups: a.groups,
        reorder: match a.reorder_cols {
            ReorderArg::Auto => Reorder::Auto,
            ReorderArg::On => Reorder::On,
            ReorderArg::Off => Reorder::Off,
        },
        diag: match &a.diag {
            Some(list) => Diag::parse(list)?,
            None => Diag::default(),
        },
        ..Default::default()
    };
    if base.diag.any() {
        let tuned_auto = !a.no_tune && a.variant.iter().any(|v| matches!(v, VariantArg::Auto));
        if a.check || a.export.is_some() || tuned_auto {
            return Err(Error::Option(format!(
                "--diag {}: timing only (results not valid), so not with --check, --export or \
                 a tuned `auto` (add --no-tune)",
                base.diag.names().join(",")
            )));
        }
        if !a.json {
            eprintln!(
                "warning: --diag {}: timing only, the results are not valid",
                base.diag.names().join(",")
            );
        }
    }
    let clock = std::time::Instant::now();
    if let Some(dir) = &a.export {
        say(format!("exporting to {}", dir.display()));
        export(&gpu, dir, &input, &base, a.seed + 17)?;
    }
    let export_s = a.export.as_ref().map(|_| clock.elapsed().as_secs_f64());
    // Per result: wall seconds of its plan (tuning included) and measurement, and what its plan
    // reports.
    let mut walls: Vec<(f64, Option<PlanFacts>)> = vec![];
    // Per result: the median ms of each pass (`--passes`; the first is the result's own).
    let mut passes: Vec<Vec<f64>> = vec![];
    let roofline = if a.roofline {
        say("measuring the roofline".into());
        let r = report::roofline::measure(&gpu, 1 << 30, 10, 10)?;
        Some((r.copy_gbps, r.read_gbps))
    } else {
        None
    };
    let mut results: Vec<Outcome> = vec![];
    let mut sweeps = vec![];
    let mut failed = false;
    for p in a.pattern.iter().map(|p| p.pattern()) {
        let ops = Operands::random(&gpu, m, n, p, a.seed + 17)?;
        let reference = a.check.then(|| Reference::new(x, &ops));
        let mut first: Option<Plan> = None;
        for v in variants(&a.variant) {
            let options = Options {
                variant: v,
                ..base.clone()
            };
            let clock = std::time::Instant::now();
            let tuned = v == Variant::Auto && !a.no_tune;
            say(format!(
                "{} {}: {}",
                p.name(),
                v.name(),
                if tuned { "tuning" } else { "planning" }
            ));
            let plan = match &first {
                _ if tuned => wgsparse::fused::tune::autotuned_plan(&gpu, x, &options),
                Some(like) => Plan::new_like(&gpu, x, &options, like),
                None => Plan::new(&gpu, x, &options),
            };
            let measured = plan.and_then(|plan| {
                if a.settle > 0.0 {
                    say(format!(
                        "{} {}: settling {} s",
                        p.name(),
                        v.name(),
                        a.settle
                    ));
                    std::thread::sleep(std::time::Duration::from_secs_f64(a.settle));
                }
                say(format!("{} {}: measuring", p.name(), v.name()));
                if a.spin_first {
                    wgsparse::gpu::warm_clocks(&gpu)?;
                }
                let meas = bench::measure(&gpu, &plan, &ops, a.reps, reference.as_ref())?;
                let mut ms = vec![meas.ms];
                for _ in 1..a.passes {
                    if a.spin_first {
                        wgsparse::gpu::warm_clocks(&gpu)?;
                    }
                    ms.push(bench::measure(&gpu, &plan, &ops, a.reps, None)?.ms);
                }
                Ok((meas, plan, ms))
            });
            walls.push((
                clock.elapsed().as_secs_f64(),
                measured
                    .as_ref()
                    .ok()
                    .map(|(_, plan, _)| PlanFacts::of(plan, p)),
            ));
            match measured {
                Ok((meas, plan, ms)) => {
                    results.push((p, v, Ok(meas)));
                    passes.push(ms);
                    first.get_or_insert(plan);
                }
                Err(
                    e @ (Error::Check { .. }
                    | Error::Option(_)
                    | Error::TooLarge { .. }
                    | Error::Unsupported(_)),
                ) => {
                    // An input beyond the device's limits is reported, not a failure (as in
                    // `wgsparse sddmm`); everything else is.
                    failed |= !matches!(e, Error::TooLarge { .. });
                    if !a.json {
                        let line = || eprintln!("{} {}: {e}", p.name(), v.name());
                        match &bar {
                            Some(b) => b.suspend(line),
                            None => line(),
                        }
                    }
                    results.push((p, v, Err(e.to_string())));
                    passes.push(vec![]);
                }
                Err(e) => return Err(e),
            }
        }
        if a.sweep {
            let mut points = 0;
            let sw = bench::sweep(&gpu, x, &ops, &base, a.reps.min(5), |_| {
                points += 1;
                say(format!("{} sweep: configuration {points} timed", p.name()));
            })?;
            if let Some(path) = &a.plot {
                let path = super::plot_path(path, p.name(), a.pattern.len() > 1);
                let title = format!(
                    "fused sweep: {}, {}, {}",
                    name,
                    p.name(),
                    gpu.caps.adapter_name
                );
                report::plot::write_svg(&path, &report::plot::fused_sweep_svg(&sw, &title)?)?;
                if let Some(b) = &bar {
                    b.println(format!("plot written to {}", path.display()));
                }
            }
            sweeps.push((p, sw));
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // Shares of the copy roofline (the bar's denominator) and of the read-only stream's.
    let fraction = |gbps: f64| roofline.map(|r| gbps / r.0);
    let read_fraction = |gbps: f64| roofline.map(|r| gbps / r.1);
    if a.json {
        println!(
            "{}",
            json!({
                "adapter": gpu.caps.adapter_name,
                "input": { "name": name, "m": m, "n": n, "nnz": x.nnz(),
                           "dense": matches!(input, Input::Dense(_)) },
                "roofline_gbps": roofline.map(|r| r.0),
                "read_roofline_gbps": roofline.map(|r| r.1),
                "reorder_cols": base.reorder.name(),
                "diag": base.diag.names(),
                "valid_result": !base.diag.any(),
                "results": results.iter().zip(&walls).zip(&passes).map(|(((p, v, r), (wall, facts)), ms)| match (r, facts) {
                    (Ok(meas), Some(f)) => json!({ "pattern": p.name(), "variant": v.name(),
                        "measurement": meas, "roofline_fraction": fraction(meas.gbps),
                        "read_roofline_fraction": read_fraction(meas.gbps),
                        "passes_ms": ms,
                        "wall_s": wall, "long_chunks": f.long_chunks, "bands": f.bands,
                        "dispatches": f.dispatches,
                        "sorted_adds": f.sorted_adds.map(|((e, a), wide)|
                            json!({ "entries": e, "adds": a, "wide_keys": wide })),
                        "split_adds": f.split_adds.map(|(e, a, c)|
                            json!({ "entries": e, "adds": a, "chunks": c })),
                        "x_tiles": f.x_tiles,
                        "stream_rows_max": f.stream_rows_max,
                        "transpose_pass": f.transpose_pass.map(|t|
                            json!({ "vs": t.vs, "long_row": t.long_row,
                                    "long_chunks": t.long_chunks, "tiles": t.tiles })) }),
                    (Err(e), _) => json!({ "pattern": p.name(), "variant": v.name(), "error": e,
                        "wall_s": wall }),
                    (Ok(_), None) => unreachable!("a measured plan reports its facts"),
                }).collect::<Vec<_>>(),
                "host_s": { "load": load_s, "export": export_s },
                "sweeps": sweeps.iter().map(|(p, s)| json!({
                    "pattern": p.name(), "points": s.points, "best": s.best,
                    "model": s.model, "model_gap": s.model_gap,
                })).collect::<Vec<_>>(),
                "ok": !failed,
            })
        );
    } else {
        println!(
            "fused pattern on {} — X = {name}: {m}×{n}, {} stored entries{}",
            gpu.caps.adapter_name,
            x.nnz(),
            roofline.map_or(String::new(), |(c, r)| format!(
                "; copy roofline {c:.1} GB/s, read-only stream {r:.1} GB/s"
            ))
        );
        let mut t = super::table(&[
            "pattern",
            "variant",
            "kernel",
            "config",
            "GPU ms",
            "GB/s",
            "% roofline",
            "GFLOP/s",
            "max rel err",
        ]);
        for (p, v, r) in &results {
            match r {
                Ok(meas) => t.add_row(vec![
                    p.name().to_string(),
                    v.name().to_string(),
                    meas.kernel.clone(),
                    meas.config.describe(),
                    format!("{:.4}", meas.ms),
                    format!("{:.1}", meas.gbps),
                    fraction(meas.gbps).map_or("—".into(), |f| format!("{:.0}%", 100.0 * f)),
                    format!("{:.1}", meas.gflops),
                    meas.max_rel_error
                        .map_or("—".into(), |e| format!("{e:.1e}")),
                ]),
                Err(e) => t.add_row(vec![p.name().to_string(), v.name().to_string(), e.clone()]),
            };
        }
        println!("{t}");
        if a.passes > 1 {
            for ((p, v, _), ms) in results.iter().zip(&passes).filter(|(_, ms)| !ms.is_empty()) {
                let ms: Vec<String> = ms.iter().map(|t| format!("{t:.4}")).collect();
                println!("{} {}: ms per pass {}", p.name(), v.name(), ms.join(", "));
            }
        }
        let most_bands = walls
            .iter()
            .filter_map(|(_, f)| f.as_ref().map(|f| f.bands));
        if let Some(b) = most_bands.max().filter(|&b| b > 1) {
            println!(
                "X bound in up to {b} row bands (storage bindings of at most {} bytes)",
                gpu.caps.max_storage_binding_bytes
            );
        }
        for (p, s) in &sweeps {
            println!(
                "sweep {}: {} points; best {:.4} ms ({}); model {:.4} ms ({}): {:+.1}% from best",
                p.name(),
                s.points.len(),
                s.best.ms,
                s.best.config.describe(),
                s.model.ms,
                s.model.config.describe(),
                100.0 * s.model_gap
            );
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What a measured plan reports beside its timing (the JSON's per-result keys).
struct PlanFacts {
    long_chunks: usize,
    /// The sorted scatter's (entries, adds) and whether its keys are wide.
    sorted_adds: Option<((usize, usize), bool)>,
    /// X's row bands.
    bands: usize,
    dispatches: usize,
    split_adds: Option<(usize, usize, usize)>,
    /// `transpose`: X's row tiles (0: the row kernel) and Xᵀ's pass.
    x_tiles: Option<usize>,
    transpose_pass: Option<PassFacts>,
    /// `stream`: the rows of its fullest tile.
    stream_rows_max: Option<u32>,
}

impl PlanFacts {
    fn of(plan: &Plan, pattern: Pattern) -> PlanFacts {
        PlanFacts {
            long_chunks: plan.long_chunks(),
            sorted_adds: plan.sorted_adds().map(|a| (a, plan.sorted_wide())),
            bands: plan.n_bands(),
            dispatches: plan.dispatches(pattern),
            split_adds: plan.split_adds(),
            x_tiles: plan.transpose_x_tiles(),
            stream_rows_max: plan.stream_rows_max(),
            transpose_pass: plan.transpose_pass(),
        }
    }
}
