//! `wide`: the f64 twin's formulas, every shipped model in sync mode against one exact SGD
//! step of the twin on both atomic paths, async training, planted-data convergence, a
//! user-defined model. Sized for lavapipe.

mod common;

use rand::{Rng, SeedableRng};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::gpu::preprocess;
use wgsparse::sparse::Csr;
use wgsparse::wide::WideModel;
use wgsparse::wide::{cpu, initial_params, metrics, plan, Model, ModelSpec, Options, Trainer};
use wgsparse::{Error, Gpu};

/// Zipf CTR samples with values drawn from [0.5, 1.5) (not one-hot), feature 0 put into
/// every sample (maximum contention) and every 7th sample emptied; labels 0/1.
fn data(n: usize, m: usize, nnz: usize, seed: u64) -> (Csr, Vec<f32>) {
    let d = zipf_ctr(n, m, nnz, CtrModel::Lr, seed).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
    let x = &d.features;
    let (mut row_ptr, mut col_idx, mut values) = (vec![0u32], vec![], vec![]);
    for i in 0..n {
        if i % 7 != 3 {
            let mut row: Vec<u32> = x.col_idx[x.row_range(i)].to_vec();
            if !row.contains(&0) {
                row.push(0);
            }
            row.sort_unstable();
            for j in row {
                col_idx.push(j);
                values.push(rng.random_range(0.5f32..1.5));
            }
        }
        row_ptr.push(col_idx.len() as u32);
    }
    (Csr::new(n, m, row_ptr, col_idx, values).unwrap(), d.labels)
}

fn random_params(spec: &ModelSpec, m: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..m * spec.params_per_feature + 1)
        .map(|_| rng.random_range(-0.5f64..0.5))
        .collect()
}

#[test]
fn logloss_at_zero_is_ln2() {
    let (x, y) = data(200, 50, 6, 1);
    let y = metrics::labels_pm1(&y);
    let p = vec![0.0; 50 + 1];
    let l = cpu::mean_loss(Model::Lr, &p, &x, &y);
    assert!((l - std::f64::consts::LN_2).abs() < 1e-12, "{l}");
}

#[test]
fn fm_gradient_matches_finite_differences() {
    let k = 5;
    let model = Model::Fm { k };
    let (x, _) = data(20, 40, 6, 2);
    let p = random_params(&model.spec().unwrap(), 40, 3);
    let r = x.row_range(1);
    let (f, v) = (&x.col_idx[r.clone()], &x.values[r]);
    let yhat = |p: &[f64]| cpu::score(model, &cpu::accums(model, p, f, v), cpu::bias(p));
    let grads = cpu::score_grad(model, &p, f, v);
    assert_eq!(grads.len(), f.len() * (1 + k) + 1);
    for (i, g) in grads {
        let h = 1e-5;
        let (mut a, mut b) = (p.clone(), p.clone());
        a[i] += h;
        b[i] -= h;
        let fd = (yhat(&a) - yhat(&b)) / (2.0 * h);
        assert!(
            (fd - g).abs() <= 1e-7 * (1.0 + g.abs()),
            "θ{i}: {g} vs {fd}"
        );
    }
}

#[test]
fn fm_fast_form_matches_naive_pairwise_sum() {
    for k in [1, 4, 10] {
        let model = Model::Fm { k };
        let (x, _) = data(30, 60, 8, 4 + k as u64);
        let p = random_params(&model.spec().unwrap(), 60, 5);
        for i in 0..x.nrows {
            let r = x.row_range(i);
            let fast = cpu::predict(model, &p, &x, i);
            let naive = cpu::fm_naive(k, &p, &x.col_idx[r.clone()], &x.values[r]);
            assert!(
                (fast - naive).abs() <= 1e-12 * (1.0 + naive.abs()),
                "{fast} {naive}"
            );
        }
    }
}

#[test]
fn auc_matches_pair_count() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    // Scores on a coarse grid so ties occur.
    let s: Vec<f32> = (0..300)
        .map(|_| (rng.random_range(0..40) as f32) / 8.0)
        .collect();
    let y: Vec<f32> = s
        .iter()
        .map(|&v| {
            if rng.random_range(0.0..5.0) < v {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let (mut num, mut den) = (0.0, 0.0);
    for i in 0..s.len() {
        for j in 0..s.len() {
            if y[i] > 0.0 && y[j] < 0.0 {
                den += 1.0;
                num += if s[i] > s[j] {
                    1.0
                } else if s[i] == s[j] {
                    0.5
                } else {
                    0.0
                };
            }
        }
    }
    let a = metrics::auc(&s, &y).unwrap();
    assert!((a - num / den).abs() < 1e-12, "{a} {}", num / den);
}

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
            ] {
                let wgsl = preprocess::preprocess_with(name, &defines, &sources).unwrap();
                preprocess::validate(name, &wgsl)
                    .unwrap_or_else(|e| panic!("{} {name} {defines:?}:\n{e}", spec.name));
            }
        }
    }
}

/// A model from outside the crate: linear, squared hinge loss max(0, 1 − yŷ)².
fn user_model() -> ModelSpec {
    ModelSpec {
        name: "sqhinge".into(),
        wgsl: "#import wide/linear\n\
               fn loss_of(yhat: f32, y: f32) -> vec2<f32> {\n\
                   let m = max(0.0, 1.0 - y * yhat);\n\
                   return vec2<f32>(m * m, -2.0 * y * m);\n\
               }\n"
        .into(),
        accums: 1,
        params_per_feature: 1,
        init_std: 0.0,
    }
}

/// (ℓ, dℓ/dŷ) of the squared hinge, f64.
fn sqhinge(yhat: f64, y: f64) -> (f64, f64) {
    let m = (1.0 - y * yhat).max(0.0);
    (m * m, -2.0 * y * m)
}

/// The twin's exact SGD over `batches` consecutive mini-batches, with the loss of `model`
/// or (for the user model) the squared hinge.
fn twin(model: Model, user: bool, p: &mut [f64], x: &Csr, y: &[f32], batch: usize, lr: f64) {
    let rows: Vec<usize> = (0..x.nrows).collect();
    for b in rows.chunks(batch) {
        if !user {
            cpu::sgd_step(model, p, x, y, b, lr);
            continue;
        }
        let mut g = vec![0.0; p.len()];
        for &i in b {
            let yhat = cpu::predict(model, p, x, i);
            let (_, d) = sqhinge(yhat, y[i] as f64);
            let r = x.row_range(i);
            for (k, s) in cpu::score_grad(model, p, &x.col_idx[r.clone()], &x.values[r]) {
                g[k] += d * s;
            }
        }
        for (q, gk) in p.iter_mut().zip(&g) {
            *q -= lr / b.len() as f64 * gk;
        }
    }
}
/// Every parameter within 1e-5 relative (plus 1e-6 absolute) of the f64 twin's.
fn assert_matches_twin(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: parameter count");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-5 * w.abs() + 1e-6,
            "{what} θ{i}: GPU {g} twin {w}"
        );
    }
}

/// Sync mode over `batches` mini-batches of 48 (chunks of 16) in order against the twin.
fn sync_vs_twin(gpu: &Gpu, model: Model, user: bool, native_atomics: bool, batches: usize) {
    vs_twin(gpu, model, user, native_atomics, batches, false)
}

/// As [`sync_vs_twin`], through the flow kernel or the stage baseline.
fn vs_twin(gpu: &Gpu, model: Model, user: bool, native_atomics: bool, batches: usize, stage: bool) {
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
            "{} (native atomics {native_atomics}) θ{i}: GPU {g} twin {w}",
            spec.name
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
        let start: Vec<f32> = random_params(&spec, m, 5)
            .iter()
            .map(|v| (v * 0.3) as f32)
            .collect();
        t.set_params(&start).unwrap();
        t.train_epoch().unwrap();
        let got = t.params().unwrap();
        let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
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
        let mut t = Trainer::new(common::gpu(), &spec, m, (&x, &y01), None, options).unwrap();
        assert_eq!(t.hot_features(), cache);
        let start: Vec<f32> = random_params(&spec, m, 3)
            .iter()
            .map(|v| (v * 0.3) as f32)
            .collect();
        t.set_params(&start).unwrap();
        t.train_epoch().unwrap();
        let got = t.params().unwrap();
        let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
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
    let t = Trainer::new(
        common::gpu(),
        &spec,
        80,
        (&x, &y),
        Some((&x, &y)),
        Options::default(),
    )
    .unwrap();
    let e = t.evaluate().unwrap().unwrap();
    let (loss, logloss) = (e.loss, e.logloss);
    assert!((loss - std::f64::consts::LN_2).abs() < 1e-6, "{loss}");
    assert!((logloss - std::f64::consts::LN_2).abs() < 1e-6, "{logloss}");
}

/// Planted LR data: training reaches the planted model's validation AUC within 0.01, in sync
/// and async mode, and the two final losses agree within 0.01.
#[test]
fn converges_to_planted_auc_sync_and_async() {
    let (n, m) = (20_000, 100);
    let d = zipf_ctr(n, m, 12, CtrModel::Lr, 31).unwrap();
    let split = n * 9 / 10;
    let x = &d.features;
    let train = x.row_band(0..split);
    let valid = x.row_band(split..n);
    let (ytr, yva) = (&d.labels[..split], &d.labels[split..]);
    let planted: Vec<f32> = (0..valid.nrows)
        .map(|i| {
            valid
                .row_range(i)
                .map(|e| d.true_weights[valid.col_idx[e] as usize] * valid.values[e])
                .sum::<f32>()
                + d.true_bias
        })
        .collect();
    let best = metrics::auc(&planted, yva).unwrap();
    let spec = Model::Lr.spec().unwrap();
    let mut finals = vec![];
    for sync in [true, false] {
        let options = Options {
            batch: 64,
            sync,
            // 16 persistent workgroups of 32-sample chunks: 8 mini-batches in flight.
            async_groups: 16,
            early_stop: false,
            ..Options::default()
        };
        let mut t = Trainer::new(
            common::gpu(),
            &spec,
            m,
            (&train, ytr),
            Some((&valid, yva)),
            options,
        )
        .unwrap();
        let stats = t.fit(15, |_| {}).unwrap();
        let last = stats.last().unwrap();
        let auc = last.auc.unwrap();
        eprintln!(
            "sync {sync}: auc {auc:.4} (planted {best:.4}) logloss {:.4}",
            last.logloss.unwrap()
        );
        assert!(
            auc >= best - 0.01,
            "sync {sync}: auc {auc} vs planted {best}"
        );
        finals.push(last.logloss.unwrap());
    }
    // Async updates race (Hogwild-like): its final logloss varies from run to run (by up to
    // ≈ 0.004 measured on lavapipe), so sync and async are held to 0.01 here; the ≤ 0.003
    // variants are compared in sync mode.
    assert!((finals[0] - finals[1]).abs() <= 0.01, "{finals:?}");
}

#[test]
fn demo_row_passes() {
    let row = wgsparse::wide::demo_row(common::gpu()).unwrap();
    assert!(row.ok, "{row:?}");
}

#[test]
fn save_load_predict_round_trip() {
    let (x, y) = data(600, 90, 6, 41);
    let spec = Model::Fm { k: 3 }.spec().unwrap();
    let options = Options {
        batch: 64,
        ..Options::default()
    };
    let mut t = Trainer::new(common::gpu(), &spec, 90, (&x, &y), Some((&x, &y)), options).unwrap();
    t.fit(2, |_| {}).unwrap();
    let model = t.model().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.wide");
    model.save(&path).unwrap();
    let back = WideModel::load(&path).unwrap();
    assert_eq!(back, model);
    assert_eq!(back.shipped(), Some(Model::Fm { k: 3 }));
    let scores = wgsparse::wide::predict(common::gpu(), &back.spec().unwrap(), &back, &x).unwrap();
    let on_trainer = t.predict_valid().unwrap().unwrap();
    let p: Vec<f64> = model.params.iter().map(|&v| v as f64).collect();
    for (i, &s) in scores.iter().enumerate() {
        let twin = cpu::predict(Model::Fm { k: 3 }, &p, &x, i);
        assert!(
            (s as f64 - twin).abs() <= 1e-5 * (1.0 + twin.abs()),
            "{i}: {s} vs {twin}"
        );
        assert!((s - on_trainer[2 * i]).abs() <= 1e-5 * (1.0 + s.abs()));
    }
    // A truncated file is refused, naming the file.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let e = WideModel::load(&path).unwrap_err();
    assert!(matches!(e, Error::Parse { .. }), "{e}");
    assert!(e.to_string().contains("m.wide"), "{e}");
}

#[test]
fn bad_input_is_rejected_before_training() {
    let gpu = common::gpu();
    let (x, mut y) = data(100, 30, 4, 51);
    let spec = Model::Lr.spec().unwrap();
    let o = Options::default();
    // More feature columns than the model.
    let e = Trainer::new(gpu, &spec, 20, (&x, &y), None, o.clone())
        .err()
        .unwrap();
    assert!(matches!(e, Error::Shape(_)), "{e}");
    // Label count.
    let e = Trainer::new(gpu, &spec, 30, (&x, &y[..50]), None, o.clone())
        .err()
        .unwrap();
    assert!(matches!(e, Error::Shape(_)), "{e}");
    // A NaN value, named by entry.
    let mut bad = x.clone();
    bad.values[5] = f32::NAN;
    let e = Trainer::new(gpu, &spec, 30, (&bad, &y), None, o.clone())
        .err()
        .unwrap();
    assert!(e.to_string().contains("entry 5"), "{e}");
    y[3] = f32::INFINITY;
    let e = Trainer::new(gpu, &spec, 30, (&x, &y), None, o.clone())
        .err()
        .unwrap();
    assert!(e.to_string().contains("sample 3"), "{e}");
    let e = Model::parse("fm", 33).unwrap_err();
    assert!(matches!(e, Error::Option(_)), "{e}");
    for bad in [
        Options {
            batch: 0,
            ..o.clone()
        },
        Options {
            lanes: 3,
            ..o.clone()
        },
        Options {
            lr: f32::NAN,
            ..o.clone()
        },
    ] {
        assert!(matches!(bad.check(), Err(Error::Option(_))));
    }
}

#[test]
fn cli_train_predict_and_malformed_libsvm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("ctr.svm");
    let (ok, _, err) = common::wgsparse(&[
        "gen",
        "ctr",
        "--samples",
        "3000",
        "--features",
        "300",
        "--nnz-per-sample",
        "8",
        "--out",
        data.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let model = d.join("lr.wide");
    let v = common::wgsparse_json(&[
        "wide",
        "train",
        "--train",
        data.to_str().unwrap(),
        "--holdout",
        "0.1",
        "--epochs",
        "3",
        "--batch",
        "128",
        "--model-out",
        model.to_str().unwrap(),
        "--json",
    ]);
    for key in ["logloss", "auc", "train_loss", "epoch_ms_median", "epochs"] {
        assert!(!v[key].is_null(), "missing {key}: {v}");
    }
    let e = &v["epochs"][2];
    for key in ["train_loss", "logloss", "auc", "epoch_ms"] {
        assert!(e[key].is_number(), "epoch lacks {key}: {v}");
    }
    assert!(v["logloss"].as_f64().unwrap() < std::f64::consts::LN_2);
    // --check replays the epochs with the f64 twin: same validation logloss.
    let c = common::wgsparse_json(&[
        "wide",
        "train",
        "--train",
        data.to_str().unwrap(),
        "--holdout",
        "0.1",
        "--epochs",
        "2",
        "--batch",
        "128",
        "--model",
        "fm",
        "--k",
        "3",
        "--check",
        "--json",
    ]);
    assert_eq!(c["check_ok"], true, "{c}");
    let diff = (c["logloss"].as_f64().unwrap() - c["cpu_logloss"].as_f64().unwrap()).abs();
    assert!(diff < 1e-4, "{c}");
    let p = common::wgsparse_json(&[
        "wide",
        "predict",
        "--model",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(p["samples"], 3000);
    assert!(p["auc"].as_f64().unwrap() > 0.6, "{p}");
    // A malformed line is named with its file and line; the exit status is non-zero.
    let bad = d.join("bad.svm");
    std::fs::write(&bad, "1 3:1 7:1\n-1 2:1 x:1\n").unwrap();
    let (ok, _, err) = common::wgsparse(&["wide", "train", "--train", bad.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("bad.svm:2"), "{err}");
}

/// Lanes (the Accum replicas R), chunk size, the atomic path, the importance cache's size and
/// the chunk order each change the final validation logloss by ≤ 0.003.
#[test]
fn variants_change_final_loss_by_at_most_0_003() {
    let (n, m) = (6_000, 150);
    let d = zipf_ctr(n, m, 10, CtrModel::Lr, 61).unwrap();
    let split = n * 9 / 10;
    let (train, valid) = (d.features.row_band(0..split), d.features.row_band(split..n));
    let (ytr, yva) = (&d.labels[..split], &d.labels[split..]);
    let spec = Model::Lr.spec().unwrap();
    let base = Options {
        batch: 96,
        early_stop: false,
        ..Options::default()
    };
    let run = |gpu: &Gpu, o: Options| {
        let mut t = Trainer::new(gpu, &spec, m, (&train, ytr), Some((&valid, yva)), o).unwrap();
        t.fit(4, |_| {}).unwrap().last().unwrap().logloss.unwrap()
    };
    let reference = run(common::gpu(), base.clone());
    let variants = [
        (
            "lanes 2",
            common::gpu(),
            Options {
                lanes: 2,
                ..base.clone()
            },
        ),
        (
            "lanes 32",
            common::gpu(),
            Options {
                lanes: 32,
                ..base.clone()
            },
        ),
        (
            "chunk 8",
            common::gpu(),
            Options {
                max_chunk: 8,
                ..base.clone()
            },
        ),
        (
            "CAS",
            common::gpu(),
            Options {
                native_atomics: false,
                ..base.clone()
            },
        ),
        ("no subgroups, CAS", common::gpu_plain(), base.clone()),
        (
            "chunk order",
            common::gpu(),
            Options {
                seed: 99,
                ..base.clone()
            },
        ),
        (
            "no re-indexing",
            common::gpu(),
            Options {
                reindex: false,
                ..base.clone()
            },
        ),
    ];
    for (name, gpu, o) in variants {
        let l = run(gpu, o);
        eprintln!("{name}: {l:.5} (reference {reference:.5})");
        assert!((l - reference).abs() <= 0.003, "{name}: {l} vs {reference}");
    }
}

#[test]
fn cost_rule_caches_the_prefix_of_features_above_the_threshold() {
    use wgsparse::wide::plan::{hot_features, RANDOM_TO_COALESCED};
    assert_eq!(RANDOM_TO_COALESCED, 2.0);
    // Degrees per chunk over 20 chunks: 5, 2.5, 1, 0.5, 0.05 (th = 1), then a popular one
    // after a rare one does not extend the prefix.
    let counts = [100, 50, 20, 10, 1, 90];
    assert_eq!(hot_features(&counts, 20, 100), 3);
    assert_eq!(hot_features(&counts, 20, 2), 2);
    assert_eq!(hot_features(&counts, 1000, 100), 0);
}

#[test]
fn histogram_auc_is_within_its_bound() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(71);
    let bins = 64;
    let s: Vec<f32> = (0..2000).map(|_| rng.random_range(-3.0f32..3.0)).collect();
    let y: Vec<f32> = s
        .iter()
        .map(|&v| {
            if rng.random_range(-4.0..4.0) < v {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let (mut neg, mut pos) = (vec![0u32; bins], vec![0u32; bins]);
    for (&v, &l) in s.iter().zip(&y) {
        let b = (((v + 3.0) / 6.0 * bins as f32) as usize).min(bins - 1);
        if l > 0.0 {
            pos[b] += 1;
        } else {
            neg[b] += 1;
        }
    }
    let (a, bound) = metrics::auc_from_histograms(&neg, &pos).unwrap();
    let exact = metrics::auc(&s, &y).unwrap();
    assert!(bound > 0.0 && bound < 0.02, "{bound}");
    assert!((a - exact).abs() <= bound, "{a} {exact} ± {bound}");
}

/// The GPU's validation metrics against the host's from the same ŷ: loss sums within 1e-5
/// relative, the AUC within its stated bound.
#[test]
fn gpu_validation_metrics_match_the_host() {
    let d = zipf_ctr(3000, 200, 8, CtrModel::Lr, 81).unwrap();
    let (x, y) = (d.features, d.labels);
    let spec = Model::Fm { k: 3 }.spec().unwrap();
    let mut t = Trainer::new(
        common::gpu(),
        &spec,
        200,
        (&x, &y),
        Some((&x, &y)),
        Options {
            batch: 100,
            ..Options::default()
        },
    )
    .unwrap();
    t.fit(2, |_| {}).unwrap();
    let g = t.evaluate().unwrap().unwrap();
    let h = t.evaluate_exact().unwrap().unwrap();
    assert!((g.loss - h.loss).abs() <= 1e-5 * h.loss, "{g:?} {h:?}");
    assert!(
        (g.logloss - h.logloss).abs() <= 1e-5 * h.logloss,
        "{g:?} {h:?}"
    );
    let (a, e) = (g.auc.unwrap(), h.auc.unwrap());
    eprintln!("{g:?} exact {h:?}");
    assert!(g.auc_bound < 5e-3, "{g:?}");
    assert!((a - e).abs() <= g.auc_bound + 1e-12, "{g:?} {h:?}");
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
        let mut t = Trainer::new(
            common::gpu(),
            &spec,
            m,
            (&x, &y01),
            Some((&x, &y01)),
            options,
        )
        .unwrap();
        let start: Vec<f32> = random_params(&spec, m, 8)
            .iter()
            .map(|v| (v * 0.3) as f32)
            .collect();
        t.set_params(&start).unwrap();
        t.train_epoch().unwrap();
        let got = t.params().unwrap();
        let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
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

/// Planted FM data (k = 4): FM training reaches the planted model's validation AUC within
/// 0.01.
#[test]
fn fm_converges_to_planted_auc() {
    let (n, m, k) = (30_000, 80, 4);
    let d = zipf_ctr(n, m, 10, CtrModel::Fm { k }, 131).unwrap();
    let split = n * 9 / 10;
    let x = &d.features;
    let (train, valid) = (x.row_band(0..split), x.row_band(split..n));
    let (ytr, yva) = (&d.labels[..split], &d.labels[split..]);
    let v = d.true_factors.as_ref().unwrap();
    // The planted parameters in the engine's layout: [w_j, v_j·] per feature, bias last.
    let mut planted: Vec<f64> = vec![];
    for j in 0..m {
        planted.push(d.true_weights[j] as f64);
        planted.extend(v.row(j).iter().map(|&f| f as f64));
    }
    planted.push(d.true_bias as f64);
    let scores: Vec<f32> = (0..valid.nrows)
        .map(|i| cpu::predict(Model::Fm { k }, &planted, &valid, i) as f32)
        .collect();
    let best = metrics::auc(&scores, yva).unwrap();
    let spec = Model::Fm { k }.spec().unwrap();
    let options = Options {
        batch: 64,
        early_stop: false,
        ..Options::default()
    };
    let mut t = Trainer::new(
        common::gpu(),
        &spec,
        m,
        (&train, ytr),
        Some((&valid, yva)),
        options,
    )
    .unwrap();
    let stats = t.fit(15, |_| {}).unwrap();
    let auc = stats.last().unwrap().auc.unwrap();
    eprintln!("FM: auc {auc:.4} (planted {best:.4})");
    assert!(auc >= best - 0.01, "auc {auc} vs planted {best}");
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
        let mut t = Trainer::new(common::gpu(), &spec, m, (&x, &y01), None, options).unwrap();
        let start: Vec<f32> = random_params(&spec, m, 3)
            .iter()
            .map(|v| (v * 0.3) as f32)
            .collect();
        t.set_params(&start).unwrap();
        t.train_epoch().unwrap();
        let got = t.params().unwrap();
        let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
        twin(model, false, &mut want, &x, &y, batch, 0.5);
        assert_matches_twin(&got, &want, &spec.name);
        let whole = Options {
            batch,
            max_chunk: batch,
            sync: false,
            async_span: 0,
            ..Options::default()
        };
        let mut t = Trainer::new(common::gpu(), &spec, m, (&x, &y01), None, whole).unwrap();
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
        let start: Vec<f32> = random_params(&spec, m, 9)
            .iter()
            .map(|v| (v * 0.3) as f32)
            .collect();
        t.set_params(&start).unwrap();
        t.train_epoch().unwrap();
        let got = t.params().unwrap();
        let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
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

/// Async mode at a large window: the step scale for S = 64 mini-batches of 64 in flight over
/// planted data reaches sync mode's validation logloss within 0.003 (or below); the epoch's
/// 1,125 chunks cap the persistent workgroups at 1,125 / 64. lavapipe runs few workgroups at once,
/// so this checks the scaled steps converge; the worst case of S stale mini-batches is
/// `tests/wide_async.rs` on the twin.
#[test]
fn async_large_window_reaches_sync_logloss() {
    let (n, m) = (40_000, 1_000);
    let d = zipf_ctr(n, m, 16, CtrModel::Lr, 43).unwrap();
    let split = n * 9 / 10;
    let x = &d.features;
    let (train, valid) = (x.row_band(0..split), x.row_band(split..n));
    let (ytr, yva) = (&d.labels[..split], &d.labels[split..]);
    let spec = Model::Lr.spec().unwrap();
    let mut finals = vec![];
    for sync in [true, false] {
        let options = Options {
            batch: 64,
            sync,
            async_in_flight: Some(64.0),
            early_stop: false,
            ..Options::default()
        };
        let mut t = Trainer::new(
            common::gpu(),
            &spec,
            m,
            (&train, ytr),
            Some((&valid, yva)),
            options,
        )
        .unwrap();
        if !sync {
            assert_eq!(t.async_groups(), 1_125 / wgsparse::wide::MIN_WINDOWS);
            assert!(t.scaled_features() > 0);
        }
        let stats = t.fit(5, |_| {}).unwrap();
        let l: Vec<f64> = stats.iter().map(|s| s.logloss.unwrap()).collect();
        eprintln!("sync {sync}: logloss {l:.5?}");
        finals.push(*l.last().unwrap());
    }
    assert!(
        finals[1] <= finals[0] + 0.003,
        "async {} vs sync {}",
        finals[1],
        finals[0]
    );
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
            let mut t = Trainer::new(common::gpu(), &spec, m, (&x, &y01), None, options).unwrap();
            let start: Vec<f32> = random_params(&spec, m, 19)
                .iter()
                .map(|v| (v * 0.1) as f32)
                .collect();
            t.set_params(&start).unwrap();
            t.train_epoch().unwrap();
            let got = t.params().unwrap();
            let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
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
            let mut t = Trainer::new(common::gpu(), &spec, m, (&x, &y01), None, options).unwrap();
            let start: Vec<f32> = random_params(&spec, m, 21)
                .iter()
                .map(|v| (v * 0.5) as f32)
                .collect();
            t.set_params(&start).unwrap();
            t.train_epoch().unwrap();
            let got = t.params().unwrap();
            let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
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
/// persistent workgroup, so nothing races).
#[test]
fn staging_ring_equals_twin() {
    let gpu = common::gpu_small_bindings();
    let (m, batch) = (120, 48);
    let (x, y01) = data(720, m, 7, 97);
    let y = metrics::labels_pm1(&y01);
    for (model, sync) in [
        (Model::Lr, true),
        (Model::Fm { k: 3 }, true),
        (Model::Lr, false),
    ] {
        let spec = model.spec().unwrap();
        let options = Options {
            batch,
            max_chunk: 48,
            sync,
            async_groups: 1,
            ring: true,
            ..Options::default()
        };
        let mut t = Trainer::new(gpu, &spec, m, (&x, &y01), None, options).unwrap();
        assert!(t.parts() >= 3, "{} parts", t.parts());
        let mut want: Vec<f64> = t.params().unwrap().iter().map(|&v| v as f64).collect();
        let mut sgd = cpu::Sgd::new(want.len());
        for _ in 0..3 {
            let (loss, time) = t.train_epoch().unwrap();
            assert!(loss.is_finite() && !time.from_timestamps);
            for rows in t.last_minibatches() {
                sgd.step(model, &mut want, &x, &y, &rows, 0.5);
            }
        }
        assert_matches_twin(
            &t.params().unwrap(),
            &want,
            &format!("{} sync {sync}", spec.name),
        );
    }
}
