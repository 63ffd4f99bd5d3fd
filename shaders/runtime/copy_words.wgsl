// A device-side buffer copy by the compute units: dst[i] = src[i] for the first `n` 4-byte
// words, grid-stride (`gpu::WordCopy`), recorded as a dispatch where a transfer command would
// be slower.
override WG: u32 = 256u;

struct Params {
    n: u32,
    stride: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    for (var i = gid.x; i < params.n; i += params.stride) {
        dst[i] = src[i];
    }
}
