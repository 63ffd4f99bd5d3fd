//! Async mode's default parameter reads (plain loads, `wide::Options::asynchronous_for`)
//! and their divergence guard (`Options::read_guard`): the default reaches the f64 twin's
//! exact mini-batch SGD (the `wide train --check` rule) for LR and FM; an epoch whose
//! validation loss rises is trained again from its start with atomic reads (and atomic
//! writes, where plain writes were on; the parameters
//! afterwards equal one epoch of the twin from the start, not two); a step far too large
//! is redone and reported, and left alone without the guard. Sized for lavapipe.

mod common;

use common::wide::{assert_matches_twin, async_chunk_twin, data, gen_ctr, train_args, trainer};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::wide::{cpu, metrics, FlowVariant, Model, Options};
use wgsparse::Error;

/// Planted CTR data, 90/10 split: (train, labels), (valid, labels).
type Split = (
    (wgsparse::sparse::Csr, Vec<f32>),
    (wgsparse::sparse::Csr, Vec<f32>),
);

fn planted(n: usize, m: usize, nnz: usize, seed: u64) -> Split {
    let d = zipf_ctr(n, m, nnz, CtrModel::Lr, seed).unwrap();
    let split = n * 9 / 10;
    let x = &d.features;
    (
        (x.row_band(0..split), d.labels[..split].to_vec()),
        (x.row_band(split..n), d.labels[split..].to_vec()),
    )
}

/// The `--check` rule on the async default: 2 epochs with 8 racing persistent workgroups,
/// the twin replaying the same mini-batches as exact SGD; the GPU's validation logloss at
/// most 0.003 above the twin's. The default reads plainly on lavapipe (Vulkan) and no epoch
/// is redone.
#[test]
fn async_default_reads_plainly_and_passes_the_check() {
    let ((train, ytr), (valid, yva)) = planted(12_000, 300, 12, 61);
    for model in [Model::Lr, Model::Fm { k: 4 }] {
        let spec = model.spec().unwrap();
        let options = Options {
            batch: 256,
            async_groups: 8,
            early_stop: false,
            ..Options::asynchronous_for(&spec)
        };
        assert!(options.variant.plain_reads && options.read_guard.is_some());
        let mut t = trainer(
            &spec,
            train.ncols,
            (&train, &ytr),
            Some((&valid, &yva)),
            options.clone(),
        );
        assert!(
            t.flow().0.plain_reads,
            "{}: plain reads on Vulkan",
            spec.name
        );
        let mut p: Vec<f64> = t.params().unwrap().iter().map(|&v| v as f64).collect();
        let mut sgd = cpu::Sgd::new(p.len());
        let y = metrics::labels_pm1(&ytr);
        let mut last = None;
        for _ in 0..2 {
            let s = t.epoch().unwrap();
            assert!(!s.redone, "{}: epoch {} redone", spec.name, s.epoch);
            for rows in t.last_minibatches() {
                sgd.step(model, &mut p, &train, &y, &rows, options.lr as f64);
            }
            last = s.logloss;
        }
        let gpu = last.unwrap();
        let twin = cpu::mean_loss(model, &p, &valid, &metrics::labels_pm1(&yva));
        eprintln!("{}: GPU logloss {gpu:.5}, twin {twin:.5}", spec.name);
        assert!(
            gpu.is_finite() && gpu <= twin + 0.003,
            "{}: {gpu} vs {twin}",
            spec.name
        );
        assert!(
            gpu < std::f64::consts::LN_2 - 0.01,
            "{}: learned nothing",
            spec.name
        );
    }
}

/// Validation labels flipped against the training labels, so that learning raises the
/// validation loss past the guard: the epoch is trained again from its start with atomic
/// reads (one workgroup, chunks in data order: deterministic), which the trainer keeps.
/// The parameters then equal one epoch of the twin's chunk-by-chunk steps from the start —
/// two epochs' worth would show a restore that failed.
#[test]
fn guard_trains_a_rising_epoch_again_from_its_start() {
    let (x, y01) = data(192, 80, 10, 67);
    let flipped: Vec<f32> = y01.iter().map(|&l| 1.0 - l).collect();
    // The guard's copy by a transfer command, then by a dispatch (`kernel_copies`), then
    // with plain writes too (the retry drops them with the plain-reads binding).
    let runs = [Model::Lr, Model::Fm { k: 3 }]
        .into_iter()
        .flat_map(|m| [(m, false, false), (m, true, false), (m, true, true)]);
    for (model, kernel_copies, plain_writes) in runs {
        let spec = model.spec().unwrap();
        let (batch, chunk, in_flight) = (64, 16, 4.0);
        let options = Options {
            batch,
            max_chunk: chunk,
            lanes: 2,
            sync: false,
            async_groups: 1,
            async_in_flight: Some(in_flight),
            shuffle: false,
            reindex: false,
            early_stop: false,
            variant: FlowVariant {
                plain_reads: true,
                kernel_copies,
                plain_writes,
                ..FlowVariant::default()
            },
            ..Options::default()
        };
        let mut t = trainer(&spec, x.ncols, (&x, &y01), Some((&x, &flipped)), options);
        assert_eq!(t.flow().0.plain_writes, plain_writes);
        let start = t.params().unwrap();
        let before = t.evaluate().unwrap().unwrap().loss;
        let s = t.epoch().unwrap();
        eprintln!(
            "{}: validation loss {before:.5} → {:.5}, redone {}",
            spec.name,
            s.valid_loss.unwrap(),
            s.redone
        );
        assert!(s.redone, "{}: the rising epoch was not redone", spec.name);
        assert!(!t.flow().0.plain_reads, "{}: atomic reads kept", spec.name);
        assert!(
            !t.flow().0.plain_writes,
            "{}: atomic writes kept",
            spec.name
        );
        let want = async_chunk_twin(model, (&x, &y01), (batch, chunk), in_flight, 1, &start);
        assert_matches_twin(
            &t.params().unwrap(),
            &want,
            &format!(
                "{} redone, kernel copies {kernel_copies}, plain writes {plain_writes}",
                spec.name
            ),
        );
        // The next epoch runs once, with atomic reads, and is judged afresh.
        let s2 = t.epoch().unwrap();
        assert!(!t.flow().0.plain_reads);
        assert!(!s2.redone, "{}: no plain reads left to redo", spec.name);
    }
}

/// lr 1e4 with 8 racing workgroups: with the guard the plain-read epoch is redone with
/// atomic reads and reported (`redone`, or a divergence error naming the retry); without
/// it the same epoch is neither redone nor retried.
#[test]
fn guard_reports_a_step_far_too_large() {
    let ((train, ytr), (valid, yva)) = planted(6_000, 200, 10, 71);
    let spec = Model::Lr.spec().unwrap();
    for guard in [true, false] {
        let options = Options {
            batch: 256,
            lr: 1e4,
            async_groups: 8,
            early_stop: false,
            read_guard: guard.then_some(wgsparse::wide::READ_GUARD),
            ..Options::asynchronous_for(&spec)
        };
        let mut t = trainer(
            &spec,
            train.ncols,
            (&train, &ytr),
            Some((&valid, &yva)),
            options,
        );
        match t.epoch() {
            Ok(s) => {
                eprintln!(
                    "guard {guard}: validation loss {:?}, redone {}",
                    s.valid_loss, s.redone
                );
                assert_eq!(s.redone, guard, "guard {guard}");
                assert_eq!(t.flow().0.plain_reads, !guard, "guard {guard}");
                assert!(s.valid_loss.unwrap() > 1.0, "lr 1e4 should not train well");
            }
            Err(Error::Diverged { message, .. }) => {
                eprintln!("guard {guard}: {message}");
                assert_eq!(message.contains("atomic reads"), guard, "{message}");
            }
            Err(e) => panic!("guard {guard}: {e}"),
        }
    }
}

/// The CLI: `wide train --async` reads plainly and copies the guard's parameters by a
/// dispatch by default and passes `--check` (LR and FM, FM with its own defaults: 4 lanes,
/// the cache off, every per-chunk variant); `--atomic-reads` gives the atomic kernel,
/// `--transfer-copies` the transfer copy; a step far too large is redone and counted in
/// the JSON (or, if atomic reads diverge too, exits non-zero naming the retry).
#[test]
fn cli_async_default_and_guard() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("ctr");
    let d = d.to_str().unwrap();
    gen_ctr(d, 4000, 400, 5);
    let train = |extra: &[&str]| {
        let mut args = train_args(d, &["--async", "--no-early-stop", "--json"]);
        args.extend_from_slice(extra);
        common::wgsparse_exit(&args)
    };
    let json = |out: &str| -> serde_json::Value { serde_json::from_str(out.trim()).unwrap() };
    let (code, out, err) = train(&["--epochs", "2", "--check"]);
    assert_eq!(code, 0, "{err}");
    let lr = json(&out);
    assert_eq!(lr["reads"], "plain", "{lr}");
    assert_eq!(lr["variant"], "plain-reads,slot8,kernel-copies", "{lr}");
    assert_eq!(lr["lanes"], 4, "{lr}");
    assert_eq!(lr["check_ok"], true, "{lr}");
    assert_eq!(lr["redone_epochs"], 0, "{lr}");
    let (code, out, err) = train(&["--epochs", "2", "--check", "--model", "fm", "--k", "4"]);
    assert_eq!(code, 0, "{err}");
    let fm = json(&out);
    assert_eq!(fm["reads"], "plain", "{fm}");
    // FM's async default also narrows the edge tile (wide::FM_TILE_WORDS).
    assert_eq!(
        fm["variant"], "plain-reads,tile-words=512,kernel-copies",
        "{fm}"
    );
    assert_eq!(
        (fm["lanes"].as_u64(), fm["hot_features"].as_u64()),
        (Some(4), Some(0))
    );
    assert_eq!(fm["check_ok"], true, "{fm}");
    let (code, out, err) = train(&["--epochs", "1", "--atomic-reads"]);
    assert_eq!(code, 0, "{err}");
    let atomic = json(&out);
    assert_eq!(
        (atomic["reads"].as_str(), atomic["variant"].as_str()),
        (Some("atomic"), Some("slot8,kernel-copies"))
    );
    let (code, out, err) = train(&["--epochs", "1", "--transfer-copies"]);
    assert_eq!(code, 0, "{err}");
    let transfer = json(&out);
    assert_eq!(transfer["variant"], "plain-reads,slot8", "{transfer}");
    let (code, out, err) = train(&["--epochs", "1", "--lr", "10000"]);
    if code == 0 {
        let big = json(&out);
        assert_eq!(big["redone_epochs"], 1, "{big}");
        assert_eq!(big["epochs"][0]["redone"], true, "{big}");
        assert_eq!(big["reads"], "atomic", "{big}");
    } else {
        assert!(err.contains("atomic reads"), "{err}");
    }
}
