// Fixed-point adds on the workgroup array `wg_accum` (fused/sparse with FIXED, which declares
// it as `var<workgroup> wg_accum: array<atomic<i32>, N>`): word i takes round(t·scale[i]) by a
// native integer add, its scale from fused/fixed_scale (src/fused/fixed.rs: the bound keeps
// every partial sum below 2^31). A column of scale 0 takes f32 adds of the bit pattern by
// compare-exchange instead (a non-finite operand: NaN and ∞ propagate as without FIXED).
@group(0) @binding(7) var<storage, read> fixed_scales: array<f32>;

fn wg_accum_add(i: u32, v: f32) {
    let sc = fixed_scales[i];
    if sc != 0.0 {
        atomicAdd(&wg_accum[i], i32(round(v * sc)));
        return;
    }
    var old = atomicLoad(&wg_accum[i]);
    loop {
        let r = atomicCompareExchangeWeak(&wg_accum[i], old, bitcast<i32>(bitcast<f32>(old) + v));
        if r.exchanged {
            break;
        }
        old = r.old_value;
    }
}

fn wg_accum_load(i: u32) -> f32 {
    let sc = fixed_scales[i];
    let word = atomicLoad(&wg_accum[i]);
    if sc != 0.0 {
        // ÷ 2^s exactly: frexp(2^s) has exponent s + 1.
        return ldexp(f32(word), 1 - frexp(sc).exp);
    }
    return bitcast<f32>(word);
}
