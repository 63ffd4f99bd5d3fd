// p = X·y with X dense row-major (rows `stride` floats apart, one band of rows bound): the
// unfused sequence's first step on dense X. One invocation per row, looping over the row.
override WG: u32 = 256u;

struct Params {
    m: u32,
    n: u32,
    stride: u32,
    row_base: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> p: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var r = gid.x; r < params.m; r += nwg.x * WG) {
        var s = 0.0;
        for (var j = 0u; j < params.n; j++) {
            s += x[r * params.stride + j] * y[j];
        }
        p[params.row_base + r] = s;
    }
}
