// Plan building on the GPU: the row of every nonzero from S's row offsets, so COO plans
// upload M + 1 offsets instead of nnz row indices. One invocation per nonzero binary-searches
// row_ptr (balanced however skewed the rows are): the largest r with row_ptr[r] <= e is the
// row holding e, empty rows included (they share their offset with the next row).
override WG: u32 = 256u;

struct Params {
    nnz: u32,
    nrows: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(2) var<storage, read_write> rows: array<u32>;

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
    // Invariant: row_ptr[lo] <= e < row_ptr[hi] (row_ptr[0] = 0, row_ptr[nrows] = nnz).
    var lo = 0u;
    var hi = params.nrows;
    while hi - lo > 1u {
        let mid = lo + (hi - lo) / 2u;
        if row_ptr[mid] <= e {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    rows[e] = lo;
}
