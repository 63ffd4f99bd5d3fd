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

// Up to four adds of one invocation (terms[c] to word cols[c]; ADD_NONE: none) with no add
// waiting on the one before: the four words loaded, a compare-exchange each issued back to
// back, the losers (another invocation's add, or this one's own to the same word) retried
// together. Components only, no indexed arrays: everything stays in registers. Under the
// DIAG switches the adds go one at a time through `wg_accum_add`.
const ADD_NONE: u32 = 0xffffffffu;

fn wg_accum_add4_each(cols: vec4<u32>, terms: vec4<f32>) {
    for (var c = 0u; c < 4u; c++) {
        if cols[c] != ADD_NONE {
            wg_accum_add(cols[c], terms[c]);
        }
    }
}

fn wg_accum_add4(cols: vec4<u32>, terms: vec4<f32>) {
#ifdef DIAG_SKIP_WG_ADDS
    wg_accum_add4_each(cols, terms);
#else
#ifdef DIAG_PLAIN_WG_ADDS
    wg_accum_add4_each(cols, terms);
#else
    var todo = cols != vec4<u32>(ADD_NONE);
    var old = vec4<u32>(0u);
    if todo.x {
        old.x = atomicLoad(&wg_accum[cols.x]);
    }
    if todo.y {
        old.y = atomicLoad(&wg_accum[cols.y]);
    }
    if todo.z {
        old.z = atomicLoad(&wg_accum[cols.z]);
    }
    if todo.w {
        old.w = atomicLoad(&wg_accum[cols.w]);
    }
    loop {
        let want = bitcast<vec4<u32>>(bitcast<vec4<f32>>(old) + terms);
        if todo.x {
            let r = atomicCompareExchangeWeak(&wg_accum[cols.x], old.x, want.x);
            todo.x = !r.exchanged;
            old.x = r.old_value;
        }
        if todo.y {
            let r = atomicCompareExchangeWeak(&wg_accum[cols.y], old.y, want.y);
            todo.y = !r.exchanged;
            old.y = r.old_value;
        }
        if todo.z {
            let r = atomicCompareExchangeWeak(&wg_accum[cols.z], old.z, want.z);
            todo.z = !r.exchanged;
            old.z = r.old_value;
        }
        if todo.w {
            let r = atomicCompareExchangeWeak(&wg_accum[cols.w], old.w, want.w);
            todo.w = !r.exchanged;
            old.w = r.old_value;
        }
        if !any(todo) {
            break;
        }
    }
#endif
#endif
}

fn wg_accum_load(i: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&wg_accum[i]));
}
