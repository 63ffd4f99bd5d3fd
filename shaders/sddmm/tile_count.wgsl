// Plan building on the GPU, step 1 of 2: nonzeros per tiling bucket (see tile_key). One
// invocation per nonzero; `rows` is the row of every nonzero (expand_rows).
#import sddmm/tile_key

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: TileParams;
@group(0) @binding(1) var<storage, read> rows: array<u32>;
@group(0) @binding(2) var<storage, read> cols: array<u32>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;

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
    atomicAdd(&counts[tile_key(oriented(rows[e], cols[e]))], 1u);
}
