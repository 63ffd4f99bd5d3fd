// Plan building on the GPU, step 2 of 2: every nonzero takes the next free position of its
// bucket (cursor starts at the bucket's first position, from the scanned counts) and writes
// the tiled kernel's per-nonzero words there. Order inside a bucket is arbitrary: each
// nonzero's result is independent of its neighbours and `perm` leads back to CSR order.
//   PANELS: idx = local row (<< 16 | column − panel base with COMPRESS). A bucket is one
//           active row of one panel; seg[key] = (end of its first piece, that piece's local
//           row): a row too heavy for one block continues as local row 0 of later blocks.
//   else:   idx = row within the row panel << 16 | column within the column tile.
#import sddmm/tile_key

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: TileParams;
@group(0) @binding(1) var<storage, read> rows: array<u32>;
@group(0) @binding(2) var<storage, read> cols: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read_write> cursor: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> idx_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> vals_out: array<f32>;
@group(0) @binding(7) var<storage, read_write> perm_out: array<u32>;
#ifdef PANELS
@group(0) @binding(8) var<storage, read> seg: array<vec2<u32>>;
#ifndef COMPRESS
@group(0) @binding(9) var<storage, read_write> cols_out: array<u32>;
#endif
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = (wid.y * nwg.x + wid.x) * WG + lid;
    if e >= params.nnz {
        return;
    }
    let rc = oriented(rows[e], cols[e]);
    let key = tile_key(rc);
    let d = atomicAdd(&cursor[key], 1u);
    vals_out[d] = vals[e];
    perm_out[d] = e;
#ifdef PANELS
    let first = seg[key];
    let local = select(0u, first.y, d < first.x);
#ifdef COMPRESS
    idx_out[d] = (local << 16u) | (rc.y % params.tj);
#else
    idx_out[d] = local;
    cols_out[d] = rc.y;
#endif
#else
    idx_out[d] = ((rc.x % params.ti) << 16u) | (rc.y % params.tj);
#endif
}
