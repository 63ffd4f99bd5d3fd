// Bindings and accessors shared by the stage baseline's kernels (cuWide-stage): aggregate,
// loss and gradient as separate dispatches passing Accums and dℓ/dŷ through global memory.
// Per sample s, `accs` holds NACC Accums, then dℓ/dŷ (scaled by 1/B), then ℓ.
#import wide/model
#import wide/config
#import shared/atomic_f32


override WG: u32 = 256u;
override LANES: u32 = 8u;
override CHUNK_WG: u32 = 32u;

@group(0) @binding(0) var<uniform> cfg: Config;
@group(0) @binding(1) var<storage, read> sched: array<u32>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
#ifdef ONE_HOT
// Every value is 1: the sample-sorted edges hold the feature alone.
@group(0) @binding(3) var<storage, read> sedge: array<u32>;
fn s_edge(e: u32) -> vec2<u32> {
    return vec2<u32>(sedge[e], 0x3f800000u);
}
#else
@group(0) @binding(3) var<storage, read> sedge: array<vec2<u32>>;
fn s_edge(e: u32) -> vec2<u32> {
    return sedge[e];
}
#endif
@group(0) @binding(4) var<storage, read> params: array<f32>;
@group(0) @binding(5) var<storage, read_write> accs: array<f32>;
// The mini-batch gradient, as in `wide/flow`.
@group(0) @binding(6) var<storage, read_write> accum: array<AtomicF32>;
// Loss sum of each chunk.
@group(0) @binding(7) var<storage, read_write> out: array<f32>;

const STRIDE: u32 = NACC + 2u;

fn param(j: u32, i: u32) -> f32 {
    return params[j * NPARAM + i];
}

// Slot s is a global sample id here.
fn acc(s: u32, a: u32) -> f32 {
    return accs[s * STRIDE + a];
}

// (first sample, samples) of the chunk of workgroup `w`, or samples = 0 past the list.
fn chunk_of(w: u32) -> vec2<u32> {
    if w >= sched[0] {
        return vec2<u32>(0u, 0u);
    }
    let s0 = sched[4u + w] * cfg.chunk;
    return vec2<u32>(s0, min(cfg.chunk, cfg.n_samples - s0));
}
