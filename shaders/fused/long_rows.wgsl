// The long-row path of the fused sparse kernel: a row with more entries than the plan's
// threshold is cut into chunks of consecutive entries, chunks[k] = (row, begin, end, slot),
// and each chunk is taken by a whole workgroup (chunks strided over the grid), so one heavy
// row of a power-law X is spread over many workgroups instead of holding one vector. The main
// kernel skips these rows.
// - DOT: dots[slot] += Σ vals[i]·y[col_idx[i]] over the chunk (a workgroup tree sum, then
//   one atomic add per chunk; dots is zeroed before).
// - otherwise (the scatter): s = dots[slot] (XTY: y[row]), times v[row] when flags bit 0,
//   then w[col_idx[i]] += α·s·vals[i] for every entry of the chunk.
// col_idx holds X's own column indices (never the hot-column rewrite).
#import shared/atomic_f32
#ifdef DOT
#import shared/wg_sum
#endif

override WG: u32 = 256u;

struct Params {
    nchunks: u32,
    // Bit 0: multiply by v.
    flags: u32,
    alpha: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> chunks: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> col_idx: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
#ifdef DOT
// The per-row dot products (one slot per long row).
@group(0) @binding(5) var<storage, read_write> accum: array<AtomicF32>;
#else
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read> dots: array<f32>;
// w.
@group(0) @binding(7) var<storage, read_write> accum: array<AtomicF32>;
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
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
            accum_add(ch.w, t);
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
            accum_add(col_idx[i], vals[i] * a);
        }
#endif
    }
}
