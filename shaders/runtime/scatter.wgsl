// Scatter probe: `count` f32 atomic adds (or, with GATHER, plain loads) at pseudo-random
// words of `target` (a power-of-two length, mask `mask`), grid-stride. RUNS: invocation i
// takes word hash(i / RUN) · RUN + i % RUN, so RUN consecutive invocations share a run of
// consecutive words (the adds of one feature's RUN parameters, e.g.); RUN = 1 scatters
// every word.
#ifndef GATHER
#import shared/atomic_f32
#endif

override WG: u32 = 256u;
override RUN: u32 = 1u;

struct Params {
    count: u32,
    stride: u32,
    mask: u32,
    seed: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
#ifdef GATHER
@group(0) @binding(1) var<storage, read_write> words: array<f32>;
#else
@group(0) @binding(1) var<storage, read_write> accum: array<AtomicF32>;
#endif
// GATHER: one word per invocation, written only when the sum is impossible (NaN never
// comes from the loads of finite words), so the loads are not optimised away.
@group(0) @binding(2) var<storage, read_write> sink: array<f32>;

// A 32-bit integer hash (the "lowbias32" mix): adjacent inputs land far apart.
fn mix32(x0: u32) -> u32 {
    var x = x0;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var s = 0.0;
    for (var i = gid.x; i < params.count; i += params.stride) {
        let k = ((mix32((i / RUN) ^ params.seed) * RUN) + i % RUN) & params.mask;
#ifdef GATHER
        s += words[k];
#else
        accum_add(k, 1.0);
#endif
    }
#ifdef GATHER
    if s != s {
        sink[gid.x] = s;
    }
#endif
}
