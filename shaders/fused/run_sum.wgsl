// Segmented suffix sum over a subgroup whose lanes hold entries sorted by column (a run of
// one column is contiguous in the lanes): lane i returns the sum of `v` over its run from i
// on, counting lanes whose `valid` is set. Before the round at distance d each lane holds its
// run's sum over [i, i + d); when no run reaches d lanes further, every sum is complete (most
// runs are short: a round or two). Subgroup operations: call in uniform control flow.
fn run_suffix_sum(col: u32, v: f32, valid: bool, sg_lane: u32, sg_size: u32) -> f32 {
    var s = v;
    for (var d = 1u; d < sg_size; d <<= 1u) {
        let co = subgroupShuffleDown(col, d);
        let same = sg_lane + d < sg_size && co == col && valid;
        if !subgroupAny(same) {
            break;
        }
        let so = subgroupShuffleDown(s, d);
        if same {
            s += so;
        }
    }
    return s;
}
