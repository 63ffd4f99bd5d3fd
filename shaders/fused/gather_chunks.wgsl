// The long rows of fused/gather_rows: chunks[k] = (row, begin, end, unused) holds consecutive
// entries of one row (the matrix's row, entry positions within the band's window,
// src/fused/bands.rs), each chunk taken by a whole workgroup (chunks strided over the grid):
// out[row] += s·Σ vals[i]·y[col_idx[i]] over the chunk, one atomic add per chunk
// (shared/atomic_f32: native f32 with F32_ATOMIC, else compare-exchange). s = α, times v[row]
// with ROW_V. gather_rows ran before: out holds 0 (the row pass) or its base (ACCUM) at every
// long row.
#import shared/atomic_f32
#import shared/wg_sum

override WG: u32 = 256u;

struct Params {
    nchunks: u32,
    alpha: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> chunks: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> col_idx: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read_write> accum: array<AtomicF32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // k is uniform over the workgroup, so wg_sum's barriers are reached by all.
    for (var k = wid.x; k < params.nchunks; k += nwg.x) {
        let ch = chunks[k];
        var s = 0.0;
        for (var i = ch.y + lid; i < ch.z; i += WG) {
            s += vals[i] * y[col_idx[i]];
        }
        let total = wg_sum(s, lid);
        if lid == 0u {
            let r = ch.x;
            var f = params.alpha;
#ifdef ROW_V
            f *= v[r];
#endif
            accum_add(r, f * total);
        }
        // wg_sum's scratch is rewritten by the next chunk.
        workgroupBarrier();
    }
}
