// Column re-indexing (src/fused/reorder.rs): `perm` maps each re-indexed column to X's own
// (new → old). GATHER: dst[i] = src[perm[i]] (y or z into the plan's order); otherwise the
// scatter dst[perm[i]] = src[i] (w back into the caller's order). perm is a permutation of
// 0..n, so the scatter writes every element of dst exactly once.
override WG: u32 = 256u;

struct Params {
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> perm: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = gid.x; i < params.n; i += nwg.x * WG) {
#ifdef GATHER
        dst[i] = src[perm[i]];
#else
        dst[perm[i]] = src[i];
#endif
    }
}
