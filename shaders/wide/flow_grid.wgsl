// The flow engine's PERSISTENT sync mode (`wide/flow`): many mini-batches in one dispatch,
// the G persistent workgroups meeting at a grid-wide barrier between each mini-batch's
// gradient and its update. The importing kernel declares `cfg`, `sched`, `idx`, `accum`
// (AtomicF32), `params_at` and `param_live`, `grid_word`, `run_chunk`, NPARAM and the
// override WG.
#ifdef PERSISTENT
#ifndef ASYNC
// The mini-batches of the dispatch, one after another: chunks c0 .. c0 + sched[2] of the
// schedule (fewer in the last), shared by the G workgroups; gradient, barrier, update,
// barrier. Every workgroup runs every mini-batch's loop, so all meet at every barrier.
fn persistent_sync(lid: u32, w: u32, groups: u32) {
    let count = sched[0];
    let per = max(sched[2], 1u);
    for (var c0 = 0u; c0 < count; c0 += per) {
        let c1 = min(c0 + per, count);
        // B: the mini-batch's samples (only a part's last chunk may be short).
        var b = 0u;
        for (var i = c0; i < c1; i++) {
            b += min(cfg.chunk, cfg.n_samples - sched[4u + i] * cfg.chunk);
        }
        let inv_b = 1.0 / f32(max(b, 1u));
        for (var i = c0 + w; i < c1; i += groups) {
            run_chunk(sched[4u + i], lid, true, inv_b);
            // The next chunk overwrites the workgroup arrays.
            workgroupBarrier();
        }
        grid_sync(lid, groups);
        for (var i = c0 + w; i < c1; i += groups) {
            let c = sched[4u + i];
            let g0 = idx[cfg.seg_ptr_off + c];
            let work = (idx[cfg.seg_ptr_off + c + 1u] - g0) * NPARAM;
            for (var t = lid; t < work; t += WG) {
                let j = idx[cfg.seg_feat_off + g0 + t / NPARAM];
                take(j * NPARAM + t % NPARAM);
            }
        }
        if w == 0u && lid == 0u {
            take(cfg.bias_index);
        }
        grid_sync(lid, groups);
        // Mini-batches completed, which the host checks: a device that ends long loops
        // early (llvmpipe caps a shader invocation's loop iterations) must not pass for one
        // that trained.
        if w == 0u && lid == 0u {
            atomicAdd(&grid_word[1], 1u);
        }
    }
}

// θ_i −= lr · g_i, the gradient taken back to zero. A feature shared by several chunks (or
// segment pieces) of the mini-batch is listed once per chunk; the exchange hands its whole
// gradient to the first invocation that reaches it and zero to the others, so it moves
// once, and nobody reads or adds to it until the next barrier.
fn take(i: u32) {
#ifdef F32_ATOMIC
    let g = atomicExchange(&accum[i], 0.0);
#else
    let g = bitcast<f32>(atomicExchange(&accum[i], 0u));
#endif
    if g != 0.0 {
        atomicStore(&params_at[i], bitcast<u32>(param_live(i) - cfg.lr * g));
    }
}

// Every workgroup of the grid waits here until all `groups` have arrived; their storage
// writes before it (gradient adds, parameter stores) are visible to the reads after it.
// Needs all `groups` workgroups resident at once (the host sizes G so, and refuses G > 1
// where co-scheduling is not assured); G = 1 is a workgroup barrier alone.
//
// Why it is sound: storageBarrier() is a control barrier with device-scope acquire-release
// semantics over storage memory; the one before the arrival releases the workgroup's
// writes, the one after the wait acquires the others'. Arrival and generation share one
// atomic word, so the relaxed atomics on it are totally ordered: the last arrival's single
// add (2^16 − G) empties the count and advances the generation at once, and an early
// arrival at the next barrier (whose add follows in that order) never meets a stale count.
// The data themselves are only touched by atomics (gradient adds and exchanges, parameter
// loads and stores; with COHERENT_READS the parameter reads are `@coherent` plain loads),
// which no per-compute-unit cache serves stale, so the barrier does not rest on the
// fences alone. The generation is 16 bits and only compared for change: it moves at most
// once while a workgroup waits.
fn grid_sync(lid: u32, groups: u32) {
    storageBarrier();
    workgroupBarrier();
    if groups > 1u {
        if lid == 0u {
            let old = atomicAdd(&grid_word[0], 1u);
            if (old & 0xffffu) == groups - 1u {
                atomicAdd(&grid_word[0], 0x10000u - groups);
            } else {
                let generation = old >> 16u;
                loop {
                    if (atomicLoad(&grid_word[0]) >> 16u) != generation {
                        break;
                    }
                }
            }
        }
        workgroupBarrier();
        storageBarrier();
    }
}
#endif
#endif
