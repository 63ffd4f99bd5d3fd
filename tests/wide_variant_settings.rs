//! `wide` flow-kernel variant settings through the library and the CLI: bad settings are
//! refused with clear errors; `wide train` and `wide sweep` take the variants;
//! `Trainer::restart_with` equals a fresh trainer; coherent reads need the adapter's
//! decoration. Sized for lavapipe.

mod common;

use common::wide::{data, gen_ctr, sweep_args, train_args, train_args_batch, trainer};
use wgsparse::wide::{Diag, FlowVariant, Model, Options, Trainer};

/// Bad settings are refused before anything runs.
#[test]
fn bad_variant_settings_are_refused() {
    let bad = [
        (
            true,
            FlowVariant {
                plain_reads: true,
                ..FlowVariant::default()
            },
        ),
        (
            true,
            FlowVariant {
                slot_bits: 16,
                ..FlowVariant::default()
            },
        ),
        (
            true,
            FlowVariant {
                slot_bits: 8,
                ..FlowVariant::default()
            },
        ),
        (
            false,
            FlowVariant {
                slot_bits: 12,
                ..FlowVariant::default()
            },
        ),
        (
            false,
            FlowVariant {
                apply_whole: true,
                apply_ilp: true,
                ..FlowVariant::default()
            },
        ),
        (
            false,
            FlowVariant {
                apply_whole: true,
                walk_ilp: true,
                ..FlowVariant::default()
            },
        ),
        (
            true,
            FlowVariant {
                hot_every: 2,
                ..FlowVariant::default()
            },
        ),
        (
            false,
            FlowVariant {
                coherent_reads: true,
                ..FlowVariant::default()
            },
        ),
        (
            false,
            FlowVariant {
                hot_every: 0,
                ..FlowVariant::default()
            },
        ),
        (
            false,
            FlowVariant {
                hot_every: 2,
                max_segment: 4,
                ..FlowVariant::default()
            },
        ),
        (
            true,
            FlowVariant {
                snapshot_reads: true,
                ..FlowVariant::default()
            },
        ),
        (
            false,
            FlowVariant {
                snapshot_reads: true,
                plain_reads: true,
                ..FlowVariant::default()
            },
        ),
        (
            false,
            FlowVariant {
                snapshot_reads: true,
                snapshot_rounds: 0,
                ..FlowVariant::default()
            },
        ),
    ];
    for (sync, variant) in bad {
        let o = Options {
            sync,
            variant,
            ..Options::default()
        };
        assert!(o.check().is_err(), "{variant:?} sync {sync}");
    }
    assert!(Diag::parse("skip-apply,bogus").is_err());
    // An edge tile beyond workgroup memory is refused, naming the tile.
    let (x, y01) = data(32, 40, 5, 3);
    let spec = Model::Lr.spec().unwrap();
    let options = Options {
        variant: FlowVariant {
            edge_tile_words: 1 << 20,
            ..FlowVariant::default()
        },
        ..Options::default()
    };
    let e = Trainer::new(common::gpu(), &spec, 40, (&x, &y01), None, options)
        .err()
        .expect("refused");
    assert!(e.to_string().contains("edge tile"), "{e}");
    // 8-bit slots number at most 256 samples: larger chunks are refused before chunking.
    let options = Options {
        sync: false,
        batch: 512,
        max_chunk: 512,
        lanes: 2,
        variant: FlowVariant {
            slot_bits: 8,
            ..FlowVariant::default()
        },
        ..Options::default()
    };
    let e = Trainer::new(common::gpu(), &spec, 40, (&x, &y01), None, options)
        .err()
        .expect("refused");
    assert!(e.to_string().contains("--max-chunk 256"), "{e}");
    assert!(!Diag::parse("").unwrap().any());
    // The messages name the conflict.
    for (sync, variant, says) in [
        (
            true,
            FlowVariant {
                snapshot_reads: true,
                ..FlowVariant::default()
            },
            "async",
        ),
        (
            false,
            FlowVariant {
                snapshot_reads: true,
                plain_reads: true,
                ..FlowVariant::default()
            },
            "plain_reads",
        ),
    ] {
        let e = variant.check(sync).unwrap_err().to_string();
        assert!(e.contains("snapshot_reads") && e.contains(says), "{e}");
    }
    // Snapshot reads fix the schedule and step scale at build: restart_with refuses to
    // switch them, either way.
    let (x, y01) = data(64, 40, 5, 9);
    let snap = FlowVariant {
        snapshot_reads: true,
        ..FlowVariant::default()
    };
    for (built, wanted) in [
        (FlowVariant::default(), snap),
        (snap, FlowVariant::default()),
        (
            snap,
            FlowVariant {
                snapshot_rounds: 2,
                ..snap
            },
        ),
    ] {
        let options = Options {
            batch: 16,
            max_chunk: 16,
            sync: false,
            variant: built,
            ..Options::default()
        };
        let mut t = trainer(&spec, 40, (&x, &y01), None, options);
        let e = t
            .restart_with(wanted, Diag::default(), 8, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("snapshot"), "{e}");
    }
}

/// The CLI: `wide train` takes the variant flags and names the variant in its JSON;
/// `wide sweep` prints one line per (pass, run), the timing-only runs marked not valid,
/// `no-read-guard` switching the divergence guard off for its run alone;
/// a bad run or `--diag` name exits with status 2 before training.
#[test]
fn cli_takes_variants_and_sweeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("ctr");
    let d = d.to_str().unwrap();
    gen_ctr(d, 3000, 500, 3);
    let train = common::wgsparse_json(&train_args(
        d,
        &[
            "--epochs",
            "2",
            "--async",
            "--hot-every",
            "4",
            "--copy-ilp",
            "--agg-ilp",
            "--apply-ilp",
            "--walk-ilp",
            "--tail-spread",
            "--plain-reads",
            "--check",
            "--json",
        ],
    ));
    assert_eq!(
        train["variant"],
        "hot-every=4,copy-ilp,agg-ilp,apply-ilp,walk-ilp,tail-spread,plain-reads,slot8,kernel-copies"
    );
    assert_eq!(train["check_ok"], true, "{train}");
    let snap = common::wgsparse_json(&train_args(
        d,
        &[
            "--epochs",
            "2",
            "--async",
            "--snapshot-reads",
            "--snapshot-rounds",
            "2",
            "--max-chunk",
            "64",
            "--check",
            "--json",
        ],
    ));
    assert_eq!(snap["variant"], "snapshot-rounds=2,slot8,kernel-copies");
    // Async FM takes its mode's edge tile unless --tile-words names one; LR keeps the default.
    for (extra, want) in [
        (
            &["--model", "fm", "--k", "3"][..],
            "plain-reads,tile-words=512,kernel-copies",
        ),
        (
            &["--model", "fm", "--k", "3", "--tile-words", "1024"][..],
            "plain-reads,tile-words=1024,kernel-copies",
        ),
        (&["--model", "lr"][..], "plain-reads,slot8,kernel-copies"),
    ] {
        let mut args = vec!["--epochs", "1", "--async", "--json"];
        args.extend_from_slice(extra);
        let v = common::wgsparse_json(&train_args(d, &args));
        assert_eq!(v["variant"], want, "{extra:?}: {v}");
    }
    assert_eq!(snap["check_ok"], true, "{snap}");
    // One persistent workgroup here (43 chunks < 64 windows): a dispatch per 2 chunks.
    assert_eq!(snap["async_groups"], 1, "{snap}");
    assert_eq!(snap["dispatches"], 22, "{snap}");
    // S: a dispatch's 2 chunks of 64 are one mini-batch of 128; --async-in-flight sets it.
    assert_eq!(snap["in_flight"], 1.0, "{snap}");
    let set = common::wgsparse_json(&train_args(
        d,
        &[
            "--epochs",
            "1",
            "--async",
            "--snapshot-reads",
            "--async-in-flight",
            "2.5",
            "--max-chunk",
            "64",
            "--json",
        ],
    ));
    assert_eq!(set["in_flight"], 2.5, "{set}");
    assert_eq!(set["dispatches"], 11, "{set}");
    // Chunks of 64 (two per mini-batch of 128), as the snapshot runs above.
    let mut args = sweep_args(
        d,
        "2",
        "2",
        &[
            "default",
            "max-segment=4,agg-ilp",
            "diag=skip-apply",
            "lanes=8,cache=0,plain-reads,no-read-guard",
            "snapshot-rounds=2,slot16",
        ],
    );
    args.extend(["--max-chunk", "64"]);
    let (ok, out, err) = common::wgsparse(&args);
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 10);
    for l in &lines {
        assert_eq!(l["epoch_ms"].as_array().unwrap().len(), 2, "{l}");
        let valid = l["run"] != "diag=skip-apply";
        assert_eq!(l["valid_result"], valid, "{l}");
        if valid {
            let ll = l["logloss"].as_f64().unwrap();
            assert!(ll < std::f64::consts::LN_2, "{l}");
        }
    }
    // Both passes start over: the same run ends at the same logloss within f32 noise.
    let (a, b) = (&lines[1]["logloss"], &lines[6]["logloss"]);
    // The snapshot run has its own trainer (its schedule), a dispatch per 2 chunks.
    assert_eq!(
        lines[4]["flags"],
        "--snapshot-reads --snapshot-rounds 2 --slot16"
    );
    assert_eq!(lines[4]["variant"], "snapshot-rounds=2,slot16");
    assert_eq!(lines[4]["dispatches"], 22, "{}", lines[4]);
    assert_eq!(lines[0]["dispatches"], 1, "{}", lines[0]);
    let (c, e) = (&lines[4]["logloss"], &lines[9]["logloss"]);
    assert!(
        (c.as_f64().unwrap() - e.as_f64().unwrap()).abs() < 2e-3,
        "{c} {e}"
    );
    assert_eq!(lines[3]["lanes"], 8);
    assert_eq!(lines[3]["hot_features"], 0);
    assert_eq!(
        lines[3]["flags"],
        "--plain-reads --slot32 --lanes 8 --cache 0 --no-read-guard"
    );
    // `no-read-guard` turns the guard off for its run alone (the base reads plainly).
    assert!(lines[3]["read_guard"].is_null(), "{}", lines[3]);
    assert!(lines[8]["read_guard"].is_null(), "{}", lines[8]);
    assert!(lines[0]["read_guard"].as_f64().is_some(), "{}", lines[0]);
    assert!(lines[4]["read_guard"].as_f64().is_some(), "{}", lines[4]);
    assert!(lines[0]["hot_features"].as_u64().unwrap() > 0);
    assert!(
        (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 2e-3,
        "{a} {b}"
    );
    for bad in [
        vec!["wide", "sweep", "--train", d, "--run", "bogus"],
        vec!["wide", "train", "--train", d, "--diag", "skip-everything"],
        vec!["wide", "train", "--train", d, "--sync", "--plain-reads"],
        vec!["wide", "train", "--train", d, "--sync", "--snapshot-reads"],
        vec![
            "wide",
            "train",
            "--train",
            d,
            "--async",
            "--plain-reads",
            "--snapshot-reads",
        ],
        vec![
            "wide",
            "train",
            "--train",
            d,
            "--async",
            "--snapshot-rounds",
            "2",
        ],
        vec![
            "wide",
            "train",
            "--train",
            d,
            "--async",
            "--async-in-flight",
            "0.5",
        ],
        vec!["wide", "sweep", "--train", d, "--run", "snapshot-rounds=0"],
        vec!["wide", "train", "--train", d, "--sync", "--slot16"],
        vec![
            "wide", "train", "--train", d, "--async", "--slot16", "--slot8",
        ],
        vec![
            "wide",
            "train",
            "--train",
            d,
            "--async",
            "--slot8",
            "--batch",
            "1024",
            "--max-chunk",
            "512",
            "--lanes",
            "2",
        ],
        vec![
            "wide",
            "sweep",
            "--train",
            d,
            "--run",
            "snapshot-reads,plain-reads",
        ],
    ] {
        let out = std::process::Command::new(common::binary())
            .args(&bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

/// `Trainer::restart_with` on built data equals a trainer built with the same variant,
/// lanes and cache: the same initial parameters, chunk orders and kernels (async, one
/// persistent workgroup, two epochs); a different segment cut is refused.
#[test]
fn restart_with_equals_a_fresh_trainer() {
    let (x, y01) = data(96, 120, 20, 43);
    let spec = Model::Fm { k: 2 }.spec().unwrap();
    let variant = FlowVariant {
        copy_ilp: true,
        apply_ilp: true,
        hot_every: 2,
        ..FlowVariant::default()
    };
    let base = Options {
        batch: 48,
        max_chunk: 16,
        sync: false,
        async_groups: 1,
        ..Options::default()
    };
    let fresh = Options {
        variant,
        lanes: 2,
        cache: Some(30),
        ..base.clone()
    };
    let mut a = trainer(&spec, 120, (&x, &y01), None, fresh);
    let mut b = trainer(&spec, 120, (&x, &y01), None, base);
    b.train_epoch().unwrap();
    b.restart_with(variant, Diag::default(), 2, Some(30))
        .unwrap();
    assert_eq!(b.flow(), (variant, Diag::default(), 2));
    assert_eq!(b.hot_features(), 30);
    for _ in 0..2 {
        a.train_epoch().unwrap();
        b.train_epoch().unwrap();
    }
    let (pa, pb) = (a.params().unwrap(), b.params().unwrap());
    for (i, (u, v)) in pa.iter().zip(&pb).enumerate() {
        assert!((u - v).abs() <= 1e-6 * (1.0 + u.abs()), "θ{i}: {u} vs {v}");
    }
    let split = FlowVariant {
        max_segment: 4,
        ..FlowVariant::default()
    };
    assert!(b.restart_with(split, Diag::default(), 2, None).is_err());
}

/// Coherent reads on an adapter without the `@coherent` decoration: a clear error naming
/// it, not a shader that fails to build.
#[test]
fn coherent_reads_need_the_decoration() {
    let gpu = common::gpu_plain();
    if gpu.caps.coherent {
        return;
    }
    let (x, y01) = data(32, 40, 8, 5);
    let spec = Model::Lr.spec().unwrap();
    let options = Options {
        sync: false,
        variant: FlowVariant {
            plain_reads: true,
            coherent_reads: true,
            ..FlowVariant::default()
        },
        ..Options::default()
    };
    let err = Trainer::new(gpu, &spec, x.ncols, (&x, &y01), None, options)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("@coherent"), "{err}");
}

/// Apply edge by edge (`edge_apply`) and no fence (`no_fence`): conflicts refused, run
/// tokens, flags and label; `wide train --edge-apply --no-fence --check` passes (LR, FM)
/// and `wide sweep` reports the segmented features (the cost rule's, or the run's bound);
/// `--edge-features` alone exits with status 2.
#[test]
fn edge_apply_settings_and_cli() {
    let e = FlowVariant {
        edge_apply: true,
        ..FlowVariant::default()
    };
    for (variant, says) in [
        (
            FlowVariant {
                max_segment: 4,
                ..e
            },
            "max_segment",
        ),
        (FlowVariant { hot_every: 2, ..e }, "hot_every"),
        (
            FlowVariant {
                edge_features: 3,
                ..FlowVariant::default()
            },
            "needs edge_apply",
        ),
    ] {
        let msg = variant.check(false).unwrap_err().to_string();
        assert!(msg.contains(says), "{msg}");
    }
    let (v, _) = FlowVariant::parse_run("edge-apply=12,plain-reads,no-fence").unwrap();
    assert!(
        v.edge_apply && v.plain_reads && v.edge_features == 12 && v.no_fence,
        "{v:?}"
    );
    assert_eq!(v.label(), "plain-reads,edge-apply=12,no-fence");
    assert_eq!(
        v.flags().join(" "),
        "--plain-reads --edge-apply --edge-features 12 --no-fence"
    );
    // No fence and kernel copies are async only.
    for (v, name) in [
        (
            FlowVariant {
                no_fence: true,
                ..FlowVariant::default()
            },
            "no_fence",
        ),
        (
            FlowVariant {
                kernel_copies: true,
                ..FlowVariant::default()
            },
            "kernel_copies",
        ),
    ] {
        let msg = v.check(true).unwrap_err().to_string();
        assert!(msg.contains(name) && msg.contains("sync"), "{msg}");
    }
    let (v, _) = FlowVariant::parse_run("kernel-copies").unwrap();
    assert!(v.kernel_copies);
    assert_eq!(
        (v.label(), v.flags()),
        ("kernel-copies".into(), vec!["--kernel-copies".into()])
    );
    assert_eq!(FlowVariant::parse_run("edge-apply").unwrap().0, e);
    assert!(FlowVariant::parse_run("edge-apply=x").is_err());

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("ctr");
    let d = d.to_str().unwrap();
    gen_ctr(d, 3000, 500, 5);
    for model in ["lr", "fm"] {
        let train = common::wgsparse_json(&train_args(
            d,
            &[
                "--model",
                model,
                "--k",
                "3",
                "--epochs",
                "2",
                "--async",
                "--edge-apply",
                "--no-fence",
                "--kernel-copies",
                "--check",
                "--json",
            ],
        ));
        assert!(
            train["variant"]
                .as_str()
                .unwrap()
                .ends_with("edge-apply,no-fence,kernel-copies"),
            "{train}"
        );
        assert_eq!(train["check_ok"], true, "{train}");
    }
    let (ok, out, err) = common::wgsparse(&sweep_args(
        d,
        "1",
        "1",
        &["edge-apply", "edge-apply=3", "default"],
    ));
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let rule = lines[0]["segment_features"].as_u64().unwrap();
    assert!(0 < rule && rule < 500, "{}", lines[0]);
    assert_eq!(lines[1]["segment_features"], 3, "{}", lines[1]);
    assert!(lines[2]["segment_features"].is_null(), "{}", lines[2]);
    for l in &lines {
        assert!(
            l["logloss"].as_f64().unwrap() < std::f64::consts::LN_2,
            "{l}"
        );
    }
    let bad = std::process::Command::new(common::binary())
        .args([
            "wide",
            "train",
            "--train",
            d,
            "--async",
            "--edge-features",
            "3",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// `wide train --async` defaults: LR in chunks of 256 samples × 4 lanes with 8-bit slots; a
/// `--max-chunk` past 256 without `--slot8` takes 16-bit slots instead of a refusal, and
/// fewer lanes (512 × 2); `--lanes 8` narrows the chunk to 128; FM keeps chunks of 64 × 4
/// and 32-bit slots.
#[test]
fn cli_async_defaults_and_slot_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("ctr");
    let d = d.to_str().unwrap();
    gen_ctr(d, 3000, 500, 5);
    let run = |extra: &[&str]| {
        let mut args = train_args_batch(d, "1024", &["--epochs", "1", "--async", "--json"]);
        args.extend_from_slice(extra);
        common::wgsparse_json(&args)
    };
    let variant = |j: &serde_json::Value| j["variant"].as_str().unwrap().to_string();
    let lr = run(&[]);
    assert_eq!(
        (lr["chunk"].as_u64(), lr["lanes"].as_u64()),
        (Some(256), Some(4))
    );
    assert!(variant(&lr).contains("slot8"), "{lr}");
    let wide = run(&["--max-chunk", "512"]);
    assert_eq!(
        (wide["chunk"].as_u64(), wide["lanes"].as_u64()),
        (Some(512), Some(2))
    );
    assert!(variant(&wide).contains("slot16"), "{wide}");
    // More lanes than the mode's narrow the default chunk to a workgroup of 1,024.
    let narrow = run(&["--lanes", "8"]);
    assert_eq!(
        (narrow["chunk"].as_u64(), narrow["lanes"].as_u64()),
        (Some(128), Some(8))
    );
    // --slot32: the layout before packing, as a sweep's 32-bit runs name it.
    let plain = run(&["--slot32"]);
    assert_eq!(plain["chunk"].as_u64(), Some(256));
    assert!(!variant(&plain).contains("slot"), "{plain}");
    let fm = run(&["--model", "fm", "--k", "2"]);
    assert_eq!(
        (fm["chunk"].as_u64(), fm["lanes"].as_u64()),
        (Some(64), Some(4))
    );
    assert!(!variant(&fm).contains("slot"), "{fm}");
}
