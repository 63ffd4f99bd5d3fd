// cuSDDMM SM-SM, for dense S: a workgroup owns one TI×TJ tile of S (row panel × column tile)
// and, per k-slice of TK floats, stages both the TI rows of A and the TJ rows of B in
// workgroup memory; virtual subgroups of VWS lanes take the tile's nonzeros cyclically.
// Partials accumulate across slices in `out` and are multiplied by S_ij on the last slice.
// idx[e] = local_row << 16 | local_col (TI, TJ <= 65536); perm scatters to CSR order.
// Staged rows are ROW4 = TK4 + 1 vec4 apart: at a stride of exactly TK4 (a multiple of 128
// bytes whenever Tk is a multiple of 32) the virtual subgroups of one hardware subgroup, each
// on its own random row, would all hit the same memory banks.
#import shared/reduce
#import sddmm/slice_out

override WG: u32 = 256u;
override VWS: u32 = 4u;
override TI: u32 = 64u;
override TJ: u32 = 64u;
override TK: u32 = 32u;
override TK4: u32 = TK / 4u;
override ROW4: u32 = TK4 + 1u;

struct Params {
    n_blocks: u32,
    stride4: u32,
    n_slices: u32,
    a_rows: u32,
    b_rows: u32,
    // Where this band's first nonzero sits in the bound window of `out`.
    out_base: u32,
    _pad0: u32,
    _pad1: u32,
}

// blocks[b] = (first row, first column, first nonzero, end of nonzeros)
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> blocks: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> perm: array<u32>;
@group(0) @binding(5) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;

var<workgroup> sh_a: array<vec4<f32>, TI * ROW4>;
var<workgroup> sh_b: array<vec4<f32>, TJ * ROW4>;
var<workgroup> block: vec4<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = wid.y * nwg.x + wid.x;
    if lid == 0u {
        block = vec4<u32>(0u, 0u, 0u, 0u);
        if g < params.n_blocks {
            block = blocks[g];
        }
    }
    let blk = workgroupUniformLoad(&block);
    let rows_here = min(TI, params.a_rows - min(blk.x, params.a_rows));
    let cols_here = min(TJ, params.b_rows - min(blk.y, params.b_rows));
    let nvw = WG / VWS;
    let vw = lid / VWS;
    let lane = lid % VWS;
    let trips = (blk.w - blk.z + nvw - 1u) / nvw;
    for (var s = 0u; s < params.n_slices; s++) {
        let k4 = s * TK4;
        let w4 = min(TK4, params.stride4 - k4);
        for (var i = lid; i < rows_here * TK4; i += WG) {
            let q = i % TK4;
            var v = vec4<f32>(0.0);
            if q < w4 {
                v = a[(blk.x + i / TK4) * params.stride4 + k4 + q];
            }
            sh_a[i / TK4 * ROW4 + q] = v;
        }
        for (var i = lid; i < cols_here * TK4; i += WG) {
            let q = i % TK4;
            var v = vec4<f32>(0.0);
            if q < w4 {
                v = b[(blk.y + i / TK4) * params.stride4 + k4 + q];
            }
            sh_b[i / TK4 * ROW4 + q] = v;
        }
        workgroupBarrier();
        for (var t = 0u; t < trips; t++) {
            let e = blk.z + t * nvw + vw;
            let valid = e < blk.w;
            var p0 = vec4<f32>(0.0);
            var p1 = vec4<f32>(0.0);
            if valid {
                let packed = idx[e];
                let sa = (packed >> 16u) * ROW4;
                let sb = (packed & 0xffffu) * ROW4;
                for (var q = 2u * lane; q < w4; q += 2u * VWS) {
                    p0 += sh_a[sa + q] * sh_b[sb + q];
                    p1 += sh_a[sa + q + 1u] * sh_b[sb + q + 1u];
                }
            }
            let p = p0 + p1;
            let part = vsg_sum(p.x + p.y + p.z + p.w, VWS, lid);
            if valid && lane == 0u {
                store_partial(e, params.out_base, s, params.n_slices, part);
            }
        }
        workgroupBarrier();
    }
}
