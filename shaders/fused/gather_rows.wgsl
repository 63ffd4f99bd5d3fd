// The `transpose` variant's row pass (src/fused/transpose.rs): out = s·(A·y) by CSR rows of A,
// which is X (y ∈ ℝⁿ, out = p ∈ ℝᵐ) or X's materialized transpose (y = p, out = w). VS
// consecutive lanes per row, C rows per vector (a uniform trip count, so every lane reaches
// the reduction), the row's products summed by shared/reduce. A lane takes 4 entries of its
// row per trip (fused/csr_row4; the launch model picks VS for rows of about 4·VS entries).
// s = α, times v[row] with ROW_V.
// Rows of more than params.long_len entries are left to fused/gather_chunks: without ACCUM
// their out is zeroed here, for the chunks to add onto. ACCUM: out already holds its base
// (w = β·z) and every row adds onto it, out[row] += s·Σ (each row owned by one vector, the
// long rows untouched). Row indices are the band's (src/fused/bands.rs); out and v are
// indexed from params.row_base.
#import shared/reduce
#import fused/csr_row4

override WG: u32 = 256u;
override VS: u32 = 8u;

struct Params {
    m: u32,
    c: u32,
    row_base: u32,
    long_len: u32,
    alpha: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(2) var<storage, read> col_idx: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
// ROW_V: v ∈ ℝᵐ (else a stand-in, never read).
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

// Entry i's column (fused/csr_row4).
fn col_at(i: u32) -> u32 {
    return col_idx[i];
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lane = tid % VS;
    let nv = WG / VS;
    var row = wid.x * nv + tid / VS;
    for (var c = 0u; c < params.c; c++) {
        let ok = row < params.m;
        var is_short = true;
        if ok {
            is_short = row_ptr[row + 1u] - row_ptr[row] <= params.long_len;
        }
        let total = vsg_sum(csr_row_partial4(row, lane, ok && is_short), VS, tid);
        if ok && lane == 0u {
            let r = params.row_base + row;
            var s = params.alpha;
#ifdef ROW_V
            s *= v[r];
#endif
#ifdef ACCUM
            if is_short {
                out[r] += s * total;
            }
#else
            out[r] = select(0.0, s * total, is_short);
#endif
        }
        row += nwg.x * nv;
    }
}
