// The indirect arguments of a gated region of a batch (src/gpu/batch.rs): each gated dispatch
// gets its recorded grid when flag[params.index] is 0.0 at the time this runs, else an empty
// grid, so work after a GPU-side condition (a solver's "stop" flag) costs no workgroups.
override WG: u32 = 64u;

struct Params {
    count: u32,
    index: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> flag: array<f32>;
@group(0) @binding(2) var<storage, read> grids: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> args: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let run = flag[params.index] == 0.0;
    for (var i = gid.x; i < params.count; i += WG) {
        let g = select(vec3<u32>(0u), grids[i].xyz, run);
        args[3u * i] = g.x;
        args[3u * i + 1u] = g.y;
        args[3u * i + 2u] = g.z;
    }
}
