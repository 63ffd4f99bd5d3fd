// Scatter probe, global memory: `count` atomic adds (f32, or with U32 u32) or, with GATHER,
// plain loads at pseudo-random words of `target` (a power-of-two length, mask `mask`),
// grid-stride. RUNS: invocation i takes word hash(i / RUN) · RUN + i % RUN, so RUN
// consecutive invocations share a run of consecutive words (the adds of one feature's RUN
// parameters, e.g.); RUN = 1 scatters every word.
#import runtime/scatter_hash
#ifndef GATHER
#ifndef U32
#import shared/atomic_f32
#endif
#endif

override WG: u32 = 256u;
override RUN: u32 = 1u;

@group(0) @binding(0) var<uniform> params: ScatterParams;
#ifdef GATHER
@group(0) @binding(1) var<storage, read_write> words: array<f32>;
#else
#ifdef U32
@group(0) @binding(1) var<storage, read_write> counts: array<atomic<u32>>;
#else
@group(0) @binding(1) var<storage, read_write> accum: array<AtomicF32>;
#endif
#endif
// GATHER: one word per invocation, written only when the sum is impossible (NaN never
// comes from the loads of finite words), so the loads are not optimised away.
@group(0) @binding(2) var<storage, read_write> sink: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var s = 0.0;
    for (var i = gid.x; i < params.count; i += params.stride) {
        let k = scatter_word(i, RUN);
#ifdef GATHER
        s += words[k];
#else
#ifdef U32
        atomicAdd(&counts[k], 1u);
#else
        accum_add(k, 1.0);
#endif
#endif
    }
#ifdef GATHER
    if s != s {
        sink[gid.x] = s;
    }
#endif
}
