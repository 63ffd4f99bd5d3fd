// Wavefront epoch (cuMF_SGD's block scheme): the ratings form a grid of `workers` row blocks
// × `cols` column blocks (block (w, c) holds offsets[w·cols + c] .. offsets[w·cols + c + 1]).
// Workgroup w is worker w: STREAMS virtual subgroups (WG = LANES · STREAMS). With one stream
// the worker updates a block's samples serially, as the paper's warp does; with more, its
// streams share the block Hogwild!-style (races only among the worker's own streams). Each epoch it shuffles its own
// column order with its PCG state, then visits every column once: it enters a column block
// only after taking that column's lock (atomic compare-exchange 0 → 1 on locks[c]), updates
// the block's samples serially and releases the lock, so no two workers are ever inside one
// column block and updates of one q_v never race. Where the paper's worker waits for the next
// column of its order, this one takes the first free column among those it has not visited
// (its order otherwise kept): it waits only when all of them are held.
//
// CHECK instruments the schedule: check[c] counts the workers inside column c (a worker that
// finds it non-zero on entry adds one to check[cols], the violations), check[cols + 1] counts
// block entries.
#import mf/sgd
#import shared/rng

override LANES: u32 = 32u;
override PER: u32 = 2u;
override STREAMS: u32 = 1u;
override WG: u32 = LANES * STREAMS;

struct Params {
    workers: u32,
    cols: u32,
    lr: f32,
    lambda: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> samples: array<u32>;
// COHERENT: P and Q bypass per-compute-unit caches, so a worker reads the rows other
// workgroups stored during this dispatch (without it NVIDIA's L1 may serve a stale row for
// the whole dispatch: each SM then trains its own copy of the hot rows).
#ifdef COHERENT
@coherent @group(0) @binding(2) var<storage, read_write> feat_p: array<VWord>;
@coherent @group(0) @binding(3) var<storage, read_write> feat_q: array<VWord>;
#else
@group(0) @binding(2) var<storage, read_write> feat_p: array<VWord>;
@group(0) @binding(3) var<storage, read_write> feat_q: array<VWord>;
#endif
@group(0) @binding(4) var<storage, read_write> rng: array<u32>;
@group(0) @binding(5) var<storage, read> offsets: array<u32>;
@group(0) @binding(6) var<storage, read_write> order: array<u32>;
@group(0) @binding(7) var<storage, read_write> locks: array<atomic<u32>>;
#ifdef CHECK
@group(0) @binding(8) var<storage, read_write> check: array<atomic<u32>>;
#endif

const NONE: u32 = 0xffffffffu;

var<workgroup> wg_first: u32;
var<workgroup> wg_count: u32;
var<workgroup> wg_col: u32;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let worker = wid.y * nwg.x + wid.x;
    if worker >= params.workers {
        return;
    }
    let cols = params.cols;
    let base = worker * cols;
    let stream = lid / LANES;
    if lid == 0u {
        var state = rng[worker];
        for (var c = 0u; c < cols; c++) {
            order[base + c] = c;
        }
        for (var c = cols - 1u; c > 0u; c--) {
            let j = pcg_hash(state) % (c + 1u);
            state = pcg_next(state);
            let t = order[base + c];
            order[base + c] = order[base + j];
            order[base + j] = t;
        }
        rng[worker] = state;
    }
    // Every lane reads the order lane 0 wrote.
    storageBarrier();
    workgroupBarrier();
    // order[base .. base + remaining) holds the columns not yet visited this epoch, in this
    // worker's random order. Lane 0 takes the first of them whose lock is free (compare-
    // exchange 0 → 1) and moves the last unvisited column into its slot; the whole workgroup
    // spins (uniform control flow, a barrier per try) only while every unvisited column is
    // held. A worker holds at most one lock and never waits while holding one, so this
    // cannot deadlock.
    var remaining = cols;
    loop {
        if remaining == 0u {
            break;
        }
        if lid == 0u {
            var got = NONE;
            for (var i = 0u; i < remaining; i++) {
                let c = order[base + i];
                if atomicCompareExchangeWeak(&locks[c], 0u, 1u).exchanged {
                    got = c;
                    order[base + i] = order[base + remaining - 1u];
                    break;
                }
            }
            wg_col = got;
            if got != NONE {
#ifdef CHECK
                if atomicAdd(&check[got], 1u) != 0u {
                    atomicAdd(&check[cols], 1u);
                }
                atomicAdd(&check[cols + 1u], 1u);
#endif
                wg_first = offsets[base + got];
                wg_count = offsets[base + got + 1u] - offsets[base + got];
            }
        }
        let want = workgroupUniformLoad(&wg_col);
        if want == NONE {
            continue;
        }
        remaining -= 1u;
        let first = workgroupUniformLoad(&wg_first);
        let count = workgroupUniformLoad(&wg_count);
        // The worker's STREAMS virtual subgroups deal the block's samples round-robin: each
        // takes every STREAMS-th in order. Every stream makes the same number of rounds (the
        // workgroup-memory reduction needs uniform control flow); past the block's end a
        // stream reloads its last sample and stores nothing.
        let rounds = (count + STREAMS - 1u) / STREAMS;
        for (var j = 0u; j < rounds; j++) {
            let k = j * STREAMS + stream;
            sgd_update(first + min(k, count - 1u), lid, k < count, params.lr, params.lambda);
        }
        // This worker's stores to the block's rows happen before the release.
        storageBarrier();
        workgroupBarrier();
        if lid == 0u {
#ifdef CHECK
            atomicSub(&check[want], 1u);
#endif
            atomicStore(&locks[want], 0u);
        }
    }
}
