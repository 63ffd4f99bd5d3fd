// Batch-Hogwild! epoch (cuMF_SGD): `workers` virtual subgroups; each draws `batches` random
// starts from its own PCG stream (an LCG of period 2^32, output through pcg_hash) and updates the `batch` consecutive (shuffled) samples from
// each start serially, wrapping at nnz. ≈ nnz updates per epoch in one dispatch. COUNT adds
// one to counters[0] per update (instrumented runs).
#import mf/sgd
#import shared/rng

override WG: u32 = 256u;
override LANES: u32 = 32u;
override PER: u32 = 2u;

struct Params {
    nnz: u32,
    batches: u32,
    batch: u32,
    workers: u32,
    lr: f32,
    lambda: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> samples: array<u32>;
// COHERENT: P and Q bypass per-compute-unit caches, so a worker reads the rows other
// workgroups stored during this dispatch (without it NVIDIA's L1 may serve a stale row for
// the whole dispatch: each SM then trains its own copy of the hot rows).
#ifdef COHERENT
@coherent @group(0) @binding(2) var<storage, read_write> feat_p: array<Word>;
@coherent @group(0) @binding(3) var<storage, read_write> feat_q: array<Word>;
#else
@group(0) @binding(2) var<storage, read_write> feat_p: array<Word>;
@group(0) @binding(3) var<storage, read_write> feat_q: array<Word>;
#endif
@group(0) @binding(4) var<storage, read_write> rng: array<u32>;
#ifdef COUNT
@group(0) @binding(5) var<storage, read_write> counters: array<atomic<u32>>;
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let worker = (wid.y * nwg.x + wid.x) * (WG / LANES) + lid / LANES;
    let live = worker < params.workers;
    var state = 0u;
    if live {
        state = rng[worker];
    }
    for (var b = 0u; b < params.batches; b++) {
        let start = pcg_hash(state) % params.nnz;
        state = pcg_next(state);
        // The batch's samples start, start + 1, … wrap to 0 at nnz (a compare per update
        // rather than an integer division).
        var s = start;
        for (var j = 0u; j < params.batch; j++) {
            sgd_update(s, lid, live, params.lr, params.lambda);
            s += 1u;
            if s == params.nnz {
                s = 0u;
            }
#ifdef COUNT
            if live && lid % LANES == 0u {
                atomicAdd(&counters[0], 1u);
            }
#endif
        }
    }
    if live && lid % LANES == 0u {
        rng[worker] = state;
    }
}
