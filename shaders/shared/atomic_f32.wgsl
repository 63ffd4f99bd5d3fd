// f32 atomic add on the storage array `accum`, which the importing kernel declares as
// `var<storage, read_write> accum: array<AtomicF32>` (WGSL cannot pass storage pointers to
// functions). With F32_ATOMIC it is the native atomic<f32>; otherwise a compare-exchange loop
// on the bit pattern held in an atomic<u32>.
#ifdef F32_ATOMIC
alias AtomicF32 = atomic<f32>;

fn accum_add(i: u32, v: f32) {
    atomicAdd(&accum[i], v);
}

fn accum_load(i: u32) -> f32 {
    return atomicLoad(&accum[i]);
}
#else
alias AtomicF32 = atomic<u32>;

fn accum_add(i: u32, v: f32) {
    var old = atomicLoad(&accum[i]);
    loop {
        let r = atomicCompareExchangeWeak(&accum[i], old, bitcast<u32>(bitcast<f32>(old) + v));
        if r.exchanged {
            break;
        }
        old = r.old_value;
    }
}

fn accum_load(i: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&accum[i]));
}
#endif
