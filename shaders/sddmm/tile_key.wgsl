// Library for building the tiled kernels' tilings on the GPU: the bucket ("key") of a
// nonzero. Keys run in the order the kernels take nonzeros, so an exclusive scan of the key
// counts gives every bucket's first position:
//   PANELS (SM-L2): column panel, then active row  → key = panel · rows + row
//   else   (SM-SM): row panel, then column tile    → key = row panel · col_tiles + tile
// Rows and columns are those of the oriented matrix (Sᵀ when `transposed`). The importing
// kernel declares `params: TileParams`.
struct TileParams {
    nnz: u32,
    // 1: tile Sᵀ (rows and columns of S swapped).
    transposed: u32,
    // Rows of the oriented matrix.
    rows: u32,
    // SM-SM: column tiles of the oriented matrix.
    col_tiles: u32,
    tj: u32,
    ti: u32,
    _pad0: u32,
    _pad1: u32,
}

// The nonzero at (row r, column c) of S as (row, column) of the oriented matrix.
fn oriented(r: u32, c: u32) -> vec2<u32> {
    if params.transposed != 0u {
        return vec2<u32>(c, r);
    }
    return vec2<u32>(r, c);
}

fn tile_key(rc: vec2<u32>) -> u32 {
#ifdef PANELS
    return (rc.y / params.tj) * params.rows + rc.x;
#else
    return (rc.x / params.ti) * params.col_tiles + rc.y / params.tj;
#endif
}
