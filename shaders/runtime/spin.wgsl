// Busy work to bring a GPU's clocks up before timing (gpu::warm_clocks): every invocation
// runs ROUNDS dependent multiply-adds on its own value and stores it, so nothing is elided.
override WG: u32 = 256u;
override ROUNDS: u32 = 4096u;

@group(0) @binding(0) var<storage, read_write> sink: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x % arrayLength(&sink);
    var x = f32(gid.x & 255u) * 1e-3;
    for (var r = 0u; r < ROUNDS; r++) {
        x = x * 0.999 + 1e-3;
    }
    sink[i] = x;
}
