// w += α·Xᵀp with X dense row-major (one band of rows bound): the unfused sequence's Xᵀp on
// dense X. Invocation (j, chunk) sums column j over its chunk of ROWS rows — consecutive
// invocations read consecutive columns — and adds the sum to w[j] (f32 atomics or
// compare-exchange).
#import shared/atomic_f32

override WG: u32 = 256u;
override ROWS: u32 = 256u;

struct Params {
    m: u32,
    n: u32,
    stride: u32,
    row_base: u32,
    alpha: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> p: array<f32>;
@group(0) @binding(3) var<storage, read_write> accum: array<AtomicF32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let j = gid.x;
    if j >= params.n {
        return;
    }
    let first = wid.y * ROWS;
    let last = min(first + ROWS, params.m);
    var s = 0.0;
    for (var r = first; r < last; r++) {
        s += x[r * params.stride + j] * p[params.row_base + r];
    }
    accum_add(j, params.alpha * s);
}
