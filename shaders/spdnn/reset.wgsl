// spdnn.reset: starts an inference: every row is active (count = cap) in its own order
// (ids[i] = i), so the first layer reads the input rows in place. With CONSTANT_ROWS (the
// sliced path) it also resets every row's constancy words of layer 0 (half 0 of `konst`,
// see spdnn.sliced) and clears the first `clear` words of the fast-path counters (the
// first chunk of a run clears them, later chunks add to them), and the chunk's three
// scalar-row counts (see spdnn.select).
override WG: u32 = 256u;

struct Params {
    cap: u32,
    clear: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> count: array<u32>;
#ifdef CONSTANT_ROWS
@group(0) @binding(3) var<storage, read_write> konst: array<u32>;
@group(0) @binding(4) var<storage, read_write> stats: array<u32>;
@group(0) @binding(5) var<storage, read_write> scount: array<u32>;
#endif

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
#ifdef CONSTANT_ROWS
        konst[i * 4u] = 0xffffffffu;
        konst[i * 4u + 1u] = 0u;
#endif
    }
#ifdef CONSTANT_ROWS
    if (i < params.clear) {
        stats[i] = 0u;
    }
    if (i < 3u) {
        scount[i] = 0u;
    }
#endif
}
