// Sums across a virtual subgroup: `lanes` consecutive invocations (a power of two) of a 1D
// workgroup. Every lane receives the total. Must be called in workgroup-uniform control flow.
//
// With SUBGROUP the sum is an xor-shuffle butterfly; the caller guarantees
// lanes <= the adapter's minimum subgroup size (Caps::shuffle_fits), so a virtual subgroup never
// straddles two hardware subgroups. Without it the butterfly runs through workgroup memory;
// `reduce_scratch` holds one slot per invocation, sized by the override WG.
#ifdef SUBGROUP
fn vsg_sum(x: f32, lanes: u32, lid: u32) -> f32 {
    var s = x;
    for (var m = lanes >> 1u; m > 0u; m = m >> 1u) {
        s += subgroupShuffleXor(s, m);
    }
    return s;
}
#else
var<workgroup> reduce_scratch: array<f32, WG>;

fn vsg_sum(x: f32, lanes: u32, lid: u32) -> f32 {
    reduce_scratch[lid] = x;
    workgroupBarrier();
    for (var m = lanes >> 1u; m > 0u; m = m >> 1u) {
        let other = reduce_scratch[lid ^ m];
        workgroupBarrier();
        reduce_scratch[lid] += other;
        workgroupBarrier();
    }
    let s = reduce_scratch[lid];
    workgroupBarrier();
    return s;
}
#endif
