// The first pass of the column-split sequence (src/fused/split.rs): p[row] = α·v[row]·(X·y)[row]
// over X's CSR rows (XTY: α·v[row]·y[row], y ∈ ℝᵐ), VS consecutive lanes per row reduced by
// shared/reduce, params.c rows per vector (a uniform trip count, so every lane reaches the
// reduction). It also sets w = β·z (flags bit 1; else w = 0) for fused/split's adds.
// COL16 (n ≤ 65,536): X's column indices 16 bits each, two per word (entry i in word i / 2,
// low half first): 6 bytes per entry read instead of 8.
// A lane takes UNROLL entries of its row per trip (independent loads and sums): the pass ends
// with its longest row, and on power-law X a few hundred rows hold all n entries, walked by
// one vector in n / VS trips of memory latency each (128 at n = 4,096, VS 32) when a trip
// loads one entry; UNROLL cuts them to n / (VS·UNROLL).
#import shared/reduce

override WG: u32 = 256u;
override VS: u32 = 8u;

struct Params {
    m: u32,
    n: u32,
    // Rows per vector.
    c: u32,
    // Bit 0: multiply by v. Bit 1: w = β·z (else 0).
    flags: u32,
    alpha: f32,
    beta: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
#ifdef COL16
@group(0) @binding(2) var<storage, read> col16: array<u32>;
#else
@group(0) @binding(2) var<storage, read> col_idx: array<u32>;
#endif
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read> z: array<f32>;
@group(0) @binding(7) var<storage, read_write> p: array<f32>;
@group(0) @binding(8) var<storage, read_write> w: array<f32>;

const UNROLL: u32 = 4u;

// Column of entry i.
fn col_at(i: u32) -> u32 {
#ifdef COL16
    return (col16[i >> 1u] >> ((i & 1u) << 4u)) & 0xffffu;
#else
    return col_idx[i];
#endif
}

// One lane's share of row `row`'s dot product with y: entries lane, lane + VS, … (0 when `ok`
// is false), UNROLL of them per trip into separate sums, the row's remainder one at a time.
fn row_partial(row: u32, lane: u32, ok: bool) -> f32 {
    var s0 = 0.0;
    var s1 = 0.0;
    var s2 = 0.0;
    var s3 = 0.0;
    if ok {
        let end = row_ptr[row + 1u];
        var i = row_ptr[row] + lane;
        // i + 3·VS < end: all four entries are in the row (no overflow: X fits one binding).
        for (; i + 3u * VS < end; i += UNROLL * VS) {
            let x0 = vals[i];
            let x1 = vals[i + VS];
            let x2 = vals[i + 2u * VS];
            let x3 = vals[i + 3u * VS];
            s0 += x0 * y[col_at(i)];
            s1 += x1 * y[col_at(i + VS)];
            s2 += x2 * y[col_at(i + 2u * VS)];
            s3 += x3 * y[col_at(i + 3u * VS)];
        }
        for (; i < end; i += VS) {
            s0 += vals[i] * y[col_at(i)];
        }
    }
    return (s0 + s1) + (s2 + s3);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    for (var i = wid.x * WG + tid; i < params.n; i += nwg.x * WG) {
        var t = 0.0;
        if (params.flags & 2u) != 0u {
            t = params.beta * z[i];
        }
        w[i] = t;
    }
    let lane = tid % VS;
    let nv = WG / VS;
    var row = wid.x * nv + tid / VS;
    for (var c = 0u; c < params.c; c++) {
        let ok = row < params.m;
#ifdef XTY
        var s = 0.0;
        if ok {
            s = y[row];
        }
#else
        var s = vsg_sum(row_partial(row, lane, ok), VS, tid);
#endif
        if ok && lane == 0u {
            if (params.flags & 1u) != 0u {
                s *= v[row];
            }
            p[row] = params.alpha * s;
        }
        row += nwg.x * nv;
    }
}
