// Validation metrics on the GPU from `wide/flow`'s PREDICT output (ŷ, ℓ per sample): per
// class a histogram of ŷ over BINS equal bins of [−RANGE, RANGE] (clamped), for the AUC, and
// per workgroup the sums of ℓ and of the log loss log(1 + e^{−yŷ}) (fixed-order tree sums).
#import shared/wg_sum

struct Metrics {
    n_samples: u32,
    label_off: u32,
    bins: u32,
    range: f32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> mc: Metrics;
// (ŷ, ℓ) per sample.
@group(0) @binding(1) var<storage, read> scored: array<f32>;
// The data set's index array; labels ±1 as bits from `label_off`.
@group(0) @binding(2) var<storage, read> idx: array<u32>;
// [negatives' bins | positives' bins].
@group(0) @binding(3) var<storage, read_write> hist: array<atomic<u32>>;
// (Σ ℓ, Σ log loss) per workgroup.
@group(0) @binding(4) var<storage, read_write> partial: array<f32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let w = wid.y * nwg.x + wid.x;
    let s = w * WG + lid;
    var l = 0.0;
    var ll = 0.0;
    if s < mc.n_samples {
        let yhat = scored[2u * s];
        l = scored[2u * s + 1u];
        let y = bitcast<f32>(idx[mc.label_off + s]);
        let m = -y * yhat;
        ll = max(m, 0.0) + log(1.0 + exp(-abs(m)));
        let t = (clamp(yhat, -mc.range, mc.range) + mc.range) / (2.0 * mc.range);
        let bin = min(u32(t * f32(mc.bins)), mc.bins - 1u);
        atomicAdd(&hist[select(0u, mc.bins, y > 0.0) + bin], 1u);
    }
    let sl = wg_sum(l, lid);
    // wg_sum's scratch is reused: every read of the first total precedes the next writes.
    workgroupBarrier();
    let sll = wg_sum(ll, lid);
    if lid == 0u {
        partial[2u * w] = sl;
        partial[2u * w + 1u] = sll;
    }
}
