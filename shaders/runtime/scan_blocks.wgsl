// Device-wide exclusive prefix sum of u32, first phase: each workgroup scans one block of
// WG·ITEMS consecutive elements in place and writes the block's total to sums[block].
// Later phases scan `sums` the same way and add it back (runtime/scan_add). Sums wrap
// modulo 2³² (callers keep totals below that). Workgroup memory only: any subgroup size.
override WG: u32 = 256u;
const ITEMS: u32 = 4u;

struct Params {
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;

var<workgroup> partial: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    let first = block * WG * ITEMS + lid * ITEMS;
    // Each invocation scans its ITEMS consecutive elements serially.
    var v = array<u32, ITEMS>(0u, 0u, 0u, 0u);
    var total = 0u;
    for (var i = 0u; i < ITEMS; i++) {
        if first + i < params.n {
            v[i] = data[first + i];
        }
        total += v[i];
    }
    // Inclusive Hillis–Steele scan of the invocations' totals.
    partial[lid] = total;
    workgroupBarrier();
    for (var step = 1u; step < WG; step *= 2u) {
        var add = 0u;
        if lid >= step {
            add = partial[lid - step];
        }
        workgroupBarrier();
        partial[lid] += add;
        workgroupBarrier();
    }
    var run = partial[lid] - total;
    for (var i = 0u; i < ITEMS; i++) {
        if first + i < params.n {
            data[first + i] = run;
        }
        run += v[i];
    }
    // Workgroups past the last block (2D grid rounding) write nothing.
    if lid == WG - 1u && block * WG * ITEMS < params.n {
        sums[block] = partial[lid];
    }
}
