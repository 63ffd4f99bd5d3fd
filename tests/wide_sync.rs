//! `wide` sync mode's persistent kernel (many mini-batches per dispatch, gradient and update
//! of each separated by grid barriers): at G = 1 equal to the f64 twin's exact mini-batch
//! SGD and to the per-mini-batch dispatch path, for LR and FM, on both atomic paths, with
//! empty samples and chunks, one feature in every sample, short last mini-batches and every
//! span; G > 1 where the adapter allows the grid barrier (a discrete GPU), its refusal
//! elsewhere. Sized for lavapipe.

mod common;

use common::wide::{assert_matches_twin, data, random_start, trainer};
use wgsparse::sparse::Csr;
use wgsparse::wide::sync::grid_barrier_allowed;
use wgsparse::wide::{cpu, metrics, FlowVariant, Model, Options, SyncKernel, Trainer};
use wgsparse::{Error, Gpu};

const M: usize = 120;
/// Mini-batches of 48 samples in chunks of 16: three workgroups' share each.
const BATCH: usize = 48;

/// Sync options over `BATCH`, chunks of 16, the given kernel and (persistent) G and span.
fn options(kernel: SyncKernel, groups: usize, span: usize) -> Options {
    Options {
        batch: BATCH,
        max_chunk: 16,
        lr: 0.5,
        sync_kernel: kernel,
        sync_groups: groups,
        sync_span: span,
        ..Options::default()
    }
}

/// Random starting parameters (every gradient term exercised) in f32 and f64.
fn start(model: Model, seed: u64) -> (Vec<f32>, Vec<f64>) {
    random_start(&model.spec().unwrap(), M, seed, 0.3)
}

/// One epoch (shuffled chunk order) from `start` with `options`; returns the trainer's
/// parameters, the twin's after replaying the epoch's mini-batches as exact SGD, the
/// mean training loss and the trainer (for its counts).
fn epoch_vs_twin<'g>(
    gpu: &'g Gpu,
    model: Model,
    (x, y01): (&Csr, &[f32]),
    options: Options,
    seed: u64,
) -> (Vec<f32>, Vec<f64>, f64, Trainer<'g>) {
    let spec = model.spec().unwrap();
    let mut t = Trainer::new(gpu, &spec, M, (x, y01), None, options).unwrap();
    let (s, mut want) = start(model, seed);
    t.set_params(&s).unwrap();
    let (loss, _) = t.train_epoch().unwrap();
    let got = t.params().unwrap();
    let y = metrics::labels_pm1(y01);
    for rows in t.last_minibatches() {
        cpu::sgd_step(model, &mut want, x, &y, &rows, 0.5);
    }
    (got, want, loss, t)
}

/// Power-law data of `n` samples (feature 0 in every sample, every 7th sample empty).
fn samples(n: usize, seed: u64) -> (Csr, Vec<f32>) {
    data(n, M, 7, seed)
}

#[test]
fn persistent_g1_equals_twin_over_many_minibatches_in_one_dispatch() {
    // 5 mini-batches, the last of 20 samples (a chunk of 16 and one of 4): all in one
    // dispatch, each mini-batch's 1/B its own.
    let (x, y) = samples(4 * BATCH + 20, 3);
    for (model, gpu) in [
        (Model::Lr, common::gpu()),
        (Model::Fm { k: 4 }, common::gpu()),
        (Model::Lsvm, common::gpu()),
        (Model::Fm { k: 3 }, common::gpu_plain()),
    ] {
        let o = options(SyncKernel::Persistent, 1, 0);
        let (got, want, loss, t) = epoch_vs_twin(gpu, model, (&x, &y), o, 11);
        assert_eq!(t.sync_kernel(), Some(SyncKernel::Persistent));
        assert_eq!(t.sync_groups(), 1);
        assert_eq!(t.last_minibatches().len(), 5);
        assert_eq!(t.epoch_dispatches(), 1, "one dispatch per part and epoch");
        assert_eq!(t.epoch_dispatches_all(), 1, "no apply dispatches");
        assert!(loss.is_finite());
        assert_matches_twin(&got, &want, &format!("{model:?} persistent G = 1"));
    }
}

#[test]
fn persistent_g1_equals_twin_on_the_cas_path() {
    let (x, y) = samples(3 * BATCH, 5);
    let model = Model::Fm { k: 5 };
    let o = Options {
        native_atomics: false,
        ..options(SyncKernel::Persistent, 1, 0)
    };
    let (got, want, _, _) = epoch_vs_twin(common::gpu(), model, (&x, &y), o, 17);
    assert_matches_twin(&got, &want, "FM persistent G = 1, CAS");
}

#[test]
fn persistent_equals_the_dispatch_path() {
    let (x, y) = samples(4 * BATCH + 33, 7);
    for model in [Model::Lr, Model::Fm { k: 4 }] {
        let (a, _, loss_a, ta) = epoch_vs_twin(
            common::gpu(),
            model,
            (&x, &y),
            options(SyncKernel::Persistent, 1, 0),
            19,
        );
        let (b, want, loss_b, tb) = epoch_vs_twin(
            common::gpu(),
            model,
            (&x, &y),
            options(SyncKernel::Dispatch, 0, 0),
            19,
        );
        // Same seed, same chunk orders.
        assert_eq!(ta.last_minibatches(), tb.last_minibatches());
        assert_eq!(tb.sync_kernel(), Some(SyncKernel::Dispatch));
        assert_eq!(tb.epoch_dispatches(), 5);
        assert_eq!(
            tb.epoch_dispatches_all(),
            10,
            "a flow and an apply per mini-batch"
        );
        assert_matches_twin(&b, &want, &format!("{model:?} dispatch"));
        for (i, (&p, &d)) in a.iter().zip(&b).enumerate() {
            assert!(
                (p - d).abs() <= 2e-5 * d.abs() + 2e-6,
                "{model:?} θ{i}: persistent {p} dispatch {d}"
            );
        }
        assert!(
            (loss_a - loss_b).abs() <= 1e-5 * loss_b.abs(),
            "{loss_a} vs {loss_b}"
        );
    }
}

#[test]
fn span_boundaries_equal_twin() {
    // 7 mini-batches (the last short) in spans of 1, 2, 3, 7 and 9 mini-batches.
    let (x, y) = samples(6 * BATCH + 17, 13);
    let model = Model::Fm { k: 2 };
    for (span, dispatches) in [(1, 7), (2, 4), (3, 3), (7, 1), (9, 1)] {
        let o = options(SyncKernel::Persistent, 1, span);
        let (got, want, _, t) = epoch_vs_twin(common::gpu(), model, (&x, &y), o, 23);
        assert_eq!(t.epoch_dispatches(), dispatches, "span {span}");
        assert_matches_twin(&got, &want, &format!("span {span}"));
    }
}

#[test]
fn empty_samples_and_an_empty_chunk_equal_twin() {
    // The first chunk (16 samples) empty besides every 7th sample emptied: its mini-batch
    // moves the bias alone through those samples, and 1/B still counts them.
    let (x, y) = samples(3 * BATCH, 29);
    let mut row_ptr = vec![0u32; 17];
    let (mut col_idx, mut values) = (vec![], vec![]);
    for i in 16..x.nrows {
        col_idx.extend_from_slice(&x.col_idx[x.row_range(i)]);
        values.extend_from_slice(&x.values[x.row_range(i)]);
        row_ptr.push(col_idx.len() as u32);
    }
    let x = Csr::new(x.nrows, M, row_ptr, col_idx, values).unwrap();
    for model in [Model::Lr, Model::Fm { k: 3 }] {
        let o = options(SyncKernel::Persistent, 1, 0);
        let (got, want, loss, _) = epoch_vs_twin(common::gpu(), model, (&x, &y), o, 31);
        assert!(loss.is_finite());
        assert_matches_twin(&got, &want, &format!("{model:?} empty chunk"));
    }
}

#[test]
fn one_feature_in_every_sample_over_many_minibatches() {
    // Every sample holds feature 0 (the data's maximum contention) and nothing else: each
    // mini-batch's every chunk adds into one gradient, taken once.
    let n = 4 * BATCH;
    let (_, y) = samples(n, 37);
    let row_ptr: Vec<u32> = (0..=n as u32).collect();
    let values: Vec<f32> = (0..n).map(|i| 0.5 + (i % 5) as f32 * 0.25).collect();
    let x = Csr::new(n, M, row_ptr, vec![0; n], values).unwrap();
    for model in [Model::Lr, Model::Fm { k: 3 }] {
        let o = options(SyncKernel::Persistent, 1, 0);
        let (got, want, _, _) = epoch_vs_twin(common::gpu(), model, (&x, &y), o, 41);
        assert_matches_twin(&got, &want, &format!("{model:?} one feature"));
    }
}

#[test]
fn parts_beyond_one_binding_each_take_one_dispatch() {
    // 8 KiB bindings cut the data into parts; one persistent dispatch per part, the
    // mini-batches (in the parts' shuffled order) equal to the twin's.
    let (x, y) = samples(12 * BATCH, 43);
    let gpu = common::gpu_small_bindings();
    let model = Model::Lr;
    let o = options(SyncKernel::Persistent, 1, 0);
    let (got, want, _, t) = epoch_vs_twin(gpu, model, (&x, &y), o, 47);
    assert!(t.parts() > 1, "{} parts", t.parts());
    assert_eq!(t.epoch_dispatches(), t.parts());
    assert_matches_twin(&got, &want, "parts");
}

#[test]
fn l2_equals_twin_in_the_persistent_kernel() {
    let (x, y01) = samples(3 * BATCH + 5, 53);
    let model = Model::Fm { k: 3 };
    let spec = model.spec().unwrap();
    let o = Options {
        l2: 0.05,
        ..options(SyncKernel::Persistent, 1, 2)
    };
    let mut t = trainer(&spec, M, (&x, &y01), None, o);
    let (s, mut want) = start(model, 59);
    t.set_params(&s).unwrap();
    t.train_epoch().unwrap();
    let y = metrics::labels_pm1(&y01);
    let mut sgd = cpu::Sgd::new(want.len()).with_l2(0.05);
    for rows in t.last_minibatches() {
        sgd.step(model, &mut want, &x, &y, &rows, 0.5);
    }
    assert_matches_twin(&t.params().unwrap(), &want, "FM L2 persistent");
}

/// G > 1: where the adapter may run the grid barrier, every G up to a mini-batch's chunks
/// and beyond it (idle workgroups still meet at every barrier) equals the twin; elsewhere
/// (lavapipe) the trainer refuses it, naming the option and the device, before training.
#[test]
fn persistent_g_above_1_equals_twin_or_is_refused() {
    let gpu = common::gpu();
    let (x, y) = samples(5 * BATCH + 9, 61);
    let spec = Model::Fm { k: 3 }.spec().unwrap();
    // The default kernel dispatches per mini-batch everywhere until the grid barrier has
    // been checked on a GPU (`sync::resolve`).
    let t = trainer(&spec, M, (&x, &y), None, Options::default());
    assert_eq!(t.sync_kernel(), Some(SyncKernel::Dispatch));
    if !grid_barrier_allowed(gpu) {
        for g in [2, 8] {
            let e = Trainer::new(
                gpu,
                &spec,
                M,
                (&x, &y),
                None,
                options(SyncKernel::Persistent, g, 0),
            )
            .err()
            .expect("G > 1 refused without a discrete GPU");
            assert!(matches!(e, Error::Option(_)), "{e}");
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("sync_groups {g}")) && msg.contains("discrete"),
                "{msg}"
            );
        }
        // The persistent kernel's default G is 1 there, and valid.
        let t = trainer(
            &spec,
            M,
            (&x, &y),
            None,
            options(SyncKernel::Persistent, 0, 0),
        );
        assert_eq!(t.sync_groups(), 1);
        return;
    }
    for model in [Model::Lr, Model::Fm { k: 3 }] {
        for (g, span) in [(2, 0), (3, 0), (5, 2), (64, 0)] {
            let o = options(SyncKernel::Persistent, g, span);
            let (got, want, _, t) = epoch_vs_twin(gpu, model, (&x, &y), o, 67);
            assert_eq!(t.sync_groups(), g);
            assert_matches_twin(&got, &want, &format!("{model:?} G = {g} span {span}"));
        }
    }
    // The persistent kernel's default G: a mini-batch's chunks (3).
    let t = trainer(
        &spec,
        M,
        (&x, &y),
        None,
        options(SyncKernel::Persistent, 0, 0),
    );
    assert_eq!(t.sync_groups(), 3);
    // Beyond the resident workgroups (yet within the barrier's 65,535): refused.
    let e = Trainer::new(
        gpu,
        &spec,
        M,
        (&x, &y),
        None,
        options(SyncKernel::Persistent, 60_000, 0),
    )
    .err()
    .expect("G beyond the resident workgroups refused");
    assert!(e.to_string().contains("resident"), "{e}");
}

#[test]
fn sync_kernel_settings_are_checked() {
    let gpu = common::gpu();
    let (x, y) = samples(BATCH, 71);
    let spec = Model::Lr.spec().unwrap();
    for o in [
        Options {
            sync: false,
            sync_groups: 1,
            ..Options::default()
        },
        Options {
            stage: true,
            sync_span: 2,
            ..Options::default()
        },
        options(SyncKernel::Dispatch, 2, 0),
    ] {
        let e = Trainer::new(gpu, &spec, M, (&x, &y), None, o)
            .err()
            .expect("refused");
        assert!(
            matches!(&e, Error::Option(m) if m.contains("persistent sync kernel")),
            "{e}"
        );
    }
    assert_eq!(SyncKernel::parse("dispatch").unwrap(), SyncKernel::Dispatch);
    assert_eq!(SyncKernel::parse("auto").unwrap(), SyncKernel::Auto);
    assert!(SyncKernel::parse("grid").is_err());
    // The stage baseline dispatches per mini-batch (4 dispatches each).
    let t = trainer(
        &spec,
        M,
        (&x, &y),
        None,
        Options {
            stage: true,
            ..options(SyncKernel::Persistent, 0, 0)
        },
    );
    assert_eq!(t.sync_kernel(), Some(SyncKernel::Dispatch));
    assert_eq!(t.epoch_dispatches_all(), 4);
}

#[test]
fn cli_json_reports_the_sync_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ctr.svm");
    let path = path.to_str().unwrap();
    let (ok, _, err) = common::wgsparse(&[
        "gen",
        "ctr",
        "--samples",
        "192",
        "--features",
        "120",
        "--nnz-per-sample",
        "7",
        "--out",
        path,
    ]);
    assert!(ok, "{err}");
    let run = |extra: &[&str]| {
        let mut args = vec!["wide", "train", "--model", "lr", "--epochs", "1"];
        args.extend([
            "--batch",
            "48",
            "--max-chunk",
            "16",
            "--json",
            "--train",
            path,
        ]);
        args.extend_from_slice(extra);
        common::wgsparse(&args)
    };
    let json = |out: &str| -> serde_json::Value { serde_json::from_str(out).unwrap() };
    let (ok, out, err) = run(&["--sync-groups", "1"]);
    assert!(ok, "{err}");
    let j = json(&out);
    assert_eq!(j["sync_kernel"], "persistent", "{j}");
    assert_eq!(j["sync_groups"], 1, "{j}");
    assert_eq!(j["dispatches"], 1, "{j}");
    assert_eq!(j["dispatches_all"], 1, "{j}");
    let (ok, out, err) = run(&["--sync-kernel", "dispatch"]);
    assert!(ok, "{err}");
    let j = json(&out);
    assert_eq!(j["sync_kernel"], "dispatch", "{j}");
    assert_eq!(j["sync_groups"], 0, "{j}");
    assert_eq!(j["dispatches"], 4, "{j}");
    assert_eq!(j["dispatches_all"], 8, "{j}");
    // The default: dispatch until the grid barrier has been checked on a discrete GPU.
    let (ok, out, err) = run(&[]);
    assert!(ok, "{err}");
    assert_eq!(json(&out)["sync_kernel"], "dispatch", "{out}");
    let (ok, out, err) = run(&["--async"]);
    assert!(ok, "{err}");
    assert!(json(&out)["sync_kernel"].is_null(), "{out}");
    if !grid_barrier_allowed(common::gpu()) {
        // G > 1 refused with a non-zero exit, naming the option.
        let (ok, _, err) = run(&["--sync-groups", "4"]);
        assert!(!ok);
        assert!(err.contains("sync_groups 4"), "{err}");
    }
    // `wide sweep --sync` of two runs on the same chunk orders (batch 48, chunks of 16).
    let sweep = |epochs: &str, runs: [&str; 2]| {
        common::wgsparse(&[
            "wide",
            "sweep",
            "--sync",
            "--train",
            path,
            "--batch",
            "48",
            "--max-chunk",
            "16",
            "--epochs",
            epochs,
            "--passes",
            "1",
            "--run",
            runs[0],
            "--run",
            runs[1],
        ])
    };
    // `wide sweep` runs both kernels on the same chunk orders: the same validation logloss.
    let (ok, out, err) = sweep(
        "2",
        [
            "sync-kernel=dispatch",
            "sync-kernel=persistent,sync-groups=1",
        ],
    );
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out.lines().map(json).collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["sync_kernel"], "dispatch", "{out}");
    assert_eq!(lines[1]["sync_kernel"], "persistent", "{out}");
    assert_eq!(lines[1]["dispatches"], 1, "{out}");
    let (a, b) = (
        lines[0]["logloss"].as_f64().unwrap(),
        lines[1]["logloss"].as_f64().unwrap(),
    );
    assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
    // A run after a G = 1 run reports its own G: where G = 4 is refused, its line names the
    // error, G = 4 and no dispatch count (not the G = 1 run's).
    let (ok, out, err) = sweep(
        "1",
        [
            "sync-kernel=persistent,sync-groups=1",
            "sync-kernel=persistent,sync-groups=4",
        ],
    );
    let lines: Vec<serde_json::Value> = out.lines().map(json).collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[1]["sync_groups"], 4, "{out}");
    if grid_barrier_allowed(common::gpu()) {
        assert!(ok, "{err}");
        assert_eq!(lines[1]["dispatches"], 1, "{out}");
    } else {
        assert!(!ok);
        assert!(
            lines[1]["error"]
                .as_str()
                .unwrap()
                .contains("sync_groups 4"),
            "{out}"
        );
        assert!(lines[1]["dispatches"].is_null(), "{out}");
    }
}

/// A span long enough that llvmpipe (lavapipe) ends the kernel's loops early (it caps a
/// shader invocation's loop iterations at 65,535 in all): the epoch is an error naming the
/// completed mini-batches, never a silently short epoch. Where the device runs it whole, the
/// epoch equals the dispatch path's.
#[test]
fn a_persistent_dispatch_cut_short_is_an_error() {
    use wgsparse::gen::{zipf_ctr, CtrModel};
    let (n, m) = (36_000, 1_000);
    let d = zipf_ctr(n, m, 16, CtrModel::Lr, 43).unwrap();
    let spec = Model::Lr.spec().unwrap();
    let run = |kernel: SyncKernel| {
        let o = Options {
            batch: 64,
            sync_kernel: kernel,
            sync_groups: if kernel == SyncKernel::Persistent {
                1
            } else {
                0
            },
            ..Options::default()
        };
        let mut t = trainer(&spec, m, (&d.features, &d.labels), None, o);
        t.train_epoch().map(|_| t.params().unwrap())
    };
    let reference = run(SyncKernel::Dispatch).unwrap();
    match run(SyncKernel::Persistent) {
        Ok(p) => {
            for (i, (&a, &b)) in p.iter().zip(&reference).enumerate() {
                assert!((a - b).abs() <= 2e-5 * b.abs() + 2e-6, "θ{i}: {a} vs {b}");
            }
        }
        Err(e) => {
            eprintln!("cut short on this device: {e}");
            assert!(matches!(e, Error::Gpu { .. }), "{e}");
            assert!(
                e.to_string().contains("of the epoch's 563 mini-batches"),
                "{e}"
            );
        }
    }
}

/// The persistent kernel's coherent reads (plain `@coherent` loads through a second binding
/// instead of atomic loads) equal the twin's SGD; the dispatch kernel, whose parameters do
/// not move during a dispatch, refuses them, and plain reads without the decoration are
/// refused in sync mode.
#[test]
fn coherent_reads_in_the_persistent_kernel_equal_twin() {
    let gpu = common::gpu();
    let (x, y) = samples(4 * BATCH + 12, 79);
    let coherent = FlowVariant {
        plain_reads: true,
        coherent_reads: true,
        ..FlowVariant::default()
    };
    for model in [Model::Lr, Model::Fm { k: 3 }] {
        let o = Options {
            variant: coherent,
            ..options(SyncKernel::Persistent, 1, 2)
        };
        if !gpu.caps.coherent {
            let spec = model.spec().unwrap();
            let e = Trainer::new(gpu, &spec, M, (&x, &y), None, o)
                .err()
                .unwrap();
            assert!(e.to_string().contains("@coherent"), "{e}");
            continue;
        }
        let (got, want, _, _) = epoch_vs_twin(gpu, model, (&x, &y), o, 83);
        assert_matches_twin(&got, &want, &format!("{model:?} coherent reads"));
    }
    for (kernel, variant) in [
        (SyncKernel::Dispatch, coherent),
        (
            SyncKernel::Persistent,
            FlowVariant {
                plain_reads: true,
                ..FlowVariant::default()
            },
        ),
    ] {
        let o = Options {
            variant,
            ..options(kernel, 0, 0)
        };
        let e = o.check().unwrap_err().to_string();
        assert!(
            e.contains("plain_reads") || e.contains("coherent_reads"),
            "{e}"
        );
    }
}
