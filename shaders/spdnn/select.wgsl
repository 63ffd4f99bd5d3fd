// spdnn.select: after a layer of spdnn.sliced, builds the next active list: slot s with
// flags[s] ≠ 0 puts its row id at pos[s] (the exclusive scan of the flags) of ids_out; the
// invocation of the last slot writes the new active count. Every slot then clears its flag
// and scan input for the next layer (each slot's pair is read and cleared by one
// invocation only, so no other invocation races with it). One invocation per slot.
// A surviving row's constancy words of the next layer (`konst[4·id + 2·half ..]`, see
// spdnn.sliced) are reset to (min = 0xffffffff, max = 0) for the atomics that layer adds.
override WG: u32 = 256u;

struct Params {
    cap: u32,
    // The half of `konst` the next layer writes.
    half: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> flags: array<u32>;
@group(0) @binding(2) var<storage, read_write> pos: array<u32>;
@group(0) @binding(3) var<storage, read> ids_in: array<u32>;
@group(0) @binding(4) var<storage, read_write> ids_out: array<u32>;
@group(0) @binding(5) var<storage, read_write> count: array<u32>;
@group(0) @binding(6) var<storage, read_write> konst: array<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = (wid.y * nwg.x + wid.x) * WG + lid;
    if (s >= params.cap) {
        return;
    }
    let f = flags[s];
    let p = pos[s];
    if (s == params.cap - 1u) {
        count[0] = p + f;
    }
    if (f != 0u) {
        let id = ids_in[s];
        ids_out[p] = id;
        let k = id * 4u + params.half * 2u;
        konst[k] = 0xffffffffu;
        konst[k + 1u] = 0u;
    }
    flags[s] = 0u;
    pos[s] = 0u;
}
