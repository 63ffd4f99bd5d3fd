// f32 atomic add on the workgroup array `wg_accum`, which the importing kernel declares as
// `var<workgroup> wg_accum: array<atomic<u32>, N>`: always a compare-exchange loop on the bit
// pattern (wgpu exposes no workgroup f32 atomics).
// Timing-only defines (src/fused/diag.rs; results not valid): DIAG_SKIP_WG_ADDS consumes v
// without adding it, DIAG_PLAIN_WG_ADDS adds by a plain load and store (racing adds lost).
fn wg_accum_add(i: u32, v: f32) {
#ifdef DIAG_SKIP_WG_ADDS
    if v == 1.0e38 {
        atomicStore(&wg_accum[i], bitcast<u32>(v));
    }
#else
#ifdef DIAG_PLAIN_WG_ADDS
    wg_accum_add_alone(i, v);
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

// Up to 8 adds of one invocation (terms[j] to word cols[j] for j < count; ADD_NONE: none)
// with no add waiting on the one before: every word loaded, then one compare-exchange each
// issued back to back, then those that lost a race (another invocation's add, or this one's
// own to the same word) retried in turn. The same adds as `wg_accum_add` one after another,
// whose loops would each wait for their compare-exchange's result. Not under the DIAG
// switches (callers add one at a time there).
const ADD_NONE: u32 = 0xffffffffu;

fn wg_accum_adds(cols: array<u32, 8>, terms: array<f32, 8>, count: u32) {
    var old: array<u32, 8>;
    for (var j = 0u; j < count; j++) {
        if cols[j] != ADD_NONE {
            old[j] = atomicLoad(&wg_accum[cols[j]]);
        }
    }
    var lost = 0u;
    for (var j = 0u; j < count; j++) {
        if cols[j] != ADD_NONE {
            let want = bitcast<u32>(bitcast<f32>(old[j]) + terms[j]);
            let r = atomicCompareExchangeWeak(&wg_accum[cols[j]], old[j], want);
            old[j] = r.old_value;
            lost |= select(1u << j, 0u, r.exchanged);
        }
    }
    for (var j = 0u; j < count; j++) {
        if (lost & (1u << j)) != 0u {
            loop {
                let want = bitcast<u32>(bitcast<f32>(old[j]) + terms[j]);
                let r = atomicCompareExchangeWeak(&wg_accum[cols[j]], old[j], want);
                if r.exchanged {
                    break;
                }
                old[j] = r.old_value;
            }
        }
    }
}
