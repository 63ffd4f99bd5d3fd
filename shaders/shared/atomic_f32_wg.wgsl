// f32 atomic add on the workgroup array `wg_accum`, which the importing kernel declares as
// `var<workgroup> wg_accum: array<atomic<u32>, N>`: always a compare-exchange loop on the bit
// pattern (wgpu exposes no workgroup f32 atomics).
fn wg_accum_add(i: u32, v: f32) {
    var old = atomicLoad(&wg_accum[i]);
    loop {
        let r = atomicCompareExchangeWeak(&wg_accum[i], old, bitcast<u32>(bitcast<f32>(old) + v));
        if r.exchanged {
            break;
        }
        old = r.old_value;
    }
}

fn wg_accum_load(i: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&wg_accum[i]));
}
