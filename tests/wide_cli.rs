//! `wide` through the CLI and model files: the demo row, save/load/predict, bad input
//! refused before training, train and predict on LIBSVM files. Sized for lavapipe.

mod common;

use common::wide::{data, train_args, trainer};
use wgsparse::wide::WideModel;
use wgsparse::wide::{cpu, Model, Options, Trainer};
use wgsparse::Error;

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
    let mut t = trainer(&spec, 90, (&x, &y), Some((&x, &y)), options);
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
    let data = data.to_str().unwrap();
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
        data,
    ]);
    assert!(ok, "{err}");
    let model = d.join("lr.wide");
    let v = common::wgsparse_json(&train_args(
        data,
        &[
            "--epochs",
            "3",
            "--model-out",
            model.to_str().unwrap(),
            "--json",
        ],
    ));
    for key in ["logloss", "auc", "train_loss", "epoch_ms_median", "epochs"] {
        assert!(!v[key].is_null(), "missing {key}: {v}");
    }
    let e = &v["epochs"][2];
    for key in ["train_loss", "logloss", "auc", "epoch_ms"] {
        assert!(e[key].is_number(), "epoch lacks {key}: {v}");
    }
    assert!(v["logloss"].as_f64().unwrap() < std::f64::consts::LN_2);
    // The setup's phases, in seconds, within its total.
    let phases = v["setup_phases"].as_object().unwrap();
    for k in [
        "checks",
        "feature order",
        "feature counts",
        "chunks",
        "upload",
        "kernels",
        "validation",
        "parameters",
    ] {
        assert!(phases[k].as_f64().unwrap() >= 0.0, "{k}: {v}");
    }
    let sum: f64 = phases.values().map(|t| t.as_f64().unwrap()).sum();
    assert!(sum <= v["setup_s"].as_f64().unwrap() + 1e-3, "{v}");
    // --check replays the epochs with the f64 twin: same validation logloss.
    let c = common::wgsparse_json(&train_args(
        data,
        &[
            "--epochs", "2", "--model", "fm", "--k", "3", "--check", "--json",
        ],
    ));
    assert_eq!(c["check_ok"], true, "{c}");
    let diff = (c["logloss"].as_f64().unwrap() - c["cpu_logloss"].as_f64().unwrap()).abs();
    assert!(diff < 1e-4, "{c}");
    let p = common::wgsparse_json(&[
        "wide",
        "predict",
        "--model",
        model.to_str().unwrap(),
        "--data",
        data,
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

/// An empty training or validation set is refused (train and sweep alike), not trained into
/// a loss of 0 with a twin check that cannot fail.
#[test]
fn empty_training_or_validation_sets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gen = |name: &str, samples: &str| {
        let path = dir.path().join(name);
        let (ok, _, err) = common::wgsparse(&[
            "gen",
            "ctr",
            "--samples",
            samples,
            "--features",
            "50",
            "--nnz-per-sample",
            "4",
            "--out",
            path.to_str().unwrap(),
        ]);
        assert!(ok, "{err}");
        path.to_str().unwrap().to_string()
    };
    let empty = gen("empty.svm", "0");
    let five = gen("five.svm", "5");
    let cases: [(&[&str], &str); 4] = [
        (&["--train", &empty, "--holdout", "0.1"], "no samples"),
        (&["--train", &five, "--valid", &empty], "no samples"),
        // round(5 · 0.05) = 0 samples held out.
        (
            &["--train", &five, "--holdout", "0.05"],
            "leaves 0 for validation",
        ),
        (
            &["--train", &five, "--holdout", "0.95"],
            "and 0 for training",
        ),
    ];
    for (args, want) in cases {
        for cmd in [
            &["wide", "train", "--check"][..],
            &["wide", "sweep", "--run", "default"],
        ] {
            let all: Vec<&str> = cmd.iter().chain(args).copied().collect();
            let (ok, _, err) = common::wgsparse(&all);
            assert!(!ok, "{all:?} succeeded");
            assert!(err.contains(want), "{all:?}: {err}");
        }
    }
}
