//! `wgsparse wide sweep`: times flow-kernel variants ([`wide::FlowVariant`], and the
//! timing-only [`wide::Diag`] switches) on one data set, loaded and chunked once per
//! `max-segment` value, every run restarting from the initial parameters with the same
//! chunk orders. Passes over the run list interleave the runs so drift shows.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use wgsparse::wide::{self, Diag, FlowVariant, Model, SyncKernel, Trainer};
use wgsparse::{Error, Gpu, Result};

/// Arguments of `wgsparse wide sweep`.
#[derive(clap::Args)]
pub struct SweepArgs {
    /// `lr`, `lsvm`, `lsr` or `fm`.
    #[arg(long, default_value = "lr")]
    model: String,
    /// Training data (LIBSVM file or raw CSR folder with labels.f32).
    #[arg(long)]
    train: PathBuf,
    /// Validation data (else --holdout).
    #[arg(long)]
    valid: Option<PathBuf>,
    /// Without --valid, hold out this last fraction of the training samples.
    #[arg(long, default_value_t = 0.1)]
    holdout: f64,
    /// FM rank.
    #[arg(long, default_value_t = 8)]
    k: usize,
    /// Epochs per run.
    #[arg(long, default_value_t = 3)]
    epochs: usize,
    #[arg(long, default_value_t = 1024)]
    batch: usize,
    #[arg(long, default_value_t = 0.5)]
    lr: f32,
    /// Sync mode (default: async, with its chunking).
    #[arg(long)]
    sync: bool,
    /// Async: persistent workgroups.
    #[arg(long, default_value_t = 1024)]
    async_groups: usize,
    /// Invocations per sample [default: the mode's, as `wide train` for the model, at most
    /// 1024 / --max-chunk].
    #[arg(long)]
    lanes: Option<u32>,
    /// Largest chunk [default: the mode's, as `wide train` for the model, at most 1024 /
    /// the most lanes of any run].
    #[arg(long)]
    max_chunk: Option<usize>,
    /// Passes over the run list.
    #[arg(long, default_value_t = 2)]
    passes: usize,
    /// One run (repeatable): comma-separated `default`, `hot-every=R`, `copy-ilp`,
    /// `agg-ilp`, `apply-ilp`, `walk-ilp`, `tail-spread`, `plain-reads`, `coherent-reads`, `snapshot-reads`,
    /// `snapshot-rounds=K`, `max-segment=N`, `tile-words=N`, `slot16`, `slot8`, `apply-whole`, `edge-apply`,
    /// `edge-apply=N` (features 0 .. N keep Apply's segments), `no-fence`, `kernel-copies`, `plain-writes`, `plain-writes=N` (features N.. written
    /// plainly), `diag=A+B` (timing only), `lanes=L` (invocations per sample, same chunks), `cache=N` (the
    /// importance cache's features; default the cost rule), `no-read-guard` (async plain
    /// reads without the divergence guard and its epoch-start copy) and, with --sync,
    /// `sync-kernel=dispatch|persistent` and `sync-groups=G` (the persistent kernel's
    /// workgroups, on the same schedule).
    #[arg(long = "run", required = true)]
    runs: Vec<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Runs `wgsparse wide sweep`: one JSON line per (pass, run) on stdout.
pub fn run(a: SweepArgs) -> Result<ExitCode> {
    let model = match a.model.as_str() {
        "lr" => Model::Lr,
        "lsvm" => Model::Lsvm,
        "lsr" => Model::Lsr,
        "fm" => Model::Fm { k: a.k },
        m => return Err(Error::Option(format!("--model {m}: lr, fm, lsvm or lsr"))),
    };
    model.check()?;
    if !(0.0..1.0).contains(&a.holdout) {
        return Err(Error::Option(format!(
            "--holdout {}: must be in [0, 1)",
            a.holdout
        )));
    }
    let runs: Vec<Run> = a
        .runs
        .iter()
        .map(|r| Run::parse(r))
        .collect::<Result<_>>()?;
    let spec = model.spec()?;
    let base = if a.sync {
        wide::Options::default()
    } else {
        wide::Options::asynchronous_for(&spec)
    };
    // The mode's chunk, narrowed so that the run with the most lanes fits a workgroup.
    let (lanes, _) = base.fit_workgroup(a.lanes, a.max_chunk);
    let widest = runs
        .iter()
        .filter_map(|r| r.lanes)
        .chain([lanes])
        .max()
        .unwrap_or(lanes);
    let options = wide::Options {
        batch: a.batch,
        lr: a.lr,
        async_groups: a.async_groups,
        lanes,
        max_chunk: a.max_chunk.unwrap_or(base.max_chunk_for(widest)),
        early_stop: false,
        seed: a.seed,
        ..base
    };
    for r in &runs {
        wide::Options {
            variant: r.variant,
            lanes: r.lanes.unwrap_or(options.lanes),
            sync_kernel: r.sync_kernel.unwrap_or(options.sync_kernel),
            sync_groups: r.sync_groups.unwrap_or(0),
            ..options.clone()
        }
        .check()
        .map_err(|e| Error::Option(format!("run {:?}: {e}", r.name)))?;
    }
    let (tr, va) = crate::cli::wide::load_split(&a.train, a.valid.as_deref(), a.holdout)?;
    let gpu = Gpu::new()?;
    let n_features = tr.0.ncols.max(va.as_ref().map_or(0, |v| v.0.ncols));
    // One trainer per segment cut and snapshot-read layout (the data chunked once each),
    // built on first use.
    let mut trainers: Vec<(TrainerKey, Trainer, f64)> = vec![];
    let mut failed = false;
    let mut stdout = std::io::stdout().lock();
    for pass in 0..a.passes {
        for run in &runs {
            let (name, variant, diag) = (&run.name, &run.variant, &run.diag);
            let lanes = run.lanes.unwrap_or(options.lanes);
            // The kernel the run trains with (`auto` resolved as a trainer would, with the
            // run's G), so runs of one kernel share a trainer.
            let kernel = wide::sync::resolve(&wide::Options {
                sync_kernel: run.sync_kernel.unwrap_or(options.sync_kernel),
                sync_groups: run.sync_groups.unwrap_or(0),
                ..options.clone()
            });
            let key = (variant.build_key(), kernel);
            let i = match trainers.iter().position(|t| t.0 == key) {
                Some(i) => i,
                None => {
                    let setup = std::time::Instant::now();
                    let t = Trainer::new(
                        &gpu,
                        &spec,
                        n_features,
                        (&tr.0, &tr.1),
                        va.as_ref().map(|v| (&v.0, v.1.as_slice())),
                        wide::Options {
                            variant: *variant,
                            sync_kernel: kernel,
                            ..options.clone()
                        },
                    )?;
                    trainers.push((key, t, setup.elapsed().as_secs_f64()));
                    trainers.len() - 1
                }
            };
            let (_, t, setup_s) = &mut trainers[i];
            let guard = if run.no_read_guard {
                None
            } else {
                options.read_guard
            };
            let result = t
                .set_read_guard(guard)
                .and_then(|_| t.set_sync_groups(run.sync_groups.unwrap_or(0)))
                .and_then(|_| t.restart_with(*variant, *diag, lanes, run.cache))
                // The kernels were just rebuilt on the host: clocks up before the timed epochs.
                .and_then(|_| wgsparse::gpu::warm_clocks(&gpu))
                .and_then(|_| t.fit(a.epochs, |_| {}));
            let mut line = json!({
                "run": name,
                "pass": pass,
                "variant": variant.label(),
                "flags": run.flags(options.variant.slot_bits).join(" "),
                "diag": diag.names(),
                "valid_result": !diag.any() || *diag == Diag::parse("no-tile")?,
                "model": spec.name,
                "sync": options.sync,
                "sync_kernel": t.sync_kernel().map(|k| k.name()),
                "sync_groups": t.sync_groups(),
                "batch": options.batch,
                "chunk": t.chunk(),
                "lanes": lanes,
                "hot_features": t.hot_features(),
                "segment_features": t.segment_features(),
                "cold_from": t.cold_from(),
                "read_guard": t.read_guard(),
                "async_groups": t.async_groups(),
                "in_flight": t.in_flight(),
                "dispatches": t.epoch_dispatches(),
                "n_train": tr.0.nrows,
                "nnz_train": tr.0.nnz(),
                "setup_s": *setup_s,
                "device": gpu.caps.adapter_name,
            });
            match result {
                Ok(stats) => {
                    let ms: Vec<f64> = stats.iter().map(|s| s.seconds * 1e3).collect();
                    let mut sorted = ms.clone();
                    sorted.sort_by(f64::total_cmp);
                    let last = stats.last();
                    line["epoch_ms"] = json!(ms);
                    line["epoch_ms_min"] = json!(sorted.first());
                    line["epoch_ms_median"] = json!(sorted.get(sorted.len() / 2));
                    line["timestamps"] = json!(last.map(|s| s.from_timestamps));
                    line["logloss"] = json!(last.and_then(|s| s.logloss));
                    line["auc"] = json!(last.and_then(|s| s.auc));
                    line["train_loss"] = json!(last.map(|s| s.train_loss));
                    // Epochs the divergence guard trained again with atomic reads.
                    line["redone_epochs"] = json!(stats.iter().filter(|s| s.redone).count());
                }
                Err(e) => {
                    eprintln!("error: run {name:?} (pass {pass}): {e}");
                    line["error"] = json!(e.to_string());
                    // The trainer kept the previous run's G and dispatch count when this
                    // run's settings were refused: report what was asked, not those.
                    if let Some(g) = run.sync_groups {
                        line["sync_groups"] = json!(g);
                    }
                    line["dispatches"] = serde_json::Value::Null;
                    failed |= !diag.any();
                }
            }
            writeln!(stdout, "{line}").map_err(|e| Error::io("stdout", e))?;
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What a sweep's trainer is built for: the variant's build key and the sync kernel.
type TrainerKey = (wide::variant::BuildKey, SyncKernel);

/// One run of a sweep: its name as given, the flow variant, the timing-only switches, and
/// the lanes and cache it asks for.
struct Run {
    name: String,
    variant: FlowVariant,
    diag: Diag,
    lanes: Option<u32>,
    cache: Option<usize>,
    /// The divergence guard off (`no-read-guard`).
    no_read_guard: bool,
    /// Sync mode's kernel and the persistent one's workgroups, when the run names them.
    sync_kernel: Option<SyncKernel>,
    sync_groups: Option<usize>,
}

impl Run {
    /// The `wgsparse wide train` flags of this run (not its timing-only switches), in a mode
    /// whose default slots are `default_slot_bits` wide.
    fn flags(&self, default_slot_bits: u32) -> Vec<String> {
        let mut f = self.variant.flags();
        // A run's variant starts from 32-bit slots; the async default packs them.
        if self.variant.slot_bits == 32 && default_slot_bits != 32 {
            f.push("--slot32".into());
        }
        if let Some(l) = self.lanes {
            f.extend(["--lanes".into(), l.to_string()]);
        }
        if let Some(c) = self.cache {
            f.extend(["--cache".into(), c.to_string()]);
        }
        if self.no_read_guard {
            f.push("--no-read-guard".into());
        }
        if let Some(k) = self.sync_kernel {
            f.extend(["--sync-kernel".into(), k.name().into()]);
        }
        if let Some(g) = self.sync_groups {
            f.extend(["--sync-groups".into(), g.to_string()]);
        }
        f
    }

    /// `lanes=L`, `cache=N`, `no-read-guard`, `sync-kernel=K` and `sync-groups=G` taken
    /// out, the rest as
    /// [`FlowVariant::parse_run`] reads it.
    fn parse(run: &str) -> Result<Self> {
        let (mut lanes, mut cache) = (None, None);
        let (mut sync_kernel, mut sync_groups) = (None, None);
        let mut no_read_guard = false;
        let mut rest = vec![];
        for token in run.split(',').map(str::trim) {
            let count = |v: &str| {
                v.parse::<usize>()
                    .map_err(|_| Error::Option(format!("run {run:?}: {token} is not a count")))
            };
            match token.split_once('=') {
                Some(("lanes", v)) => {
                    lanes = Some(u32::try_from(count(v)?).map_err(|_| {
                        Error::Option(format!("run {run:?}: {token} is out of range"))
                    })?)
                }
                Some(("cache", v)) => cache = Some(count(v)?),
                Some(("sync-kernel", v)) => sync_kernel = Some(SyncKernel::parse(v)?),
                Some(("sync-groups", v)) => sync_groups = Some(count(v)?),
                None if token == "no-read-guard" => no_read_guard = true,
                _ => rest.push(token),
            }
        }
        let (variant, diag) = FlowVariant::parse_run(&rest.join(","))?;
        Ok(Run {
            name: run.to_string(),
            variant,
            diag,
            lanes,
            cache,
            no_read_guard,
            sync_kernel,
            sync_groups,
        })
    }
}
