//! `wide` (the twin's formulas: `wide_formulas.rs`): every shipped model in sync mode against one exact SGD
//! step of the twin on both atomic paths, async mode's exact steps, parts, one-hot data, the
//! tile's overflow, L2 and the staging ring against the twin, a user-defined model. Sized
//! for lavapipe.

mod common;

use common::wide::{
    assert_matches_twin, data, epoch_from, random_params, random_start, trainer, twin, user_model,
};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::gpu::preprocess;
use wgsparse::wide::{
    cpu, initial_params, metrics, plan, Model, ModelSpec, Options, SyncKernel, Trainer,
};
use wgsparse::Gpu;

#[test]
fn every_model_validates_in_every_engine_variant() {
    let specs: Vec<ModelSpec> = [
        Model::Lr,
        Model::Fm { k: 1 },
        Model::Fm { k: 32 },
        Model::Lsvm,
        Model::Lsr,
    ]
    .iter()
    .map(|m| m.spec().unwrap())
    .chain([user_model()])
    .collect();
    for spec in &specs {
        let sources = [("wide/model", spec.wgsl.as_str())];
        for name in [
            "wide/flow",
            "wide/apply",
            "wide/stage_aggregate",
            "wide/stage_loss",
            "wide/stage_grad",
        ] {
            for defines in [
                vec![],
                vec!["SUBGROUP", "F32_ATOMIC"],
                vec!["ASYNC"],
                vec!["ASYNC", "F32_ATOMIC"],
                vec!["PREDICT", "SUBGROUP"],
                vec!["ONE_HOT", "SUBGROUP", "F32_ATOMIC"],
                vec!["ONE_HOT", "ASYNC"],
                vec!["ONE_HOT", "PREDICT"],
                vec!["PERSISTENT"],
                vec![
                    "PERSISTENT",
                    "ONE_HOT",
                    "SUBGROUP",
                    "F32_ATOMIC",
                    "APPLY_ILP",
                ],
                // The flow variants, all at once, in either mode.
                vec![
                    "ASYNC",
                    "F32_ATOMIC",
                    "PLAIN_READS",
                    "HOT_LOCAL",
                    "COPY_ILP",
                    "AGG_ILP",
                    "APPLY_ILP",
                    "TAIL_SPREAD",
                ],
                vec![
                    "ONE_HOT",
                    "ASYNC",
                    "SNAPSHOT_READS",
                    "HOT_LOCAL",
                    "APPLY_ILP",
                ],
                vec!["ASYNC", "F32_ATOMIC", "SUBGROUP", "SNAPSHOT_READS"],
                // Plain writes of the cold features: every Apply path, both atomic paths.
                vec![
                    "ASYNC",
                    "F32_ATOMIC",
                    "PLAIN_READS",
                    "PLAIN_WRITES",
                    "HOT_LOCAL",
                    "APPLY_WHOLE",
                ],
                vec![
                    "ONE_HOT",
                    "ASYNC",
                    "PLAIN_READS",
                    "COHERENT_READS",
                    "PLAIN_WRITES",
                    "APPLY_ILP",
                    "EDGE_APPLY",
                ],
                vec![
                    "ONE_HOT",
                    "SUBGROUP",
                    "COPY_ILP",
                    "AGG_ILP",
                    "APPLY_ILP",
                    "TAIL_SPREAD",
                ],
                // The timing-only switches.
                vec![
                    "ONE_HOT",
                    "ASYNC",
                    "DIAG_SKIP_APPLY",
                    "DIAG_SKIP_AGGREGATE",
                    "DIAG_NO_HOT_COPY",
                    "DIAG_NO_TILE",
                    "DIAG_SKIP_TAIL",
                    "NO_FENCE",
                ],
            ] {
                let wgsl = preprocess::preprocess_with(name, &defines, &sources).unwrap();
                preprocess::validate(name, &wgsl)
                    .unwrap_or_else(|e| panic!("{} {name} {defines:?}:\n{e}", spec.name));
            }
        }
    }
}

/// Sync mode over `batches` mini-batches of 48 (chunks of 16) in order against the twin.
fn sync_vs_twin(gpu: &Gpu, model: Model, user: bool, native_atomics: bool, batches: usize) {
    vs_twin(gpu, model, user, native_atomics, batches, false)
}

/// As [`sync_vs_twin`], through the flow kernel (both sync kernels: persistent at the
/// adapter's default G, and a dispatch per mini-batch) or the stage baseline.
fn vs_twin(gpu: &Gpu, model: Model, user: bool, native_atomics: bool, batches: usize, stage: bool) {
    let kernels: &[SyncKernel] = if stage {
        &[SyncKernel::Dispatch]
    } else {
        &[SyncKernel::Persistent, SyncKernel::Dispatch]
    };
    for &kernel in kernels {
        vs_twin_with(gpu, model, user, native_atomics, batches, stage, kernel);
    }
}

fn vs_twin_with(
    gpu: &Gpu,
    model: Model,
    user: bool,
    native_atomics: bool,
    batches: usize,
    stage: bool,
    sync_kernel: SyncKernel,
) {
    let (m, batch) = (120, 48);
    let (x, y01) = data(batch * batches, m, 7, 11);
    let y = metrics::labels_pm1(&y01);
    let spec = if user {
        user_model()
    } else {
        model.spec().unwrap()
    };
    let options = Options {
        batch,
        max_chunk: 16,
        lr: 0.5,
        shuffle: false,
        native_atomics,
        stage,
        sync_kernel,
        ..Options::default()
    };
    let mut t = Trainer::new(gpu, &spec, m, (&x, &y01), None, options).unwrap();
    // The cost rule caches the features seen at least once per chunk on average here.
    assert!(t.hot_features() > 0);
    let init = initial_params(&spec, m, 7).unwrap();
    // Random start so every term of the gradient is exercised.
    let start: Vec<f32> = random_params(&spec, m, 13)
        .iter()
        .zip(&init)
        .map(|(r, _)| (*r * 0.3) as f32)
        .collect();
    t.set_params(&start).unwrap();
    let (loss, _) = t.train_epoch().unwrap();
    let got = t.params().unwrap();
    let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
    twin(model, user, &mut want, &x, &y, batch, 0.5);
    let mut worst = 0.0f64;
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let err = (g as f64 - w).abs();
        let tol = 1e-5 * w.abs() + 1e-6;
        worst = worst.max(err / tol);
        assert!(
            err <= tol,
            "{} (native atomics {native_atomics}, {}) θ{i}: GPU {g} twin {w}",
            spec.name,
            sync_kernel.name()
        );
    }
    assert!(loss.is_finite());
    eprintln!("{}: worst error {worst:.3} of tolerance", spec.name);
}

#[test]
fn sync_one_minibatch_equals_twin_every_model() {
    for model in [Model::Lr, Model::Fm { k: 4 }, Model::Lsvm, Model::Lsr] {
        sync_vs_twin(common::gpu(), model, false, true, 1);
    }
}

#[test]
fn sync_minibatches_equal_twin_cas_path_no_subgroups() {
    sync_vs_twin(common::gpu_plain(), Model::Lr, false, true, 3);
    sync_vs_twin(common::gpu_plain(), Model::Fm { k: 3 }, false, true, 2);
}

/// Async mode's update path: with one chunk in the epoch there is nothing to race with, so
/// the epoch is one exact SGD step of the twin.
#[test]
fn async_single_chunk_equals_twin_step() {
    let m = 60;
    let (x, y01) = data(16, m, 6, 23);
    let y = metrics::labels_pm1(&y01);
    for (model, gpu) in [
        (Model::Lr, common::gpu()),
        (Model::Fm { k: 4 }, common::gpu()),
        (Model::Fm { k: 2 }, common::gpu_plain()),
    ] {
        let spec = model.spec().unwrap();
        let options = Options {
            batch: 16,
            max_chunk: 16,
            sync: false,
            ..Options::default()
        };
        let mut t = Trainer::new(gpu, &spec, m, (&x, &y01), None, options).unwrap();
        let (start, mut want) = random_start(&spec, m, 5, 0.3);
        let got = epoch_from(&mut t, &start);
        cpu::sgd_step(model, &mut want, &x, &y, &(0..16).collect::<Vec<_>>(), 0.5);
        assert_matches_twin(&got, &want, &spec.name);
    }
}

/// The importance cache's boundary: a few hot features cached, the rest read globally.
#[test]
fn sync_equals_twin_with_a_small_cache() {
    let (m, batch) = (120, 48);
    let (x, y01) = data(batch * 2, m, 7, 17);
    let y = metrics::labels_pm1(&y01);
    let model = Model::Fm { k: 3 };
    let spec = model.spec().unwrap();
    for cache in [0, 5] {
        let options = Options {
            batch,
            max_chunk: 16,
            shuffle: false,
            cache: Some(cache),
            ..Options::default()
        };
        let mut t = trainer(&spec, m, (&x, &y01), None, options);
        assert_eq!(t.hot_features(), cache);
        let (start, mut want) = random_start(&spec, m, 3, 0.3);
        let got = epoch_from(&mut t, &start);
        twin(model, false, &mut want, &x, &y, batch, 0.5);
        assert_matches_twin(&got, &want, &format!("cache {cache}"));
    }
}

#[test]
fn sync_minibatches_equal_twin_cas_forced() {
    sync_vs_twin(common::gpu(), Model::Fm { k: 8 }, false, false, 3);
}

#[test]
fn stage_baseline_equals_twin() {
    for model in [Model::Lr, Model::Fm { k: 4 }, Model::Lsvm] {
        vs_twin(common::gpu(), model, false, true, 2, true);
    }
    vs_twin(
        common::gpu_plain(),
        Model::Fm { k: 2 },
        false,
        true,
        2,
        true,
    );
}

#[test]
fn user_defined_model_equals_its_twin() {
    sync_vs_twin(common::gpu(), Model::Lr, true, true, 2);
}

#[test]
fn gpu_logloss_at_zero_is_ln2() {
    let (x, y) = data(300, 80, 6, 21);
    let spec = Model::Lr.spec().unwrap();
    let t = trainer(&spec, 80, (&x, &y), Some((&x, &y)), Options::default());
    let e = t.evaluate().unwrap().unwrap();
    let (loss, logloss) = (e.loss, e.logloss);
    assert!((loss - std::f64::consts::LN_2).abs() < 1e-6, "{loss}");
    assert!((logloss - std::f64::consts::LN_2).abs() < 1e-6, "{logloss}");
}

/// Training data beyond one storage binding (8 KiB here) is cut into parts; two shuffled sync
/// epochs equal the twin replaying the same mini-batches.
#[test]
fn parts_beyond_one_binding_equal_twin() {
    let gpu = common::gpu_small_bindings();
    let (m, batch) = (120, 48);
    let (x, y01) = data(720, m, 7, 91);
    let y = metrics::labels_pm1(&y01);
    for model in [Model::Lr, Model::Fm { k: 3 }] {
        let spec = model.spec().unwrap();
        let options = Options {
            batch,
            max_chunk: 16,
            ..Options::default()
        };
        let mut t = Trainer::new(gpu, &spec, m, (&x, &y01), None, options).unwrap();
        assert!(t.parts() >= 3, "{} parts", t.parts());
        let mut want: Vec<f64> = t.params().unwrap().iter().map(|&v| v as f64).collect();
        let mut sgd = cpu::Sgd::new(want.len());
        for _ in 0..2 {
            t.train_epoch().unwrap();
            let batches = t.last_minibatches();
            assert_eq!(batches.iter().map(|b| b.len()).sum::<usize>(), 720);
            for rows in batches {
                sgd.step(model, &mut want, &x, &y, &rows, 0.5);
            }
        }
        let got = t.params().unwrap();
        assert_matches_twin(&got, &want, &spec.name);
        // Prediction in parts too.
        let model_file = t.model().unwrap();
        let scores = wgsparse::wide::predict(gpu, &spec, &model_file, &x).unwrap();
        assert_eq!(scores.len(), x.nrows);
        let p: Vec<f64> = got.iter().map(|&v| v as f64).collect();
        for (i, &s) in scores.iter().enumerate() {
            let w = cpu::predict(model, &p, &x, i);
            assert!(
                (s as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "ŷ{i}: {s} vs {w}"
            );
        }
        // An FM file from before the squares' Accums were merged (2k + 1 of them) predicts
        // the same; any other count is refused.
        if model.k() > 0 {
            assert_eq!(spec.accums, model.k() + 2);
            let mut old = model_file.clone();
            old.accums = 2 * model.k() + 1;
            let again = wgsparse::wide::predict(gpu, &spec, &old, &x).unwrap();
            assert_eq!(again, scores);
            old.accums = 2 * model.k();
            assert!(wgsparse::wide::predict(gpu, &spec, &old, &x).is_err());
        }
    }
}

/// One-hot data (values all 1) stored without values and with them, flow and stage: each
/// equals the twin's exact SGD.
#[test]
fn one_hot_layout_equals_twin() {
    let (m, batch) = (150, 48);
    let d = zipf_ctr(batch * 2, m, 9, CtrModel::Lr, 101).unwrap();
    let (x, y01) = (d.features, d.labels);
    let y = metrics::labels_pm1(&y01);
    for (model, stage, drop_ones) in [
        (Model::Lr, false, true),
        (Model::Fm { k: 3 }, false, true),
        (Model::Fm { k: 3 }, false, false),
        (Model::Lr, true, true),
    ] {
        let spec = model.spec().unwrap();
        let options = Options {
            batch,
            max_chunk: 16,
            shuffle: false,
            stage,
            drop_ones,
            ..Options::default()
        };
        let mut t = trainer(&spec, m, (&x, &y01), Some((&x, &y01)), options);
        let (start, mut want) = random_start(&spec, m, 8, 0.3);
        let got = epoch_from(&mut t, &start);
        twin(model, false, &mut want, &x, &y, batch, 0.5);
        assert_matches_twin(
            &got,
            &want,
            &format!("{} stage {stage} drop_ones {drop_ones}", spec.name),
        );
        // Validation through the one-hot predict kernel: the twin's ŷ.
        let out = t.predict_valid().unwrap().unwrap();
        let p: Vec<f64> = got.iter().map(|&v| v as f64).collect();
        for i in 0..x.nrows {
            let w = cpu::predict(model, &p, &x, i);
            assert!(
                (out[2 * i] as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "ŷ{i}"
            );
        }
    }
}

/// Async mode's dispatches cover `async_span` mini-batches and run one after another: with
/// one chunk per mini-batch and a span of 1 nothing races, so the epoch equals the twin's
/// mini-batch SGD step for step; a span of 0 (the whole epoch in one dispatch) is still
/// accepted.
#[test]
fn async_span_bounds_the_updates_in_flight() {
    let (m, batch, batches) = (90, 16, 4);
    let (x, y01) = data(batch * batches, m, 6, 31);
    let y = metrics::labels_pm1(&y01);
    for model in [Model::Lr, Model::Fm { k: 4 }] {
        let spec = model.spec().unwrap();
        let options = Options {
            batch,
            max_chunk: batch,
            sync: false,
            async_span: 1,
            shuffle: false,
            ..Options::default()
        };
        let mut t = trainer(&spec, m, (&x, &y01), None, options);
        let (start, mut want) = random_start(&spec, m, 3, 0.3);
        let got = epoch_from(&mut t, &start);
        twin(model, false, &mut want, &x, &y, batch, 0.5);
        assert_matches_twin(&got, &want, &spec.name);
        let whole = Options {
            batch,
            max_chunk: batch,
            sync: false,
            async_span: 0,
            ..Options::default()
        };
        let mut t = trainer(&spec, m, (&x, &y01), None, whole);
        assert!(t.train_epoch().unwrap().0.is_finite());
    }
}

/// Async mode's scaled steps: one persistent workgroup takes the chunks one after another
/// (nothing races), each chunk's update θ −= lr · scale_j · (1/B) Σ its gradients with the
/// scale of [`plan::async_scale`] at the S given; the epoch equals the twin's chunk-by-chunk
/// steps.
#[test]
fn async_scaled_steps_equal_twin() {
    let (m, batch, chunk) = (120, 48, 16);
    let (x, y01) = data(batch * 2, m, 7, 29);
    let y = metrics::labels_pm1(&y01);
    let in_flight = 6.0;
    let mut counts = vec![0u32; m];
    for &j in &x.col_idx {
        counts[j as usize] += 1;
    }
    let (fs, bias) = plan::async_scale(&counts, x.nrows, in_flight);
    for (model, gpu) in [
        (Model::Lr, common::gpu()),
        (Model::Fm { k: 3 }, common::gpu_plain()),
    ] {
        let spec = model.spec().unwrap();
        let np = spec.params_per_feature;
        let options = Options {
            batch,
            max_chunk: chunk,
            sync: false,
            async_groups: 1,
            async_in_flight: Some(in_flight),
            shuffle: false,
            ..Options::default()
        };
        let mut t = Trainer::new(gpu, &spec, m, (&x, &y01), None, options).unwrap();
        assert_eq!(t.in_flight(), in_flight);
        assert_eq!(t.scaled_features(), fs.iter().filter(|&&v| v < 1.0).count());
        assert!(t.scaled_features() > 1);
        let (start, mut want) = random_start(&spec, m, 9, 0.3);
        let got = epoch_from(&mut t, &start);
        // Each chunk's gradients are scaled by 1/B (not 1/chunk): stale_step's 1/|rows|
        // times chunk/B.
        let base = 0.5 * chunk as f64 / batch as f64;
        let mut step = vec![base; want.len()];
        for (j, &v) in fs.iter().enumerate() {
            step[j * np..(j + 1) * np].fill(base * v as f64);
        }
        step[m * np] = base * bias as f64;
        let mut sgd = cpu::Sgd::new(want.len());
        for c in 0..x.nrows / chunk {
            let rows: Vec<usize> = (c * chunk..(c + 1) * chunk).collect();
            sgd.stale_step(model, &mut want, &x, &y, &[rows], &step);
        }
        assert_matches_twin(&got, &want, &spec.name);
    }
}

/// Chunks with more feature-sorted edges than the flow kernel's workgroup tile (1024 valued
/// edges, 2048 one-hot ones): the edges past it are read from global memory; one sync
/// mini-batch of two such chunks equals the twin's step, valued and one-hot.
#[test]
fn edges_past_the_tile_equal_twin() {
    let (m, batch) = (600, 64);
    let valued = data(batch, m, 60, 37);
    let ctr = zipf_ctr(batch, m, 90, CtrModel::Lr, 37).unwrap();
    for (what, (x, y01), tile) in [
        ("valued", valued, 1024),
        ("one-hot", (ctr.features, ctr.labels), 2048),
    ] {
        let per_chunk = x.row_ptr[32] as usize;
        assert!(
            per_chunk > tile,
            "{what}: {per_chunk} edges in the first chunk"
        );
        let y = metrics::labels_pm1(&y01);
        for model in [Model::Lr, Model::Fm { k: 2 }] {
            let spec = model.spec().unwrap();
            let options = Options {
                batch,
                max_chunk: 32,
                shuffle: false,
                ..Options::default()
            };
            let mut t = trainer(&spec, m, (&x, &y01), None, options);
            let (start, mut want) = random_start(&spec, m, 19, 0.1);
            let got = epoch_from(&mut t, &start);
            twin(model, false, &mut want, &x, &y, batch, 0.5);
            assert_matches_twin(&got, &want, &format!("{what} {}", spec.name));
        }
    }
}

/// L2 regularization (λ on the parameters each sample touches, not the bias) in sync mode
/// through the flow kernel and the stage baseline, and in async mode (one persistent
/// workgroup, chunks one after another), against the twin's steps.
#[test]
fn l2_equals_twin() {
    let (m, batch, chunk, l2) = (120, 48, 16, 0.3);
    let (x, y01) = data(batch * 2, m, 7, 53);
    let y = metrics::labels_pm1(&y01);
    for model in [Model::Lr, Model::Fm { k: 3 }] {
        let spec = model.spec().unwrap();
        for (mode, sync, stage) in [
            ("flow", true, false),
            ("stage", true, true),
            ("async", false, false),
        ] {
            let options = Options {
                batch,
                max_chunk: chunk,
                sync,
                stage,
                async_groups: 1,
                l2,
                shuffle: false,
                ..Options::default()
            };
            let mut t = trainer(&spec, m, (&x, &y01), None, options);
            let (start, mut want) = random_start(&spec, m, 21, 0.5);
            let got = epoch_from(&mut t, &start);
            let mut sgd = cpu::Sgd::new(want.len()).with_l2(l2 as f64);
            if sync {
                for b in 0..x.nrows / batch {
                    let rows: Vec<usize> = (b * batch..(b + 1) * batch).collect();
                    sgd.step(model, &mut want, &x, &y, &rows, 0.5);
                }
            } else {
                // S = 1 chunk of 16 over mini-batches of 48: no feature is scaled; each chunk's
                // gradients are scaled by 1/B.
                assert_eq!(t.scaled_features(), 0);
                let step = vec![0.5 * chunk as f64 / batch as f64; want.len()];
                for c in 0..x.nrows / chunk {
                    let rows: Vec<usize> = (c * chunk..(c + 1) * chunk).collect();
                    sgd.stale_step(model, &mut want, &x, &y, &[rows], &step);
                }
            }
            assert_matches_twin(&got, &want, &format!("{} {mode}", spec.name));
            // λ moved them: the same run without it ends elsewhere.
            let mut plain: Vec<f64> = start.iter().map(|&v| v as f64).collect();
            twin(model, false, &mut plain, &x, &y, batch, 0.5);
            assert!(plain.iter().zip(&want).any(|(a, b)| (a - b).abs() > 1e-3));
        }
    }
}

/// The staging ring: parts streamed through two device slots each epoch (parts in shuffled
/// order, so a part meets either slot) train as the resident parts do: two epochs equal the
/// twin's mini-batch SGD over the mini-batches in the order they ran, sync and async (one
/// persistent workgroup, so nothing races; also with snapshot reads, a copy per chunk, and
/// on one-hot data with 16-bit slots and Apply by whole segments).
#[test]
fn staging_ring_equals_twin() {
    let gpu = common::gpu_small_bindings();
    let (m, batch) = (120, 48);
    let (x, y01) = data(720, m, 7, 97);
    let y = metrics::labels_pm1(&y01);
    // Async with snapshot reads, one chunk per dispatch: each copied before its dispatch.
    let snapshot = wgsparse::wide::FlowVariant {
        snapshot_reads: true,
        snapshot_rounds: 1,
        ..Default::default()
    };
    let packed = wgsparse::wide::FlowVariant {
        slot_bits: 16,
        apply_whole: true,
        ..Default::default()
    };
    let mut ones = x.clone();
    ones.values.iter_mut().for_each(|v| *v = 1.0);
    for (model, sync, variant, x) in [
        (Model::Lr, true, Default::default(), &x),
        (Model::Fm { k: 3 }, true, Default::default(), &x),
        (Model::Lr, false, Default::default(), &x),
        (Model::Fm { k: 3 }, false, snapshot, &x),
        (Model::Fm { k: 3 }, false, packed, &ones),
    ] {
        let spec = model.spec().unwrap();
        let options = Options {
            batch,
            max_chunk: 48,
            sync,
            async_groups: 1,
            ring: true,
            variant,
            ..Options::default()
        };
        let mut t = Trainer::new(gpu, &spec, m, (x, &y01), None, options).unwrap();
        assert!(t.parts() >= 3, "{} parts", t.parts());
        let mut want: Vec<f64> = t.params().unwrap().iter().map(|&v| v as f64).collect();
        let mut sgd = cpu::Sgd::new(want.len());
        for _ in 0..3 {
            let (loss, time) = t.train_epoch().unwrap();
            assert!(loss.is_finite() && !time.from_timestamps);
            for rows in t.last_minibatches() {
                sgd.step(model, &mut want, x, &y, &rows, 0.5);
            }
        }
        assert_matches_twin(
            &t.params().unwrap(),
            &want,
            &format!("{} sync {sync} {}", spec.name, variant.label()),
        );
    }
}

/// A chunk the device never ran is an error, never a short epoch passed off as trained: on
/// llvmpipe, which ends a shader invocation's loops after 65,535 iterations, one persistent
/// async workgroup over thousands of chunks stops early; elsewhere the epoch completes.
#[test]
fn an_epoch_cut_short_by_the_device_is_an_error() {
    let (m, batch) = (200, 16);
    let (x, y01) = data(batch * 4000, m, 7, 41);
    let spec = Model::Lr.spec().unwrap();
    let options = Options {
        batch,
        max_chunk: batch,
        sync: false,
        async_groups: 1,
        ..Options::default()
    };
    let gpu = common::gpu();
    let mut t = trainer(&spec, m, (&x, &y01), None, options);
    match t.train_epoch() {
        Ok((loss, _)) => {
            assert!(loss.is_finite(), "loss {loss}");
            assert!(
                !gpu.caps.adapter_name.contains("llvmpipe"),
                "llvmpipe ran 4,000 chunks in one invocation's loops"
            );
        }
        Err(e) => {
            let msg = e.to_string();
            eprintln!("{msg}");
            assert!(msg.contains("were not trained"), "{msg}");
            assert!(gpu.caps.adapter_name.contains("llvmpipe"), "{msg}");
        }
    }
}
