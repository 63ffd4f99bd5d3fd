// The one-dispatch ending of the fused kernels with FINISH (fused/sorted, fused/sparse): after
// a workgroup has flushed its copy of w into `accum` (the plan's accumulator, all zero before
// the dispatch), it counts itself done; the last of the `groups` workgroups writes
// w = β·z + accum (β = 0 never reads z), taking accum back to zero, and zeroes the counter, so
// the next dispatch finds both zero. The importing kernel declares `accum` (AtomicF32),
// `counter` (array<atomic<u32>>), `z`, `w`, `finish_last` (workgroup u32), `params.n`,
// `params.beta` and the override WG; must be called in workgroup-uniform control flow.
//
// Why it is sound: storageBarrier() is a control barrier with device-scope acquire-release
// semantics over storage memory (naga's SPIR-V), so every workgroup's flush (atomic adds)
// happens before its count, and the last counter's reads after its second barrier see all
// of them; accum is only touched by atomics, which no per-unit cache serves stale.
fn finish(tid: u32, groups: u32) {
    storageBarrier();
    if tid == 0u {
        finish_last = u32(atomicAdd(&counter[0], 1u) == groups - 1u);
    }
    if workgroupUniformLoad(&finish_last) == 0u {
        return;
    }
    storageBarrier();
    for (var i = tid; i < params.n; i += WG) {
#ifdef F32_ATOMIC
        let t = atomicExchange(&accum[i], 0.0);
#else
        let t = bitcast<f32>(atomicExchange(&accum[i], 0u));
#endif
        var r = t;
        if params.beta != 0.0 {
            r = params.beta * z[i] + t;
        }
        w[i] = r;
    }
    if tid == 0u {
        atomicStore(&counter[0], 0u);
    }
}
