//! `wide` convergence and metrics: planted-data training (LR sync and async, FM, async at a
//! large window) reaching the planted model's AUC or sync mode's logloss, variants' effect
//! on the final loss, the cost rule, histogram AUC and the GPU's validation metrics. Sized
//! for lavapipe.

mod common;

use common::wide::{holdout, trainer};
use rand::{Rng, SeedableRng};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::wide::{cpu, metrics, Model, Options, Trainer};
use wgsparse::Gpu;

/// Planted LR data: training reaches the planted model's validation AUC within 0.01, in sync
/// and async mode, and the two final losses agree within 0.01.
#[test]
fn converges_to_planted_auc_sync_and_async() {
    let (n, m) = (20_000, 100);
    let d = zipf_ctr(n, m, 12, CtrModel::Lr, 31).unwrap();
    let (train, valid, ytr, yva) = holdout(&d.features, &d.labels);
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
        let mut t = trainer(&spec, m, (&train, ytr), Some((&valid, yva)), options);
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

/// Lanes (the Accum replicas R), chunk size, the atomic path, the importance cache's size and
/// the chunk order each change the final validation logloss by ≤ 0.003.
#[test]
fn variants_change_final_loss_by_at_most_0_003() {
    let (n, m) = (6_000, 150);
    let d = zipf_ctr(n, m, 10, CtrModel::Lr, 61).unwrap();
    let (train, valid, ytr, yva) = holdout(&d.features, &d.labels);
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
    let mut t = trainer(
        &spec,
        200,
        (&x, &y),
        Some((&x, &y)),
        Options {
            batch: 100,
            ..Options::default()
        },
    );
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

/// Planted FM data (k = 4): FM training reaches the planted model's validation AUC within
/// 0.01.
#[test]
fn fm_converges_to_planted_auc() {
    let (n, m, k) = (30_000, 80, 4);
    let d = zipf_ctr(n, m, 10, CtrModel::Fm { k }, 131).unwrap();
    let (train, valid, ytr, yva) = holdout(&d.features, &d.labels);
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
    let mut t = trainer(&spec, m, (&train, ytr), Some((&valid, yva)), options);
    let stats = t.fit(15, |_| {}).unwrap();
    let auc = stats.last().unwrap().auc.unwrap();
    eprintln!("FM: auc {auc:.4} (planted {best:.4})");
    assert!(auc >= best - 0.01, "auc {auc} vs planted {best}");
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
    let (train, valid, ytr, yva) = holdout(&d.features, &d.labels);
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
        let mut t = trainer(&spec, m, (&train, ytr), Some((&valid, yva)), options);
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
