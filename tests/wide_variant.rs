//! `wide` flow-kernel variants (`wide::FlowVariant`) against the f64 twin: async mode with
//! one persistent workgroup (chunks one after another, nothing races) equals the twin's
//! chunk-by-chunk scaled steps for every variant, valued and one-hot, on both atomic paths;
//! sync mode's variants equal its mini-batch steps; split segments hold the same edges; the
//! timing-only switches do what they say. Convergence under races:
//! `wide_variant_converge.rs`; settings, refusals and the CLI: `wide_variant_settings.rs`.
//! Sized for lavapipe.

mod common;

use common::wide::{
    assert_matches_twin, async_chunk_twin, data, epoch_from, random_params, random_start, trainer,
    twin,
};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::sparse::Csr;
use wgsparse::wide::{metrics, plan, Diag, FlowVariant, Model, Options, SyncKernel, Trainer};
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
        // 16-bit slots (packed on one-hot data; valued data keep their edges): alone, with a
        // small tile that the chunks overflow, and with split segments.
        FlowVariant { slot_bits: 16, ..d },
        FlowVariant {
            slot_bits: 16,
            plain_reads: true,
            copy_ilp: true,
            edge_tile_words: 256,
            ..d
        },
        FlowVariant {
            slot_bits: 16,
            apply_ilp: true,
            max_segment: 3,
            edge_tile_words: 256,
            ..d
        },
        // 8-bit slots, four per word: alone, with a tile small enough that chunks start at
        // every word phase and overflow it, and with split segments and Apply edge by edge.
        FlowVariant { slot_bits: 8, ..d },
        FlowVariant {
            slot_bits: 8,
            plain_reads: true,
            copy_ilp: true,
            edge_tile_words: 64,
            ..d
        },
        FlowVariant {
            slot_bits: 8,
            apply_whole: true,
            max_segment: 3,
            edge_tile_words: 128,
            ..d
        },
        FlowVariant {
            slot_bits: 8,
            edge_apply: true,
            edge_features: 5,
            ..d
        },
        // Apply's walk past the tile 8 edges at a time: a tile of one valued edge (feature
        // 0's segment, in nearly every sample, walked globally), with 8-bit slots, with
        // 16-bit slots, split segments and Apply's items 4 at a time.
        FlowVariant {
            walk_ilp: true,
            edge_tile_words: 2,
            ..d
        },
        FlowVariant {
            walk_ilp: true,
            slot_bits: 8,
            edge_tile_words: 2,
            plain_reads: true,
            ..d
        },
        FlowVariant {
            walk_ilp: true,
            slot_bits: 16,
            apply_ilp: true,
            max_segment: 12,
            edge_tile_words: 4,
            ..d
        },
        // Apply by whole segments: alone, with split segments and a small tile, with the
        // cache reloaded every 3 chunks, with 16-bit slots.
        FlowVariant {
            apply_whole: true,
            ..d
        },
        FlowVariant {
            apply_whole: true,
            max_segment: 3,
            edge_tile_words: 256,
            copy_ilp: true,
            ..d
        },
        FlowVariant {
            apply_whole: true,
            hot_every: 3,
            plain_reads: true,
            ..d
        },
        FlowVariant {
            apply_whole: true,
            slot_bits: 16,
            plain_reads: true,
            ..d
        },
        // Apply edge by edge past the segmented features: the cost rule's bound; 7 with plain
        // reads and Apply's items 4 at a time; 1 (nearly every feature edge by edge) with
        // whole-segment Apply, a small tile and the copies' ILP; 5 with 16-bit slots; a bound
        // past every feature (all segments, the count scan capped by the chunk's segments).
        FlowVariant {
            edge_apply: true,
            ..d
        },
        FlowVariant {
            edge_apply: true,
            edge_features: 7,
            plain_reads: true,
            apply_ilp: true,
            ..d
        },
        FlowVariant {
            edge_apply: true,
            edge_features: 1,
            apply_whole: true,
            edge_tile_words: 256,
            copy_ilp: true,
            ..d
        },
        FlowVariant {
            edge_apply: true,
            edge_features: 5,
            slot_bits: 16,
            tail_spread: true,
            ..d
        },
        FlowVariant {
            edge_apply: true,
            edge_features: 1_000_000,
            agg_ilp: true,
            ..d
        },
        // No fence between a workgroup's chunks (alone, and with plain reads and Apply edge
        // by edge): one workgroup on lavapipe still sees its own updates in order, so the
        // steps equal the twin's (what the fence orders on a GPU is left to `--check` there).
        FlowVariant {
            no_fence: true,
            ..d
        },
        FlowVariant {
            no_fence: true,
            plain_reads: true,
            edge_apply: true,
            ..d
        },
        // Snapshot reads, one chunk per dispatch (one workgroup, one round): the snapshot
        // equals the live parameters at every chunk; its copy by a dispatch as well.
        FlowVariant {
            snapshot_reads: true,
            snapshot_rounds: 1,
            kernel_copies: true,
            ..d
        },
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
    let in_flight = 6.0;
    let spec = model.spec().unwrap();
    let np = spec.params_per_feature;
    // Split segments and Apply edge by edge: FM's Apply reads v_jf, which a global feature's
    // earlier piece or edge may just have moved (as a racing workgroup's update may); with
    // every feature cached the reads come from the chunk's snapshot and the step is exact.
    // Snapshot reads need no cache for that: every read comes from the dispatch's snapshot.
    let split = variant.max_segment > 0 || variant.edge_apply;
    let cache = if split && np > 1 && !variant.snapshot_reads {
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
    let want = async_chunk_twin(
        model,
        (x, y01),
        (batch, chunk),
        in_flight,
        twin_window(&variant),
        &start,
    );
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

/// One-hot data whose samples hold any number of features (empty ones too), so chunks
/// start at every phase of a packed word of 16- or 8-bit slots: the packed-slot variants
/// and the default, LR and FM, chunks of 16 × 2 with a tile of 16 words (31 or 61 edges at
/// most), then of 16 × 4 with the variant's tile.
#[test]
fn async_variants_equal_twin_one_hot_odd_chunks() {
    let (mut x, y01) = data(96, 120, 30, 23);
    x.values.iter_mut().for_each(|v| *v = 1.0);
    for phase in 1..4 {
        assert!(
            (1..6).any(|c| x.row_ptr[16 * c] % 4 == phase),
            "phase {phase}"
        );
    }
    for variant in variants()
        .into_iter()
        .filter(|v| v.packed_slots() || *v == FlowVariant::default())
    {
        let small = FlowVariant {
            edge_tile_words: 16,
            ..variant
        };
        for model in [Model::Lr, Model::Fm { k: 3 }] {
            async_one_group_vs_twin(common::gpu(), model, (&x, &y01), (48, 16, 2), 30, small);
            async_one_group_vs_twin(common::gpu(), model, (&x, &y01), (96, 16, 4), 100, variant);
        }
    }
}

/// Sync mode's variants (copies, Aggregate, tail, split segments) equal the twin's
/// mini-batch steps, through both sync kernels (the persistent one at the adapter's default
/// G), and the persistent kernel's coherent reads where the adapter has the decoration.
#[test]
fn sync_variants_equal_twin() {
    let (m, batch) = (120, 48);
    let (x, y01) = data(batch * 2, m, 20, 17);
    let y = metrics::labels_pm1(&y01);
    let gpu = common::gpu();
    let runs = variants()
        .into_iter()
        .filter(|v| {
            v.hot_every == 1
                && !v.snapshot_reads
                && !v.packed_slots()
                && !v.no_fence
                && !v.kernel_copies
        })
        .flat_map(|v| [(v, SyncKernel::Persistent), (v, SyncKernel::Dispatch)])
        .filter(|(v, k)| {
            !v.plain_reads
                || (v.coherent_reads && *k == SyncKernel::Persistent && gpu.caps.coherent)
        })
        .collect::<Vec<_>>();
    assert!(runs.iter().any(|(v, _)| v.coherent_reads) || !gpu.caps.coherent);
    for model in [Model::Lr, Model::Fm { k: 3 }] {
        let spec = model.spec().unwrap();
        for &(variant, sync_kernel) in &runs {
            let options = Options {
                batch,
                max_chunk: 16,
                lanes: 2,
                shuffle: false,
                variant,
                sync_kernel,
                ..Options::default()
            };
            let mut t = trainer(&spec, m, (&x, &y01), None, options);
            assert!(t.hot_features() > 0);
            if variant.edge_apply && variant.edge_features == 0 {
                // The cost rule's bound leaves features on both sides here.
                let s = t.segment_features().unwrap();
                assert!(0 < s && s < m, "segment features {s} of {m}");
            }
            let (start, mut want) = random_start(&spec, m, 3, 0.3);
            let got = epoch_from(&mut t, &start);
            twin(model, false, &mut want, &x, &y, batch, 0.5);
            assert_matches_twin(
                &got,
                &want,
                &format!(
                    "sync {} {} {}",
                    sync_kernel.name(),
                    spec.name,
                    variant.label()
                ),
            );
        }
    }
}

/// Split segments: no segment longer than the cap, the same (feature, slot, value) edges per
/// chunk as whole segments, more segments when a feature repeats in a chunk.
#[test]
fn split_segments_hold_the_same_edges() {
    let (x, y01) = data(64, 50, 10, 5);
    let y = metrics::labels_pm1(&y01);
    let order = plan::FeatureOrder::by_frequency(&x).unwrap();
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
/// globally); `skip-apply` with `skip-tail` leaves every parameter as it was; the adds
/// skipped below or from a split leave those features alone and move the others; `fixed`
/// runs and names all five.
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
    // One async epoch from random parameters; `reindex` false keeps the features' own order.
    let run_ordered = |diag: Diag, reindex: bool| {
        let options = Options {
            batch: 48,
            max_chunk: 16,
            sync: false,
            async_groups: 1,
            shuffle: false,
            reindex,
            diag,
            ..Options::default()
        };
        let mut t = trainer(&spec, 120, (&x, &y01), None, options);
        let start: Vec<f32> = random_params(&spec, 120, 2)
            .iter()
            .map(|v| (v * 0.3) as f32)
            .collect();
        t.set_params(&start).unwrap();
        let (loss, _) = t.train_epoch().unwrap();
        (start, t.params().unwrap(), loss)
    };
    let run = |diag: Diag| run_ordered(diag, true);
    let (start, got, loss) = run(Diag::parse("skip-apply,skip-tail").unwrap());
    assert_eq!(start, got);
    assert_eq!(loss, 0.0);
    let (start, got, _) = run(Diag::parse("skip-apply").unwrap());
    assert_eq!(start[..120], got[..120]);
    assert_ne!(start[120], got[120], "the bias still moves");
    // Apply's adds dropped on either side of a split (features in their own order).
    let split = |list: &str| {
        let (start, got, _) = run_ordered(Diag::parse(list).unwrap(), false);
        let moved = |r: std::ops::Range<usize>| r.filter(|&j| got[j] != start[j]).count();
        (moved(0..60), moved(60..120), got[120] != start[120])
    };
    let (low, high, bias) = split("skip-hot-adds,add-split=60");
    assert!(low == 0 && high > 0 && bias, "{low} {high} {bias}");
    let (low, high, bias) = split("skip-cold-adds,add-split=60");
    assert!(low > 0 && high == 0 && bias, "{low} {high} {bias}");
    let (low, high, bias) = split("skip-hot-adds,skip-cold-adds,add-split=60");
    assert!(low == 0 && high == 0 && bias, "{low} {high} {bias}");
    assert!(
        Diag::parse("add-split=60").is_err(),
        "a split needs a side to skip"
    );
    assert_eq!(
        Diag::parse("skip-cold-adds,add-split=60").unwrap().names(),
        ["skip-cold-adds", "add-split=60"]
    );
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
    let mut t = trainer(&spec, 120, (&x2, &y2), None, options);
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
