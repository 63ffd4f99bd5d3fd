//! `wgsparse spdnn`: sparse DNN inference (GraphChallenge) on the GPU fast path: time,
//! edges/s, surviving rows, and the categories checked against a truth file or the CPU twin.
//! The verdict lives in [`check`], the thesis runs asked for in [`thesis_runs`], the timing
//! in [`timing`], --export in [`mod@export`].

mod check;
mod export;
mod thesis_runs;
mod timing;

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use wgsparse::spdnn::{self, cpu, data, Approach, Options, Plan};
use wgsparse::{io, Error, Gpu, Result};

use check::{judge, TIE_PER_LAYER};
use export::export;
use thesis_runs::thesis_runs;
use timing::{layer_times, timed};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ApproachArg {
    Auto,
    SlicedEll,
    DenseRows,
    CsrEll,
    CsrCsr,
    CscCsc,
    Thesis,
    AutoThesis,
    All,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RowSumsArg {
    Auto,
    Workgroup,
    Buffer,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TilingArg {
    #[value(name = "1d")]
    OneD,
    #[value(name = "2d")]
    TwoD,
    Both,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OnOff {
    On,
    Off,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum StageArg {
    Auto,
    On,
    Off,
}

/// Arguments of `wgsparse spdnn`.
#[derive(clap::Args)]
pub struct SpdnnArgs {
    /// Neurons per layer N.
    #[arg(long, default_value_t = 1024)]
    neurons: usize,
    /// Number of layers L.
    #[arg(long, default_value_t = 120)]
    layers: usize,
    /// Input rows (feature vectors).
    #[arg(long, default_value_t = 60_000)]
    rows: usize,
    /// First input row (0-based): the run takes rows S .. S + --rows of the inputs, one
    /// piece of a run split by rows (an IDX file must hold them all; random inputs are
    /// drawn as for the whole run, so each row is the same). --categories is compared on
    /// the file's rows in that range (beyond an IDX file's images they are an error); --save-categories, tie rows and mismatch reports
    /// number rows from the whole input (1-based), so a piece's file is a slice of the
    /// whole run's; --export's categories stay numbered from its own inputs.
    #[arg(long, default_value_t = 0)]
    first_row: usize,
    /// Folder of GraphChallenge layers `n{N}-l{k}.tsv` (1-based); generated RadiX-Net-like
    /// layers (32 per row, 1/16) when absent.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Inputs: GraphChallenge `.tsv` (1-based row, column, value), or IDX images (MNIST
    /// format) resized to √N × √N and thresholded; random binary rows when absent.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Truth categories, one 1-based row per line.
    #[arg(long)]
    categories: Option<PathBuf>,
    /// Check the categories against the CPU twin when no --categories file is given.
    #[arg(long)]
    check: bool,
    /// Bias (default: the challenge's for N, −0.30 / −0.35 / −0.40 / −0.45).
    #[arg(long, allow_hyphen_values = true)]
    bias: Option<f32>,
    /// IDX inputs: a pixel above this becomes 1.
    #[arg(long, default_value_t = 96)]
    threshold: u8,
    /// Random inputs: probability of a 1 (default: |bias|, about the survival threshold of
    /// the generated layers, whose 32 weights of 1/16 per neuron double a row's mean, so a
    /// mix of rows survives).
    #[arg(long)]
    density: Option<f64>,
    /// Seed of generated layers and inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Timed repetitions after warm-up (the median is reported); 0: one run and no
    /// warm-up (a verification: its time includes the first use of every pipeline and an
    /// idle GPU's clocks).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// GPU path: auto (sliced-ell), sliced-ell, dense-rows, the thesis's csr-ell, csr-csr,
    /// csc-csc (Y kept sparse, through a dense batch buffer), thesis (those three),
    /// auto-thesis (auto, then the thesis's three), or all of them (each checked; the
    /// thesis's approaches at every --tiling and --buffer).
    #[arg(long, value_enum, default_value = "auto")]
    approach: ApproachArg,
    /// Thesis approaches: 1d (a workgroup per row), 2d (tiles of --tile-rows ×
    /// --tile-cols), or both (default: 2d for one approach, both with --approach all).
    #[arg(long, value_enum)]
    tiling: Option<TilingArg>,
    /// Thesis approaches: the dense batch buffer as fractions of a dense Y, comma-separated
    /// (each is run: 0.1,0.25,0.5 is the thesis's sweep).
    #[arg(long, value_delimiter = ',', default_value = "0.1")]
    buffer: Vec<f64>,
    /// Thesis approaches, 1d: keep a row's sums in workgroup memory (written once) or add
    /// them with f32 atomics in the buffer (auto: workgroup memory when the row fits).
    #[arg(long, value_enum, default_value = "auto")]
    row_sums: RowSumsArg,
    /// Thesis approaches: timed runs after the warm-up (default: --reps); 0: one run and
    /// no warm-up (a verification: its time includes the first use of every pipeline).
    #[arg(long)]
    thesis_reps: Option<usize>,
    /// Thesis approaches: input rows per band (each band inferred through every layer in
    /// turn; default: the most rows whose dense Y fits one binding).
    #[arg(long)]
    band_rows: Option<usize>,
    /// Thesis approaches: one more run timing the multiply kernels alone (the thesis's
    /// "spmm" beside its total).
    #[arg(long)]
    spmm_time: bool,
    /// Thesis approaches: exactly these format:tiling runs instead of those --approach and
    /// --tiling name, comma-separated (e.g. csr-ell:1d,csr-csr:1d,csc-csc:2d).
    #[arg(long, value_delimiter = ',')]
    thesis_runs: Vec<String>,
    /// Thesis approaches: rows (columns for csc-csc) per batch instead of --buffer.
    #[arg(long)]
    batch_rows: Option<usize>,
    /// Thesis approaches, 2d: batch rows per tile.
    #[arg(long, default_value_t = 4)]
    tile_rows: u32,
    /// Thesis approaches, 2d: output columns per tile (the thesis's TILE_SIZE).
    #[arg(long, default_value_t = 512)]
    tile_cols: u32,
    /// Invocations per workgroup (default: 1,024 for sliced ELL and 256 for dense rows, at
    /// most the device's limit).
    #[arg(long)]
    wg: Option<u32>,
    /// Sliced ELL: outputs per invocation T (1..=8; a block is wg·T outputs).
    #[arg(long, default_value_t = 8)]
    outputs_per_thread: u32,
    /// Sliced ELL: vec4s of rows per workgroup RV (1..=4; 4·RV rows; T·RV ≤ 16).
    #[arg(long, default_value_t = 1)]
    row_vecs: u32,
    /// Sliced ELL: input columns per slice (default: the widest that fits workgroup memory).
    #[arg(long)]
    slice: Option<u32>,
    /// Sliced ELL: lanes per ELL group (each group padded to its longest lane).
    #[arg(long, default_value_t = 8)]
    ell_lanes: u32,
    /// Sliced ELL: keep each weight even when a layer's weights are all one value (by
    /// default such layers drop them and pack two u16 positions per word).
    #[arg(long)]
    no_pack: bool,
    /// Sliced ELL (auto): a tile whose input rows are each one value c over all N columns
    /// (saturated rows) computes c·colsum(W) with no gather (on), or gathers as any other
    /// tile (off). The dense-rows path has no such shortcut.
    #[arg(long, value_enum, default_value = "on")]
    constant_rows: OnOff,
    /// Sliced ELL with constant rows: carry a constant row as one scalar per layer while
    /// the layers' column sums are each one value (on), or keep it in the tiles (off).
    #[arg(long, value_enum, default_value = "on")]
    scalar_rows: OnOff,
    /// Sliced ELL: sum each output's gathers of a slice in registers of their own, added to
    /// its accumulator once per slice (on), or add each gather to the accumulator (off).
    #[arg(long, value_enum, default_value = "off")]
    slice_sums: OnOff,
    /// Sliced ELL: run the output segments of a slice together, one gather per output per
    /// turn (on), or one output's segment after another (off). Default: on, off with
    /// --slice-sums on (the two cannot both be on).
    #[arg(long, value_enum)]
    segments_together: Option<OnOff>,
    /// Sliced ELL with segments together: load the next slice's segment bounds before the
    /// barrier that ends a slice (on), or after the staging of their own slice (off). No
    /// effect with segments one after another.
    #[arg(long, value_enum, default_value = "on")]
    prefetch_bounds: OnOff,
    /// Sliced ELL: input columns each invocation stages per turn, all their loads before
    /// any store (1..=4; 1: one column a turn).
    #[arg(long, default_value_t = 1)]
    stage_unroll: u32,
    /// Submit the timed runs in groups of this many layers (0: all layers in one
    /// submission). The first run always goes in groups of 10 behind a progress bar.
    #[arg(long, default_value_t = 0)]
    group_layers: usize,
    /// Active rows per workgroup of the layer kernel (1..=8).
    #[arg(long, default_value_t = 4)]
    rows_per_wg: u32,
    /// Stage each workgroup's rows in workgroup memory (auto: when they fit).
    #[arg(long, value_enum, default_value = "auto")]
    stage: StageArg,
    /// Most rows per chunk (default: what one storage binding holds).
    #[arg(long)]
    chunk_rows: Option<usize>,
    /// Write the network and inputs for other tools (the torch peer): `DIR/meta.json`,
    /// raw CSR folders `DIR/inputs` and `DIR/l1` … `DIR/l{L}` (see `io::write_csr_binary`),
    /// and after the run `DIR/categories.tsv` (the first approach's, 1-based).
    #[arg(long)]
    export: Option<PathBuf>,
    /// Write the first run's categories (1-based, one a line) to this file, without the
    /// network (a truth for later runs' --categories).
    #[arg(long)]
    save_categories: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// After the timed runs, time each layer on its own (one submission per layer, the
    /// median of --reps such runs): `layer_ms` in --json, the first layers in the table.
    #[arg(long)]
    layer_times: bool,
}

/// Runs `wgsparse spdnn`; exits 1 when the categories do not match.
pub fn run(a: SpdnnArgs) -> Result<ExitCode> {
    let gpu = Gpu::new()?;
    let n = a.neurons;
    let bias = a.bias.unwrap_or_else(|| spdnn::challenge_bias(n));
    // Inputs before the network: a row range past the file is refused before the layers
    // (gigabytes at N = 16,384, L = 1,920) are built.
    let first = a.first_row;
    let end = first.checked_add(a.rows).ok_or_else(|| {
        Error::Option(format!("--first-row {first} + --rows {} overflows", a.rows))
    })?;
    // `total`: the rows of the whole input, a bound on the truth file's rows (an IDX file's
    // images; random and TSV inputs have no end beyond this run's rows).
    let (y0, total) = match &a.input {
        // Read as the whole run's first `end` rows, then the piece cut out.
        Some(p) if p.extension().is_some_and(|e| e == "tsv") => (
            data::read_inputs_tsv(p, end, n)?.row_band(first..end),
            usize::MAX,
        ),
        Some(p) => {
            let images = io::read_idx_images(p)?;
            let y0 = if first == 0 {
                // The first --rows images, all of them when the file holds fewer.
                data::idx_inputs(&images, n, Some(a.rows), a.threshold)?
            } else {
                data::idx_inputs_range(&images, n, first, a.rows, a.threshold)?
            };
            (y0, images.count)
        }
        None => {
            let density = a.density.unwrap_or(f64::from(-bias).clamp(0.05, 1.0));
            let all = data::random_inputs(end, n, density, a.seed.wrapping_add(1))?;
            let y0 = if first == 0 {
                all
            } else {
                all.row_band(first..end)
            };
            (y0, usize::MAX)
        }
    };
    let net = match &a.weights {
        Some(dir) => data::read_network(dir, n, a.layers, bias)?,
        None => data::generated_network(n, a.layers, bias, a.seed)?,
    };
    let rows = y0.nrows;
    let global = |cats: &[u32]| -> Vec<u32> { cats.iter().map(|&r| r + first as u32).collect() };
    let approaches: Vec<Approach> = match a.approach {
        ApproachArg::Auto => vec![Approach::Auto],
        ApproachArg::SlicedEll => vec![Approach::SlicedEll],
        ApproachArg::DenseRows => vec![Approach::DenseRows],
        ApproachArg::All => vec![Approach::SlicedEll, Approach::DenseRows],
        ApproachArg::AutoThesis => vec![Approach::Auto],
        _ => vec![],
    };
    let theses = thesis_runs(&a)?;
    // The twin's margins let a difference at a row within f32 rounding of the threshold be
    // told apart from a wrong result (a file has no margins: it must match exactly).
    let mut margins: Option<Vec<f64>> = None;
    // Without a truth, every run after the first is checked against the first run's
    // categories (exactly: no margins).
    let mut truth: Option<(String, Vec<u32>)> = match &a.categories {
        Some(p) => {
            let want = data::read_categories_range(p, total, first..first + rows)?;
            Some(("file".to_string(), want))
        }
        None if a.check => {
            let (values, m) = cpu::infer_with_margins(&net, &y0);
            margins = Some(m);
            Some(("CPU twin".to_string(), cpu::categories(&values, n)))
        }
        None => None,
    };
    let tie = TIE_PER_LAYER * a.layers as f64;
    if let Some(dir) = &a.export {
        export(dir, &net, &y0, first)?;
    }
    let mut all_ok = true;
    let thesis_only = approaches.is_empty();
    for (i, approach) in approaches.into_iter().enumerate() {
        let options = Options {
            approach,
            workgroup: a.wg,
            outputs_per_invocation: a.outputs_per_thread,
            row_vecs: a.row_vecs,
            slice: a.slice,
            ell_lanes: a.ell_lanes,
            pack_uniform: !a.no_pack,
            constant_rows: a.constant_rows == OnOff::On,
            scalar_rows: a.scalar_rows == OnOff::On,
            slice_sums: a.slice_sums == OnOff::On,
            segments_together: a
                .segments_together
                .map_or(a.slice_sums == OnOff::Off, |s| s == OnOff::On),
            prefetch_bounds: a.prefetch_bounds == OnOff::On,
            stage_unroll: a.stage_unroll,
            rows_per_workgroup: a.rows_per_wg,
            stage: match a.stage {
                StageArg::Auto => None,
                StageArg::On => Some(true),
                StageArg::Off => Some(false),
            },
            chunk_rows: a.chunk_rows,
        };
        let plan = Plan::new(&gpu, &net, &y0, &options)?;
        let time = timed(&gpu, &plan, &a)?;
        let layer_ms = if a.layer_times {
            Some(layer_times(&gpu, &plan, a.reps)?)
        } else {
            None
        };
        let got = plan.categories(&gpu)?;
        if let (Some(dir), 0) = (&a.export, i) {
            data::write_categories(&dir.join("categories.tsv"), &got)?;
        }
        if let (Some(path), 0) = (&a.save_categories, i) {
            data::write_categories(path, &global(&got))?;
        }
        let eps = spdnn::edges_per_second(&net, rows, time.seconds);
        let (verdict, ok, ties) = judge(&truth, margins.as_deref(), tie, first, &got);
        if truth.is_none() {
            truth = Some((format!("the {} run", approach.name()), got.clone()));
        }
        all_ok &= ok;
        let name = if approach == Approach::Auto {
            format!("auto ({})", plan.approach().name())
        } else {
            approach.name().to_string()
        };
        let tiling = plan.tiling().map_or("-".to_string(), |t| {
            format!(
                "wg {} · T {} · {} rows · slice {} · block {} · {}-lane ELL fill {:.2}{}",
                t.wg,
                t.t,
                t.rows(),
                t.slice,
                t.block(),
                t.lanes,
                plan.ell_fill().unwrap_or(1.0),
                if plan.packed() { " · packed" } else { "" }
            )
        });
        let peak = plan.peak_feature_bytes();
        let dense_double = 2 * (rows * n * 4) as u64;
        // The last run's fast-path tiles, per layer [fast, run, unwritten] (one readback).
        let fast = plan.fast_tiles(&gpu)?;
        let fast_total = fast.as_ref().map(|f| {
            f.iter()
                .fold([0u64; 3], |t, l| [t[0] + l[0], t[1] + l[1], t[2] + l[2]])
        });
        // Rows carried as scalars through each layer, and the dispatches of one run.
        let carried = plan.carried_rows(&gpu)?;
        let dispatches = plan.dispatches(&gpu)?;
        let per_layer = |k: usize| {
            fast.as_ref()
                .map(|f| f.iter().map(|l| l[k]).collect::<Vec<_>>())
        };
        if a.json {
            println!(
                "{}",
                json!({
                    "adapter": gpu.caps.adapter_name,
                    "approach": name,
                    "neurons": n, "layers": a.layers, "rows": rows, "first_row": first,
                    "bias": bias, "edges": net.edges(), "chunks": plan.chunks(), "tiling": tiling,
                    "wg": options.workgroup_on(&gpu), "rows_per_wg": a.rows_per_wg, "staged": plan.staged(),
                    "ms": time.ms(), "timing": time.source(),
                    "edges_per_second": eps, "active_rows": got.len(),
                    "peak_feature_bytes": peak, "dense_double_buffer_bytes": dense_double,
                    "check": verdict, "ok": ok, "tie_rows": ties,
                    "constant_rows": plan.constant_rows(),
                    "scalar_rows": plan.scalar_rows(),
                    "slice_sums": a.slice_sums == OnOff::On,
                    "segments_together": plan.segments_together(),
                    "prefetch_bounds": plan.segments_together() && a.prefetch_bounds == OnOff::On,
                    "stage_unroll": plan.tiling().map_or(1, |t| t.unroll),
                    "scalar_layers": plan.scalar_layers().iter().filter(|&&u| u).count(),
                    "carried_rows_per_layer": carried,
                    "dispatches": dispatches,
                    "dispatches_per_layer": dispatches as f64 / (a.layers * plan.chunks()).max(1) as f64,
                    "fast_tiles": fast_total.map(|t| t[0]),
                    "tiles": fast_total.map(|t| t[1]),
                    "unwritten_tiles": fast_total.map(|t| t[2]),
                    "fast_tiles_per_layer": per_layer(0),
                    "tiles_per_layer": per_layer(1),
                    "unwritten_tiles_per_layer": per_layer(2),
                    "layer_ms": layer_ms.as_ref().map(|(ms, _)| ms),
                    "layer_timing": layer_ms.as_ref().map(|(_, src)| src),
                })
            );
        } else {
            println!(
                "wgsparse spdnn on {} ({}): {name}",
                gpu.caps.adapter_name, gpu.caps.backend
            );
            let mut t = super::table(&["property", "value"]);
            for (k, v) in [
                (
                    "network",
                    format!("N={n} L={} bias={bias} edges={}", a.layers, net.edges()),
                ),
                (
                    "inputs",
                    format!(
                        "{rows} rows from row {first}, {} nonzeros, {} chunk(s)",
                        y0.nnz(),
                        plan.chunks()
                    ),
                ),
                ("tiling", tiling),
                (
                    "total time",
                    format!("{:.3} ms ({})", time.ms(), time.source()),
                ),
                (
                    "rate",
                    format!("{:.4e} edges/s ({:.3} TeraEdges/s)", eps, eps / 1e12),
                ),
                (
                    "feature memory",
                    format!(
                        "{:.1} MB (dense double buffer: {:.1} MB)",
                        peak as f64 / 1e6,
                        dense_double as f64 / 1e6
                    ),
                ),
                ("active rows at the end", got.len().to_string()),
                (
                    "constant-row tiles",
                    fast_total.map_or("off".to_string(), |[f, t, u]| {
                        format!(
                            "{f} of {t} tiles took the fast path ({:.1}%), {u} of them \
                             writing no output",
                            100.0 * f as f64 / t.max(1) as f64
                        )
                    }),
                ),
                (
                    "scalar rows",
                    carried.as_ref().filter(|_| plan.scalar_rows()).map_or(
                        "off".to_string(),
                        |c| {
                            let total: u64 = c.iter().sum();
                            format!(
                                "{:.1}% of row-layers carried as scalars (last layer: {})",
                                100.0 * total as f64 / (rows * a.layers).max(1) as f64,
                                c.last().copied().unwrap_or(0)
                            )
                        },
                    ),
                ),
                (
                    "dispatches",
                    format!(
                        "{dispatches} ({:.2} per layer and chunk)",
                        dispatches as f64 / (a.layers * plan.chunks()).max(1) as f64
                    ),
                ),
                ("check", verdict.clone()),
                (
                    "layer times",
                    layer_ms.as_ref().map_or("-".to_string(), |(ms, src)| {
                        let first: Vec<String> =
                            ms.iter().take(12).map(|m| format!("{m:.2}")).collect();
                        format!(
                            "{} ms ({}; first {} of {} layers, sum {:.2} ms)",
                            first.join(" "),
                            src,
                            first.len(),
                            ms.len(),
                            ms.iter().sum::<f64>()
                        )
                    }),
                ),
            ] {
                t.add_row(vec![k.to_string(), v]);
            }
            println!("{t}");
        }
    }
    for (i, opts) in theses.iter().enumerate() {
        let reps = a.thesis_reps.unwrap_or(a.reps);
        // A configuration the device cannot hold is reported and the others still run.
        let plan_run = match super::spdnn_thesis::run(&gpu, &net, &y0, opts, reps, a.spmm_time) {
            Ok(m) => m,
            Err(e) => {
                let what = super::spdnn_thesis::label(opts);
                if a.json {
                    println!(
                        "{}",
                        json!({
                            "approach": opts.format.name(), "tiling": opts.tiling.name(),
                            "run": what, "neurons": n, "layers": a.layers, "rows": rows,
                            "first_row": first, "error": e.to_string(), "ok": false,
                        })
                    );
                } else {
                    eprintln!("{what}: {e}");
                }
                all_ok = false;
                continue;
            }
        };
        if let (Some(dir), true) = (&a.export, thesis_only && i == 0) {
            data::write_categories(&dir.join("categories.tsv"), &plan_run.categories)?;
        }
        if let (Some(path), true) = (&a.save_categories, thesis_only && i == 0) {
            data::write_categories(path, &global(&plan_run.categories))?;
        }
        let (verdict, ok, ties) =
            judge(&truth, margins.as_deref(), tie, first, &plan_run.categories);
        if truth.is_none() {
            let from = format!("the {} run", super::spdnn_thesis::label(opts));
            truth = Some((from, plan_run.categories.clone()));
        }
        all_ok &= ok;
        super::spdnn_thesis::report(
            &gpu, &net, &y0, first, opts, &plan_run, &verdict, ok, &ties, a.json,
        );
    }
    let ok = all_ok;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
