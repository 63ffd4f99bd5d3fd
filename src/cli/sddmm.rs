//! `wgsparse sddmm`: time, check, sweep and tune SDDMM variants.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use serde_json::json;

use wgsparse::report::demo::describe;
use wgsparse::sddmm::{suite, sweep, tune, Options, Transpose, Variant};
use wgsparse::sparse::Csr;
use wgsparse::{io, report, Error, Gpu, Result};

#[derive(Clone, Copy, ValueEnum)]
enum VariantArg {
    Auto,
    All,
    Naive,
    Warp,
    SmL2,
    SmSm,
    RowRun,
}

#[derive(Clone, Copy, ValueEnum)]
enum BuildArg {
    /// On the device unless it is a CPU.
    Auto,
    Host,
    Device,
}

#[derive(Clone, Copy, ValueEnum)]
enum TransposeArg {
    Auto,
    Never,
    Always,
}

/// Arguments of `wgsparse sddmm`.
#[derive(clap::Args)]
pub struct SddmmArgs {
    /// Matrix Market file for S (coordinate; real, integer or pattern).
    #[arg(long)]
    matrix: Option<PathBuf>,
    /// Folder of raw CSR arrays for S (as written by `wgsparse gen … --raw` or --export).
    #[arg(long, conflicts_with = "matrix")]
    matrix_raw: Option<PathBuf>,
    /// Suite matrix to generate when no --matrix is given (nytimes, pubmed-lite, web-google,
    /// enron, nips, dense75k, demo).
    #[arg(long, default_value = "demo")]
    gen: String,
    /// Scale the suite matrix's dimensions (nonzeros scale with the square).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Seed of the generated S, A and B.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Inner dimension(s) K, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "128")]
    k: Vec<usize>,
    /// Kernel variant(s), comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "auto")]
    variant: Vec<VariantArg>,
    /// Column-panel (SM-L2, row-run) or column-tile (SM-SM) width.
    #[arg(long)]
    tj: Option<usize>,
    /// k-slice width.
    #[arg(long)]
    tk: Option<usize>,
    /// Rows per workgroup.
    #[arg(long)]
    ti: Option<usize>,
    /// SM-L2: most nonzeros per workgroup (heavier rows are split); row-run: most nonzeros
    /// per run.
    #[arg(long)]
    block_nnz: Option<usize>,
    /// Lanes per nonzero.
    #[arg(long)]
    vws: Option<u32>,
    /// Nonzeros per virtual subgroup per step (warp, sm-l2): 1–4.
    #[arg(long)]
    unroll: Option<u32>,
    /// Workgroup size.
    #[arg(long)]
    wg: Option<u32>,
    /// Disable 16-bit tile-relative index compression.
    #[arg(long)]
    no_compress: bool,
    /// Streaming direction.
    #[arg(long, value_enum, default_value = "auto")]
    transpose: TransposeArg,
    /// Where plans are built: the tilings (count, scan, place) and the row index per nonzero.
    #[arg(long, value_enum, default_value = "auto")]
    build_on: BuildArg,
    /// Cache size C for the Tj model in KiB (default: the adapter's L2, as in the paper;
    /// WGSPARSE_L2_BYTES sets it per machine).
    #[arg(long)]
    cache_kib: Option<u64>,
    /// Exhaustive (Tj, Tk) then (vws, workgroup) search; reports the model's distance to the best.
    #[arg(long)]
    sweep: bool,
    /// With --sweep: write an SVG plot of time against Tj per Tk to this file (`-kK` is added
    /// before the extension when several K are given).
    #[arg(long, requires = "sweep")]
    plot: Option<PathBuf>,
    /// Skip the autotuner for `auto` (use the model's configuration alone). By default `auto`
    /// picks the variant, Tk, vws and workgroup size by timing candidates once per adapter
    /// and shape bucket, cached (WGSPARSE_CACHE_DIR).
    #[arg(long)]
    no_tune: bool,
    /// Check every variant against the f64 CPU twin (on up to 200,000 sampled nonzeros).
    #[arg(long)]
    check: bool,
    /// Timed repetitions (median reported).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Also write S as raw little-endian arrays into this folder, and per K the operands A
    /// and B with a sample of P (for benches/peers to run on the same inputs and compare).
    #[arg(long)]
    export: Option<PathBuf>,
    /// Run on several GPUs: a count or `all` (every hardware adapter). S is cut into parts
    /// of equal nonzeros, one per GPU; reported per GPU, in total and against one GPU of the
    /// same machine. WGSPARSE_SHARE_ADAPTERS=1 opens one adapter as several devices.
    #[arg(long)]
    gpus: Option<String>,
    /// With --gpus: cut S by rows, by columns (cuSDDMM), or measure both.
    #[arg(long, value_enum, default_value = "both")]
    cut: CutArg,
    /// With --gpus: write each iteration's A and B in pieces of rows, each piece's device
    /// copy queued as soon as it is laid out (into a second set of operands, made current
    /// once every piece is checked), on the several GPUs and the one-GPU baseline alike.
    #[arg(long, requires = "gpus")]
    overlap_write: bool,
    /// With --gpus: read each iteration's P back in pieces of rows through two read buffers
    /// in rotation (the next piece's device copy under the host's copy of this one), under
    /// the row cut and on the one-GPU baseline it is compared with; the column cut, whose
    /// gather interleaves every part's rows, reads whole (and says so).
    #[arg(long, requires = "gpus")]
    overlap_read: bool,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum CutArg {
    Rows,
    Columns,
    Both,
}

fn variants(list: &[VariantArg]) -> Vec<Variant> {
    let mut out: Vec<Variant> = list.iter().flat_map(|&v| one_variant(v)).collect();
    out.dedup();
    out
}

fn one_variant(v: VariantArg) -> Vec<Variant> {
    match v {
        VariantArg::Auto => vec![Variant::Auto],
        VariantArg::All => [Variant::Auto]
            .into_iter()
            .chain(Variant::CONCRETE)
            .collect(),
        VariantArg::Naive => vec![Variant::Naive],
        VariantArg::Warp => vec![Variant::Warp],
        VariantArg::SmL2 => vec![Variant::SmL2],
        VariantArg::SmSm => vec![Variant::SmSm],
        VariantArg::RowRun => vec![Variant::RowRun],
    }
}

fn load(args: &SddmmArgs) -> Result<(String, Csr)> {
    if let Some(dir) = &args.matrix_raw {
        let name = dir
            .file_name()
            .map_or(dir.display().to_string(), |n| n.to_string_lossy().into());
        return Ok((name, io::read_csr_binary(dir)?));
    }
    match &args.matrix {
        Some(path) => Ok((path.display().to_string(), io::read_matrix_market(path)?)),
        None => {
            let m = suite::find(&args.gen)?;
            let name = if args.scale < 1.0 {
                format!("{}@{}", m.name, args.scale)
            } else {
                m.name.to_string()
            };
            Ok((name, m.generate(args.scale, args.seed)?))
        }
    }
}

mod multi;

/// Runs `wgsparse sddmm`.
pub fn run(args: SddmmArgs) -> Result<ExitCode> {
    if args.k.contains(&0) {
        return Err(Error::Option(
            "--k: K must be at least 1 (K = 0 is an empty product)".into(),
        ));
    }
    if args.gpus.is_some() {
        return multi::run(&args);
    }
    let gpu = Gpu::new()?;
    preflight(&gpu, &args)?;
    let interactive = !args.json;
    let bar = super::spinner(interactive, "preparing S");
    let (name, s) = load(&args)?;
    if let Some(dir) = &args.export {
        io::write_csr_binary(dir, &s)?;
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let base = base_options(&args);
    let mut results: Vec<Outcome> = Vec::new();
    let mut sweeps = Vec::new();
    let mut failed = false;
    for &k in &args.k {
        let ops = match tune::Operands::random(&gpu, &s, k, args.seed + 17) {
            Ok(ops) => ops,
            Err(e @ (Error::TooLarge { .. } | Error::HostMemory { .. })) => {
                failed = true;
                eprintln!("error: K={k}: {e}");
                for variant in variants(&args.variant) {
                    results.push((k, variant, Err(e.to_string())));
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        let reference = args
            .check
            .then(|| tune::Reference::sampled(&s, &ops, 200_000));
        let mut exported = false;
        for variant in variants(&args.variant) {
            let options = Options {
                variant,
                ..base.clone()
            };
            let measured = if !args.no_tune && variant == Variant::Auto {
                let plan = tune::autotuned_plan_with(&gpu, &s, k, &options, Some(&ops))?;
                tune::measure(
                    &gpu,
                    &s,
                    &ops,
                    &plan_options(&options, &plan.config),
                    args.reps,
                    reference.as_ref(),
                )
            } else {
                tune::measure(&gpu, &s, &ops, &options, args.reps, reference.as_ref())
            };
            match measured {
                Ok(m) => {
                    // The first variant that ran leaves P in `ops.out`: export it with A
                    // and B so the peer script runs on the same inputs and compares.
                    if let Some(dir) = args.export.as_ref().filter(|_| !exported) {
                        let p = ops.out.read(&gpu)?;
                        let step = s.nnz().div_ceil(1 << 20).max(1);
                        io::write_sddmm_operands(dir, &ops.a_host, &ops.b_host, &p, step)?;
                        exported = true;
                    }
                    results.push((k, variant, Ok(m)))
                }
                Err(
                    e @ (Error::Check { .. }
                    | Error::Option(_)
                    | Error::TooLarge { .. }
                    | Error::HostMemory { .. }),
                ) => {
                    failed = true;
                    eprintln!("error: {} K={k}: {e}", variant.name());
                    results.push((k, variant, Err(e.to_string())));
                }
                Err(e) => return Err(e),
            }
        }
        if args.sweep {
            let pb = interactive.then(indicatif::ProgressBar::new_spinner);
            // The first requested variant that has a sweep (else `auto`: the model's tiling).
            let swept = variants(&args.variant)
                .into_iter()
                .find(|v| matches!(v, Variant::SmL2 | Variant::SmSm | Variant::RowRun))
                .unwrap_or(Variant::Auto);
            let sw = sweep::sweep(
                &gpu,
                &s,
                &ops,
                &Options {
                    variant: swept,
                    ..base.clone()
                },
                args.reps.min(5),
                reference.as_ref(),
                |m| {
                    if let Some(pb) = &pb {
                        pb.set_message(format!("K={k}{}: {:.3} ms", describe(&m.config), m.ms));
                        pb.tick();
                    }
                },
            )?;
            if let Some(pb) = pb {
                pb.finish_and_clear();
            }
            if let Some(path) = &args.plot {
                let path = super::plot_path(path, &format!("k{k}"), args.k.len() > 1);
                let title = format!("SDDMM sweep: {name}, K = {k}, {}", gpu.caps.adapter_name);
                report::plot::write_svg(&path, &report::plot::sweep_svg(&sw, &title)?)?;
                if interactive {
                    eprintln!("plot written to {}", path.display());
                }
            }
            sweeps.push(json!({ "k": k, "sweep": sw }));
        }
    }
    if args.json {
        println!(
            "{}",
            json!({
                "adapter": gpu.caps.adapter_name,
                "matrix": { "name": name, "nrows": s.nrows, "ncols": s.ncols, "nnz": s.nnz(), "density": s.density() },
                "results": results.iter().map(|(k, v, r)| match r {
                    Ok(m) => json!({ "k": k, "variant": v.name(), "measurement": m }),
                    Err(e) => json!({ "k": k, "variant": v.name(), "error": e }),
                }).collect::<Vec<_>>(),
                "sweeps": sweeps,
                "ok": !failed,
            })
        );
    } else {
        print_tables(&gpu, &name, &s, &results, &sweeps);
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The options every variant shares, from the flags.
fn base_options(args: &SddmmArgs) -> Options {
    Options {
        variant: Variant::Auto,
        tj: args.tj,
        tk: args.tk,
        ti: args.ti,
        block_nnz: args.block_nnz,
        vws: args.vws,
        unroll: args.unroll,
        workgroup: args.wg,
        compress: !args.no_compress,
        transpose: match args.transpose {
            TransposeArg::Auto => Transpose::Auto,
            TransposeArg::Never => Transpose::Never,
            TransposeArg::Always => Transpose::Always,
        },
        cache_bytes: args.cache_kib.map(|k| k << 10),
        build_on_device: match args.build_on {
            BuildArg::Auto => None,
            BuildArg::Host => Some(false),
            BuildArg::Device => Some(true),
        },
        ..Default::default()
    }
}

/// Refuses a Matrix Market S whose declared size needs more than the device or the host
/// holds for every requested K, from its size line alone: before the file is read.
fn preflight(gpu: &Gpu, args: &SddmmArgs) -> Result<()> {
    let Some(path) = &args.matrix else {
        return Ok(());
    };
    let (nrows, ncols, nnz) = io::read_matrix_market_size(path)?;
    let mut first = None;
    for &k in &args.k {
        match tune::Operands::check_fits(gpu, nrows, ncols, nnz, k) {
            Ok(()) => return Ok(()),
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// The options that reproduce a resolved configuration.
fn plan_options(base: &Options, c: &wgsparse::sddmm::Config) -> Options {
    Options {
        variant: c.variant,
        tj: Some(c.tj),
        tk: Some(c.tk),
        ti: Some(c.ti),
        block_nnz: (c.block_nnz > 0).then_some(c.block_nnz),
        vws: Some(c.vws),
        unroll: Some(c.unroll),
        workgroup: Some(c.workgroup),
        compress: c.compress,
        transpose: if c.transposed {
            Transpose::Always
        } else {
            Transpose::Never
        },
        ..base.clone()
    }
}

/// (K, requested variant, measurement or the reason it did not run).
type Outcome = (
    usize,
    Variant,
    std::result::Result<tune::Measurement, String>,
);

fn print_tables(gpu: &Gpu, name: &str, s: &Csr, results: &[Outcome], sweeps: &[serde_json::Value]) {
    println!(
        "SDDMM on {} — S = {name}: {}×{}, {} nonzeros ({:.4}% dense)",
        gpu.caps.adapter_name,
        s.nrows,
        s.ncols,
        s.nnz(),
        100.0 * s.density()
    );
    let mut t = super::table(&[
        "K",
        "kernel",
        "config",
        "GPU ms",
        "GFLOP/s",
        "GB/s",
        "max rel err",
        "plan ms",
    ]);
    for (k, variant, r) in results {
        let m = match r {
            Ok(m) => m,
            Err(e) => {
                t.add_row(vec![k.to_string(), variant.name().into(), e.clone()]);
                continue;
            }
        };
        let label = match variant {
            Variant::Auto => format!("auto → {}", m.kernel),
            _ => m.kernel.to_string(),
        };
        t.add_row(vec![
            k.to_string(),
            label,
            describe(&m.config).trim().to_string(),
            format!("{:.3}", m.ms),
            format!("{:.1}", m.gflops),
            format!("{:.1}", m.gbps),
            m.max_rel_error.map_or("—".into(), |e| format!("{e:.1e}")),
            format!("{:.0}", m.plan_ms),
        ]);
    }
    println!("{t}");
    for sw in sweeps {
        let k = &sw["k"];
        let v = &sw["sweep"];
        println!(
            "sweep K={k}: {} points; best {:.3} ms ({}), model Tj {:.3} ms ({}): {:+.1}% from best",
            v["points"].as_array().map_or(0, |p| p.len()),
            v["best"]["ms"].as_f64().unwrap_or(f64::NAN),
            config_text(&v["best"]["config"]),
            v["model"]["ms"].as_f64().unwrap_or(f64::NAN),
            config_text(&v["model"]["config"]),
            100.0 * v["model_gap"].as_f64().unwrap_or(f64::NAN)
        );
    }
}

fn config_text(c: &serde_json::Value) -> String {
    format!(
        "Tj={} Tk={} Ti={} vws={} wg={}",
        c["tj"], c["tk"], c["ti"], c["vws"], c["workgroup"]
    )
}
