// cuSDDMM SM-L2: S cut into column panels, blocks in panel order (one dispatch; workgroups
// start in order, so B's panel stays hot in L2); a workgroup owns up to TI active rows of one
// panel and a bounded number of their nonzeros (heavy rows are split over blocks). Per k-slice of TK floats it stages those rows of A in workgroup memory (lanes
// along k, coalesced), then virtual subgroups of VWS lanes take the block's nonzeros
// cyclically and read B through L2. Partial dot products accumulate across slices in `out`
// (each nonzero is owned by one virtual subgroup, so no atomics) and are multiplied by S_ij
// once, on the last slice. `perm` scatters the panel order back to CSR order.
//
// COMPRESS: idx[e] = local_row << 16 | (col - panel col base), both < 65536 (16-bit
// tile-relative indices, one word per nonzero). Otherwise idx[e] is the local row and
// cols[e] the global column.
#import shared/reduce
#import sddmm/slice_out

override WG: u32 = 256u;
override VWS: u32 = 4u;
override TI: u32 = 64u;
override TK: u32 = 32u;
override TK4: u32 = TK / 4u;
// Nonzeros per virtual subgroup per step (1–4): their loads are issued before any reduction.
override UNROLL: u32 = 1u;

// out_base: where this band's first nonzero sits in the bound window of `out`.
struct Params {
    n_blocks: u32,
    stride4: u32,
    n_slices: u32,
    out_base: u32,
}

// blocks[2b] = (first active row, active rows, first nonzero, end of nonzeros),
// blocks[2b + 1].x = the panel's first column.
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> blocks: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> active_rows: array<u32>;
@group(0) @binding(3) var<storage, read> idx: array<u32>;
@group(0) @binding(4) var<storage, read> vals: array<f32>;
@group(0) @binding(5) var<storage, read> perm: array<u32>;
@group(0) @binding(6) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> out: array<f32>;
#ifndef COMPRESS
@group(0) @binding(9) var<storage, read> cols: array<u32>;
#endif

var<workgroup> sh_a: array<vec4<f32>, TI * TK4>;
var<workgroup> block: vec4<u32>;
var<workgroup> block_col_base: u32;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = wid.y * nwg.x + wid.x;
    if lid == 0u {
        // Workgroups past the panel's last block (2D grid rounding) get an empty block.
        block = vec4<u32>(0u, 0u, 0u, 0u);
        block_col_base = 0u;
        if g < params.n_blocks {
            block = blocks[2u * g];
            block_col_base = blocks[2u * g + 1u].x;
        }
    }
    let blk = workgroupUniformLoad(&block);
    let col_base = workgroupUniformLoad(&block_col_base);
    let nvw = WG / VWS;
    let vw = lid / VWS;
    let lane = lid % VWS;
    let trips = (blk.w - blk.z + nvw - 1u) / nvw;
    for (var s = 0u; s < params.n_slices; s++) {
        let k4 = s * TK4;
        let w4 = min(TK4, params.stride4 - k4);
        for (var i = lid; i < blk.y * TK4; i += WG) {
            let q = i % TK4;
            var v = vec4<f32>(0.0);
            if q < w4 {
                v = a[active_rows[blk.x + i / TK4] * params.stride4 + k4 + q];
            }
            sh_a[i] = v;
        }
        workgroupBarrier();
        for (var t = 0u; t < trips; t += UNROLL) {
            var part = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
            for (var u = 0u; u < UNROLL; u++) {
                let e = blk.z + (t + u) * nvw + vw;
                var p0 = vec4<f32>(0.0);
                var p1 = vec4<f32>(0.0);
                if e < blk.w {
#ifdef COMPRESS
                    let packed = idx[e];
                    let sa = (packed >> 16u) * TK4;
                    let sb = (col_base + (packed & 0xffffu)) * params.stride4 + k4;
#else
                    let sa = idx[e] * TK4;
                    let sb = cols[e] * params.stride4 + k4;
#endif
                    for (var q = 2u * lane; q < w4; q += 2u * VWS) {
                        p0 += sh_a[sa + q] * b[sb + q];
                        p1 += sh_a[sa + q + 1u] * b[sb + q + 1u];
                    }
                }
                let p = p0 + p1;
                part[u] = p.x + p.y + p.z + p.w;
            }
            for (var u = 0u; u < UNROLL; u++) {
                let e = blk.z + (t + u) * nvw + vw;
                let sum = vsg_sum(part[u], VWS, lid);
                if e < blk.w && lane == 0u {
                    store_partial(e, params.out_base, s, params.n_slices, sum);
                }
            }
        }
        workgroupBarrier();
    }
}
