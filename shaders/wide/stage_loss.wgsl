// Stage baseline, step 2: per sample, (ℓ, dℓ/dŷ) from the Accums in global memory; the
// chunk's loss sum and its bias gradient.
#import wide/stage_common

var<workgroup> loss_wg: array<f32, CHUNK_WG>;
var<workgroup> dl_wg: array<f32, CHUNK_WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let w = wid.y * nwg.x + wid.x;
    let ch = chunk_of(w);
    if ch.y == 0u {
        return;
    }
    if lid < ch.y {
        let s = ch.x + lid;
        var a: array<f32, NACC>;
        for (var i = 0u; i < NACC; i++) {
            a[i] = accs[s * STRIDE + i];
        }
        let y = bitcast<f32>(idx[cfg.label_off + s]);
        let r = ala_loss(&a, params[cfg.bias_index], y);
        let dl = r.z / f32(sched[1]);
        accs[s * STRIDE + NACC] = dl;
        accs[s * STRIDE + NACC + 1u] = r.y;
        loss_wg[lid] = r.y;
        dl_wg[lid] = dl;
    }
    workgroupBarrier();
    if lid == 0u {
        var l = 0.0;
        var db = 0.0;
        for (var s = 0u; s < ch.y; s++) {
            l += loss_wg[s];
            db += dl_wg[s];
        }
        out[sched[4u + w]] = l;
        accum_add(cfg.bias_index, db);
    }
}
