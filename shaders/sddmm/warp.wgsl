// SDDMM with a virtual subgroup of VWS lanes per nonzero (CSR order): each lane takes every
// VWS-th pair of vec4s of the row (loads unrolled ×2), then the lanes reduce with an
// xor-shuffle butterfly (workgroup memory without SUBGROUP). The store is predicated, never
// the reduction, so every lane reaches it in uniform control flow. Each virtual subgroup
// handles UNROLL (1–4) nonzeros, all dot products before any reduction, so their loads can
// be in flight together.
#import shared/reduce

override WG: u32 = 256u;
override VWS: u32 = 8u;
override UNROLL: u32 = 1u;

// out_base: where this band's first nonzero sits in the bound window of `out` (bands of
// rows that together exceed one storage binding are bound at aligned offsets).
struct Params {
    nnz: u32,
    stride4: u32,
    out_base: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> rows: array<u32>;
@group(0) @binding(2) var<storage, read> cols: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let per_wg = WG / VWS;
    let first = (wid.y * nwg.x + wid.x) * per_wg * UNROLL + lid / VWS;
    let lane = lid % VWS;
    var part = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    for (var j = 0u; j < UNROLL; j++) {
        let e = first + j * per_wg;
        var s0 = vec4<f32>(0.0);
        var s1 = vec4<f32>(0.0);
        if e < params.nnz {
            let ra = rows[e] * params.stride4;
            let rb = cols[e] * params.stride4;
            for (var q = 2u * lane; q < params.stride4; q += 2u * VWS) {
                s0 += a[ra + q] * b[rb + q];
                s1 += a[ra + q + 1u] * b[rb + q + 1u];
            }
        }
        let s = s0 + s1;
        part[j] = s.x + s.y + s.z + s.w;
    }
    for (var j = 0u; j < UNROLL; j++) {
        let e = first + j * per_wg;
        let total = vsg_sum(part[j], VWS, lid);
        if e < params.nnz && lane == 0u {
            out[params.out_base + e] = vals[e] * total;
        }
    }
}
