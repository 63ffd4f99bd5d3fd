// Partial maxima for fixed-point accumulation (src/fused/fixed.rs): workgroup g writes the
// largest bit pattern of |y[i]| and of |v[i]| over its grid-stride share to part[2g] and
// part[2g + 1]. For non-negative floats the bit pattern orders as the value, and every NaN or
// ∞ pattern is at least 0x7f800000, so the maxima also flag non-finite operands.
override WG: u32 = 256u;

struct Params {
    ny: u32,
    // 0: no v.
    nv: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> part: array<u32>;

var<workgroup> red: array<vec2<u32>, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    var m = vec2<u32>(0u, 0u);
    for (var i = gid.x; i < params.ny; i += nwg.x * WG) {
        m.x = max(m.x, bitcast<u32>(y[i]) & 0x7fffffffu);
    }
    for (var i = gid.x; i < params.nv; i += nwg.x * WG) {
        m.y = max(m.y, bitcast<u32>(v[i]) & 0x7fffffffu);
    }
    red[lid] = m;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if lid < s {
            red[lid] = max(red[lid], red[lid + s]);
        }
        workgroupBarrier();
    }
    if lid == 0u {
        part[2u * wid.x] = red[0].x;
        part[2u * wid.x + 1u] = red[0].y;
    }
}
