// Divergence guard: bad[0] becomes non-zero when a word of P or Q (bound as raw u32 words)
// holds a NaN or infinity. HALF: each word is two f16 values; otherwise one f32.
override WG: u32 = 256u;

struct Params {
    p_words: u32,
    q_words: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> p: array<u32>;
@group(0) @binding(2) var<storage, read> q: array<u32>;
@group(0) @binding(3) var<storage, read_write> bad: array<atomic<u32>>;

fn not_finite(w: u32) -> bool {
#ifdef HALF
    return (w & 0x7c00u) == 0x7c00u || (w & 0x7c000000u) == 0x7c000000u;
#else
    return (w & 0x7f800000u) == 0x7f800000u;
#endif
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * WG;
    var found = false;
    for (var i = gid.x; i < params.p_words; i += stride) {
        found = found || not_finite(p[i]);
    }
    for (var i = gid.x; i < params.q_words; i += stride) {
        found = found || not_finite(q[i]);
    }
    if found {
        atomicAdd(&bad[0], 1u);
    }
}
