// spdnn.compact: after a layer, moves each surviving row s (flags[s] = 1) of the layer's
// output to its place pos[s] (the exclusive scan of the flags) in the next layer's input,
// with its original row id; the workgroup of the last slot writes the new active count.
// One workgroup per slot; slots past the old active count have flag 0. Any subgroup size.
override WG: u32 = 256u;

struct Params {
    n: u32,
    cap: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> flags: array<u32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;
@group(0) @binding(3) var<storage, read> y_out: array<f32>;
@group(0) @binding(4) var<storage, read_write> y_next: array<f32>;
@group(0) @binding(5) var<storage, read> ids_in: array<u32>;
@group(0) @binding(6) var<storage, read_write> ids_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> count: array<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = wid.y * nwg.x + wid.x;
    if (s >= params.cap) {
        return;
    }
    if (s == params.cap - 1u && lid == 0u) {
        count[0] = pos[s] + flags[s];
    }
    if (flags[s] == 0u) {
        return;
    }
    let n = params.n;
    let d = pos[s];
    for (var j = lid; j < n; j += WG) {
        y_next[d * n + j] = y_out[s * n + j];
    }
    if (lid == 0u) {
        ids_out[d] = ids_in[s];
    }
}
