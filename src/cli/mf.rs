//! `wgsparse mf`: train a matrix factorization by SGD, or predict with a saved model.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use wgsparse::gen::planted_ratings;
use wgsparse::io::{self, IdMap, Ratings};
use wgsparse::mf::{self, Model, Precision, Scheme, Trainer};
use wgsparse::{Error, Gpu, Result};

mod multi;
mod predict;
mod report;

use report::{epoch_bar, print_epochs, tick, Totals};

/// Arguments of `wgsparse mf`.
#[derive(clap::Args)]
pub struct MfArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SchemeArg {
    Hogwild,
    Wavefront,
}

/// How a batch-Hogwild! worker runs its updates.
#[derive(Args)]
struct KernelArgs {
    /// Batch-Hogwild!: samples a worker updates together, their row loads in flight at
    /// once when they share no row (1, 2 or 4; default 2; same result as one at a time).
    #[arg(long)]
    ilp: Option<u32>,
    /// Batch-Hogwild!: stage the samples in the lanes a chunk ahead of use (the default;
    /// with subgroup shuffles, otherwise ignored, as the JSON's `stage` shows).
    #[arg(long, conflicts_with = "no_stage")]
    stage: bool,
    /// Batch-Hogwild!: load each sample on its update's chain instead of staging it.
    #[arg(long)]
    no_stage: bool,
    /// Batch-Hogwild!: lanes per update (a power of two up to 32; default the adapter's
    /// subgroup size, at most 32 and k/2).
    #[arg(long)]
    lanes: Option<u32>,
    /// Batch-Hogwild!: adjacent words (feature pairs) a lane loads and stores as one
    /// access (1, 2 or 4; lowered to divide a lane's words, as the JSON's `vector` shows).
    #[arg(long, default_value_t = 1)]
    vector: u32,
    /// Batch-Hogwild!: most updates a worker performs in one dispatch (default 1024, the
    /// most on a CPU device; on a GPU more spares each epoch some dispatches).
    #[arg(long)]
    dispatch_updates: Option<u32>,
    /// Batch-Hogwild!: bind Q alone `@coherent`, P's loads served by the SM's cache where
    /// they hit (a measurement; a row another SM updated may be read stale).
    #[arg(long)]
    incoherent_p: bool,
    /// Batch-Hogwild!: invocations per workgroup (a power of two ≥ lanes; default 256).
    #[arg(long)]
    wg: Option<u32>,
    /// Train without first bringing the GPUs' clocks up (one device: batch-Hogwild! epochs
    /// at learning rate 0, which leave the model and the sample order as they were, the
    /// wavefront a spin kernel; --gpus: a spin kernel on every GPU at once; the JSON's
    /// `warm_up_seconds`).
    #[arg(long)]
    no_warm_up: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum PrecisionArg {
    F16,
    F32,
}

/// Planted data sets of the paper's shapes (Zipf degrees, rank 16).
#[derive(Clone, Copy, ValueEnum)]
enum Shape {
    /// 480,190 × 17,771, 99,072,112 train + 1,408,395 test.
    Netflix,
    /// 1,000,990 × 624,961, 252,800,275 train + 4,003,960 test.
    Yahoo,
    /// 943 × 1,682, 100,000 ratings (MovieLens-100K's shape).
    Small,
}

impl Shape {
    /// (users, items, train, test).
    fn dims(self) -> (usize, usize, usize, usize) {
        match self {
            Shape::Netflix => (480_190, 17_771, 99_072_112, 1_408_395),
            Shape::Yahoo => (1_000_990, 624_961, 252_800_275, 4_003_960),
            Shape::Small => (943, 1_682, 90_000, 10_000),
        }
    }
}

#[derive(Subcommand)]
enum What {
    /// Train P and Q; print per-epoch test RMSE and updates/s.
    Train {
        /// Training ratings: text (`u i r [t]`, tabs/spaces/commas, optional header) or, with
        /// a `.bin` name or --binary, 12-byte records {i32 u, i32 v, f32 r}.
        #[arg(long, required_unless_present = "gen")]
        train: Option<PathBuf>,
        /// Test ratings (same format; ids as in the training file).
        #[arg(long)]
        test: Option<PathBuf>,
        /// Read both files as 12-byte binary records.
        #[arg(long)]
        binary: bool,
        /// Reject ratings outside LO,HI (text: with file and line; binary: with record).
        #[arg(long, value_parser = parse_range)]
        rating_range: Option<(f32, f32)>,
        /// Generate planted data of this shape in memory instead of reading files.
        #[arg(long, conflicts_with = "train")]
        gen: Option<Shape>,
        /// Scale the generated shape's users, items and ratings by this factor.
        #[arg(long, default_value_t = 1.0)]
        gen_scale: f64,
        #[arg(long, default_value_t = 128)]
        k: usize,
        #[arg(long, default_value_t = 20)]
        epochs: usize,
        #[arg(long, default_value_t = 0.05)]
        lambda: f32,
        #[arg(long, default_value_t = 0.08)]
        alpha: f32,
        #[arg(long, default_value_t = 0.3)]
        beta: f32,
        #[arg(long, value_enum, default_value = "hogwild")]
        scheme: SchemeArg,
        /// Concurrent workers (default min(m, n)/2, at most 8192; wavefront 1024).
        #[arg(long)]
        workers: Option<u32>,
        /// Samples per batch (batch-Hogwild!'s f).
        #[arg(long, default_value_t = 128)]
        batch: u32,
        /// Wavefront column blocks (default 2 × workers).
        #[arg(long)]
        columns: Option<u32>,
        #[arg(long, value_enum, default_value = "f16")]
        precision: PrecisionArg,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Save the model (binary format, with the input's ids).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Save the model in LIBMF's text format (rows by dense index).
        #[arg(long)]
        libmf: Option<PathBuf>,
        /// Print one JSON object instead of the progress bar and table.
        #[arg(long)]
        json: bool,
        /// Bind P and Q without the `@coherent` decoration (to measure what a non-coherent
        /// per-SM cache does to the Hogwild! races; not for training).
        #[arg(long)]
        incoherent: bool,
        /// Wavefront: virtual subgroups per worker sharing each block it holds (1: serial
        /// within a block, as the paper).
        #[arg(long, default_value_t = 1)]
        streams: u32,
        /// Batch-Hogwild!'s kernel knobs (boxed: they would make this variant the largest by far).
        #[command(flatten)]
        kernel: Box<KernelArgs>,
        /// The planted model's test RMSE, printed beside the final RMSE (e.g. from the JSON
        /// of `wgsparse gen ratings`).
        #[arg(long)]
        noise_floor: Option<f64>,
        /// Train on N devices (or `all`) by cuMF_SGD's G×G block schedule (hogwild inside
        /// each block); `WGSPARSE_SHARE_ADAPTERS=1` opens one adapter N times.
        #[arg(long)]
        gpus: Option<String>,
        /// With --gpus: column blocks per GPU (c of the G × G·c grid; 1 is cuMF_SGD's G×G,
        /// 2 or more overlap the Q transfers with training). Default 2.
        #[arg(long)]
        split: Option<usize>,
    },
    /// Predict ratings for `user item [rating]` lines; with ratings, also print the RMSE.
    Predict {
        /// A model saved by `mf train --model` (or LIBMF's text format with --libmf).
        #[arg(long)]
        model: PathBuf,
        /// The model is in LIBMF's text format (ids are dense indices).
        #[arg(long)]
        libmf: bool,
        /// Pairs file: `user item [rating]` per line.
        #[arg(long)]
        pairs: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `wgsparse mf`.
pub fn run(args: MfArgs) -> Result<ExitCode> {
    match args.what {
        What::Predict {
            model,
            libmf,
            pairs,
            json,
        } => predict::predict(&model, libmf, &pairs, json),
        What::Train {
            train,
            test,
            binary,
            rating_range,
            gen,
            gen_scale,
            k,
            epochs,
            lambda,
            alpha,
            beta,
            scheme,
            workers,
            batch,
            columns,
            precision,
            seed,
            model,
            libmf,
            json,
            incoherent,
            streams,
            kernel,
            noise_floor,
            gpus,
            split,
        } => {
            if let Some(f) = noise_floor.filter(|f| !(f.is_finite() && *f >= 0.0)) {
                return Err(Error::Option(format!(
                    "--noise-floor {f}: must be finite and ≥ 0"
                )));
            }
            let KernelArgs {
                ilp,
                stage: _,
                no_stage,
                lanes,
                vector,
                dispatch_updates,
                wg,
                incoherent_p,
                no_warm_up,
            } = *kernel;
            // The wavefront updates one sample at a time with its own layout (it ignores
            // --stage, as it always has).
            let hogwild_only = [
                ("--ilp", ilp.is_some_and(|i| i != 1)),
                ("--lanes", lanes.is_some()),
                ("--vector", vector != 1),
                ("--wg", wg.is_some()),
                ("--dispatch-updates", dispatch_updates.is_some()),
                ("--incoherent-p", incoherent_p),
            ];
            if scheme == SchemeArg::Wavefront {
                if let Some((flag, _)) = hogwild_only.iter().find(|(_, given)| *given) {
                    return Err(Error::Option(format!(
                        "{flag}: applies to the hogwild scheme only"
                    )));
                }
            }
            let options = mf::Options {
                k,
                lambda,
                alpha,
                beta,
                scheme: match scheme {
                    SchemeArg::Hogwild => Scheme::Hogwild,
                    SchemeArg::Wavefront => Scheme::Wavefront,
                },
                precision: match precision {
                    PrecisionArg::F16 => Precision::F16,
                    PrecisionArg::F32 => Precision::F32,
                },
                workers,
                batch,
                columns,
                seed,
                coherent: !incoherent,
                streams,
                ilp: ilp.unwrap_or(mf::Options::default().ilp),
                stage: !no_stage,
                lanes,
                vector,
                dispatch_updates,
                workgroup: wg,
                coherent_p: !incoherent_p,
                ..Default::default()
            };
            // The devices first: a generated shape is checked against them before its
            // ratings are built (netflix at k = 256 took 15 s and 2.3 GB to be refused).
            if gpus.is_none() && split.is_some() {
                return Err(Error::Option("--split applies with --gpus only".into()));
            }
            let devices = match &gpus {
                Some(g) => super::open_gpus(g)?,
                None => vec![Gpu::new()?],
            };
            let (tr, te, ids, source, floor) = match (gen, train) {
                (Some(shape), _) => generated(shape, gen_scale, seed, |m, n| {
                    mf::check_shape(&devices, m, n, &options)
                })?,
                (None, Some(path)) => read(&path, test.as_deref(), binary, rating_range)?,
                (None, None) => return Err(Error::Option("give --train FILE or --gen".into())),
            };
            let out = Outputs {
                model,
                libmf,
                json,
                floor: floor.or(noise_floor),
                warm_up: !no_warm_up,
            };
            match gpus {
                Some(_) => {
                    let gpus = devices;
                    multi::train(
                        &gpus,
                        (&tr, te.as_ref()),
                        ids,
                        options,
                        multi::Run {
                            epochs,
                            split: split.unwrap_or(2),
                        },
                        &source,
                        out,
                    )
                }
                None => train_run(
                    &devices[0],
                    &tr,
                    te.as_ref(),
                    ids,
                    options,
                    epochs,
                    &source,
                    out,
                ),
            }
        }
    }
}

struct Outputs {
    /// The planted model's test RMSE.
    floor: Option<f64>,
    model: Option<PathBuf>,
    libmf: Option<PathBuf>,
    json: bool,
    /// Bring the GPUs' clocks up before the timed epochs ([`Trainer::warm_up`],
    /// [`mf::MultiTrainer::warm_up`]).
    warm_up: bool,
}

/// Training and test ratings, their ids, a description, and the planted model's test RMSE
/// (the noise floor) for generated data.
type Loaded = (Ratings, Option<Ratings>, Option<IdMap>, String, Option<f64>);

fn parse_range(s: &str) -> std::result::Result<(f32, f32), String> {
    let bad = || format!("{s:?}: expected LO,HI with LO ≤ HI");
    let (lo, hi) = s.split_once(',').ok_or_else(bad)?;
    let (lo, hi): (f32, f32) = (
        lo.trim().parse().map_err(|_| bad())?,
        hi.trim().parse().map_err(|_| bad())?,
    );
    if lo <= hi {
        Ok((lo, hi))
    } else {
        Err(bad())
    }
}

fn read(
    train: &Path,
    test: Option<&Path>,
    binary: bool,
    range: Option<(f32, f32)>,
) -> Result<Loaded> {
    let is_bin = |p: &Path| binary || p.extension().is_some_and(|e| e == "bin");
    if is_bin(train) {
        let read_bin = |p: &Path| -> Result<Ratings> {
            let r = io::read_ratings_binary(p)?;
            if let Some((lo, hi)) = range {
                if let Some(k) = r.values.iter().position(|v| !(lo..=hi).contains(v)) {
                    let msg = format!("record {k}: rating {} is outside [{lo}, {hi}]", r.values[k]);
                    return Err(Error::parse(p, 0, msg));
                }
            }
            Ok(r)
        };
        let tr = read_bin(train)?;
        let te = test.map(read_bin).transpose()?;
        return Ok((tr, te, None, train.display().to_string(), None));
    }
    let mut ids = IdMap::new();
    let read_text = |p: &Path, ids: &mut IdMap| match range {
        Some(r) => io::read_ratings_in_range(p, ids, r),
        None => io::read_ratings(p, ids),
    };
    let tr = read_text(train, &mut ids)?;
    // Test ids unseen in training get indices past the training ones; the trainer skips them.
    let te = test.map(|t| read_text(t, &mut ids)).transpose()?;
    Ok((tr, te, Some(ids), train.display().to_string(), None))
}

/// The planted ratings of `shape` at `scale`; `check(users, items)` runs before they are built.
fn generated(
    shape: Shape,
    scale: f64,
    seed: u64,
    check: impl FnOnce(usize, usize) -> Result<()>,
) -> Result<Loaded> {
    if !(scale > 0.0 && scale <= 1.0) {
        return Err(Error::Option(format!(
            "--gen-scale {scale}: must be in (0, 1]"
        )));
    }
    let (m, n, train, test) = shape.dims();
    let s = |x: usize| ((x as f64 * scale).round() as usize).max(1);
    let total = s(train + test);
    check(s(m), s(n))?;
    let p = planted_ratings(
        s(m),
        s(n),
        total,
        16,
        test as f64 / (train + test) as f64,
        seed,
    )?;
    let source = format!("planted {}×{} ({} ratings)", s(m), s(n), total);
    let floor = p.noise_floor();
    Ok((
        (&p.train).into(),
        Some((&p.test).into()),
        None,
        source,
        floor,
    ))
}

#[allow(clippy::too_many_arguments)]
fn train_run(
    gpu: &Gpu,
    tr: &Ratings,
    te: Option<&Ratings>,
    ids: Option<IdMap>,
    options: mf::Options,
    epochs: usize,
    source: &str,
    out: Outputs,
) -> Result<ExitCode> {
    let half = options.precision == Precision::F16;
    let k = options.k;
    let mut trainer = Trainer::new(gpu, tr, te, options.clone())?;
    let warm_up = if out.warm_up { trainer.warm_up()? } else { 0.0 };
    let bar = epoch_bar(epochs, out.json);
    let metrics = trainer.fit(epochs, |m| tick(&bar, m.rmse, m.updates_per_s, ""))?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let Totals {
        seconds,
        updates,
        nnz_rate,
        bytes_per_update,
        final_rmse,
    } = Totals::new(&metrics, epochs, tr.len(), k, half);
    save_model(trainer.model()?, ids, &out)?;
    let (lanes, subgroup) = trainer.lanes();
    if out.json {
        println!(
            "{}",
            json!({
                "adapter": gpu.caps.adapter_name,
                "data": source,
                "users": tr.n_users, "items": tr.n_items, "nnz": tr.len(),
                "test": trainer.test_len(), "skipped_test": trainer.skipped_test(),
                "k": k, "scheme": options.scheme, "precision": options.precision,
                "native_f16": trainer.native_f16(), "coherent": trainer.coherent(),
                "coherent_p": trainer.coherent_p(),
                "streams": options.streams, "ilp": trainer.ilp(), "stage": trainer.staged(),
                "vector": trainer.vector(), "dispatch_updates": trainer.dispatch_updates(),
                "workgroup": trainer.workgroup(),
                "workers": trainer.workers(), "lanes": lanes, "subgroup_reduce": subgroup,
                "batch": options.batch, "lambda": options.lambda, "alpha": options.alpha,
                "beta": options.beta, "sigma": trainer.sigma(),
                "epochs": metrics,
                "rmse": metrics.iter().map(|m| m.rmse).collect::<Vec<_>>(),
                "final_rmse": final_rmse,
                "noise_floor": out.floor,
                "train_seconds": seconds,
                "warm_up_seconds": warm_up,
                "updates": updates,
                "updates_per_s": nnz_rate,
                "bytes_per_update": bytes_per_update,
                "gb_per_s": nnz_rate * bytes_per_update as f64 / 1e9,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "mf on {}: {source}, {} users × {} items, {} train, {} test ({} skipped: unseen ids)",
        gpu.caps.adapter_name,
        tr.n_users,
        tr.n_items,
        tr.len(),
        trainer.test_len(),
        trainer.skipped_test()
    );
    println!(
        "k {k}, {:?}, {:?}{}{}, {} workers × {lanes} lanes ({}), f {}, ilp {}{}, vector {}",
        options.scheme,
        options.precision,
        if trainer.native_f16() { " native" } else { "" },
        if trainer.coherent_p() {
            ", coherent P/Q"
        } else if trainer.coherent() {
            ", coherent Q"
        } else {
            ""
        },
        trainer.workers(),
        if subgroup {
            "subgroup shuffles"
        } else {
            "workgroup memory"
        },
        options.batch,
        trainer.ilp(),
        if trainer.staged() { ", staged" } else { "" },
        trainer.vector()
    );
    print_epochs(&metrics);
    if warm_up > 0.0 {
        println!("clocks warmed up first for {warm_up:.2} s (epochs at learning rate 0)");
    }
    println!(
        "{epochs} epochs in {seconds:.3} s: {:.3} G updates/s (epochs·nnz / time), {:.1} GB/s at \
         {bytes_per_update} B/update; final test RMSE {}",
        nnz_rate / 1e9,
        nnz_rate * bytes_per_update as f64 / 1e9,
        final_rmse.map_or("-".into(), |r| format!("{r:.4}"))
    );
    if let Some(f) = out.floor {
        println!("planted model's test RMSE (noise floor): {f:.4}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Saves `model` where `out` asks, with the input's ids when it had them.
fn save_model(mut model: Model, ids: Option<IdMap>, out: &Outputs) -> Result<()> {
    if let Some(ids) = ids {
        model.user_ids = Some(ids.user_ids()[..model.n_users].to_vec());
        model.item_ids = Some(ids.item_ids()[..model.n_items].to_vec());
    }
    if let Some(p) = &out.model {
        model.save(p)?;
    }
    if let Some(p) = &out.libmf {
        model.save_libmf(p)?;
    }
    Ok(())
}
