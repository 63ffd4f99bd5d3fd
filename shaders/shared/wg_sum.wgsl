// Sum over the whole workgroup as a tree in workgroup memory, always in the same order, so a
// total is the same bits run to run. Invocation 0 receives the total (the others a partial
// sum). Must be called in workgroup-uniform control flow; `wg_sum_scratch` is sized by the
// importing kernel's override WG (a power of two).
var<workgroup> wg_sum_scratch: array<f32, WG>;

fn wg_sum(x: f32, lid: u32) -> f32 {
    wg_sum_scratch[lid] = x;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half = half / 2u) {
        if lid < half {
            wg_sum_scratch[lid] += wg_sum_scratch[lid + half];
        }
        workgroupBarrier();
    }
    return wg_sum_scratch[0];
}
