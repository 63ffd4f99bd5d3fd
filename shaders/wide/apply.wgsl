// Sync mode's second dispatch of a mini-batch: θ −= lr · g for every (distinct feature,
// parameter) of the mini-batch's chunks, taking the gradient back to zero. A feature shared
// by several chunks is listed once per chunk; the atomic exchange hands its whole gradient to
// the first invocation that reaches it and zero to the others, so each parameter moves once.
#import wide/model
#import wide/config


override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> cfg: Config;
@group(0) @binding(1) var<storage, read> sched: array<u32>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> params: array<f32>;
// The mini-batch gradient as f32 bits.
@group(0) @binding(4) var<storage, read_write> grad: array<atomic<u32>>;

// The model's functions read parameters through this; Apply reads none.
fn param(j: u32, i: u32) -> f32 {
    return params[j * NPARAM + i];
}

fn acc(s: u32, a: u32) -> f32 {
    return 0.0;
}

fn take(i: u32) {
    let g = bitcast<f32>(atomicExchange(&grad[i], 0u));
    if g != 0.0 {
        params[i] -= cfg.lr * g;
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let w = wid.y * nwg.x + wid.x;
    if w >= sched[0] {
        return;
    }
    let c = sched[4u + w];
    let g0 = idx[cfg.seg_ptr_off + c];
    let work = (idx[cfg.seg_ptr_off + c + 1u] - g0) * NPARAM;
    for (var t = lid; t < work; t += WG) {
        let j = idx[cfg.seg_feat_off + g0 + t / NPARAM];
        take(j * NPARAM + t % NPARAM);
    }
    if w == 0u && lid == 0u {
        take(cfg.bias_index);
    }
}
