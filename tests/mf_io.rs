//! `mf` input and output: unseen test ids, bad options and ratings, save → load → predict, and
//! the CLI. Sized for lavapipe.

mod common;

use common::mf::*;
use wgsparse::mf::{Model, Options, Trainer};
use wgsparse::Error;

#[test]
fn unseen_test_ids_are_skipped_and_counted() {
    let data = planted(60, 40, 700, 2);
    let (train, mut test) = sets(&data);
    test.users.push(train.n_users as u32);
    test.items.push(0);
    test.values.push(3.0);
    test.n_users += 1;
    let t = Trainer::new(common::gpu(), &train, Some(&test), converge_options()).unwrap();
    assert_eq!(t.skipped_test(), 1);
    assert_eq!(t.test_len(), test.len() - 1);
}

#[test]
fn bad_options_and_ratings_are_errors() {
    let data = planted(60, 40, 700, 2);
    let (train, _) = sets(&data);
    let gpu = common::gpu();
    for o in [
        Options {
            k: 48,
            ..Default::default()
        },
        Options {
            k: 512,
            ..Default::default()
        },
        Options {
            alpha: f32::NAN,
            ..Default::default()
        },
        Options {
            batch: 0,
            ..Default::default()
        },
        Options {
            batch: 2048,
            ..Default::default()
        },
        Options {
            workers: Some(0),
            ..Default::default()
        },
        Options {
            ilp: 3,
            ..Default::default()
        },
        Options {
            vector: 3,
            ..Default::default()
        },
        Options {
            lanes: Some(3),
            ..Default::default()
        },
        Options {
            lanes: Some(64),
            ..Default::default()
        },
        Options {
            dispatch_updates: Some(0),
            ..Default::default()
        },
        // Batches of 128 in dispatches of 64 updates per worker.
        Options {
            dispatch_updates: Some(64),
            ..Default::default()
        },
        Options {
            workgroup: Some(48),
            ..Default::default()
        },
        // Narrower than the 8 lanes of an update.
        Options {
            lanes: Some(8),
            workgroup: Some(4),
            ..Default::default()
        },
        Options {
            workgroup: Some(1 << 20),
            ..Default::default()
        },
        // 32 lanes at k = 32: 16 words, fewer than one a lane.
        Options {
            k: 32,
            lanes: Some(32),
            ..Default::default()
        },
        // 1 lane at k = 128: 64 words, past the 32 a lane holds.
        Options {
            lanes: Some(1),
            ..Default::default()
        },
    ] {
        assert!(matches!(
            Trainer::new(gpu, &train, None, o),
            Err(Error::Option(_))
        ));
    }
    // Past a software device's loop cap (llvmpipe's 65,535): refused there, naming it.
    let long = Options {
        dispatch_updates: Some(4096),
        ..Default::default()
    };
    let refused = matches!(
        Trainer::new(gpu, &train, None, long),
        Err(Error::Option(e)) if e.contains("dispatch_updates = 4096") && e.contains("loop cap")
    );
    assert_eq!(refused, gpu.caps.loop_cap.is_some());
    let mut nan = train.clone();
    nan.values[5] = f32::NAN;
    let e = Trainer::new(gpu, &nan, None, Options::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("rating 5"), "{e}");
    let mut out = train.clone();
    out.items[3] = train.n_items as u32;
    let e = Trainer::new(gpu, &out, None, Options::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("rating 3"), "{e}");
    // Text input: a NaN rating is rejected with the file and line.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.txt");
    std::fs::write(&path, "1 2 4\n3 4 nan\n").unwrap();
    let e = wgsparse::io::read_ratings(&path, &mut Default::default()).unwrap_err();
    assert!(e.to_string().contains("r.txt:2"), "{e}");
}

#[test]
fn save_load_predict_round_trip() {
    let data = planted(60, 40, 700, 9);
    let (train, test) = sets(&data);
    let mut t = Trainer::new(common::gpu(), &train, Some(&test), converge_options()).unwrap();
    t.fit(2, |_| {}).unwrap();
    let mut model = t.model().unwrap();
    model.user_ids = Some((0..model.n_users).map(|u| format!("u{u}")).collect());
    model.item_ids = Some((0..model.n_items).map(|i| format!("i{i}")).collect());
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("m.wgmf");
    model.save(&bin).unwrap();
    let back = Model::load(&bin).unwrap();
    assert_eq!(back, model);
    let text = dir.path().join("m.libmf");
    model.save_libmf(&text).unwrap();
    let libmf = Model::load_libmf(&text).unwrap();
    assert_eq!(
        (libmf.p.clone(), libmf.q.clone()),
        (model.p.clone(), model.q.clone())
    );
    for k in 0..test.len() {
        let (u, i) = (test.users[k], test.items[k]);
        let want: f64 = (0..model.k)
            .map(|j| {
                model.p[u as usize * model.k + j] as f64 * model.q[i as usize * model.k + j] as f64
            })
            .sum();
        for m in [&back, &libmf] {
            let got = m.predict(u, i).unwrap() as f64;
            assert!(
                (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
    }
    assert!(back.predict(model.n_users as u32, 0).is_err());
    // Truncated and corrupt files are errors naming the file.
    let bytes = std::fs::read(&bin).unwrap();
    let cut = dir.path().join("cut.wgmf");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let e = Model::load(&cut).unwrap_err();
    assert!(
        e.to_string().contains("cut.wgmf") && e.to_string().contains("truncated"),
        "{e}"
    );
    let mut bad = bytes.clone();
    bad[0] ^= 1;
    std::fs::write(&cut, &bad).unwrap();
    assert!(Model::load(&cut).unwrap_err().to_string().contains("magic"));
    std::fs::write(&cut, &bytes[..10]).unwrap();
    assert!(Model::load(&cut).is_err());
    let t = std::fs::read_to_string(&text).unwrap();
    let lines: Vec<&str> = t.lines().collect();
    std::fs::write(&cut, lines[..lines.len() - 3].join("\n")).unwrap();
    let e = Model::load_libmf(&cut).unwrap_err();
    assert!(matches!(e, Error::Parse { .. }), "{e}");
    std::fs::write(&cut, t.replacen(" T ", " T x", 1)).unwrap();
    assert!(Model::load_libmf(&cut)
        .unwrap_err()
        .to_string()
        .contains("cut.wgmf:6"));
}

fn cli(args: &[&str]) -> (bool, String, String) {
    common::wgsparse(args)
}

#[test]
fn cli_trains_saves_and_predicts() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let data = planted(200, 150, 8_000, 6);
    let (train, mut test) = sets(&data);
    // A test line with an id never seen in training: skipped and counted.
    test.users.push(train.n_users as u32 + 5);
    test.items.push(0);
    test.values.push(3.0);
    wgsparse::io::write_ratings(p("train.tsv"), &train).unwrap();
    wgsparse::io::write_ratings(p("test.tsv"), &test).unwrap();
    let args = [
        "mf",
        "train",
        "--train",
        &p("train.tsv"),
        "--test",
        &p("test.tsv"),
        "--k",
        "32",
        "--epochs",
        "3",
        "--lambda",
        "0.02",
        "--alpha",
        "0.05",
        "--beta",
        "0.1",
        "--ilp",
        "2",
        "--stage",
        "--vector",
        "2",
        "--json",
        "--model",
        &p("m.wgmf"),
        "--libmf",
        &p("m.libmf"),
    ];
    let (ok, out, err) = cli(&args);
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["rmse"].as_array().unwrap().len(), 3);
    assert_eq!(j["skipped_test"], 1);
    assert_eq!(j["ilp"], 2);
    assert!(j["stage"].is_boolean(), "{j}");
    let per = 32 / 2 / j["lanes"].as_u64().unwrap();
    assert_eq!(
        j["vector"],
        if per.is_multiple_of(2) { 2 } else { 1 },
        "{j}"
    );
    let last = j["final_rmse"].as_f64().unwrap();
    assert!(
        last < j["rmse"][0].as_f64().unwrap() && last < 0.5,
        "{last}"
    );
    std::fs::write(p("pairs.txt"), "0\t3\n1 2 4.5\n").unwrap();
    let (ok, out, err) = cli(&[
        "mf",
        "predict",
        "--model",
        &p("m.wgmf"),
        "--pairs",
        &p("pairs.txt"),
        "--json",
    ]);
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["predictions"].as_array().unwrap().len(), 2);
    assert!(j["rmse"].as_f64().is_some());
    let (ok, _, _) = cli(&[
        "mf",
        "predict",
        "--libmf",
        "--model",
        &p("m.libmf"),
        "--pairs",
        &p("pairs.txt"),
    ]);
    assert!(ok);
    // Failures exit non-zero with the file and line.
    std::fs::write(p("bad.txt"), "0 3\nnobody 3\n").unwrap();
    let (ok, _, err) = cli(&[
        "mf",
        "predict",
        "--model",
        &p("m.wgmf"),
        "--pairs",
        &p("bad.txt"),
    ]);
    assert!(!ok && err.contains("bad.txt:2"), "{err}");
    std::fs::write(p("nan.tsv"), "1 2 3\n4 5 nan\n").unwrap();
    let (ok, _, err) = cli(&["mf", "train", "--train", &p("nan.tsv"), "--epochs", "1"]);
    assert!(!ok && err.contains("nan.tsv:2"), "{err}");
    std::fs::write(p("range.tsv"), "1 2 3\n4 5 4.5\n6 7 9\n").unwrap();
    let args = [
        "mf",
        "train",
        "--train",
        &p("range.tsv"),
        "--rating-range",
        "1,5",
    ];
    let (ok, _, err) = cli(&args);
    assert!(
        !ok && err.contains("range.tsv:3") && err.contains("outside"),
        "{err}"
    );
    let (ok, _, err) = cli(&["mf", "train", "--train", &p("train.tsv"), "--k", "40"]);
    assert!(!ok && err.contains("k = 40"), "{err}");
    let args = ["mf", "train", "--train", &p("train.tsv"), "--ilp", "3"];
    let (ok, _, err) = cli(&args);
    assert!(!ok && err.contains("ilp = 3"), "{err}");
    for flag in [
        &["--ilp", "2"][..],
        &["--lanes", "4"],
        &["--vector", "2"],
        &["--wg", "64"],
        &["--dispatch-updates", "512"],
        &["--incoherent-p"],
    ] {
        let train = p("train.tsv");
        let mut args = vec!["mf", "train", "--train", &train, "--scheme", "wavefront"];
        args.extend(flag);
        let (ok, _, err) = cli(&args);
        let want = format!("{}: applies to the hogwild scheme only", flag[0]);
        assert!(!ok && err.contains(&want), "{err}");
    }
    let args = ["mf", "train", "--train", &p("train.tsv"), "--lanes", "12"];
    let (ok, _, err) = cli(&args);
    assert!(!ok && err.contains("lanes = 12"), "{err}");
    // ILP 1 without staging stays reachable; the defaults are ILP 2, staged.
    for (extra, ilp, staged) in [
        (&["--ilp", "1", "--no-stage", "--no-warm-up"][..], 1, false),
        (&[][..], 2, true),
    ] {
        let train = p("train.tsv");
        let mut args = vec!["mf", "train", "--train", &train, "--k", "32"];
        args.extend(["--epochs", "1", "--json"]);
        args.extend(extra);
        let (ok, out, err) = cli(&args);
        assert!(ok, "{err}");
        let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(j["ilp"], ilp, "{j}");
        // Staging needs subgroup shuffles.
        assert_eq!(j["stage"], staged && j["subgroup_reduce"] == true, "{j}");
        // The clock warm-up runs by default.
        assert_eq!(j["warm_up_seconds"].as_f64().unwrap() > 0.0, staged, "{j}");
    }
}
