// Batch-Hogwild! epoch (cuMF_SGD): `workers` virtual subgroups; each draws `batches` random
// starts from its own PCG stream (an LCG of period 2^32, output through pcg_hash) and updates the `batch` consecutive (shuffled) samples from
// each start serially, wrapping at nnz. ≈ nnz updates per epoch in one dispatch. COUNT adds
// one to counters[0] per update (instrumented runs).
//
// ILP > 1: a worker takes ILP consecutive samples of its batch at a time (sgd_group): when no
// two of them share a row of P or of Q, every row load of the group is issued before the
// first dot product, which exactly equals updating them one after another (the rows are
// disjoint); when two share a row they are updated one after another. Each update's chain
// (sample → rows → sum → stores) is latency-bound; ILP chains in flight per worker hide it.
//
// STAGE (subgroup shuffles, LANES ≥ ILP): a worker's lanes load its samples LANES at a time,
// lane t the sample at batch position c·LANES + t, one chunk ahead of use (coalesced, and off
// the update chain but for a batch's first chunk); each update takes its sample from the
// owning lane by a shuffle.
//
// VEC2/VEC4 (mf/vec): a lane loads and stores VEC adjacent words of a row as one access; the
// rows' layout in memory is unchanged.
#import mf/sgd
#import shared/rng

override WG: u32 = 256u;
override LANES: u32 = 32u;
override PER: u32 = 2u;
override ILP: u32 = 1u;

const MAX_ILP: u32 = 4u;

#ifdef STAGE
// This lane's sample (u, v, bits of r) of the worker's current chunk and of the next one.
var<private> chunk: vec3<u32>;
var<private> chunk_next: vec3<u32>;
// The first subgroup lane of this worker's LANES lanes, and this lane's offset from it.
var<private> vsg_base: u32;
var<private> stage_lane: u32;
#endif

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
// the whole dispatch: each SM then trains its own copy of the hot rows). P_CACHED (with
// COHERENT): only Q is `@coherent`, P's loads may be served by the compute unit's cache (a
// measurement: rows of P are many and each is rarely in two workers' hands at once).
#ifdef COHERENT
#ifdef P_CACHED
@group(0) @binding(2) var<storage, read_write> feat_p: array<VWord>;
#else
@coherent @group(0) @binding(2) var<storage, read_write> feat_p: array<VWord>;
#endif
@coherent @group(0) @binding(3) var<storage, read_write> feat_q: array<VWord>;
#else
@group(0) @binding(2) var<storage, read_write> feat_p: array<VWord>;
@group(0) @binding(3) var<storage, read_write> feat_q: array<VWord>;
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
#ifdef STAGE
    @builtin(subgroup_invocation_id) sg_lane: u32,
#endif
) {
#ifdef STAGE
    vsg_base = sg_lane & ~(LANES - 1u);
    stage_lane = sg_lane & (LANES - 1u);
#endif
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
#ifdef STAGE
        let staged = true;
        chunk_next = stage_load(s);
#else
        let staged = false;
#endif
        if ILP == 1u && !staged {
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
        } else {
            for (var j = 0u; j < params.batch; j += ILP) {
                let count = min(ILP, params.batch - j);
#ifdef STAGE
                // A new chunk at every LANES positions (ILP divides LANES: groups never
                // straddle two); the one after it is loaded now.
                if j % LANES == 0u {
                    chunk = chunk_next;
                    var ahead = s + LANES;
                    if ahead >= params.nnz {
                        ahead %= params.nnz;
                    }
                    chunk_next = stage_load(ahead);
                }
#endif
                sgd_group(s, j, count, lid, live, params.lr, params.lambda);
                // A band may hold fewer samples than a group: reduce only when past the end.
                s += count;
                if s >= params.nnz {
                    s %= params.nnz;
                }
#ifdef COUNT
                if live && lid % LANES == 0u {
                    atomicAdd(&counters[0], count);
                }
#endif
            }
        }
    }
    if live && lid % LANES == 0u {
        rng[worker] = state;
    }
}

// The updates of the `count` ≤ ILP consecutive samples from `s0` (wrapping at nnz), equal to
// sgd_update on each in turn. Phase a reduces and stores slot a; the rows of slot b are loaded
// in phase 0 (no two slots share a row: every load in flight at once) or in phase b (serial:
// after slot b − 1's stores, which this lane made to the very words it loads). Every phase
// runs one vsg_sum whatever the samples, so control flow stays workgroup-uniform; idle slots
// (b ≥ count) load and store nothing and sum zero. Constant loop bounds (ILP, PER) keep the
// register arrays statically indexed once unrolled. Word i of a lane's share is word
// i % VEC of its vector word i / VEC (mf/vec).
fn sgd_group(s0: u32, pos: u32, count: u32, lid: u32, live: bool, lr: f32, lambda: f32) {
    let lane = lid % LANES;
    let vwords = LANES * PER / VEC;
    var u: array<u32, MAX_ILP>;
    var v: array<u32, MAX_ILP>;
    var r: array<f32, MAX_ILP>;
#ifdef STAGE
    // Position pos + a of the batch: lane (pos + a) % LANES of the current chunk.
    for (var a = 0u; a < ILP; a++) {
        let x = subgroupShuffle(chunk, vsg_base | ((pos + a) % LANES));
        u[a] = x.x;
        v[a] = x.y;
        r[a] = bitcast<f32>(x.z);
    }
#else
    var s = s0;
    for (var a = 0u; a < ILP; a++) {
        if a < count {
            u[a] = samples[3u * s];
            v[a] = samples[3u * s + 1u];
            r[a] = bitcast<f32>(samples[3u * s + 2u]);
        }
        s += 1u;
        if s == params.nnz {
            s = 0u;
        }
    }
#endif
    var serial = false;
    for (var a = 1u; a < ILP; a++) {
        for (var b = 0u; b < a; b++) {
            serial = serial || (a < count && (u[a] == u[b] || v[a] == v[b]));
        }
    }
    var pv: array<array<vec2<f32>, MAX_PER>, MAX_ILP>;
    var qv: array<array<vec2<f32>, MAX_PER>, MAX_ILP>;
    var part: array<f32, MAX_ILP>;
    for (var a = 0u; a < ILP; a++) {
        for (var b = 0u; b < ILP; b++) {
            if b < count && select(a == 0u, a == b, serial) {
                let pb = u[b] * vwords + lane;
                let qb = v[b] * vwords + lane;
                var acc = 0.0;
                for (var j = 0u; j < PER / VEC; j++) {
                    let wp = feat_p[pb + j * LANES];
                    let wq = feat_q[qb + j * LANES];
                    for (var c = 0u; c < VEC; c++) {
                        let i = j * VEC + c;
                        pv[b][i] = vword_get(wp, c);
                        qv[b][i] = vword_get(wq, c);
                        acc += dot(pv[b][i], qv[b][i]);
                    }
                }
                part[b] = acc;
            }
        }
        let e = r[a] - vsg_sum(part[a], LANES, lid);
        if live && a < count {
            let pb = u[a] * vwords + lane;
            let qb = v[a] * vwords + lane;
            for (var j = 0u; j < PER / VEC; j++) {
                var wp: VWord;
                var wq: VWord;
                for (var c = 0u; c < VEC; c++) {
                    let p = pv[a][j * VEC + c];
                    let q = qv[a][j * VEC + c];
                    vword_set(&wp, c, p + lr * (e * q - lambda * p));
                    vword_set(&wq, c, q + lr * (e * p - lambda * q));
                }
                feat_p[pb + j * LANES] = wp;
                feat_q[qb + j * LANES] = wq;
            }
        }
    }
}

#ifdef STAGE
// This lane's sample of the chunk whose first position is sample `s`: sample s + lane,
// wrapped at nnz (a band may hold fewer samples than LANES).
fn stage_load(s: u32) -> vec3<u32> {
    var i = s + stage_lane;
    if i >= params.nnz {
        i %= params.nnz;
    }
    return vec3(samples[3u * i], samples[3u * i + 1u], samples[3u * i + 2u]);
}
#endif
