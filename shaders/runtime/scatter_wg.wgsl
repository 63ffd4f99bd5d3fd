// Scatter probe, workgroup memory: each workgroup takes its grid-stride share of `count`
// operations at pseudo-random words (runtime/scatter_hash) of a WORDS-word workgroup array:
// f32 adds as the kernels make them (shared/atomic_f32_wg: a compare-exchange loop, or
// native under WG_F32_NATIVE), native u32 adds (U32), or plain loads (GATHER). With
// params.flush the workgroup then adds its words to the global target, so the host can
// check that every add landed.
#import runtime/scatter_hash
#ifndef GATHER
#ifndef U32
#import shared/atomic_f32
#import shared/atomic_f32_wg
#endif
#endif

override WG: u32 = 256u;
override RUN: u32 = 1u;
override WORDS: u32 = 4096u;

@group(0) @binding(0) var<uniform> params: ScatterParams;
#ifdef GATHER
var<workgroup> wg_words: array<f32, WORDS>;
#else
#ifdef U32
@group(0) @binding(1) var<storage, read_write> counts: array<atomic<u32>>;
var<workgroup> wg_counts: array<atomic<u32>, WORDS>;
#else
@group(0) @binding(1) var<storage, read_write> accum: array<AtomicF32>;
var<workgroup> wg_accum: array<atomic<u32>, WORDS>;
#endif
#endif
// GATHER: as runtime/scatter's sink.
@group(0) @binding(2) var<storage, read_write> sink: array<f32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    for (var j = tid; j < WORDS; j += WG) {
#ifdef GATHER
        wg_words[j] = f32(j);
#else
#ifdef U32
        atomicStore(&wg_counts[j], 0u);
#else
        atomicStore(&wg_accum[j], 0u);
#endif
#endif
    }
    workgroupBarrier();
    var s = 0.0;
    for (var i = gid.x; i < params.count; i += params.stride) {
        let k = scatter_word(i, RUN);
#ifdef GATHER
        s += wg_words[k];
#else
#ifdef U32
        atomicAdd(&wg_counts[k], 1u);
#else
        wg_accum_add(k, 1.0);
#endif
#endif
    }
#ifdef GATHER
    if s != s {
        sink[gid.x] = s;
    }
#else
    workgroupBarrier();
    if params.flush != 0u {
        for (var j = tid; j < WORDS; j += WG) {
#ifdef U32
            let t = atomicLoad(&wg_counts[j]);
            if t != 0u {
                atomicAdd(&counts[j], t);
            }
#else
            let t = wg_accum_load(j);
            if t != 0.0 {
                accum_add(j, t);
            }
#endif
        }
    }
#endif
}
