// spdnn.reset: starts an inference: every row is active (count = cap) in its own order
// (ids[i] = i), so the first layer reads the input rows in place.
override WG: u32 = 256u;

struct Params {
    cap: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> count: array<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i == 0u) {
        count[0] = params.cap;
    }
    if (i < params.cap) {
        ids[i] = i;
    }
}
