//! `wide` flow-kernel variants (`wide::FlowVariant`) against the f64 twin: async mode with
//! one persistent workgroup (chunks one after another, nothing races) equals the twin's
//! chunk-by-chunk scaled steps for every variant, valued and one-hot, on both atomic paths;
//! sync mode's variants equal its mini-batch steps; split segments hold the same edges; the
//! timing-only switches (`wide::Diag`) do what they say; bad settings are refused. Sized
//! for lavapipe.

mod common;

use common::wide::{assert_matches_twin, data, random_params, twin};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::sparse::Csr;
use wgsparse::wide::{cpu, metrics, plan, Diag, FlowVariant, Model, Options, Trainer};
use wgsparse::Gpu;

/// Every variant alone, then combined.
fn variants() -> Vec<FlowVariant> {
    let d = FlowVariant::default();
    vec![
        d,
        FlowVariant {
            copy_ilp: true,
            ..d
        },
        FlowVariant { agg_ilp: true, ..d },
        FlowVariant {
            apply_ilp: true,
            ..d
        },
        FlowVariant {
            tail_spread: true,
            ..d
        },
        FlowVariant {
            plain_reads: true,
            ..d
        },
        FlowVariant {
            plain_reads: true,
            coherent_reads: true,
            ..d
        },
        FlowVariant {
            max_segment: 2,
            ..d
        },
        FlowVariant { hot_every: 3, ..d },
        FlowVariant {
            edge_tile_words: 256,
            ..d
        },
        FlowVariant {
            edge_tile_words: 256,
            copy_ilp: true,
            apply_ilp: true,
            ..d
        },
        FlowVariant {
            hot_every: 4,
            copy_ilp: true,
            agg_ilp: true,
            apply_ilp: true,
            tail_spread: true,
            plain_reads: true,
            ..d
        },
        FlowVariant {
            copy_ilp: true,
            agg_ilp: true,
            apply_ilp: true,
            tail_spread: true,
            plain_reads: true,
            max_segment: 3,
            ..d
        },
        // Snapshot reads, one chunk per dispatch (one workgroup, one round): the snapshot
        // equals the live parameters at every chunk.
        FlowVariant {
            snapshot_reads: true,
            snapshot_rounds: 1,
            ..d
        },
        FlowVariant {
            snapshot_reads: true,
            snapshot_rounds: 1,
            hot_every: 3,
            copy_ilp: true,
            apply_ilp: true,
            ..d
        },
        // Two and three chunks per dispatch, all reading the dispatch's snapshot: the twin's
        // stale window of as many chunks.
        FlowVariant {
            snapshot_reads: true,
            snapshot_rounds: 2,
            ..d
        },
        FlowVariant {
            snapshot_reads: true,
            snapshot_rounds: 3,
            copy_ilp: true,
            agg_ilp: true,
            apply_ilp: true,
            tail_spread: true,
            max_segment: 3,
            ..d
        },
    ]
}

/// Chunks the twin steps together from one point for `variant` with one persistent
/// workgroup: snapshot reads take a dispatch's `snapshot_rounds` chunks from the snapshot
/// copied before it (the cache refreshed from it each chunk); otherwise one.
fn twin_window(variant: &FlowVariant) -> usize {
    if variant.snapshot_reads {
        assert!(variant.hot_every == 1 || variant.snapshot_rounds == 1);
        variant.snapshot_rounds as usize
    } else {
        1
    }
}

/// Async, one persistent workgroup, chunks of `chunk` × `lanes`, the importance cache at
/// `cache` features: the epoch equals the twin's chunk-by-chunk steps scaled as
/// `plan::async_scale` says for S = 6.
fn async_one_group_vs_twin(
    gpu: &Gpu,
    model: Model,
    (x, y01): (&Csr, &[f32]),
    (batch, chunk, lanes): (usize, usize, u32),
    cache: usize,
    variant: FlowVariant,
) {
    let m = x.ncols;
    let y = metrics::labels_pm1(y01);
    let in_flight = 6.0;
    let mut counts = vec![0u32; m];
    for &j in &x.col_idx {
        counts[j as usize] += 1;
    }
    let (fs, bias) = plan::async_scale(&counts, x.nrows, in_flight);
    let spec = model.spec().unwrap();
    let np = spec.params_per_feature;
    // Split segments: FM's Apply reads v_jf, which a global feature's earlier piece may just
    // have moved (as a racing workgroup's update may); with every feature cached the reads
    // come from the chunk's snapshot and the step is exact. Snapshot reads need no cache
    // for that: every read comes from the dispatch's snapshot.
    let cache = if variant.max_segment > 0 && np > 1 && !variant.snapshot_reads {
        m
    } else {
        cache
    };
    let options = Options {
        batch,
        max_chunk: chunk,
        lanes,
        sync: false,
        async_groups: 1,
        async_in_flight: Some(in_flight),
        shuffle: false,
        reindex: false,
        cache: Some(cache),
        variant,
        ..Options::default()
    };
    let mut t = Trainer::new(gpu, &spec, m, (x, y01), None, options).unwrap();
    assert_eq!(t.hot_features(), cache, "{variant:?}");
    let start: Vec<f32> = random_params(&spec, m, 9)
        .iter()
        .map(|v| (v * 0.3) as f32)
        .collect();
    t.set_params(&start).unwrap();
    let (loss, _) = t.train_epoch().unwrap();
    assert!(loss.is_finite());
    let got = t.params().unwrap();
    let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
    let base = 0.5 * chunk as f64 / batch as f64;
    let mut step = vec![base; want.len()];
    for (j, &v) in fs.iter().enumerate() {
        step[j * np..(j + 1) * np].fill(base * v as f64);
    }
    step[m * np] = base * bias as f64;
    let mut sgd = cpu::Sgd::new(want.len());
    let chunks: Vec<Vec<usize>> = (0..x.nrows.div_ceil(chunk))
        .map(|c| (c * chunk..((c + 1) * chunk).min(x.nrows)).collect())
        .collect();
    for window in chunks.chunks(twin_window(&variant)) {
        sgd.stale_step(model, &mut want, x, &y, window, &step);
    }
    assert_matches_twin(&got, &want, &format!("{} {}", spec.name, variant.label()));
}

/// Valued data (feature 0 in every sample, empty samples), chunks of 16 × 2 lanes (a
/// workgroup of 32, so the copies' 8 loads in flight and Aggregate's 8 edges per lane each
/// take several rounds), 100 of 120 features cached (more than the workgroup).
#[test]
fn async_variants_equal_twin_valued() {
    let (x, y01) = data(96, 120, 30, 29);
    for variant in variants() {
        for (model, gpu) in [
            (Model::Lr, common::gpu()),
            (Model::Fm { k: 3 }, common::gpu()),
        ] {
            async_one_group_vs_twin(gpu, model, (&x, &y01), (48, 16, 2), 100, variant);
        }
    }
}

/// The CAS path without subgroups, FM k = 2, each variant.
#[test]
fn async_variants_equal_twin_cas_no_subgroups() {
    let (x, y01) = data(64, 80, 12, 31);
    // Without the coherent decoration the coherent-reads variant is refused
    // (coherent_reads_need_the_decoration).
    let plain = common::gpu_plain();
    for variant in variants()
        .into_iter()
        .filter(|v| !v.coherent_reads || plain.caps.coherent)
    {
        async_one_group_vs_twin(
            common::gpu_plain(),
            Model::Fm { k: 2 },
            (&x, &y01),
            (32, 16, 4),
            40,
            variant,
        );
    }
}

/// One-hot data in the criteo-s chunking (64 samples × 4 lanes, 40 features each): a chunk's
/// 2,560 feature-sorted edges overflow the 2,048-edge tile, the cache holds 1,000 features.
#[test]
fn async_variants_equal_twin_one_hot_criteo_chunking() {
    let d = zipf_ctr(128, 3_000, 40, CtrModel::Lr, 37).unwrap();
    assert!(d.features.values.iter().all(|&v| v == 1.0));
    assert!(d.features.row_ptr[64] > 2048);
    for variant in variants() {
        async_one_group_vs_twin(
            common::gpu(),
            Model::Lr,
            (&d.features, &d.labels),
            (128, 64, 4),
            1_000,
            variant,
        );
    }
}

/// Sync mode's variants (copies, Aggregate, tail, split segments) equal the twin's
/// mini-batch steps.
#[test]
fn sync_variants_equal_twin() {
    let (m, batch) = (120, 48);
    let (x, y01) = data(batch * 2, m, 20, 17);
    let y = metrics::labels_pm1(&y01);
    for model in [Model::Lr, Model::Fm { k: 3 }] {
        let spec = model.spec().unwrap();
        for variant in variants()
            .into_iter()
            .filter(|v| v.hot_every == 1 && !v.plain_reads && !v.snapshot_reads)
        {
            let options = Options {
                batch,
                max_chunk: 16,
                lanes: 2,
                shuffle: false,
                variant,
                ..Options::default()
            };
            let mut t = Trainer::new(common::gpu(), &spec, m, (&x, &y01), None, options).unwrap();
            assert!(t.hot_features() > 0);
            let start: Vec<f32> = random_params(&spec, m, 3)
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
                &format!("sync {} {}", spec.name, variant.label()),
            );
        }
    }
}

/// Async with 8 persistent workgroups (updates race) and the combined variant reloading the
/// cache every 8 chunks: planted data still reach sync mode's validation logloss within
/// 0.01 after 4 epochs.
#[test]
fn async_combined_variant_converges() {
    let (n, m) = (20_000, 200);
    let d = zipf_ctr(n, m, 12, CtrModel::Lr, 47).unwrap();
    let split = n * 9 / 10;
    let x = &d.features;
    let (train, valid) = (x.row_band(0..split), x.row_band(split..n));
    let (ytr, yva) = (&d.labels[..split], &d.labels[split..]);
    let spec = Model::Lr.spec().unwrap();
    let mut finals = vec![];
    for (sync, variant) in [
        (true, FlowVariant::default()),
        (
            false,
            FlowVariant {
                hot_every: 8,
                copy_ilp: true,
                agg_ilp: true,
                apply_ilp: true,
                tail_spread: true,
                plain_reads: true,
                ..FlowVariant::default()
            },
        ),
    ] {
        let options = Options {
            batch: 64,
            sync,
            async_groups: 8,
            early_stop: false,
            variant,
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
        assert!(t.hot_features() > 0);
        let stats = t.fit(4, |_| {}).unwrap();
        let l = stats.last().unwrap().logloss.unwrap();
        eprintln!("sync {sync} {}: logloss {l:.5}", variant.label());
        finals.push(l);
    }
    assert!(
        finals[1] <= finals[0] + 0.01,
        "async {} vs sync {}",
        finals[1],
        finals[0]
    );
}

/// Snapshot reads with 8 racing persistent workgroups and several dispatches per epoch (a
/// snapshot copied before each): planted data reach the default async kernel's validation
/// logloss within 0.003 after 4 epochs, at 1 and 4 rounds per dispatch.
#[test]
fn snapshot_reads_converge_with_several_dispatches() {
    let (n, m) = (20_000, 200);
    let d = zipf_ctr(n, m, 12, CtrModel::Lr, 53).unwrap();
    let split = n * 9 / 10;
    let x = &d.features;
    let (train, valid) = (x.row_band(0..split), x.row_band(split..n));
    let (ytr, yva) = (&d.labels[..split], &d.labels[split..]);
    let spec = Model::Lr.spec().unwrap();
    let mut finals = vec![];
    for (rounds, variant) in [
        (0, FlowVariant::default()),
        (
            1,
            FlowVariant {
                snapshot_reads: true,
                snapshot_rounds: 1,
                ..FlowVariant::default()
            },
        ),
        (
            4,
            FlowVariant {
                snapshot_reads: true,
                ..FlowVariant::default()
            },
        ),
    ] {
        let options = Options {
            batch: 64,
            sync: false,
            async_groups: 8,
            early_stop: false,
            variant,
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
        // 563 chunks of 32: one dispatch, or one per 8 · rounds chunks.
        let chunks = split.div_ceil(t.chunk());
        let want = if rounds == 0 {
            1
        } else {
            chunks.div_ceil(8 * rounds)
        };
        assert_eq!(t.epoch_dispatches(), want, "{}", variant.label());
        assert!(t.epoch_dispatches() > 1 || rounds == 0);
        let stats = t.fit(4, |_| {}).unwrap();
        let l = stats.last().unwrap().logloss.unwrap();
        eprintln!(
            "async {}: {} dispatches, S = {}, logloss {l:.5}",
            variant.label(),
            t.epoch_dispatches(),
            t.in_flight()
        );
        finals.push(l);
    }
    for (i, l) in finals.iter().enumerate().skip(1) {
        assert!(
            *l <= finals[0] + 0.003,
            "snapshot run {i}: {l} vs the default's {}",
            finals[0]
        );
    }
}

/// Split segments: no segment longer than the cap, the same (feature, slot, value) edges per
/// chunk as whole segments, more segments when a feature repeats in a chunk.
#[test]
fn split_segments_hold_the_same_edges() {
    let (x, y01) = data(64, 50, 10, 5);
    let y = metrics::labels_pm1(&y01);
    let order = plan::FeatureOrder::by_frequency(&x);
    let whole = plan::Chunks::build(&x, &y, &order, 16).unwrap();
    let split = plan::Chunks::build_split(&x, &y, &order, 16, 3).unwrap();
    assert!(split.n_segments > whole.n_segments);
    let edges = |c: &plan::Chunks, cap: u32| {
        let o = c.offsets;
        let mut per_chunk = vec![];
        for k in 0..c.n_chunks {
            let (g0, g1) = (
                c.meta[o.seg_ptr as usize + k],
                c.meta[o.seg_ptr as usize + k + 1],
            );
            let mut v = vec![];
            for g in g0..g1 {
                let j = c.meta[(o.seg_feat + g) as usize];
                let (e0, e1) = (
                    c.meta[(o.seg_edge + g) as usize],
                    c.meta[(o.seg_edge + g + 1) as usize],
                );
                assert!(e1 > e0 && e1 - e0 <= cap);
                for e in e0..e1 {
                    v.push((j, c.fedge[e as usize]));
                }
            }
            per_chunk.push(v);
        }
        per_chunk
    };
    assert_eq!(edges(&whole, u32::MAX), edges(&split, 3));
}

/// The timing-only switches: `no-tile` still equals the twin (Apply reads every edge
/// globally); `skip-apply` with `skip-tail` leaves every parameter as it was; `fixed` runs
/// and names all five.
#[test]
fn diag_switches_do_what_they_say() {
    let (x, y01) = data(96, 120, 20, 41);
    async_one_group_vs_twin(
        common::gpu(),
        Model::Lr,
        (&x, &y01),
        (48, 16, 2),
        60,
        FlowVariant::default(),
    );
    let spec = Model::Lr.spec().unwrap();
    let run = |diag: Diag| {
        let options = Options {
            batch: 48,
            max_chunk: 16,
            sync: false,
            async_groups: 1,
            shuffle: false,
            diag,
            ..Options::default()
        };
        let mut t = Trainer::new(common::gpu(), &spec, 120, (&x, &y01), None, options).unwrap();
        let start: Vec<f32> = random_params(&spec, 120, 2)
            .iter()
            .map(|v| (v * 0.3) as f32)
            .collect();
        t.set_params(&start).unwrap();
        let (loss, _) = t.train_epoch().unwrap();
        (start, t.params().unwrap(), loss)
    };
    let (start, got, loss) = run(Diag::parse("skip-apply,skip-tail").unwrap());
    assert_eq!(start, got);
    assert_eq!(loss, 0.0);
    let (start, got, _) = run(Diag::parse("skip-apply").unwrap());
    assert_eq!(start[..120], got[..120]);
    assert_ne!(start[120], got[120], "the bias still moves");
    let fixed = Diag::parse("fixed").unwrap();
    assert_eq!(fixed.names().len(), 5);
    let (_, got, loss) = run(fixed);
    assert!(got.iter().all(|v| v.is_finite()) && loss == 0.0);
    // no-tile is a valid run: the twin's result.
    let (x2, y2) = (x.clone(), y01.clone());
    let y = metrics::labels_pm1(&y2);
    let options = Options {
        batch: 48,
        max_chunk: 16,
        shuffle: false,
        diag: Diag::parse("no-tile").unwrap(),
        ..Options::default()
    };
    let mut t = Trainer::new(common::gpu(), &spec, 120, (&x2, &y2), None, options).unwrap();
    let start: Vec<f32> = random_params(&spec, 120, 4)
        .iter()
        .map(|v| (v * 0.3) as f32)
        .collect();
    t.set_params(&start).unwrap();
    t.train_epoch().unwrap();
    let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
    twin(Model::Lr, false, &mut want, &x2, &y, 48, 0.5);
    assert_matches_twin(&t.params().unwrap(), &want, "no-tile");
}

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
        let mut t = Trainer::new(common::gpu(), &spec, 40, (&x, &y01), None, options).unwrap();
        let e = t
            .restart_with(wanted, Diag::default(), 8, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("snapshot"), "{e}");
    }
}

/// The CLI: `wide train` takes the variant flags and names the variant in its JSON;
/// `wide sweep` prints one line per (pass, run), the timing-only runs marked not valid;
/// a bad run or `--diag` name exits with status 2 before training.
#[test]
fn cli_takes_variants_and_sweeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("ctr");
    let d = d.to_str().unwrap();
    let gen = [
        "gen",
        "ctr",
        "--samples",
        "3000",
        "--features",
        "500",
        "--nnz-per-sample",
        "12",
        "--seed",
        "3",
        "--raw",
        "--out",
        d,
    ];
    assert!(common::wgsparse(&gen).0);
    let train = common::wgsparse_json(&[
        "wide",
        "train",
        "--train",
        d,
        "--holdout",
        "0.1",
        "--epochs",
        "2",
        "--batch",
        "128",
        "--async",
        "--hot-every",
        "4",
        "--copy-ilp",
        "--agg-ilp",
        "--apply-ilp",
        "--tail-spread",
        "--plain-reads",
        "--check",
        "--json",
    ]);
    assert_eq!(
        train["variant"],
        "hot-every=4,copy-ilp,agg-ilp,apply-ilp,tail-spread,plain-reads"
    );
    assert_eq!(train["check_ok"], true, "{train}");
    let snap = common::wgsparse_json(&[
        "wide",
        "train",
        "--train",
        d,
        "--holdout",
        "0.1",
        "--epochs",
        "2",
        "--batch",
        "128",
        "--async",
        "--snapshot-reads",
        "--snapshot-rounds",
        "2",
        "--check",
        "--json",
    ]);
    assert_eq!(snap["variant"], "snapshot-rounds=2");
    assert_eq!(snap["check_ok"], true, "{snap}");
    // One persistent workgroup here (43 chunks < 64 windows): a dispatch per 2 chunks.
    assert_eq!(snap["async_groups"], 1, "{snap}");
    assert_eq!(snap["dispatches"], 22, "{snap}");
    // S: a dispatch's 2 chunks of 64 are one mini-batch of 128; --async-in-flight sets it.
    assert_eq!(snap["in_flight"], 1.0, "{snap}");
    let set = common::wgsparse_json(&[
        "wide",
        "train",
        "--train",
        d,
        "--holdout",
        "0.1",
        "--epochs",
        "1",
        "--batch",
        "128",
        "--async",
        "--snapshot-reads",
        "--async-in-flight",
        "2.5",
        "--json",
    ]);
    assert_eq!(set["in_flight"], 2.5, "{set}");
    assert_eq!(set["dispatches"], 11, "{set}");
    let (ok, out, err) = common::wgsparse(&[
        "wide",
        "sweep",
        "--train",
        d,
        "--batch",
        "128",
        "--epochs",
        "2",
        "--passes",
        "2",
        "--run",
        "default",
        "--run",
        "max-segment=4,agg-ilp",
        "--run",
        "diag=skip-apply",
        "--run",
        "lanes=8,cache=0,plain-reads",
        "--run",
        "snapshot-rounds=2",
    ]);
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
    assert_eq!(lines[4]["flags"], "--snapshot-reads --snapshot-rounds 2");
    assert_eq!(lines[4]["dispatches"], 22, "{}", lines[4]);
    assert_eq!(lines[0]["dispatches"], 1, "{}", lines[0]);
    let (c, e) = (&lines[4]["logloss"], &lines[9]["logloss"]);
    assert!(
        (c.as_f64().unwrap() - e.as_f64().unwrap()).abs() < 2e-3,
        "{c} {e}"
    );
    assert_eq!(lines[3]["lanes"], 8);
    assert_eq!(lines[3]["hot_features"], 0);
    assert_eq!(lines[3]["flags"], "--plain-reads --lanes 8 --cache 0");
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
    let mut a = Trainer::new(common::gpu(), &spec, 120, (&x, &y01), None, fresh).unwrap();
    let mut b = Trainer::new(common::gpu(), &spec, 120, (&x, &y01), None, base).unwrap();
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
