// w[i] = a·x[i] + b·z[i] over n elements, BLAS-style: a = 0 never reads x and b = 0 never
// reads z (NaN there is harmless). The fused kernels' β·z pre-pass (a = 0) and the unfused
// sequence's and the solvers' vector updates. INPLACE: w[i] = a·w[i] + b·z[i] (x unread).
override WG: u32 = 256u;

struct Params {
    n: u32,
    a: f32,
    b: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> z: array<f32>;
@group(0) @binding(3) var<storage, read_write> w: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = gid.x; i < params.n; i += nwg.x * WG) {
        var t = 0.0;
        if params.a != 0.0 {
#ifdef INPLACE
            t = params.a * w[i];
#else
            t = params.a * x[i];
#endif
        }
        if params.b != 0.0 {
            t += params.b * z[i];
        }
        w[i] = t;
    }
}
