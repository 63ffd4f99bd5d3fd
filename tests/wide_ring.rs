//! The staging ring against the resident parts, bit for bit: the same chunk orders over the
//! same parts, so any slot overwritten before its part was trained, or a part's arrays
//! copied short (a stale tail of a longer part left in the slot), changes the parameters.
//! Storage bindings capped at 8 KiB cut small data into several parts. Sized for lavapipe.

mod common;

use common::wide::data;
use wgsparse::wide::{plan, FlowVariant, Model, Options, SyncKernel, Trainer};

#[test]
fn staging_ring_equals_resident_parts_bit_for_bit() {
    let gpu = common::gpu_small_bindings();
    let (m, batch) = (120, 48);
    let (x, y01) = data(640, m, 7, 31);
    let mut ones = x.clone();
    ones.values.iter_mut().for_each(|v| *v = 1.0);
    let packed = FlowVariant {
        slot_bits: 16,
        apply_whole: true,
        ..Default::default()
    };
    let packed8 = FlowVariant {
        slot_bits: 8,
        ..Default::default()
    };
    let snapshot = FlowVariant {
        snapshot_reads: true,
        snapshot_rounds: 1,
        ..Default::default()
    };
    // Sync (both kernels) and async with one persistent workgroup, so every run is
    // deterministic; one-hot data with 16- or 8-bit slots changes every array's length.
    for (model, sync, kernel, variant, x) in [
        (
            Model::Lr,
            true,
            SyncKernel::Dispatch,
            Default::default(),
            &x,
        ),
        (
            Model::Fm { k: 3 },
            true,
            SyncKernel::Persistent,
            Default::default(),
            &x,
        ),
        (Model::Lr, false, SyncKernel::Auto, Default::default(), &x),
        (Model::Fm { k: 3 }, false, SyncKernel::Auto, snapshot, &x),
        (Model::Fm { k: 3 }, false, SyncKernel::Auto, packed, &ones),
        (Model::Lr, false, SyncKernel::Auto, packed8, &ones),
    ] {
        let spec = model.spec().unwrap();
        let what = format!("{} sync {sync} {kernel:?} {}", spec.name, variant.label());
        let options = |ring| Options {
            batch,
            max_chunk: 48,
            sync,
            sync_kernel: kernel,
            async_groups: 1,
            ring,
            variant,
            ..Options::default()
        };
        let train = |ring| {
            let mut t = Trainer::new(gpu, &spec, m, (x, &y01), None, options(ring)).unwrap();
            let losses: Vec<u64> = (0..4)
                .map(|_| t.train_epoch().unwrap().0.to_bits())
                .collect();
            let params: Vec<u32> = t.params().unwrap().iter().map(|v| v.to_bits()).collect();
            (t, losses, params)
        };
        let (t, losses, params) = train(false);
        // At least three parts, the last shorter than the first: a part run after a longer
        // one in the same slot would read that part's tail if its own were copied short.
        let parts = plan::split_rows(x, t.chunk(), gpu.caps.max_storage_binding_bytes).unwrap();
        assert_eq!(parts.len(), t.parts(), "{what}");
        let nnz = |r: &std::ops::Range<usize>| x.row_ptr[r.end] - x.row_ptr[r.start];
        assert!(parts.len() >= 3, "{what}: {} parts", parts.len());
        let (first, last) = (&parts[0], &parts[parts.len() - 1]);
        assert!(
            nnz(last) < nnz(first) && last.len() < first.len(),
            "{what}: parts {parts:?}"
        );
        // The resident runs agree with themselves, so the comparison below can fail only
        // through the ring.
        let (_, again, params_again) = train(false);
        assert!(
            again == losses && params_again == params,
            "{what}: not deterministic"
        );
        let (ring, ring_losses, ring_params) = train(true);
        assert_eq!(ring.parts(), t.parts(), "{what}");
        assert_eq!(ring_losses, losses, "{what}: training losses");
        let differ = params
            .iter()
            .zip(&ring_params)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differ, 0, "{what}: {differ} parameters differ");
    }
}
