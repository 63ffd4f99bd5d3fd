// SDDMM baseline: one invocation per nonzero, nonzeros in CSR order (load-balanced COO).
// out[e] = vals[e] * dot(A[rows[e]], B[cols[e]]); rows of A and B are padded with zeros to
// stride4 vec4s, so the dot product needs no tail.
override WG: u32 = 256u;

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
    let e = (wid.y * nwg.x + wid.x) * WG + lid;
    if e >= params.nnz {
        return;
    }
    let ra = rows[e] * params.stride4;
    let rb = cols[e] * params.stride4;
    var s = vec4<f32>(0.0);
    for (var q = 0u; q < params.stride4; q++) {
        s += a[ra + q] * b[rb + q];
    }
    out[params.out_base + e] = vals[e] * (s.x + s.y + s.z + s.w);
}
