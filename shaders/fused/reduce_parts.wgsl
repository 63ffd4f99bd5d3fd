// Second pass of the deterministic fused kernels (and of fused/dot):
// w[out_base + i] = β·z[i] + Σ_g part[g·n + i], the partials of the G workgroups summed in
// group order (β = 0 never reads z).
override WG: u32 = 256u;

struct Params {
    n: u32,
    groups: u32,
    beta: f32,
    out_base: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read> z: array<f32>;
@group(0) @binding(3) var<storage, read_write> w: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = gid.x; i < params.n; i += nwg.x * WG) {
        var t = 0.0;
        if params.beta != 0.0 {
            t = params.beta * z[i];
        }
        for (var g = 0u; g < params.groups; g++) {
            t += part[g * params.n + i];
        }
        w[params.out_base + i] = t;
    }
}
