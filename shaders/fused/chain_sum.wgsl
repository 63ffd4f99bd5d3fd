// Segmented sums of row heads across a subgroup's lanes, for the stream kernel
// (fused/stream and fused/stream_units).

// Lane i's chain of heads: h summed over lanes i, i + 1, … up to the first whose `ends` is
// set (inclusive), and whether one was met before the subgroup's end. Before the round at
// distance d each lane holds the chain over [i, i + d). Call in uniform control flow.
fn chain_sum(h: f32, ends: bool, sg_lane: u32, sg_size: u32) -> vec2<f32> {
    var a = h;
    var done = ends;
    for (var d = 1u; d < sg_size; d <<= 1u) {
        let extend = !done && sg_lane + d < sg_size;
        if !subgroupAny(extend) {
            break;
        }
        let ao = subgroupShuffleDown(a, d);
        let fo = subgroupShuffleDown(u32(done), d);
        if extend {
            a += ao;
            done = fo != 0u;
        }
    }
    return vec2<f32>(a, f32(done));
}
