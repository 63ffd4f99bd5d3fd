// spdnn.layer: one sparse DNN layer on the dense rows of the active set, fused
// multiply + bias + clamp. A workgroup computes ROWS consecutive active rows s0.. : for each
// output neuron j, z_r = Σ_k y_in[s0 + r][w_idx[k·n + j]] · w_val[k·n + j] (W's transpose in
// ELL, column-major slots, so neighbouring invocations read neighbouring slots; each slot is
// loaded once for all ROWS rows, whose sums stay in registers). With STAGED the rows are
// first copied into workgroup memory (the host stages only when ROWS·n floats fit), so the
// 32 gathers per output hit workgroup memory. z ≠ 0 (a structural nonzero of Z = Y·W) gets
// the bias, then the value is clamped to [0, YMAX]. Padding slots carry column 0, value 0.
// The active count is read from `count` on the device, so every layer can be recorded
// ahead: workgroups at or past it only clear their flags. Each row's flag (values are ≥ 0,
// so its sum is nonzero iff an entry is) goes to `flags` and `pos` (the latter is scanned
// in place into compacted positions). Any subgroup size.
override WG: u32 = 256u;
// Active rows per workgroup, at most MAX_ROWS.
override ROWS: u32 = 1u;
// Whether the rows are staged in workgroup memory, and that memory's length (ROWS·n when
// staged, 1 otherwise).
override STAGED: bool = false;
override STAGE_LEN: u32 = 1u;
const MAX_ROWS: u32 = 8u;
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
var<workgroup> wg_any: array<atomic<u32>, MAX_ROWS>;
var<workgroup> ys: array<f32, STAGE_LEN>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s0 = (wid.y * nwg.x + wid.x) * ROWS;
    if (lid == 0u) {
        wg_count = count[0];
    }
    if (lid < MAX_ROWS) {
        atomicStore(&wg_any[lid], 0u);
    }
    let live = workgroupUniformLoad(&wg_count);
    if (s0 >= live) {
        if (lid < ROWS && s0 + lid < params.cap) {
            flags[s0 + lid] = 0u;
            pos[s0 + lid] = 0u;
        }
        return;
    }
    let rows = min(ROWS, live - s0);
    let n = params.n;
    let base = s0 * n;
    if (STAGED) {
        for (var i = lid; i < rows * n; i += WG) {
            ys[i] = y_in[base + i];
        }
        workgroupBarrier();
    }
    var any = 0u;
    for (var j = lid; j < n; j += WG) {
        var acc: array<f32, MAX_ROWS>;
        for (var k = 0u; k < params.width; k++) {
            let e = k * n + j;
            let c = w_idx[e];
            let v = w_val[e];
            for (var r = 0u; r < ROWS; r++) {
                // Rows past the active count repeat the last live row (never stored).
                let rr = min(r, rows - 1u);
                var x: f32;
                if (STAGED) {
                    x = ys[rr * n + c];
                } else {
                    x = y_in[base + rr * n + c];
                }
                acc[r] += x * v;
            }
        }
        for (var r = 0u; r < rows; r++) {
            let z = acc[r];
            var out = 0.0;
            if (z != 0.0) {
                out = clamp(z + params.bias, 0.0, YMAX);
            }
            y_out[base + r * n + j] = out;
            if (out != 0.0) {
                any |= 1u << r;
            }
        }
    }
    for (var r = 0u; r < rows; r++) {
        if ((any & (1u << r)) != 0u) {
            atomicOr(&wg_any[r], 1u);
        }
    }
    workgroupBarrier();
    if (lid < ROWS && s0 + lid < params.cap) {
        var f = 0u;
        if (lid < rows) {
            f = atomicLoad(&wg_any[lid]);
        }
        flags[s0 + lid] = f;
        pos[s0 + lid] = f;
    }
}
