// SDDMM with a virtual subgroup of VWS lanes per nonzero (CSR order): each lane takes every
// VWS-th pair of vec4s of the row (loads unrolled ×2), then the lanes reduce with an
// xor-shuffle butterfly (workgroup memory without SUBGROUP). The store is predicated, never
// the reduction, so every lane reaches it in uniform control flow.
#import shared/reduce

override WG: u32 = 256u;
override VWS: u32 = 8u;

struct Params {
    nnz: u32,
    stride4: u32,
    _pad0: u32,
    _pad1: u32,
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
    let e = (wid.y * nwg.x + wid.x) * (WG / VWS) + lid / VWS;
    let lane = lid % VWS;
    let valid = e < params.nnz;
    var s0 = vec4<f32>(0.0);
    var s1 = vec4<f32>(0.0);
    if valid {
        let ra = rows[e] * params.stride4;
        let rb = cols[e] * params.stride4;
        for (var q = 2u * lane; q < params.stride4; q += 2u * VWS) {
            s0 += a[ra + q] * b[rb + q];
            s1 += a[ra + q + 1u] * b[rb + q + 1u];
        }
    }
    let s = s0 + s1;
    let total = vsg_sum(s.x + s.y + s.z + s.w, VWS, lid);
    if valid && lane == 0u {
        out[e] = vals[e] * total;
    }
}
