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

// Transposed virtual-subgroup sum: each of the `lanes` lanes of a virtual subgroup holds
// x[0 .. lanes); lane l returns the sum over the lanes of x[l]. With SUBGROUP this is a
// butterfly that halves the values each lane carries at every step: lanes − 1 shuffles per
// lane in all, against lanes · log2(lanes) for `lanes` separate `vsg_sum`s. Same uniformity
// rule as `vsg_sum`. `x` is clobbered.
#ifdef SUBGROUP
fn vsg_transpose_sum(x: ptr<function, array<f32, 32>>, lanes: u32, lid: u32) -> f32 {
    let lane = lid % lanes;
    for (var m = lanes >> 1u; m > 0u; m = m >> 1u) {
        let upper = (lane & m) != 0u;
        for (var j = 0u; j < m; j++) {
            let lo = (*x)[j];
            let hi = (*x)[j + m];
            // The lower lane keeps index j and sends j + m; its partner the reverse.
            (*x)[j] = select(lo, hi, upper) + subgroupShuffleXor(select(hi, lo, upper), m);
        }
    }
    return (*x)[0];
}
#else
fn vsg_transpose_sum(x: ptr<function, array<f32, 32>>, lanes: u32, lid: u32) -> f32 {
    var mine = 0.0;
    for (var j = 0u; j < lanes; j++) {
        let s = vsg_sum((*x)[j], lanes, lid);
        if lid % lanes == j {
            mine = s;
        }
    }
    return mine;
}
#endif
