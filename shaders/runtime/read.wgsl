// Roofline probe: each invocation sums its vec4s of `src` (grid-stride over `n4`) and stores
// the sum, so every load is consumed; `src` is read once and one word written per invocation.
override WG: u32 = 256u;

struct Params {
    n4: u32,
    stride: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> sums: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var s = vec4<f32>(0.0);
    for (var i = gid.x; i < params.n4; i += params.stride) {
        s += src[i];
    }
    sums[gid.x] = s.x + s.y + s.z + s.w;
}
