// Stage baseline, step 1: the Accums of every sample of the listed chunks, written to global
// memory. LANES invocations per sample, reduced by subgroup shuffles (as `wide/flow`).
#import wide/stage_common
#import shared/reduce

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let ch = chunk_of(wid.y * nwg.x + wid.x);
    if ch.y == 0u {
        return;
    }
    let slot = lid / LANES;
    let lane = lid % LANES;
    var a: array<f32, NACC>;
    for (var i = 0u; i < NACC; i++) {
        a[i] = 0.0;
    }
    if slot < ch.y {
        let s = ch.x + slot;
        let e1 = idx[cfg.row_off + s + 1u];
        for (var e = idx[cfg.row_off + s] + lane; e < e1; e += LANES) {
            let edge = s_edge(e);
            ala_aggregate(&a, edge.x, bitcast<f32>(edge.y));
        }
    }
    for (var i = 0u; i < NACC; i++) {
        a[i] = vsg_sum(a[i], LANES, lid);
    }
    if lane == 0u && slot < ch.y {
        let s = ch.x + slot;
        for (var i = 0u; i < NACC; i++) {
            accs[s * STRIDE + i] = a[i];
        }
    }
}
