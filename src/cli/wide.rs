//! `wgsparse wide`: train a wide model (LR, FM, LSVM, LSR) with the flow engine, or predict
//! with a saved one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};
use serde_json::json;

use wgsparse::gpu;
use wgsparse::wide::{self, cpu, metrics, Model, Trainer};
use wgsparse::{Error, Gpu, Result};

/// Arguments of `wgsparse wide`.
#[derive(clap::Args)]
pub struct WideArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModelArg {
    Lr,
    Fm,
    Lsvm,
    Lsr,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    /// The fused Aggregate–Loss–Apply kernel.
    Flow,
    /// Separate aggregate / loss / apply dispatches through global memory.
    Stage,
}

#[derive(Subcommand)]
enum What {
    /// Train; print per epoch the training loss, validation logloss and AUC, epoch time.
    Train {
        #[arg(long, value_enum, default_value = "lr")]
        model: ModelArg,
        /// Training data: a LIBSVM file (labels ±1 or 0/1) or a raw CSR folder with
        /// labels.f32 (`wgsparse gen ctr --raw`).
        #[arg(long)]
        train: PathBuf,
        /// Validation data (same formats).
        #[arg(long)]
        valid: Option<PathBuf>,
        /// Without --valid, hold out this last fraction of the training samples.
        #[arg(long, default_value_t = 0.0)]
        holdout: f64,
        /// FM rank.
        #[arg(long, default_value_t = 8)]
        k: usize,
        #[arg(long, default_value_t = 20)]
        epochs: usize,
        #[arg(long, default_value_t = 1024)]
        batch: usize,
        #[arg(long, default_value_t = 0.5)]
        lr: f32,
        /// L2 regularization λ on the parameters each sample touches.
        #[arg(long, default_value_t = 0.0)]
        l2: f32,
        /// Stream the training data's parts through a double-buffered staging ring of two
        /// device slots each epoch (device memory for two parts, host-visible staging memory
        /// as large again; epoch time in wall clock, copies included) instead of keeping them
        /// all resident.
        #[arg(long)]
        ring: bool,
        #[arg(long, value_enum, default_value = "flow")]
        mode: ModeArg,
        /// Exact mini-batch SGD (the default).
        #[arg(long, conflicts_with = "async_")]
        sync: bool,
        /// Updates per chunk, as cuWide's released kernel.
        #[arg(long = "async")]
        async_: bool,
        /// Sync: `persistent` (many mini-batches per dispatch, grid barriers between each
        /// one's gradient and update), `dispatch` (a flow and an apply dispatch per
        /// mini-batch, the reference) or `auto` (persistent with --sync-groups /
        /// --sync-span, else dispatch: the grid barrier is opt-in until checked on a GPU).
        #[arg(long, default_value = "auto", value_parser = wide::SyncKernel::NAMES)]
        sync_kernel: String,
        /// Sync, persistent kernel: workgroups G (0: a mini-batch's chunks, at most one per
        /// compute unit, on a discrete GPU, 1 elsewhere; G > 1 is refused where the grid
        /// barrier may hang and beyond the resident workgroups).
        #[arg(long, default_value_t = 0)]
        sync_groups: usize,
        /// Sync, persistent kernel: mini-batches per dispatch (0: all of a part's).
        #[arg(long, default_value_t = 0)]
        sync_span: usize,
        /// Async: mini-batches of chunks per dispatch (0: the whole epoch in one dispatch).
        #[arg(long, default_value_t = 0)]
        async_span: usize,
        /// Async: persistent workgroups per dispatch (about that many chunks in flight).
        #[arg(long, default_value_t = 1024)]
        async_groups: usize,
        /// Async: take every step whole (no per-feature scale for the updates in flight).
        #[arg(long)]
        no_async_scale: bool,
        /// Async: the mini-batches in flight the step scale assumes (S, ≥ 1; default P ·
        /// chunk / batch, or a whole dispatch's with --snapshot-reads).
        #[arg(long)]
        async_in_flight: Option<f64>,
        /// Invocations per sample in Aggregate [default: 8; with --async 4; at most 1024 /
        /// --max-chunk when that is given].
        #[arg(long)]
        lanes: Option<u32>,
        /// Largest chunk (samples per workgroup) [default: 32; with --async 256, or 64 for FM;
        /// at most 1024 / lanes; past 256 the async default's 8-bit slots become 16-bit unless
        /// --slot8 is given].
        #[arg(long)]
        max_chunk: Option<usize>,
        /// Features in the importance cache (default: the cost rule; 0 turns it off).
        #[arg(long)]
        cache: Option<usize>,
        #[command(flatten)]
        variant: crate::cli::wide_variant::VariantArgs,
        /// Run every epoch asked for (no early stop).
        #[arg(long)]
        no_early_stop: bool,
        /// Replay each epoch's mini-batches (same order) with the f64 CPU twin as exact
        /// mini-batch SGD and compare validation logloss: exit 1 when the last epoch's differ
        /// by more than 0.003 (async: lies more than 0.003 above the twin's; needs validation
        /// data; slow on large data).
        #[arg(long)]
        check: bool,
        /// Time epochs on whatever clock the GPU is at (no warm-up before them).
        #[arg(long)]
        no_warm_up: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Save the trained model here (atomically).
        #[arg(long)]
        model_out: Option<PathBuf>,
        /// Print one JSON object instead of the progress bar and table.
        #[arg(long)]
        json: bool,
    },
    /// Time flow-kernel variants (async by default) on one data set loaded and chunked
    /// once: one JSON line per run and pass (epoch times, validation logloss).
    Sweep(crate::cli::wide_sweep::SweepArgs),
    /// Predict ŷ for every sample of a data set; print its logloss and AUC.
    Predict {
        /// A model saved by `wide train --model-out`.
        #[arg(long)]
        model: PathBuf,
        /// Data (LIBSVM file or raw CSR folder with labels.f32).
        #[arg(long)]
        data: PathBuf,
        /// Write one ŷ per line here.
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

/// Runs `wgsparse wide`.
pub fn run(args: WideArgs) -> Result<ExitCode> {
    match args.what {
        What::Predict {
            model,
            data,
            out,
            json,
        } => crate::cli::wide_predict::run(&model, &data, out.as_deref(), json),
        What::Sweep(a) => crate::cli::wide_sweep::run(a),
        What::Train {
            model,
            train,
            valid,
            holdout,
            k,
            epochs,
            batch,
            lr,
            l2,
            ring,
            mode,
            sync: _,
            async_,
            sync_kernel,
            sync_groups,
            sync_span,
            async_span,
            async_groups,
            no_async_scale,
            async_in_flight,
            lanes,
            max_chunk,
            cache,
            variant,
            no_early_stop,
            check,
            no_warm_up,
            seed,
            model_out,
            json,
        } => {
            let model = match model {
                ModelArg::Lr => Model::Lr,
                ModelArg::Fm => Model::Fm { k },
                ModelArg::Lsvm => Model::Lsvm,
                ModelArg::Lsr => Model::Lsr,
            };
            model.check()?;
            if !(0.0..1.0).contains(&holdout) {
                return Err(Error::Option(format!(
                    "--holdout {holdout}: must be in [0, 1)"
                )));
            }
            let base = if async_ {
                wide::Options::asynchronous_for(&model.spec()?)
            } else {
                wide::Options::default()
            };
            let (mut flow_variant, diag) = variant.resolve(&base)?;
            let (lanes, max_chunk) = base.fit_workgroup(lanes, max_chunk);
            // The async default's 8-bit slots number 256 samples: a larger chunk asked for
            // takes 16-bit ones (an explicit --slot8 is refused at build instead).
            if flow_variant.slot_bits == 8
                && !variant.slot_width_given()
                && max_chunk > 1 << flow_variant.slot_bits
            {
                flow_variant.slot_bits = 16;
            }
            let options = wide::Options {
                batch,
                lr,
                l2,
                ring,
                sync: !async_,
                sync_kernel: wide::SyncKernel::parse(&sync_kernel)?,
                sync_groups,
                sync_span,
                async_span,
                async_groups,
                async_scale: !no_async_scale,
                async_in_flight,
                stage: mode == ModeArg::Stage,
                lanes,
                max_chunk,
                cache: cache.or(base.cache),
                early_stop: !no_early_stop,
                seed,
                read_guard: variant.read_guard(&base),
                variant: flow_variant,
                diag,
                ..base
            };
            if options.diag.any() {
                eprintln!(
                    "warning: --diag {}: timing only, the results are not valid",
                    options.diag.names().join(",")
                );
            }
            options.check()?;
            let (tr, va) = load_split(&train, valid.as_deref(), holdout)?;
            if check && va.is_none() {
                return Err(Error::Option(
                    "--check compares validation logloss: give --valid or --holdout".into(),
                ));
            }
            let out = Outputs {
                model_out,
                json,
                check,
                warm_up: !no_warm_up,
            };
            train_run(model, options, epochs, (tr, va), &train, out)
        }
    }
}

pub(crate) type Data = (wgsparse::sparse::Csr, Vec<f32>);

/// Training data from `train` and validation data from `valid`, or without it the last
/// `holdout` fraction of the training samples. Neither may be empty: an empty set would
/// train nothing and report a loss of 0 (and a twin check that cannot fail).
pub(crate) fn load_split(
    train: &Path,
    valid: Option<&Path>,
    holdout: f64,
) -> Result<(Data, Option<Data>)> {
    let (x, y) = wide::read_data(train)?;
    let empty = |p: &Path| Error::invalid(p.display().to_string(), "no samples");
    if x.nrows == 0 {
        return Err(empty(train));
    }
    Ok(match valid {
        Some(v) => {
            let va = wide::read_data(v)?;
            if va.0.nrows == 0 {
                return Err(empty(v));
            }
            ((x, y), Some(va))
        }
        None if holdout > 0.0 => {
            let n_valid = ((x.nrows as f64) * holdout).round() as usize;
            if n_valid == 0 || n_valid == x.nrows {
                return Err(Error::Option(format!(
                    "--holdout {holdout} of {}'s {} samples leaves {} for validation and {} \
                     for training: each needs at least one",
                    train.display(),
                    x.nrows,
                    n_valid,
                    x.nrows - n_valid
                )));
            }
            let split = x.nrows - n_valid;
            let t = (x.row_band(0..split), y[..split].to_vec());
            let v = (x.row_band(split..x.nrows), y[split..].to_vec());
            (t, Some(v))
        }
        None => ((x, y), None),
    })
}

struct Outputs {
    model_out: Option<PathBuf>,
    json: bool,
    check: bool,
    /// Bring the GPU's clocks up before timed epochs ([`gpu::warm_clocks`]).
    warm_up: bool,
}

/// Mean log loss of the f64 twin's ŷ over `v`.
fn twin_logloss(model: Model, params: &[f64], v: &Data) -> f64 {
    let y = metrics::labels_pm1(&v.1);
    let s: f64 = (0..v.0.nrows)
        .map(|i| {
            wide::Loss::Logistic
                .eval(cpu::predict(model, params, &v.0, i), y[i] as f64)
                .0
        })
        .sum();
    s / v.0.nrows.max(1) as f64
}

fn train_run(
    model: Model,
    options: wide::Options,
    epochs: usize,
    (tr, va): (Data, Option<Data>),
    source: &Path,
    out: Outputs,
) -> Result<ExitCode> {
    let (model_out, as_json) = (out.model_out, out.json);
    let gpu = Gpu::new()?;
    let n_features = tr.0.ncols.max(va.as_ref().map_or(0, |v| v.0.ncols));
    let spec = model.spec()?;
    let setup = std::time::Instant::now();
    let mut trainer = Trainer::new(
        &gpu,
        &spec,
        n_features,
        (&tr.0, &tr.1),
        va.as_ref().map(|v| (&v.0, v.1.as_slice())),
        options.clone(),
    )?;
    let setup_s = setup.elapsed().as_secs_f64();
    let bar = (!as_json).then(|| {
        let b = indicatif::ProgressBar::new(epochs as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} epoch {pos}/{len} {msg}")
                .expect("template"),
        );
        b
    });
    let mut twin = if out.check {
        let p: Vec<f64> = trainer.params()?.iter().map(|&v| v as f64).collect();
        let sgd = wide::cpu::Sgd::new(p.len()).with_l2(options.l2 as f64);
        Some((sgd, p, metrics::labels_pm1(&tr.1)))
    } else {
        None
    };
    let mut cpu_logloss: Vec<f64> = vec![];
    let mut stats = vec![];
    let mut warm_up_s = 0.0;
    for e in 0..epochs {
        // Clocks up before the first timed epoch, and before each one after the twin's host
        // work (which lets the GPU idle down).
        if out.warm_up && (e == 0 || twin.is_some()) {
            warm_up_s += gpu::warm_clocks(&gpu)?;
        }
        let s = trainer.epoch()?;
        if let (Some((sgd, p, y)), Some(v)) = (twin.as_mut(), va.as_ref()) {
            for rows in trainer.last_minibatches() {
                sgd.step(model, p, &tr.0, y, &rows, options.lr as f64);
            }
            cpu_logloss.push(twin_logloss(model, p, v));
        }
        if let Some(b) = &bar {
            b.inc(1);
            b.set_message(format!(
                "loss {:.4} · logloss {} · {:.2} ms{}",
                s.train_loss,
                s.logloss.map_or("-".into(), |l| format!("{l:.4}")),
                s.seconds * 1e3,
                if s.redone {
                    " · diverged with plain reads: redone with atomic reads"
                } else {
                    ""
                }
            ));
        }
        let stop = trainer.stop_after(&s);
        stats.push(s);
        if stop {
            break;
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if let Some(p) = &model_out {
        trainer.model()?.save(p)?;
    }
    let mut ms: Vec<f64> = stats.iter().map(|s| s.seconds * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let median_ms = ms.get(ms.len() / 2).copied().unwrap_or(f64::NAN);
    let last = stats.last();
    // The check: the last epoch's validation logloss against the twin's, ± 0.003 in sync
    // mode (the same SGD); async mode must reach it (at most 0.003 above: its scaled stale
    // steps may end below the reference).
    let check = last
        .and_then(|s| s.logloss)
        .zip(cpu_logloss.last().copied())
        .map(|(g, c)| {
            let diff = if options.sync { (g - c).abs() } else { g - c };
            (c, diff, diff <= 0.003)
        });
    let failed = check.is_some_and(|c| !c.2);
    if let Some((c, diff, ok)) = check {
        if !ok {
            eprintln!(
                "error: validation logloss differs from the f64 CPU reference ({c:.5}) by \
                 {diff:.5} > 0.003"
            );
        }
    }
    let code = if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    if as_json {
        let rows: Vec<_> = stats
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({
                    "cpu_logloss": cpu_logloss.get(i),
                    "epoch": s.epoch,
                    "train_loss": s.train_loss,
                    "valid_loss": s.valid_loss,
                    "logloss": s.logloss,
                    "auc": s.auc,
                    "auc_bound": s.auc_bound,
                    "epoch_ms": s.seconds * 1e3,
                    "timestamps": s.from_timestamps,
                    "redone": s.redone,
                })
            })
            .collect();
        let mut line = json!({
            "model": spec.name,
            "train": source,
            "n_train": tr.0.nrows,
            "nnz_train": tr.0.nnz(),
            "n_valid": va.as_ref().map_or(0, |v| v.0.nrows),
            "n_features": n_features,
            "batch": options.batch,
            "lr": options.lr,
            "l2": options.l2,
            "ring": options.ring,
            "mode": if options.stage { "stage" } else { "flow" },
            "sync": options.sync,
            "sync_kernel": trainer.sync_kernel().map(|k| k.name()),
            "sync_groups": trainer.sync_groups(),
            "sync_span": options.sync_span,
            "dispatches_all": trainer.epoch_dispatches_all(),
            "async_span": options.async_span,
            "async_groups": trainer.async_groups(),
            "async_scale": options.async_scale,
            "in_flight": trainer.in_flight(),
            "dispatches": trainer.epoch_dispatches(),
            "scaled_features": trainer.scaled_features(),
            "chunk": trainer.chunk(),
            "lanes": options.lanes,
            "hot_features": trainer.hot_features(),
            "variant": options.variant.label(),
            "read_guard": options.read_guard,
            "redone_epochs": stats.iter().filter(|s| s.redone).count(),
            "reads": if options.sync {
                "sync"
            } else if trainer.flow().0.plain_reads {
                "plain"
            } else if options.variant.snapshot_reads {
                "snapshot"
            } else {
                "atomic"
            },
            "diag": options.diag.names(),
            "parts": trainer.parts(),
            "device": gpu.caps.adapter_name,
            "setup_s": setup_s,
            "epochs": rows,
            "epoch_ms_median": median_ms,
            "logloss": last.and_then(|s| s.logloss),
            "auc": last.and_then(|s| s.auc),
            "train_loss": last.map(|s| s.train_loss),
            "cpu_logloss": check.map(|c| c.0),
            "warm_up_seconds": warm_up_s,
            "check_ok": check.map(|c| c.2),
        });
        // Where the setup's seconds went (outside the object above: the macro's recursion).
        line["setup_phases"] = trainer
            .setup_phases()
            .iter()
            .map(|&(k, v)| (k.to_string(), json!(v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        // Async plain writes' bound (`wide::plan::cold_from`), past json!'s recursion limit.
        line["cold_from"] = json!(trainer.cold_from());
        println!("{line}");
        return Ok(code);
    }
    let mut t = crate::cli::table(&["epoch", "train loss", "logloss", "auc", "epoch ms"]);
    let opt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.5}"));
    for s in &stats {
        t.add_row(vec![
            s.epoch.to_string(),
            format!("{:.5}", s.train_loss),
            opt(s.logloss),
            opt(s.auc),
            format!("{:.3}", s.seconds * 1e3),
        ]);
    }
    println!(
        "wide {} on {} ({} samples, {} nnz, {} features), batch {}, lr {}, {}{} mode, chunk {}, {}",
        spec.name,
        source.display(),
        tr.0.nrows,
        tr.0.nnz(),
        n_features,
        options.batch,
        options.lr,
        if options.stage { "stage, " } else { "" },
        match trainer.sync_kernel() {
            Some(wide::SyncKernel::Persistent) =>
                format!("sync (persistent, G = {})", trainer.sync_groups()),
            Some(_) => "sync".into(),
            None => "async".into(),
        },
        trainer.chunk(),
        gpu.caps.adapter_name
    );
    println!("{t}");
    println!("median epoch {median_ms:.3} ms (setup {setup_s:.2} s)");
    let redone: Vec<String> = stats
        .iter()
        .filter(|s| s.redone)
        .map(|s| s.epoch.to_string())
        .collect();
    if !redone.is_empty() {
        println!(
            "plain parameter reads diverged: epoch {} trained again with atomic reads (kept after)",
            redone.join(", ")
        );
    }
    if let Some((c, diff, ok)) = check {
        println!(
            "f64 CPU reference logloss {c:.5}: |Δ| = {diff:.5} ({})",
            if ok { "ok" } else { "FAILED" }
        );
    }
    Ok(code)
}
