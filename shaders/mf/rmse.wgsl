// Test error: sse += Σ (r − scale·p_u·q_v)² over the test samples (u32 triplets u, v, bits
// of r, in rating units). Virtual subgroups of LANES lanes stride over the samples, each
// accumulating its own squared errors; the workgroup sums them in workgroup memory and adds
// one value to sse[0].
#import mf/storage
#import shared/reduce
#import shared/atomic_f32
#import shared/wg_sum

override WG: u32 = 256u;
override LANES: u32 = 32u;
override PER: u32 = 2u;

struct Params {
    n: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> samples: array<u32>;
@group(0) @binding(2) var<storage, read> feat_p: array<Word>;
@group(0) @binding(3) var<storage, read> feat_q: array<Word>;
@group(0) @binding(4) var<storage, read_write> accum: array<AtomicF32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let per_wg = WG / LANES;
    let total = nwg.x * nwg.y * per_wg;
    let worker = (wid.y * nwg.x + wid.x) * per_wg + lid / LANES;
    let lane = lid % LANES;
    let words = LANES * PER;
    let steps = (params.n + total - 1u) / total;
    var acc = 0.0;
    for (var t = 0u; t < steps; t++) {
        let s = min(worker + t * total, params.n - 1u);
        let u = samples[3u * s];
        let v = samples[3u * s + 1u];
        var part = 0.0;
        for (var i = 0u; i < PER; i++) {
            let w = i * LANES + lane;
            part += dot(word_load(feat_p[u * words + w]), word_load(feat_q[v * words + w]));
        }
        let dot_uv = vsg_sum(part, LANES, lid);
        if worker + t * total < params.n && lane == 0u {
            let e = bitcast<f32>(samples[3u * s + 2u]) - params.scale * dot_uv;
            acc += e * e;
        }
    }
    let sse = wg_sum(acc, lid);
    if lid == 0u {
        accum_add(0u, sse);
    }
}
