// Stage baseline, step 3: the gradient, one global atomic add per (edge, parameter) straight
// from the sample-sorted edges (no segmented reduction), dℓ/dŷ and the Accums read from
// global memory; L2 adds λ·θ/B per edge.
#import wide/stage_common

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let ch = chunk_of(wid.y * nwg.x + wid.x);
    let slot = lid / LANES;
    if slot >= ch.y {
        return;
    }
    let s = ch.x + slot;
    let dl = accs[s * STRIDE + NACC];
    let e1 = idx[cfg.row_off + s + 1u];
    for (var e = idx[cfg.row_off + s] + lid % LANES; e < e1; e += LANES) {
        let edge = s_edge(e);
        let x = bitcast<f32>(edge.y);
        for (var i = 0u; i < NPARAM; i++) {
            var g = dl * ala_apply(s, edge.x, x, i);
            if cfg.l2 > 0.0 {
                g += cfg.l2 * param(edge.x, i) / f32(sched[1]);
            }
            accum_add(edge.x * NPARAM + i, g);
        }
    }
}
