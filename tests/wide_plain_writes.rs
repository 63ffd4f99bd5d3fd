//! Async plain writes of the cold features (`wide::FlowVariant::plain_writes`): refused
//! where they cannot be (sync mode, without plain reads, without the step scale), their run
//! token, flags and label; the bound set by hand (`FlowVariant::cold_from`: token
//! `plain-writes=N`, `--cold-from N`, rewritten by `restart_with` and so by `wide sweep`); LR and FM with 8 persistent workgroups reach the validation
//! logloss of the same runs with atomic writes within 0.003; `wide train --plain-writes`
//! passes `--check`. Lavapipe runs few workgroups at a time, so writers seldom race here:
//! the tests check the plumbing and convergence, not the GPU's races. The one-workgroup
//! twin equality is in `wide_variant.rs`, the guard's retry in `wide_guard.rs`.

mod common;

use common::wide::{
    assert_matches_twin, async_chunk_twin, data, gen_ctr, holdout, random_params, sweep_args,
    train_args, trainer,
};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::wide::{plan, FlowVariant, Model, Options, Trainer};
use wgsparse::Gpu;

/// Plain writes, refused in sync mode, without plain reads (atomic or snapshot reads) and
/// without the async step scale (whose length bounds the hot features).
#[test]
fn plain_writes_settings() {
    let pw = FlowVariant {
        plain_reads: true,
        plain_writes: true,
        ..FlowVariant::default()
    };
    pw.check(false).unwrap();
    // Sync mode (whose coherent plain reads are allowed), with or without plain reads.
    for v in [
        FlowVariant {
            coherent_reads: true,
            ..pw
        },
        FlowVariant {
            plain_reads: false,
            ..pw
        },
    ] {
        let msg = v.check(true).unwrap_err().to_string();
        assert!(
            msg.contains("plain_writes") && msg.contains("async"),
            "{msg}"
        );
    }
    for v in [
        FlowVariant {
            plain_reads: false,
            ..pw
        },
        FlowVariant {
            plain_reads: false,
            snapshot_reads: true,
            ..pw
        },
    ] {
        let msg = v.check(false).unwrap_err().to_string();
        assert!(msg.contains("needs plain_reads"), "{msg}");
    }
    Options {
        variant: pw,
        ..Options::asynchronous()
    }
    .check()
    .unwrap();
    let (v, _) = FlowVariant::parse_run("plain-reads,plain-writes").unwrap();
    assert_eq!(v, pw);
    assert_eq!(v.label(), "plain-reads,plain-writes");
    assert_eq!(v.flags().join(" "), "--plain-reads --plain-writes");
    // `plain-writes=N`: the bound by hand, round trip through label and flags; not part of
    // the build key (restart_with rewrites it).
    let (v, _) = FlowVariant::parse_run("plain-reads,plain-writes=187").unwrap();
    assert_eq!(
        v,
        FlowVariant {
            cold_from: 187,
            ..pw
        }
    );
    assert_eq!(v.label(), "plain-reads,plain-writes=187");
    assert_eq!(FlowVariant::parse_run(&v.label()).unwrap().0, v);
    assert_eq!(
        v.flags().join(" "),
        "--plain-reads --plain-writes --cold-from 187"
    );
    assert_eq!(v.build_key(), pw.build_key());
    v.check(false).unwrap();
    assert!(FlowVariant::parse_run("plain-reads,plain-writes=x").is_err());
    let msg = FlowVariant {
        plain_writes: false,
        ..v
    }
    .check(false)
    .unwrap_err()
    .to_string();
    assert!(
        msg.contains("cold_from") && msg.contains("needs plain_writes"),
        "{msg}"
    );
    // The cold tail: counts · S · B ≤ N from the last feature above it on (window 8 of 100
    // samples: counts ≤ 12), past the step scale's bound (counts ≤ 50).
    let counts = [100, 50, 10, 13, 0, 3];
    assert_eq!(plan::cold_from(&counts, 100, 2.0, 4), 4);
    assert_eq!(plan::async_scale(&counts, 100, 2.0).0.len(), 1);
    assert_eq!(plan::cold_from(&[5, 0], 100, 2.0, 4), 0);
}

/// Async, one persistent workgroup (chunks one after another: one writer per word), S = 1
/// mini-batch of 32 in flight, so features in at most 8 of the 256 samples are written
/// plainly: the epoch equals the twin's chunk-by-chunk steps, LR and FM k = 3, alone and
/// with whole-segment Apply and the cache reloaded every 3 chunks (the workgroup's own steps
/// into its copy), on both atomic paths.
#[test]
fn plain_writes_equal_twin_with_one_workgroup() {
    let (x, y01) = data(256, 400, 10, 83);
    let (m, batch, chunk, in_flight) = (x.ncols, 32, 16, 1.0);
    let pw = FlowVariant {
        plain_reads: true,
        plain_writes: true,
        ..FlowVariant::default()
    };
    let whole = FlowVariant {
        apply_whole: true,
        hot_every: 3,
        ..pw
    };
    // Every feature but the most frequent written plainly (`cold_from` 1).
    let all_but_0 = FlowVariant { cold_from: 1, ..pw };
    let runs = [
        (Model::Lr, pw, common::gpu()),
        (Model::Fm { k: 3 }, whole, common::gpu()),
        (Model::Fm { k: 2 }, pw, common::gpu_plain()),
        (Model::Lr, whole, common::gpu_plain()),
        (Model::Lr, all_but_0, common::gpu()),
        (Model::Fm { k: 2 }, all_but_0, common::gpu_plain()),
    ];
    for (model, variant, gpu) in runs {
        twin_run(
            gpu,
            model,
            (&x, &y01),
            (batch, chunk, in_flight),
            variant,
            m,
        );
    }
}

fn twin_run(
    gpu: &Gpu,
    model: Model,
    (x, y01): (&wgsparse::sparse::Csr, &[f32]),
    (batch, chunk, in_flight): (usize, usize, f64),
    variant: FlowVariant,
    m: usize,
) {
    let spec = model.spec().unwrap();
    let options = Options {
        batch,
        max_chunk: chunk,
        lanes: 2,
        sync: false,
        async_groups: 1,
        async_in_flight: Some(in_flight),
        shuffle: false,
        // Re-indexed by frequency, so the cold tail is most features (the twin's steps do
        // not depend on the order).
        cache: Some(20),
        variant,
        ..Options::default()
    };
    let mut t = Trainer::new(gpu, &spec, m, (x, y01), None, options).unwrap();
    let cold = t.cold_from();
    assert!(cold < m / 2, "{}: cold from {cold} of {m}", spec.name);
    if variant.cold_from > 0 {
        assert_eq!(cold, variant.cold_from, "{}", spec.name);
    }
    let start: Vec<f32> = random_params(&spec, m, 5)
        .iter()
        .map(|v| (v * 0.3) as f32)
        .collect();
    t.set_params(&start).unwrap();
    let (loss, _) = t.train_epoch().unwrap();
    assert!(loss.is_finite());
    let want = async_chunk_twin(model, (x, y01), (batch, chunk), in_flight, 1, &start);
    let got = t.params().unwrap();
    // More features moved than the hot ones: cold ones were written (plainly).
    let np = spec.params_per_feature;
    let moved = (0..m).filter(|&j| got[j * np] != start[j * np]).count();
    assert!(moved > cold, "{}: no cold feature moved", spec.name);
    assert_matches_twin(
        &got,
        &want,
        &format!("{} {} (cold from {cold})", spec.name, variant.label()),
    );
}

/// The bound in effect: the rule's with `cold_from` 0, else `cold_from` clamped to the
/// feature count, at build and after `restart_with` (either way round).
#[test]
fn cold_from_sets_the_bound() {
    let (x, y01) = data(512, 300, 10, 17);
    let m = x.ncols;
    let spec = Model::Lr.spec().unwrap();
    let pw = FlowVariant {
        plain_reads: true,
        plain_writes: true,
        ..FlowVariant::default()
    };
    let build = |cold_from: usize| {
        let options = Options {
            batch: 32,
            max_chunk: 16,
            async_groups: 2,
            variant: FlowVariant { cold_from, ..pw },
            ..Options::asynchronous()
        };
        trainer(&spec, m, (&x, &y01), None, options)
    };
    let mut t = build(0);
    let rule = t.cold_from();
    assert!(0 < rule && rule < m, "rule's cold from {rule} of {m}");
    let n = if rule == 7 { 8 } else { 7 };
    assert_eq!(build(n).cold_from(), n);
    assert_eq!(build(m + 50).cold_from(), m);
    let lanes = Options::asynchronous().lanes;
    for (cold_from, want) in [(n, n), (0, rule), (m + 1, m)] {
        let v = FlowVariant { cold_from, ..pw };
        t.restart_with(v, Default::default(), lanes, None).unwrap();
        assert_eq!(t.cold_from(), want, "restart_with cold_from {cold_from}");
        assert!(t.train_epoch().unwrap().0.is_finite());
    }
}

/// Planted data, 8 racing persistent workgroups, 4 epochs: LR and FM k = 4 with plain
/// writes end within 0.003 of the same runs with atomic writes (validation logloss), with
/// features on both sides of the step scale's bound (some written plainly, some not).
/// The divergence guard is off, so no epoch is trained again with atomic reads and each run
/// is its variant alone; a run's figure is the better of its last two epochs, since racing
/// workgroups can lift one epoch's loss (a rise the guard would retrain).
#[test]
fn plain_writes_converge_lr_fm() {
    let (n, m) = (12_000, 4_000);
    let d = zipf_ctr(n, m, 12, CtrModel::Lr, 59).unwrap();
    let (train, valid, ytr, yva) = holdout(&d.features, &d.labels);
    for model in [Model::Lr, Model::Fm { k: 4 }] {
        let spec = model.spec().unwrap();
        let mut finals = vec![];
        for plain_writes in [false, true] {
            let base = Options::asynchronous_for(&spec);
            let options = Options {
                // Chunks of 64: S = 8 mini-batches in flight, the hot bound p_j > 1/8.
                batch: 64,
                async_groups: 8,
                early_stop: false,
                read_guard: None,
                variant: FlowVariant {
                    plain_writes,
                    ..base.variant
                },
                ..base
            };
            let mut t = trainer(&spec, m, (&train, ytr), Some((&valid, yva)), options);
            assert_eq!(t.flow().0.plain_writes, plain_writes, "{}", spec.name);
            let cold = t.cold_from();
            assert!(0 < cold && cold < m, "{}: cold from {cold}", spec.name);
            let stats = t.fit(4, |_| {}).unwrap();
            let l = stats[stats.len() - 2..]
                .iter()
                .map(|s| s.logloss.unwrap())
                .fold(f64::INFINITY, f64::min);
            eprintln!(
                "{} plain writes {plain_writes}: cold from {cold} of {m}, logloss {l:.5}",
                spec.name
            );
            finals.push(l);
        }
        assert!(
            finals[1] <= finals[0] + 0.003,
            "{}: plain writes {} vs atomic {}",
            spec.name,
            finals[1],
            finals[0]
        );
        assert!(
            finals[1] < std::f64::consts::LN_2 - 0.01,
            "{}: learned nothing",
            spec.name
        );
    }
}

/// The CLI: `wide train --async --plain-writes --check` names the variant and its bound and
/// passes (LR, FM); `wide sweep` takes `plain-writes`; in sync mode it is refused, and with
/// `--atomic-reads` clap refuses it (status 2).
#[test]
fn cli_takes_plain_writes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("ctr");
    let d = d.to_str().unwrap();
    gen_ctr(d, 3000, 500, 7);
    let train = |model: &str, extra: &[&str]| {
        let mut args = train_args(d, &["--model", model, "--k", "3", "--epochs", "2"]);
        args.extend_from_slice(extra);
        common::wgsparse_exit(&args)
    };
    for model in ["lr", "fm"] {
        let (code, out, err) = train(model, &["--async", "--plain-writes", "--check", "--json"]);
        assert_eq!(code, 0, "{err}");
        let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert!(
            j["variant"].as_str().unwrap().contains("plain-writes"),
            "{j}"
        );
        assert_eq!(j["check_ok"], true, "{j}");
        let cold = j["cold_from"].as_u64().unwrap();
        assert!(0 < cold && cold < 500, "{j}");
    }
    // `--cold-from N` sets the bound; without --plain-writes clap refuses it (status 2).
    let (code, out, err) = train(
        "lr",
        &["--async", "--plain-writes", "--cold-from", "7", "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["cold_from"], 7, "{j}");
    assert!(
        j["variant"].as_str().unwrap().contains("plain-writes=7"),
        "{j}"
    );
    let (code, _, err) = train("lr", &["--async", "--cold-from", "7"]);
    assert_eq!(code, 2, "{err}");
    // `wide sweep` takes the run tokens and reports each run's bound: the rule's, then 5,
    // then the rule's again (one trainer, its bound rewritten per run).
    let (ok, out, err) = common::wgsparse(&sweep_args(
        d,
        "1",
        "1",
        &[
            "plain-reads,plain-writes",
            "plain-reads,plain-writes=5",
            "plain-reads,plain-writes",
        ],
    ));
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    let rule = lines[0]["cold_from"].as_u64().unwrap();
    assert!(rule > 0 && rule != 5, "{}", lines[0]);
    assert_eq!(
        lines[1]["variant"], "plain-reads,plain-writes=5",
        "{}",
        lines[1]
    );
    assert_eq!(lines[1]["cold_from"], 5, "{}", lines[1]);
    assert_eq!(lines[2]["cold_from"], rule, "{}", lines[2]);
    for line in &lines {
        assert_eq!(line["setup_s"], lines[0]["setup_s"], "one trainer: {line}");
        assert!(
            line["logloss"].as_f64().unwrap() < std::f64::consts::LN_2,
            "{line}"
        );
    }
    let (code, _, err) = train("lr", &["--plain-writes"]);
    assert_ne!(code, 0);
    assert!(err.contains("plain_writes"), "{err}");
    let (code, _, err) = train("lr", &["--async", "--plain-writes", "--atomic-reads"]);
    assert_eq!(code, 2, "{err}");
}
