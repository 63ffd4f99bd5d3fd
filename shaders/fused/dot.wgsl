// Partial dot products: part[g] = Σ a[i]·b[i] over workgroup g's grid-stride share of n,
// reduced in workgroup memory in a fixed order (fused/reduce_parts then sums the partials in
// group order, so a dot product is the same bits run to run). The solvers' scalars.
#import shared/wg_sum

override WG: u32 = 256u;

struct Params {
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> part: array<f32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    var s = 0.0;
    for (var i = gid.x; i < params.n; i += nwg.x * WG) {
        s += a[i] * b[i];
    }
    let total = wg_sum(s, tid);
    if tid == 0u {
        part[wid.x] = total;
    }
}
