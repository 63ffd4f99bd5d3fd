// spdnn.layer: one sparse DNN layer on the dense rows of the active set, fused
// multiply + bias + clamp. Workgroup s computes active row s: for each output neuron j,
// z = Σ_k y_in[s][w_idx[k·n + j]] · w_val[k·n + j] (W's transpose in ELL, column-major slots,
// so neighbouring invocations read neighbouring slots); z ≠ 0 (a structural nonzero of
// Z = Y·W) gets the bias, then the value is clamped to [0, YMAX]. Padding slots carry
// column 0 and value 0. The active count is read from `count` on the device, so every
// layer can be recorded ahead: workgroups at or past it only clear their flag. The row's
// flag (values are ≥ 0, so its sum is nonzero iff an entry is) goes to `flags` and `pos`
// (the latter is scanned in place into the compacted positions). Any subgroup size.
override WG: u32 = 256u;
const YMAX: f32 = 32.0;

struct Params {
    n: u32,
    width: u32,
    cap: u32,
    bias: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> count: array<u32>;
@group(0) @binding(2) var<storage, read> w_idx: array<u32>;
@group(0) @binding(3) var<storage, read> w_val: array<f32>;
@group(0) @binding(4) var<storage, read> y_in: array<f32>;
@group(0) @binding(5) var<storage, read_write> y_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;
@group(0) @binding(7) var<storage, read_write> pos: array<u32>;

var<workgroup> wg_count: u32;
var<workgroup> wg_any: atomic<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = wid.y * nwg.x + wid.x;
    if (lid == 0u) {
        wg_count = count[0];
        atomicStore(&wg_any, 0u);
    }
    let live = workgroupUniformLoad(&wg_count);
    if (s >= live) {
        if (lid == 0u && s < params.cap) {
            flags[s] = 0u;
            pos[s] = 0u;
        }
        return;
    }
    let n = params.n;
    let row = s * n;
    var any = 0u;
    for (var j = lid; j < n; j += WG) {
        var z = 0.0;
        for (var k = 0u; k < params.width; k++) {
            let e = k * n + j;
            z += y_in[row + w_idx[e]] * w_val[e];
        }
        var out = 0.0;
        if (z != 0.0) {
            out = clamp(z + params.bias, 0.0, YMAX);
        }
        y_out[row + j] = out;
        if (out != 0.0) {
            any = 1u;
        }
    }
    if (any != 0u) {
        atomicOr(&wg_any, 1u);
    }
    workgroupBarrier();
    if (lid == 0u) {
        let f = atomicLoad(&wg_any);
        flags[s] = f;
        pos[s] = f;
    }
}
