//! MF on several devices (one adapter opened as two or three devices): the block schedule
//! instrumented, one device through the multi path equal to the single-device trainer, and
//! two devices converging like one on planted data. Sized for lavapipe.

mod common;

use std::sync::OnceLock;

use common::mf::{converge_options, planted, sets};
use wgsparse::gpu::GpuOptions;
use wgsparse::io::Ratings;
use wgsparse::mf::{blocks, cpu, MultiTrainer, Options, Precision, Scheme, Trainer};
use wgsparse::{Error, Gpu};

/// Three devices on the test adapter (lavapipe on CI).
fn devices() -> &'static [Gpu] {
    static GPUS: OnceLock<Vec<Gpu>> = OnceLock::new();
    GPUS.get_or_init(|| {
        Gpu::several(
            Some(3),
            &GpuOptions {
                share_adapters: true,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    })
}

/// Two devices on the test adapter with storage bindings capped at 8 KiB, so that samples
/// and test ratings take several bands.
fn small_binding_devices() -> Vec<Gpu> {
    Gpu::several(
        Some(2),
        &GpuOptions {
            share_adapters: true,
            max_binding_bytes: Some(8 << 10),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn no_round_gives_two_devices_a_shared_block_and_every_block_is_trained_once() {
    let data = planted(90, 70, 4_000, 3);
    let (train, test) = sets(&data);
    for (g, c) in [(2, 1), (2, 3), (3, 2)] {
        let options = Options {
            instrument: true,
            workers: Some(4),
            batch: 8,
            ..converge_options()
        };
        let mut t = MultiTrainer::new(&devices()[..g], &train, Some(&test), options, c).unwrap();
        let epochs = 2;
        let metrics = t.fit(epochs, |_| {}).unwrap();
        blocks::check_touches(t.touches(), (g, c), epochs)
            .unwrap_or_else(|e| panic!("G = {g}, c = {c}: {e}"));
        assert_eq!(t.touches().len(), g * g * c * epochs);
        // Each device counted (on the GPU) the updates its G blocks call for, every epoch.
        let counts = t.device_update_counts().unwrap();
        for (d, &c) in counts.iter().enumerate() {
            assert_eq!(
                c,
                epochs as u64 * t.device_updates_per_epoch(d),
                "G = {g}, c = {c}, device {d}"
            );
            assert_eq!(metrics[0].devices[d].updates, t.device_updates_per_epoch(d));
        }
        // The blocks partition the ratings, and batch-Hogwild! covers each block at least once.
        let grid = t.grid();
        assert_eq!(grid.offsets[g * g * c], train.len());
        let per_epoch = t.updates_per_epoch();
        assert!(
            per_epoch >= train.len() as u64,
            "{per_epoch} < {}",
            train.len()
        );
        assert_eq!(metrics[1].common.updates, per_epoch);
    }
}

#[test]
fn one_device_through_the_multi_path_equals_the_single_device_trainer() {
    let data = planted(80, 60, 3_000, 7);
    let (train, test) = sets(&data);
    let gpu = &devices()[..1];
    for precision in [Precision::F16, Precision::F32] {
        // Default workers: the update counts agree.
        let options = Options {
            precision,
            ..converge_options()
        };
        let one = Trainer::new(&gpu[0], &train, Some(&test), options.clone()).unwrap();
        let multi = MultiTrainer::new(gpu, &train, Some(&test), options, 1).unwrap();
        assert_eq!(multi.updates_per_epoch(), one.updates_per_epoch());
        assert_eq!(multi.workers(), one.workers());
        // One worker (no races, so the run is deterministic): the same model, bit for bit,
        // and the same test RMSE; also with 4 lanes of 4-word accesses in workgroups of 32.
        for (lanes, vector, workgroup) in [(None, 1, None), (Some(4), 4, Some(32))] {
            let options = Options {
                precision,
                workers: Some(1),
                lanes,
                vector,
                workgroup,
                ..converge_options()
            };
            let mut one = Trainer::new(&gpu[0], &train, Some(&test), options.clone()).unwrap();
            let mut multi = MultiTrainer::new(gpu, &train, Some(&test), options, 1).unwrap();
            assert_eq!((one.vector(), multi.vector()), (vector, vector));
            let a = one.fit(2, |_| {}).unwrap();
            let b = multi.fit(2, |_| {}).unwrap();
            assert_eq!(one.updates_per_epoch(), multi.updates_per_epoch());
            assert_eq!(a[1].updates, b[1].common.updates);
            let (ma, mb) = (one.model().unwrap(), multi.model().unwrap());
            assert!(ma.p == mb.p && ma.q == mb.q, "{precision:?}: models differ");
            let (ra, rb) = (a[1].rmse.unwrap(), b[1].common.rmse.unwrap());
            // GPU f32 sums against the host's f64 sums of the same model.
            assert!((ra - rb).abs() <= 1e-4 * ra, "{precision:?}: {ra} vs {rb}");
        }
    }
}

#[test]
fn the_devices_score_the_gathered_model_as_the_host_does() {
    let data = planted(90, 70, 4_000, 29);
    let (train, test) = sets(&data);
    for precision in [Precision::F16, Precision::F32] {
        let options = Options {
            precision,
            workers: Some(4),
            batch: 8,
            ..converge_options()
        };
        // The test samples in device rows: the one-device trainer's (the same preprocessing).
        let one = Trainer::new(&devices()[0], &train, Some(&test), options.clone()).unwrap();
        let samples = one.device_test_samples().unwrap();
        let host = |t: &MultiTrainer| {
            let (p, q) = t.device_features().unwrap();
            cpu::rmse(&samples, &p, &q, options.k, t.sigma()).unwrap()
        };
        for (g, c) in [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)] {
            let at = format!("{precision:?}, G = {g}, c = {c}");
            let mut t = MultiTrainer::new(&devices()[..g], &train, Some(&test), options.clone(), c)
                .unwrap();
            assert_eq!(t.test_len(), one.test_len(), "{at}");
            // GPU f32 sums against the host's f64 sums of the same model: before training,
            // after the last epoch (when each device's copies of the other devices' Q blocks
            // are stale until shared) and again (sharing twice changes nothing).
            let before = t.evaluate().unwrap().unwrap();
            let r = t.fit(3, |_| {}).unwrap();
            let after = r[2].common.rmse.unwrap();
            let again = t.evaluate().unwrap().unwrap();
            let expected = host(&t);
            assert!(after < before, "{at}: did not fall: {before} → {after}");
            // Equal up to the order of the f32 atomic adds.
            assert!(
                (after - again).abs() <= 1e-5 * after,
                "{at}: {after} vs {again}"
            );
            assert!(
                (after - expected).abs() <= 1e-4 * expected,
                "{at}: devices {after}, host {expected}"
            );
        }
    }
}

#[test]
fn test_ratings_beyond_one_binding_are_scored_in_bands() {
    // Bindings capped at 8 KiB (680 samples; P's block and Q in f16 at most 128 rows): each
    // device's share of the 1,574 test ratings takes two bands.
    let gpus = small_binding_devices();
    let data = planted(230, 128, 16_500, 31);
    let (train, test) = sets(&data);
    let options = Options {
        workers: Some(4),
        batch: 8,
        ..converge_options()
    };
    let one = Trainer::new(&devices()[0], &train, Some(&test), options.clone()).unwrap();
    let samples = one.device_test_samples().unwrap();
    let mut t = MultiTrainer::new(&gpus, &train, Some(&test), options.clone(), 2).unwrap();
    assert!(t.device_test_bands(0) > 1 && t.device_test_bands(1) > 1);
    let r = t.fit(2, |_| {}).unwrap()[1].common.rmse.unwrap();
    let (p, q) = t.device_features().unwrap();
    let expected = cpu::rmse(&samples, &p, &q, options.k, t.sigma()).unwrap();
    assert!(
        (r - expected).abs() <= 1e-4 * expected,
        "devices {r}, host {expected}"
    );
}

#[test]
fn two_devices_converge_like_one_on_planted_data() {
    // 400 × 300, 40,000 ratings (about 1/3 dense), rank 3: the convergence data of tests/mf.rs.
    let data = planted(400, 300, 40_000, 5);
    let (train, test) = sets(&data);
    let floor = data.noise_floor().unwrap();
    for precision in [Precision::F16, Precision::F32] {
        let options = Options {
            precision,
            ..converge_options()
        };
        let rmse = |g: usize, c: usize| {
            let mut t = MultiTrainer::new(&devices()[..g], &train, Some(&test), options.clone(), c)
                .unwrap();
            let r: Vec<f64> = t
                .fit(10, |_| {})
                .unwrap()
                .iter()
                .map(|m| m.common.rmse.unwrap())
                .collect();
            r
        };
        let one = rmse(1, 1);
        let a = *one.last().unwrap();
        for c in [1, 2] {
            let two = rmse(2, c);
            let b = *two.last().unwrap();
            assert!(
                two[0] > 2.0 * b,
                "{precision:?}, c = {c}: did not converge: {two:?}"
            );
            // Near the noise floor (as tests/mf.rs asks of one device), and within 1.5% of one
            // device: the block order changes which samples meet which features first, not
            // where SGD ends (measured on lavapipe, f16 and f32 alike: one device 0.1359, two
            // 0.1364 at c = 1, 0.4%).
            assert!(
                b <= 1.03 * floor,
                "{precision:?}, c = {c}: {b} above 1.03 × floor {floor}"
            );
            assert!(
                (a - b).abs() <= 0.015 * a,
                "{precision:?}, c = {c}: one device {a}, two devices {b}"
            );
            eprintln!(
                "{precision:?}: floor {floor:.4}, one device {a:.4}, two devices (c = {c}) {b:.4}"
            );
        }
    }
}

#[test]
fn bad_requests_fail_clearly() {
    let data = planted(40, 30, 600, 9);
    let (train, _) = sets(&data);
    let wavefront = Options {
        scheme: Scheme::Wavefront,
        ..converge_options()
    };
    let e = MultiTrainer::new(&devices()[..2], &train, None, wavefront, 1)
        .err()
        .unwrap();
    assert!(
        matches!(e, Error::Option(ref m) if m.contains("hogwild")),
        "{e}"
    );
    // Fewer users than devices: no row block for one of them.
    let tiny = Ratings {
        users: vec![0, 0, 1],
        items: vec![0, 1, 2],
        values: vec![1.0, 2.0, 3.0],
        n_users: 2,
        n_items: 3,
    };
    let e = MultiTrainer::new(&devices()[..3], &tiny, None, converge_options(), 1)
        .err()
        .unwrap();
    assert!(e.to_string().contains("users"), "{e}");
    let e = MultiTrainer::new(&devices()[..2], &train, None, converge_options(), 0)
        .err()
        .unwrap();
    assert!(e.to_string().contains("split"), "{e}");
}

#[test]
fn cli_trains_on_two_devices_and_reports_each() {
    let out = std::process::Command::new(common::binary())
        .args([
            "mf",
            "train",
            "--gen",
            "small",
            "--gen-scale",
            "0.3",
            "--gpus",
            "2",
            "--k",
            "32",
            "--epochs",
            "2",
            "--workers",
            "8",
            "--batch",
            "16",
            "--json",
        ])
        .env("WGSPARSE_SHARE_ADAPTERS", "1")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["gpus"], 2);
    let devices = j["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    let sum = |key: &str| -> u64 { devices.iter().map(|d| d[key].as_u64().unwrap()).sum() };
    assert_eq!(sum("updates"), j["updates"].as_u64().unwrap());
    assert_eq!(sum("ratings"), j["nnz"].as_u64().unwrap());
    let rmse = j["rmse"].as_array().unwrap();
    assert_eq!(rmse.len(), 2);
    assert!(rmse.iter().all(|r| r.as_f64().is_some_and(f64::is_finite)));
    assert!(j["updates_per_s"].as_f64().unwrap() > 0.0);
    // Every device's clocks were brought up first.
    assert!(j["warm_up_seconds"].as_f64().unwrap() > 0.0);
    // The model it saved predicts its test ratings at the reported RMSE.
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.wgmf");
    let (train_path, test_path) = (dir.path().join("train.tsv"), dir.path().join("test.tsv"));
    let data = planted(70, 50, 2_500, 21);
    // Test pairs of users and items the training file has (predict rejects unknown ids).
    let seen = |ids: &[u32], x: u32| ids.contains(&x);
    let text = |r: &wgsparse::gen::RatingSet| -> String {
        (0..r.values.len())
            .filter(|&k| seen(&data.train.users, r.users[k]) && seen(&data.train.items, r.items[k]))
            .map(|k| format!("{}\t{}\t{}\n", r.users[k], r.items[k], r.values[k]))
            .collect()
    };
    std::fs::write(&train_path, text(&data.train)).unwrap();
    std::fs::write(&test_path, text(&data.test)).unwrap();
    let out = std::process::Command::new(common::binary())
        .args([
            "mf",
            "train",
            "--k",
            "32",
            "--epochs",
            "3",
            "--workers",
            "4",
            "--batch",
            "8",
        ])
        .arg("--train")
        .arg(&train_path)
        .arg("--test")
        .arg(&test_path)
        .args(["--gpus", "2", "--json", "--model"])
        .arg(&model)
        .env("WGSPARSE_SHARE_ADAPTERS", "1")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let trained = j["final_rmse"].as_f64().unwrap();
    let out = std::process::Command::new(common::binary())
        .args(["mf", "predict", "--json", "--model"])
        .arg(&model)
        .arg("--pairs")
        .arg(&test_path)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let predicted = p["rmse"].as_f64().unwrap();
    assert!(
        (trained - predicted).abs() <= 1e-3 * trained,
        "{trained} vs {predicted}"
    );
    // Without sharing, two devices on a one-adapter machine is a clear error, exit 2.
    let out = std::process::Command::new(common::binary())
        .args([
            "mf",
            "train",
            "--gen",
            "small",
            "--gen-scale",
            "0.1",
            "--gpus",
            "2",
        ])
        .env_remove("WGSPARSE_SHARE_ADAPTERS")
        .output()
        .expect("the binary runs");
    if Gpu::several(Some(2), &GpuOptions::default()).is_err() {
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("2 devices asked for"));
    }
}

#[test]
fn blocks_beyond_one_binding_train_in_bands_like_one_device() {
    // Bindings capped at 8 KiB: each block's samples (over 700 ratings × 12 bytes) take
    // several bands; P's block and all of Q (≤ 120 rows × 64 bytes) still fit one binding.
    let gpus = small_binding_devices();
    let data = planted(120, 100, 6_000, 13);
    let (train, test) = sets(&data);
    let options = Options {
        workers: Some(4),
        batch: 8,
        instrument: true,
        ..converge_options()
    };
    let mut t = MultiTrainer::new(&gpus, &train, Some(&test), options.clone(), 1).unwrap();
    assert!(
        t.device_bands(0) > 2 && t.device_bands(1) > 2,
        "two blocks per device"
    );
    let r = t.fit(4, |_| {}).unwrap();
    blocks::check_touches(t.touches(), (2, 1), 4).unwrap();
    let counts = t.device_update_counts().unwrap();
    assert_eq!(counts.iter().sum::<u64>(), 4 * t.updates_per_epoch());
    let mut one = MultiTrainer::new(&gpus[..1], &train, Some(&test), options, 1).unwrap();
    let r1 = one.fit(4, |_| {}).unwrap();
    let (a, b) = (r1[3].common.rmse.unwrap(), r[3].common.rmse.unwrap());
    assert!(r[0].common.rmse.unwrap() > b, "did not fall: {r:?}");
    // 4 epochs of a 6,000-rating problem: not yet converged, so a looser bound than above,
    // and one-sided: the H200 ended two devices 6% below one (0.258 against 0.274), which
    // is not a failure to converge like one.
    assert!(b <= 1.05 * a, "one device {a}, two {b}");
}

#[test]
fn divergence_names_the_epoch() {
    let data = planted(60, 50, 2_000, 17);
    let (train, test) = sets(&data);
    let options = Options {
        alpha: 1e4,
        beta: 0.0,
        ..converge_options()
    };
    let mut t = MultiTrainer::new(&devices()[..2], &train, Some(&test), options, 2).unwrap();
    match t.fit(3, |_| {}) {
        Err(Error::Diverged { epoch, .. }) => assert!((1..=3).contains(&epoch)),
        other => panic!("expected divergence, got {:?}", other.map(|m| m.len())),
    }
}

#[test]
fn empty_blocks_are_skipped_and_the_schedule_still_holds() {
    // Two communities: users 0..20 rate items 0..15, users 20..40 items 15..30, every pair.
    // Unpermuted ids and rating-balanced cuts put them on the diagonal blocks; the other
    // blocks are empty at c = 1 (and some are at c = 2).
    let (mut users, mut items, mut values) = (vec![], vec![], vec![]);
    let mut x = 7u32;
    for u in 0..40u32 {
        for i in 0..15u32 {
            x = x.wrapping_mul(747796405).wrapping_add(2891336453);
            users.push(u);
            items.push(if u < 20 { i } else { 15 + i });
            values.push(1.0 + (x >> 8) as f32 / (1 << 24) as f32 * 4.0);
        }
    }
    let train = Ratings {
        users,
        items,
        values,
        n_users: 40,
        n_items: 30,
    };
    for c in [1, 2] {
        let options = Options {
            permute_ids: false,
            instrument: true,
            workers: Some(2),
            batch: 4,
            ..converge_options()
        };
        let mut t = MultiTrainer::new(&devices()[..2], &train, None, options, c).unwrap();
        let grid = t.grid().clone();
        assert!(grid.block(0, 2 * c - 1).is_empty() && grid.block(1, 0).is_empty());
        t.fit(2, |_| {}).unwrap();
        blocks::check_touches(t.touches(), (2, c), 2).unwrap();
        let counts = t.device_update_counts().unwrap();
        for (d, &n) in counts.iter().enumerate() {
            assert_eq!(n, 2 * t.device_updates_per_epoch(d));
        }
        let model = t.model().unwrap();
        assert!(model.p.iter().chain(&model.q).all(|x| x.is_finite()));
    }
}

#[test]
fn the_fallback_path_trains_on_two_devices_too() {
    // No optional features: packed f16 words and the workgroup-memory reduction.
    let gpus = Gpu::several(
        Some(2),
        &GpuOptions {
            share_adapters: true,
            no_optional_features: true,
            ..Default::default()
        },
    )
    .unwrap();
    let data = planted(80, 60, 3_000, 23);
    let (train, test) = sets(&data);
    let options = Options {
        workers: Some(1),
        ..converge_options()
    };
    let mut one = Trainer::new(&gpus[0], &train, Some(&test), options.clone()).unwrap();
    let mut multi = MultiTrainer::new(&gpus[..1], &train, Some(&test), options.clone(), 1).unwrap();
    assert!(!multi.native_f16() && !multi.lanes().1, "the fallback path");
    one.fit(2, |_| {}).unwrap();
    multi.fit(2, |_| {}).unwrap();
    let (ma, mb) = (one.model().unwrap(), multi.model().unwrap());
    assert!(ma.p == mb.p && ma.q == mb.q, "models differ");
    let options = Options {
        instrument: true,
        workers: Some(4),
        batch: 8,
        ..options
    };
    let mut two = MultiTrainer::new(&gpus, &train, Some(&test), options, 2).unwrap();
    let r = two.fit(3, |_| {}).unwrap();
    blocks::check_touches(two.touches(), (2, 2), 3).unwrap();
    assert!(
        r[2].common.rmse.unwrap() < r[0].common.rmse.unwrap(),
        "{r:?}"
    );
}
