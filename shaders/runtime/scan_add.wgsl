// Device-wide exclusive prefix sum of u32, last phase: adds the scanned block totals to
// every element of each block (blocks of WG·ITEMS elements, as in runtime/scan_blocks).
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

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    if block * WG * ITEMS >= params.n {
        return;
    }
    let offset = sums[block];
    let first = block * WG * ITEMS + lid * ITEMS;
    for (var i = 0u; i < ITEMS; i++) {
        if first + i < params.n {
            data[first + i] += offset;
        }
    }
}
