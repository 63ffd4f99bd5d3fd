// Self-test of shared/half and shared/rng: round-trips pairs through f16 storage and draws
// one PCG hash and one uniform float per invocation.
#import shared/half
#import shared/rng

@group(0) @binding(0) var<storage, read> pairs: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;
@group(0) @binding(2) var<storage, read_write> unpacked: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> hashes: array<u32>;
@group(0) @binding(4) var<storage, read_write> uniforms: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let w = half2_store(pairs[i]);
    packed[i] = w;
    unpacked[i] = half2_load(w);
    hashes[i] = pcg_hash(i);
    var state = i;
    uniforms[i] = rand_f32(&state);
}
