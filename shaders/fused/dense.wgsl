// The fused dense pattern (Ashari et al., Algorithm 3): w += α·Xᵀ(v ⊙ (X·y)) with X dense
// row-major (rows `stride` floats apart: n, unpadded; every load is one f32 masked to columns
// < n, so nothing past a row is read). A vector of VS consecutive lanes takes a row, lane
// `l` holding columns l, l + VS, …, l + (TL−1)·VS of y, of the row and of its partial w in
// registers (TL ≤ 16, VS·TL ≥ n). Each vector takes C rows (params.c, a uniform trip count:
// rows past m contribute nothing), RIF at a time (rows in flight, 1, 2 or 4). RIF = 1 is the
// one-row step (v loaded after the reduction). RIF > 1: the step's
// loads (X, v, XTY's y) are all issued before the first of its reductions, so a lane has
// RIF·TL loads of X in flight instead of TL. Each row's dot product and reduction are those of
// RIF = 1 and its products are added to the lane's partial w in row order (the same operations
// in the same order for every RIF); a last step past C masks its extra rows (which the grid
// also puts past m). The row dot product is reduced across the vector: by subgroup shuffles
// when it fits a subgroup (SUBGROUP); when it spans several (SUBGROUP_WIDE, the subgroup size
// dividing VS) by subgroupAdd, then the vector's subgroup totals summed through workgroup
// memory; without subgroup operations through workgroup memory alone. At the end the vectors'
// partial w are summed in workgroup memory, the vectors taking turns (no atomics, a fixed
// order), and each workgroup adds its partial once per column: with f32 atomics or
// compare-exchange, or under TWO_PASS written to part[(part_base + group)·n + i] for
// fused/reduce_parts.
// XTY: w += α·Xᵀ(v ⊙ y) with y ∈ ℝᵐ (no dot product).
// The matrix may be bound one band of rows at a time: rows are band-relative, and v (and y
// under XTY) are indexed from params.row_base.
#ifndef SUBGROUP_WIDE
#import shared/reduce
#endif
#ifndef TWO_PASS
#import shared/atomic_f32
#endif

override WG: u32 = 128u;
override VS: u32 = 32u;
override TL: u32 = 1u;
override RIF: u32 = 1u;
override NCOLS: u32 = 1u;
const TL_MAX: u32 = 16u;
const RIF_MAX: u32 = 4u;

struct Params {
    m: u32,
    n: u32,
    stride: u32,
    c: u32,
    flags: u32,
    alpha: f32,
    row_base: u32,
    part_base: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
#ifdef TWO_PASS
@group(0) @binding(4) var<storage, read_write> part: array<f32>;
#else
@group(0) @binding(4) var<storage, read_write> accum: array<AtomicF32>;
#endif

var<workgroup> wg_w: array<f32, NCOLS>;

#ifdef SUBGROUP_WIDE
// One total per subgroup (at most WG of them).
var<workgroup> sg_total: array<f32, WG>;

// Sum over the VS lanes of this invocation's vector, which spans VS / sg_size whole subgroups
// (consecutive invocations form a subgroup). Workgroup-uniform control flow.
fn vsg_sum(x: f32, lanes: u32, tid: u32, sg_size: u32) -> f32 {
    let t = subgroupAdd(x);
    if tid % sg_size == 0u {
        sg_total[tid / sg_size] = t;
    }
    workgroupBarrier();
    let per = lanes / sg_size;
    let first = (tid / lanes) * per;
    var s = 0.0;
    for (var k = 0u; k < per; k++) {
        s += sg_total[first + k];
    }
    workgroupBarrier();
    return s;
}
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
#ifdef SUBGROUP_WIDE
    @builtin(subgroup_size) sg_size: u32,
#endif
) {
    let lane = tid % VS;
    let vid = tid / VS;
    let nv = WG / VS;
    let n = params.n;
    var ly: array<f32, TL_MAX>;
    var lw: array<f32, TL_MAX>;
    for (var t = 0u; t < TL; t++) {
        let col = lane + t * VS;
        lw[t] = 0.0;
        ly[t] = 0.0;
#ifndef XTY
        if col < n {
            ly[t] = y[col];
        }
#endif
    }
    let step = nwg.x * nv;
    var row = wid.x * nv + vid;
    for (var c = 0u; c < params.c; c += RIF) {
        if RIF == 1u {
            // One row a step, as before rows in flight: v is loaded after the reduction
            // (loading it beside X cost 13% at n = 200 on an H200, the arrays below more).
            let ok = row < params.m;
            var lx1: array<f32, TL_MAX>;
            var s1 = 0.0;
            for (var t = 0u; t < TL; t++) {
                let col = lane + t * VS;
                lx1[t] = 0.0;
                if ok && col < n {
                    lx1[t] = x[row * params.stride + col];
                }
                s1 += lx1[t] * ly[t];
            }
#ifdef XTY
            s1 = 0.0;
            if ok {
                s1 = y[params.row_base + row];
            }
#else
#ifdef SUBGROUP_WIDE
            s1 = vsg_sum(s1, VS, tid, sg_size);
#else
            s1 = vsg_sum(s1, VS, tid);
#endif
#endif
            if ok && (params.flags & 1u) != 0u {
                s1 *= v[params.row_base + row];
            }
            for (var t = 0u; t < TL; t++) {
                lw[t] += lx1[t] * s1;
            }
            row += step;
            continue;
        }
        // Row r of this step: row + r·step, the vector's (c + r)-th; past C or m it loads
        // nothing and its dot product and scale are 0 and 1.
        var lx: array<f32, TL_MAX * RIF_MAX>;
        var s: array<f32, RIF_MAX>;
        var scale: array<f32, RIF_MAX>;
        for (var r = 0u; r < RIF; r++) {
            let rr = row + r * step;
            let ok = c + r < params.c && rr < params.m;
            s[r] = 0.0;
            scale[r] = 1.0;
            for (var t = 0u; t < TL; t++) {
                let col = lane + t * VS;
                let k = r * TL_MAX + t;
                lx[k] = 0.0;
                if ok && col < n {
                    lx[k] = x[rr * params.stride + col];
                }
                s[r] += lx[k] * ly[t];
            }
#ifdef XTY
            s[r] = 0.0;
            if ok {
                s[r] = y[params.row_base + rr];
            }
#endif
            if ok && (params.flags & 1u) != 0u {
                scale[r] = v[params.row_base + rr];
            }
        }
        for (var r = 0u; r < RIF; r++) {
#ifndef XTY
#ifdef SUBGROUP_WIDE
            s[r] = vsg_sum(s[r], VS, tid, sg_size);
#else
            s[r] = vsg_sum(s[r], VS, tid);
#endif
#endif
            // × 1 is exact: rows without v keep their sum's bits.
            s[r] *= scale[r];
        }
        for (var r = 0u; r < RIF; r++) {
            for (var t = 0u; t < TL; t++) {
                lw[t] += lx[r * TL_MAX + t] * s[r];
            }
        }
        row += RIF * step;
    }
    for (var i = tid; i < n; i += WG) {
        wg_w[i] = 0.0;
    }
    workgroupBarrier();
    for (var turn = 0u; turn < nv; turn++) {
        if turn == vid {
            for (var t = 0u; t < TL; t++) {
                let col = lane + t * VS;
                if col < n {
                    wg_w[col] += lw[t];
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = tid; i < n; i += WG) {
#ifdef TWO_PASS
        part[(params.part_base + wid.x) * n + i] = params.alpha * wg_w[i];
#else
        accum_add(i, params.alpha * wg_w[i]);
#endif
    }
}
