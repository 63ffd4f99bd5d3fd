// Self-test of shared/reduce: out[i] = sum of x over i's virtual subgroup of LANES lanes.
#import shared/reduce

override WG: u32 = 64u;
override LANES: u32 = 8u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    out[gid.x] = vsg_sum(x[gid.x], LANES, lid);
}
