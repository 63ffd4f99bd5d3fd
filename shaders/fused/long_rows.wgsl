// The long-row path of the fused sparse kernel: a row with more entries than the plan's
// threshold is cut into chunks of consecutive entries, chunks[k] = (row, begin, end, slot),
// and each chunk is taken by a whole workgroup (chunks strided over the grid), so one heavy
// row of a power-law X is spread over many workgroups instead of holding one vector. The main
// kernel skips these rows.
// - DOT: dots[slot] += Σ vals[i]·y[col_idx[i]] over the chunk (a workgroup tree sum, then
//   one atomic add per chunk; dots is zeroed before).
// - otherwise (the scatter): s = dots[slot] (XTY: y[row]), times v[row] when flags bit 0,
//   then w[col_idx[i]] += α·s·vals[i] for every entry of the chunk.
//   SHARED_W (the scatter, w fits workgroup memory): the products go to a workgroup copy of w
//   by plain adds — a chunk lies in one row, whose columns are distinct, and a barrier
//   separates a workgroup's chunks — then one global add per (workgroup, column).
// - PARTIAL (with DOT; the folded sequence, src/fused/kernels.rs): each chunk's partial dot
//   product stored at dots[chunk_base + k] (no atomics, nothing to zero first); the main
//   kernel (LONG) sums a row's chunk partials itself. Flags bit 1 (the first band's pass):
//   the workgroups also initialise w = β·z over n (grid-stride; β = 0 never reads z), so no
//   axpy pre-pass precedes this one.
// col_idx holds X's own column indices (never the hot-column rewrite).
#ifdef DOT
#ifndef PARTIAL
#import shared/atomic_f32
#endif
#else
#import shared/atomic_f32
#endif
#ifdef DOT
#import shared/wg_sum
#endif

override WG: u32 = 256u;
// Columns of the workgroup copy of w (SHARED_W).
override NCOLS: u32 = 1u;

struct Params {
    nchunks: u32,
    // Bit 0: multiply by v. Bit 1 (PARTIAL): initialise w = β·z.
    flags: u32,
    alpha: f32,
    // PARTIAL: the global index of this band's first chunk.
    chunk_base: u32,
    // PARTIAL: w's length and β.
    n: u32,
    beta: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> chunks: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> col_idx: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
#ifdef DOT
#ifdef PARTIAL
// The per-chunk partial dot products (one per chunk over all bands).
@group(0) @binding(5) var<storage, read_write> part: array<f32>;
@group(0) @binding(6) var<storage, read> z: array<f32>;
@group(0) @binding(7) var<storage, read_write> w: array<f32>;
#else
// The per-row dot products (one slot per long row).
@group(0) @binding(5) var<storage, read_write> accum: array<AtomicF32>;
#endif
#else
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read> dots: array<f32>;
// w.
@group(0) @binding(7) var<storage, read_write> accum: array<AtomicF32>;
#ifdef SHARED_W
var<workgroup> wg_w: array<f32, NCOLS>;
#endif
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
#ifndef DOT
#ifdef SHARED_W
    for (var i = tid; i < NCOLS; i += WG) {
        wg_w[i] = 0.0;
    }
    workgroupBarrier();
#endif
#endif
#ifdef DOT
#ifdef PARTIAL
    if (params.flags & 2u) != 0u {
        for (var i = wid.x * WG + tid; i < params.n; i += nwg.x * WG) {
            var t = 0.0;
            if params.beta != 0.0 {
                t = params.beta * z[i];
            }
            w[i] = t;
        }
    }
#endif
#endif
    // k is uniform across the workgroup, so wg_sum's barriers are reached by all.
    for (var k = wid.x; k < params.nchunks; k += nwg.x) {
        let ch = chunks[k];
#ifdef DOT
        var s = 0.0;
        for (var i = ch.y + tid; i < ch.z; i += WG) {
            s += vals[i] * y[col_idx[i]];
        }
        let t = wg_sum(s, tid);
        if tid == 0u {
#ifdef PARTIAL
            part[params.chunk_base + k] = t;
#else
            accum_add(ch.w, t);
#endif
        }
        // wg_sum's scratch is rewritten by the next chunk.
        workgroupBarrier();
#else
#ifdef XTY
        var s = y[ch.x];
#else
        var s = dots[ch.w];
#endif
        if (params.flags & 1u) != 0u {
            s *= v[ch.x];
        }
        let a = params.alpha * s;
        for (var i = ch.y + tid; i < ch.z; i += WG) {
#ifdef SHARED_W
            wg_w[col_idx[i]] += vals[i] * a;
#else
            accum_add(col_idx[i], vals[i] * a);
#endif
        }
#ifdef SHARED_W
        // The next chunk may hold the same columns.
        workgroupBarrier();
#endif
#endif
    }
#ifndef DOT
#ifdef SHARED_W
    for (var i = tid; i < NCOLS; i += WG) {
        let t = wg_w[i];
        if t != 0.0 {
            accum_add(i, t);
        }
    }
#endif
#endif
}
