//! `wide` flow-kernel variants under races: with 8 persistent workgroups the combined variant
//! and snapshot reads (several dispatches per epoch) still reach the default kernels'
//! validation logloss on planted data. Exactness against the twin: `wide_variant.rs`. Sized
//! for lavapipe.

mod common;

use common::wide::{holdout, trainer};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::wide::{FlowVariant, Model, Options};

/// Async with 8 persistent workgroups (updates race) and the combined variant reloading the
/// cache every 2 chunks: planted data still reach sync mode's validation logloss within
/// 0.01 after 4 epochs. (Every 8 chunks passed on lavapipe, whose workgroups barely overlap,
/// and diverged on the H200: 0.93–1.01 against 0.535; `FlowVariant::hot_every`.)
#[test]
fn async_combined_variant_converges() {
    let (n, m) = (20_000, 200);
    let d = zipf_ctr(n, m, 12, CtrModel::Lr, 47).unwrap();
    let (train, valid, ytr, yva) = holdout(&d.features, &d.labels);
    let spec = Model::Lr.spec().unwrap();
    let mut finals = vec![];
    for (sync, variant) in [
        (true, FlowVariant::default()),
        (
            false,
            FlowVariant {
                hot_every: 2,
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
        let mut t = trainer(&spec, m, (&train, ytr), Some((&valid, yva)), options);
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
    let (train, valid, ytr, yva) = holdout(&d.features, &d.labels);
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
        let mut t = trainer(&spec, m, (&train, ytr), Some((&valid, yva)), options);
        // 563 chunks of 32: one dispatch, or one per 8 · rounds chunks.
        let chunks = train.nrows.div_ceil(t.chunk());
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
