// f32 atomic add on the workgroup array `wg_accum`, which the importing kernel declares as
// `var<workgroup> wg_accum: array<atomic<u32>, N>` and touches only through atomicLoad,
// atomicStore and these functions:
// - WG_F32_NATIVE: an integer atomicAdd of the bits, which src/gpu/spirv_wg_adds.rs rewrites
//   into a native f32 add (OpAtomicFAddEXT) on a device with shaderSharedFloat32AtomicAdd
//   (naga accepts atomic<f32> in storage buffers only);
// - otherwise a compare-exchange loop on the bit pattern, one add's loop at a time: an
//   invocation's adds issued together ran slower on NVIDIA GPUs both times they were built,
//   1.05–8× with arrays (H200) and 2.2–3.2× with vector components (H100; BENCHMARKS.md).
// Timing-only defines (src/fused/diag.rs; results not valid): DIAG_SKIP_WG_ADDS consumes v
// without adding it, DIAG_PLAIN_WG_ADDS adds by a plain load and store (racing adds lost),
// DIAG_INT_WG_ADDS adds the bits as integers (garbage sums; a fixed-point accumulation's cost).
fn wg_accum_add(i: u32, v: f32) {
#ifdef DIAG_SKIP_WG_ADDS
    if v == 1.0e38 {
        atomicStore(&wg_accum[i], bitcast<u32>(v));
    }
#else
#ifdef DIAG_PLAIN_WG_ADDS
    wg_accum_add_alone(i, v);
#else
#ifdef DIAG_INT_WG_ADDS
    atomicAdd(&wg_accum[i], bitcast<u32>(v));
#else
#ifdef WG_F32_NATIVE
    atomicAdd(&wg_accum[i], bitcast<u32>(v));
#else
    var old = atomicLoad(&wg_accum[i]);
    loop {
        let r = atomicCompareExchangeWeak(&wg_accum[i], old, bitcast<u32>(bitcast<f32>(old) + v));
        if r.exchanged {
            break;
        }
        old = r.old_value;
    }
#endif
#endif
#endif
#endif
}

// An add to a word no other invocation adds to meanwhile (the caller's barriers and distinct
// indices keep it alone): a plain load and store. DIAG_SKIP_WG_ADDS consumes v as
// `wg_accum_add` does.
fn wg_accum_add_alone(i: u32, v: f32) {
#ifdef DIAG_SKIP_WG_ADDS
    if v == 1.0e38 {
        atomicStore(&wg_accum[i], bitcast<u32>(v));
    }
#else
    atomicStore(&wg_accum[i], bitcast<u32>(bitcast<f32>(atomicLoad(&wg_accum[i])) + v));
#endif
}

fn wg_accum_load(i: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&wg_accum[i]));
}
