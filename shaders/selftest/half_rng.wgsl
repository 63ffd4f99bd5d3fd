// Self-test of shared/half and shared/rng: packs pairs into f16 storage, unpacks words that
// the host packed (from memory, not this invocation's own result: NVIDIA's compiler folds
// unpack(pack(x)) into x), and draws one PCG hash and one uniform float per invocation.
#import shared/half
#import shared/rng

@group(0) @binding(0) var<storage, read> pairs: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read> host_packed: array<u32>;
@group(0) @binding(2) var<storage, read_write> packed: array<u32>;
@group(0) @binding(3) var<storage, read_write> unpacked: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read_write> hashes: array<u32>;
@group(0) @binding(5) var<storage, read_write> uniforms: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    packed[i] = half2_store(pairs[i]);
    unpacked[i] = half2_load(host_packed[i]);
    hashes[i] = pcg_hash(i);
    var state = i;
    uniforms[i] = rand_f32(&state);
}
