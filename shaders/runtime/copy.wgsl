// Roofline probe: dst = src as vec4<f32>, grid-stride over `n4` vectors.
override WG: u32 = 256u;

struct Params {
    n4: u32,
    stride: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    for (var i = gid.x; i < params.n4; i += params.stride) {
        dst[i] = src[i];
    }
}
