// w[i] = a·x[i] + b·z[i] over n elements, BLAS-style: a = 0 never reads x and b = 0 never
// reads z (NaN there is harmless). The fused kernels' β·z pre-pass (a = 0) and the unfused
// sequence's and the solvers' vector updates. INPLACE: w[i] = a·w[i] + b·z[i] (x unread).
// DEVICE_COEF: a and b are multiplied by coef[ia] and coef[ib] (a scalar a solver computed on
// the device; an index of 0xffffffff leaves the factor at 1).
override WG: u32 = 256u;

#ifdef DEVICE_COEF
struct Params {
    n: u32,
    a: f32,
    b: f32,
    ia: u32,
    ib: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(4) var<storage, read> coef: array<f32>;

fn factor(i: u32) -> f32 {
    if i == 0xffffffffu {
        return 1.0;
    }
    return coef[i];
}
#else
struct Params {
    n: u32,
    a: f32,
    b: f32,
    _pad: u32,
}
#endif

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> z: array<f32>;
@group(0) @binding(3) var<storage, read_write> w: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
#ifdef DEVICE_COEF
    let a = params.a * factor(params.ia);
    let b = params.b * factor(params.ib);
#else
    let a = params.a;
    let b = params.b;
#endif
    for (var i = gid.x; i < params.n; i += nwg.x * WG) {
        var t = 0.0;
        if a != 0.0 {
#ifdef INPLACE
            t = a * w[i];
#else
            t = a * x[i];
#endif
        }
        if b != 0.0 {
            t += b * z[i];
        }
        w[i] = t;
    }
}
