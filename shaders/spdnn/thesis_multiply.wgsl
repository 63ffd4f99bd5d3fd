// spdnn.thesis_multiply: one batch of the thesis's fused layer kernel (multiply + bias + ReLU
// + clamp to [0, YMAX]) from a sparse left operand into the dense batch buffer. The left
// operand is a list of rows (DCSR: row p of the list holds entries lptr[p]..lptr[p+1] of
// lcol/lval); the batch is list rows b0..b0+rows. The right operand's row k is read by id:
// with RIGHT_ELL its slot t is at t·rstride + k (ELL, column-major slots), else at
// rbeg[k] + t (CSR); it has rend[k] − rbeg[k] entries, sorted by column. Output row s of
// the batch is buf[s·width ..]: entry c = clamp(z + bias, 0, YMAX) where z = Σ v·w ≠ 0
// (the bias only on structural nonzeros), else 0.
// - 1D (no TILED): one workgroup per batch row over all `width` output columns. With WG_ROW
//   the row's sums are kept in workgroup memory (ACC_LEN = width) and written once,
//   activated (coalesced); without, the workgroup zeroes its buffer row, adds every product
//   into it with f32 atomics (storage), then activates it in place (rows too wide for
//   workgroup memory, e.g. CSC·CSC's columns of all rows).
// - 2D (TILED): one workgroup per tile of TR batch rows × TC output columns; the tile's left
//   entries are staged in workgroup memory STAGE at a time, each right row is entered by a
//   binary search for the tile's first column, the sums are kept in workgroup memory and
//   written once, activated.
// Invocations work in groups of LANES, one left entry per group, the lanes striding the right
// row. Every loop is bounded by a row length (at most the width) over the group count.
#ifdef TILED
#import shared/atomic_f32_wg
#else
#ifdef WG_ROW
#import shared/atomic_f32_wg
#else
#import shared/atomic_f32
#endif
#endif
override WG: u32 = 256u;
override LANES: u32 = 32u;
override TR: u32 = 4u;
override TC: u32 = 512u;
override STAGE: u32 = 256u;
override ACC_LEN: u32 = 2048u;
const YMAX: f32 = 32.0;

struct Params {
    b0: u32,
    rows: u32,
    width: u32,
    rstride: u32,
    bias: f32,
    col_tiles: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> lptr: array<u32>;
@group(0) @binding(2) var<storage, read> lcol: array<u32>;
@group(0) @binding(3) var<storage, read> lval: array<f32>;
@group(0) @binding(4) var<storage, read> rbeg: array<u32>;
@group(0) @binding(5) var<storage, read> rend: array<u32>;
@group(0) @binding(6) var<storage, read> rcol: array<u32>;
@group(0) @binding(7) var<storage, read> rval: array<f32>;
#ifdef TILED
@group(0) @binding(8) var<storage, read_write> buf: array<f32>;
var<workgroup> wg_accum: array<atomic<u32>, ACC_LEN>;
var<workgroup> st_k: array<u32, STAGE>;
var<workgroup> st_v: array<f32, STAGE>;
var<workgroup> st_r: array<u32, STAGE>;
var<workgroup> wg_span: vec2<u32>;
#else
#ifdef WG_ROW
@group(0) @binding(8) var<storage, read_write> buf: array<f32>;
var<workgroup> wg_accum: array<atomic<u32>, ACC_LEN>;
#else
@group(0) @binding(8) var<storage, read_write> accum: array<AtomicF32>;
#endif
#endif

fn activate(z: f32) -> f32 {
    if (z != 0.0) {
        return clamp(z + params.bias, 0.0, YMAX);
    }
    return 0.0;
}

// Index of slot t of right row k.
fn ridx(k: u32, t: u32) -> u32 {
#ifdef RIGHT_ELL
    return t * params.rstride + k;
#else
    return rbeg[k] + t;
#endif
}

#ifndef TILED
#ifndef WG_ROW
fn accum_set(i: u32, v: f32) {
#ifdef F32_ATOMIC
    atomicStore(&accum[i], v);
#else
    atomicStore(&accum[i], bitcast<u32>(v));
#endif
}
#endif
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let id = wid.y * nwg.x + wid.x;
    let width = params.width;
    let groups = WG / LANES;
    let g = lid / LANES;
    let lane = lid % LANES;
#ifdef TILED
    let rt = id / params.col_tiles;
    let s0 = rt * TR;
    if (s0 >= params.rows) {
        return;
    }
    let c0 = (id % params.col_tiles) * TC;
    let c1 = min(c0 + TC, width);
    let nrows = min(TR, params.rows - s0);
    let p0 = params.b0 + s0;
    for (var i = lid; i < ACC_LEN; i += WG) {
        atomicStore(&wg_accum[i], 0u);
    }
    if (lid == 0u) {
        wg_span = vec2<u32>(lptr[p0], lptr[p0 + nrows]);
    }
    let span = workgroupUniformLoad(&wg_span);
    for (var base = span.x; base < span.y; base += STAGE) {
        let e = base + lid;
        if (lid < STAGE && e < span.y) {
            var r = 0u;
            for (var q = 1u; q < nrows; q++) {
                if (lptr[p0 + q] <= e) {
                    r = q;
                }
            }
            st_k[lid] = lcol[e];
            st_v[lid] = lval[e];
            st_r[lid] = r;
        }
        workgroupBarrier();
        let staged = min(STAGE, span.y - base);
        for (var i = g; i < staged; i += groups) {
            let k = st_k[i];
            let v = st_v[i];
            let r = st_r[i];
            let len = rend[k] - rbeg[k];
            // First slot whose column is at least c0.
            var lo = 0u;
            var hi = len;
            while (lo < hi) {
                let mid = (lo + hi) / 2u;
                if (rcol[ridx(k, mid)] < c0) {
                    lo = mid + 1u;
                } else {
                    hi = mid;
                }
            }
            for (var t = lo + lane; t < len; t += LANES) {
                let x = ridx(k, t);
                let c = rcol[x];
                if (c >= c1) {
                    break;
                }
                wg_accum_add(r * TC + (c - c0), v * rval[x]);
            }
        }
        workgroupBarrier();
    }
    for (var i = lid; i < nrows * TC; i += WG) {
        let r = i / TC;
        let c = c0 + i % TC;
        if (c < c1) {
            buf[(s0 + r) * width + c] = activate(wg_accum_load(i));
        }
    }
#else
    let s = id;
    if (s >= params.rows) {
        return;
    }
    let p = params.b0 + s;
    let row = s * width;
    for (var j = lid; j < width; j += WG) {
#ifdef WG_ROW
        atomicStore(&wg_accum[j], 0u);
#else
        accum_set(row + j, 0.0);
#endif
    }
    storageBarrier();
    workgroupBarrier();
    let lb = lptr[p];
    let le = lptr[p + 1u];
    for (var e = lb + g; e < le; e += groups) {
        let k = lcol[e];
        let v = lval[e];
        let len = rend[k] - rbeg[k];
        for (var t = lane; t < len; t += LANES) {
            let x = ridx(k, t);
#ifdef WG_ROW
            wg_accum_add(rcol[x], v * rval[x]);
#else
            accum_add(row + rcol[x], v * rval[x]);
#endif
        }
    }
    storageBarrier();
    workgroupBarrier();
    for (var j = lid; j < width; j += WG) {
#ifdef WG_ROW
        buf[row + j] = activate(wg_accum_load(j));
#else
        accum_set(row + j, activate(accum_load(row + j)));
#endif
    }
#endif
}
