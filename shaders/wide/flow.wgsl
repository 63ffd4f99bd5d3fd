// The flow engine: Aggregate → Loss → Apply of one chunk of samples per workgroup, the
// Accums kept in workgroup memory between the stages (cuWide's ALA flow).
//
// A dispatch covers the chunks listed in `sched`: one mini-batch in sync mode, one workgroup
// per chunk; in async mode up to the whole epoch, pulled by persistent workgroups (workgroup
// w takes chunks w, w + P, w + 2P … of the P in the grid), so at most about P chunks read
// stale parameters at once and each feature's step is scaled for it (`scale`). Aggregate:
// LANES invocations per sample walk its sample-sorted edges, each lane holding a partial of
// every Accum (the R replicas), reduced by subgroup shuffles. Loss: lane 0 of each sample turns the Accums into (ŷ, ℓ, dℓ/dŷ). Apply: the
// chunk's feature-sorted edges are cut into segments, one per distinct feature; one
// invocation per (segment, parameter) sums the segment's gradient and adds it to global
// memory once (native f32 atomics or CAS): into the mini-batch gradient (sync) or into the
// parameters themselves (ASYNC, as the released kernel, times the feature's scale). PREDICT
// writes (ŷ, ℓ) per sample and applies nothing.
//
// PERSISTENT (sync): one dispatch covers many mini-batches (`sched[2]` chunks each, in
// order) with G persistent workgroups. For each mini-batch they share its chunks (workgroup
// w takes its chunks w, w + G …) adding into the gradient, meet at a grid-wide barrier,
// apply the update to the touched features (each parameter's gradient taken and zeroed by
// one atomic exchange, as `wide/apply`), meet again and go on: exact mini-batch SGD with no
// dispatch per mini-batch. G = 1 needs no grid barrier.
//
// Pieces in their own files: `wide/flow_grid` (PERSISTENT's mini-batch loop and grid
// barrier), `wide/flow_apply` (Apply's work items and the tail sums).
#import wide/model
#import wide/config
#import shared/reduce
#import shared/atomic_f32


override WG: u32 = 256u;
override LANES: u32 = 8u;
// CHUNK · NACC: the Accums of a chunk.
override ACC_WG: u32 = 32u;
// CHUNK = WG / LANES: samples per chunk.
override CHUNK_WG: u32 = 32u;
// The importance cache: parameters of the HOT most frequent features (ids < HOT after
// re-indexing, so the first HOT · NPARAM parameters), copied into workgroup memory at the
// start of each chunk. HOT_WG = max(1, HOT · NPARAM).
override HOT: u32 = 0u;
override HOT_WG: u32 = 1u;
// Async with HOT_LOCAL: the cache is reloaded every HOT_EVERY chunks of a workgroup, which
// adds its own updates of the cached features into it in between.
override HOT_EVERY: u32 = 1u;
// Timing only (DIAG_SKIP_HOT_ADDS, DIAG_SKIP_COLD_ADDS): the feature id splitting hot from
// cold adds; 0: HOT.
override ADD_SPLIT: u32 = 0u;
// Loads in flight per invocation in the copies (COPY_ILP), Aggregate (AGG_ILP) and Apply's
// walk past the edge tile (WALK_ILP).
const ILP: u32 = 8u;
// EDGE_APPLY: features below SEG_HOT (a chunk's first segments: features ascend within a
// chunk) are applied by segments; the others edge by edge, each by the lane that aggregated
// it, with no segment index or feature-sorted edge read (their segments hold ≈ 1 edge).
override SEG_HOT: u32 = 0u;
#ifdef EDGE_APPLY
// The chunk's segments of features below SEG_HOT, written each chunk by one invocation:
// the one at the boundary, or invocation 0 when there are none (workgroup memory starts
// uninitialized: the kernels are built without zero-initialization). The previous chunk's
// reads all passed its Loss barrier.
var<workgroup> seg_hot_wg: u32;
#endif

@group(0) @binding(0) var<uniform> cfg: Config;
// [chunks in this dispatch, samples in its mini-batch, 0, 0, chunk ids …]
@group(0) @binding(1) var<storage, read> sched: array<u32>;
// [row_ptr (N+1) | seg_ptr (chunks+1) | seg_feat (U) | seg_edge (U+1) | labels ±1 as bits (N)]
@group(0) @binding(2) var<storage, read> idx: array<u32>;
#ifdef ONE_HOT
// Every value is 1: the edges hold the feature (sample-sorted) or the slot (feature-sorted)
// alone, half the bytes.
@group(0) @binding(3) var<storage, read> sedge: array<u32>;
@group(0) @binding(4) var<storage, read> fedge: array<u32>;
fn s_edge(e: u32) -> vec2<u32> {
    return vec2<u32>(sedge[e], 0x3f800000u);
}
#ifdef PACKED_SLOTS
// The feature-sorted slots packed SLOT_PER to a word, SLOT_BITS each (16, or 8 with SLOT8):
// edge e in part e mod SLOT_PER of word e / SLOT_PER, low bits first (a slot is below
// CHUNK_WG ≤ 1,024, ≤ 256 with SLOT8).
#ifdef SLOT8
const SLOT_LOG2: u32 = 2u;
#else
const SLOT_LOG2: u32 = 1u;
#endif
const SLOT_PER: u32 = 1u << SLOT_LOG2;
const SLOT_BITS: u32 = 32u >> SLOT_LOG2;
fn packed_slot(w: u32, e: u32) -> u32 {
    return (w >> ((e & (SLOT_PER - 1u)) * SLOT_BITS)) & ((1u << SLOT_BITS) - 1u);
}
fn f_edge(e: u32) -> vec2<u32> {
    return vec2<u32>(packed_slot(fedge[e >> SLOT_LOG2], e), 0x3f800000u);
}
#else
fn f_edge(e: u32) -> vec2<u32> {
    return vec2<u32>(fedge[e], 0x3f800000u);
}
#endif
#else
// Sample-sorted edges: (feature, value bits).
@group(0) @binding(3) var<storage, read> sedge: array<vec2<u32>>;
// Feature-sorted edges of each chunk: (sample slot in the chunk, value bits).
@group(0) @binding(4) var<storage, read> fedge: array<vec2<u32>>;
fn s_edge(e: u32) -> vec2<u32> {
    return sedge[e];
}
fn f_edge(e: u32) -> vec2<u32> {
    return fedge[e];
}
#endif
#ifdef ASYNC
// The parameters, updated in place.
@group(0) @binding(5) var<storage, read_write> accum: array<AtomicF32>;
#ifdef SNAPSHOT_READS
// A copy of the parameters made before this dispatch, bound read-only (a separate buffer:
// nothing is bound twice): every read sees the parameters as the dispatch began, stale by
// at most the dispatch's chunks; updates stay atomic adds into `accum`.
@group(0) @binding(8) var<storage, read> params_snap: array<f32>;
fn param_global(k: u32) -> f32 {
    return params_snap[k];
}
#else
#ifdef PLAIN_READS
// The same buffer bound a second time without atomics: reads are plain loads (they may see
// any recent value, as async reads stale parameters anyway); updates stay atomic adds.
// Bindings 5 and 8 alias one buffer, both writable: Vulkan and wgpu's native backends accept
// that, WebGPU does not (the trainer binds it only on the former). Only 5 is written
// (PLAIN_WRITES: but the cold features' words, which only 8 writes, `param_add`).
#ifdef COHERENT_READS
// … and past the per-compute-unit caches, so a read sees updates made during the dispatch.
@coherent @group(0) @binding(8) var<storage, read_write> params_plain: array<f32>;
#else
@group(0) @binding(8) var<storage, read_write> params_plain: array<f32>;
#endif
fn param_global(k: u32) -> f32 {
    return params_plain[k];
}
#else
fn param_global(k: u32) -> f32 {
    return accum_load(k);
}
#endif
#endif
// Step scale of features 0 .. cfg.scaled, then the bias's.
@group(0) @binding(6) var<storage, read> scale: array<f32>;
fn step_scale(j: u32) -> f32 {
    var s = 1.0;
    if j < cfg.scaled {
        s = scale[j];
    }
    return s;
}
#else
#ifdef PERSISTENT
// The parameters move during the dispatch (every mini-batch's update), so they are bound
// read-write and accessed by atomics alone: loads here, stores by the one invocation that
// takes a parameter's gradient (`take`). Atomics are served at the device's coherence
// point (L2 on NVIDIA), never from a per-compute-unit cache that another workgroup's
// update would leave stale: after a grid barrier every read sees the last update.
@group(0) @binding(5) var<storage, read_write> params_at: array<atomic<u32>>;
fn param_live(k: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&params_at[k]));
}
#ifdef PLAIN_READS
// COHERENT_READS: the parameters bound a second time for plain loads decorated `@coherent`,
// so they too bypass per-compute-unit caches and see the last mini-batch's update after the
// barrier (without the decoration a plain load could be served stale: the host refuses it).
#ifdef COHERENT_READS
@coherent @group(0) @binding(9) var<storage, read_write> params_plain: array<f32>;
#else
@group(0) @binding(9) var<storage, read_write> params_plain: array<f32>;
#endif
fn param_global(k: u32) -> f32 {
    return params_plain[k];
}
#else
fn param_global(k: u32) -> f32 {
    return param_live(k);
}
#endif
// [the grid barrier's word: arrivals in the low 16 bits, the generation above them;
//  mini-batches completed]
@group(0) @binding(8) var<storage, read_write> grid_word: array<atomic<u32>>;
#else
@group(0) @binding(5) var<storage, read> params: array<f32>;
fn param_global(k: u32) -> f32 {
    return params[k];
}
#endif
// The mini-batch gradient (zero between mini-batches: `wide/apply` takes it back to zero);
// PREDICT leaves it alone.
@group(0) @binding(6) var<storage, read_write> accum: array<AtomicF32>;
#endif
// PREDICT: (ŷ, ℓ) per sample. Otherwise the loss sum of each chunk.
@group(0) @binding(7) var<storage, read_write> out: array<f32>;

var<workgroup> acc_wg: array<f32, ACC_WG>;
var<workgroup> hot_wg: array<f32, HOT_WG>;

fn param(j: u32, i: u32) -> f32 {
    if j < HOT {
        return hot_wg[j * NPARAM + i];
    }
    return param_global(j * NPARAM + i);
}

// The chunk's first EDGE_WG feature-sorted edges, copied in coalesced at the start of the
// chunk so Apply's segment loops (up to a chunk's samples long for a hot feature, one
// invocation walking them) read workgroup memory instead of waiting on global loads; edges
// past the tile are read globally. PREDICT has no tile.
override EDGE_WG: u32 = 1024u;
#ifndef PREDICT
#ifdef ONE_HOT
var<workgroup> fedge_wg: array<u32, EDGE_WG>;
#ifdef PACKED_SLOTS
// The tile holds the packed words from the one of the chunk's first edge on: tile edge t is
// edge ef0 + t, in part (ef0 + t) mod SLOT_PER of tile word (tile_phase + t) / SLOT_PER,
// tile_phase = ef0 mod SLOT_PER. Set per chunk.
var<private> tile_phase: u32;
fn f_edge_tile(t: u32) -> vec2<u32> {
    let h = tile_phase + t;
    return vec2<u32>(packed_slot(fedge_wg[h >> SLOT_LOG2], h), 0x3f800000u);
}
#else
fn f_edge_tile(t: u32) -> vec2<u32> {
    return vec2<u32>(fedge_wg[t], 0x3f800000u);
}
#endif
// One slot word per edge (PACKED_SLOTS' tile copy moves the packed words itself and never
// calls these).
fn f_edge_fill(t: u32, e: u32) {
    fedge_wg[t] = fedge[e];
}
fn f_edge_store(t: u32, v: vec2<u32>) {
    fedge_wg[t] = v.x;
}
#else
var<workgroup> fedge_wg: array<vec2<u32>, EDGE_WG>;
fn f_edge_tile(t: u32) -> vec2<u32> {
    return fedge_wg[t];
}
fn f_edge_fill(t: u32, e: u32) {
    fedge_wg[t] = fedge[e];
}
fn f_edge_store(t: u32, v: vec2<u32>) {
    fedge_wg[t] = v;
}
#endif
#endif

var<workgroup> dl_wg: array<f32, CHUNK_WG>;
var<workgroup> loss_wg: array<f32, CHUNK_WG>;

fn acc(s: u32, a: u32) -> f32 {
    return acc_wg[s * NACC + a];
}

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
#ifdef ASYNC
    let groups = nwg.x * nwg.y;
    var k = 0u;
    for (var w = wid.y * nwg.x + wid.x; w < sched[0]; w += groups) {
#ifdef HOT_LOCAL
        run_chunk(sched[4u + w], lid, k % HOT_EVERY == 0u, sched_inv_b());
#else
        run_chunk(sched[4u + w], lid, true, sched_inv_b());
#endif
        k++;
        // The next chunk overwrites the workgroup arrays and reads this one's updates.
        // NO_FENCE: no wait for those updates (a device-scope fence: every global add of the
        // chunk acknowledged); the next chunk may read parameters before they land, as it
        // reads other workgroups' updates late.
#ifndef NO_FENCE
        storageBarrier();
#endif
        workgroupBarrier();
    }
#else
#ifdef PERSISTENT
    persistent_sync(lid, wid.y * nwg.x + wid.x, nwg.x * nwg.y);
#else
    let w = wid.y * nwg.x + wid.x;
    if w < sched[0] {
        run_chunk(sched[4u + w], lid, true, sched_inv_b());
    }
#endif
#endif
}

// 1/B of the dispatch's mini-batch (sync: sched[1] = B), or the configured 1/batch (async:
// sched[1] = 0).
fn sched_inv_b() -> f32 {
    return select(cfg.inv_batch, 1.0 / f32(sched[1]), sched[1] > 0u);
}

#import wide/flow_grid

// The importance cache's copy from global memory.
fn hot_copy(lid: u32) {
    let len = HOT * NPARAM;
#ifdef COPY_ILP
    // ILP loads in flight (clamped into range), then their stores.
    for (var t = lid; t < len; t += ILP * WG) {
        var v: array<f32, ILP>;
        for (var u = 0u; u < ILP; u++) {
            v[u] = param_global(min(t + u * WG, len - 1u));
        }
        for (var u = 0u; u < ILP; u++) {
            if t + u * WG < len {
                hot_wg[t + u * WG] = v[u];
            }
        }
    }
#else
    for (var t = lid; t < len; t += WG) {
        hot_wg[t] = param_global(t);
    }
#endif
}

#ifndef PREDICT
// The edge tile's copy of feature-sorted edges ef0 .. ef0 + tile.
fn tile_copy(lid: u32, ef0: u32, tile: u32) {
#ifdef ONE_HOT
#ifdef PACKED_SLOTS
    // The packed words holding those edges (at most EDGE_WG: tile ≤ SLOT_PER · EDGE_WG −
    // SLOT_PER + 1), copied as they are.
    tile_phase = ef0 & (SLOT_PER - 1u);
    let w0 = ef0 >> SLOT_LOG2;
    let words = (tile_phase + tile + SLOT_PER - 1u) >> SLOT_LOG2;
    for (var t = lid; t < words; t += WG) {
        fedge_wg[t] = fedge[w0 + t];
    }
    return;
#endif
#endif
#ifdef COPY_ILP
    for (var t = lid; t < tile; t += ILP * WG) {
        var v: array<vec2<u32>, ILP>;
        for (var u = 0u; u < ILP; u++) {
            v[u] = f_edge(ef0 + min(t + u * WG, tile - 1u));
        }
        for (var u = 0u; u < ILP; u++) {
            if t + u * WG < tile {
                f_edge_store(t + u * WG, v[u]);
            }
        }
    }
#else
    for (var t = lid; t < tile; t += WG) {
        f_edge_fill(t, ef0 + t);
    }
#endif
}
#endif

// Aggregate, Loss and Apply of chunk `c` by the whole workgroup, dℓ/dŷ scaled by `inv_b`
// (1/B of its mini-batch); `fresh`: load the importance cache (always, but with HOT_LOCAL
// every HOT_EVERY chunks).
fn run_chunk(c: u32, lid: u32, fresh: bool, inv_b: f32) {
    let s0 = c * cfg.chunk;
    let n = min(cfg.chunk, cfg.n_samples - s0);
    let slot = lid / LANES;
    let lane = lid % LANES;
#ifndef DIAG_NO_HOT_COPY
    if fresh {
        hot_copy(lid);
    }
#endif
#ifndef PREDICT
    let g0 = idx[cfg.seg_ptr_off + c];
    let g1 = idx[cfg.seg_ptr_off + c + 1u];
    let ef0 = idx[cfg.seg_edge_off + g0];
#ifdef EDGE_APPLY
    // Whole segments (no max_segment), features ascending and distinct: at most SEG_HOT of
    // them have features below it, the first ones; the last of those records the count.
    let seg_scan = min(g1 - g0, SEG_HOT);
    if lid == 0u && (seg_scan == 0u || idx[cfg.seg_feat_off + g0] >= SEG_HOT) {
        seg_hot_wg = 0u;
    }
    for (var t = lid; t < seg_scan; t += WG) {
        if idx[cfg.seg_feat_off + g0 + t] < SEG_HOT
            && (t + 1u == seg_scan || idx[cfg.seg_feat_off + g0 + t + 1u] >= SEG_HOT) {
            seg_hot_wg = t + 1u;
        }
    }
    let g_seg = g0 + workgroupUniformLoad(&seg_hot_wg);
#else
    let g_seg = g1;
#endif
#ifdef DIAG_NO_TILE
    let tile = 0u;
#else
    // Edges the tile holds: EDGE_WG words of one edge each, or SLOT_PER with PACKED_SLOTS
    // (less SLOT_PER − 1 for a chunk that starts past a word's first part).
    var tile_cap = EDGE_WG;
#ifdef ONE_HOT
#ifdef PACKED_SLOTS
    tile_cap = SLOT_PER * EDGE_WG - (SLOT_PER - 1u);
#endif
#endif
    // Only the segments' edges (EDGE_APPLY: of the features below SEG_HOT).
    let tile = min(idx[cfg.seg_edge_off + g_seg] - ef0, tile_cap);
#endif
    tile_copy(lid, ef0, tile);
#endif
    workgroupBarrier();

    // Aggregate.
    var a: array<f32, NACC>;
    for (var i = 0u; i < NACC; i++) {
        a[i] = 0.0;
    }
#ifndef DIAG_SKIP_AGGREGATE
    if slot < n {
        let e1 = idx[cfg.row_off + s0 + slot + 1u];
#ifdef AGG_ILP
        // ILP of the lane's edges loaded (clamped into range) before their parameters.
        for (var e = idx[cfg.row_off + s0 + slot] + lane; e < e1; e += ILP * LANES) {
            var f: array<vec2<u32>, ILP>;
            for (var u = 0u; u < ILP; u++) {
                f[u] = s_edge(min(e + u * LANES, e1 - 1u));
            }
            for (var u = 0u; u < ILP; u++) {
                if e + u * LANES < e1 {
                    ala_aggregate(&a, f[u].x, bitcast<f32>(f[u].y));
                }
            }
        }
#else
        for (var e = idx[cfg.row_off + s0 + slot] + lane; e < e1; e += LANES) {
            let edge = s_edge(e);
            ala_aggregate(&a, edge.x, bitcast<f32>(edge.y));
        }
#endif
    }
#endif
    for (var i = 0u; i < NACC; i++) {
        a[i] = vsg_sum(a[i], LANES, lid);
    }

    // Loss.
    if lane == 0u {
        var dl = 0.0;
        var l = 0.0;
        if slot < n {
            let s = s0 + slot;
            let y = bitcast<f32>(idx[cfg.label_off + s]);
            let r = ala_loss(&a, param_bias(), y);
            dl = r.z * inv_b;
            l = r.y;
            for (var i = 0u; i < NACC; i++) {
                acc_wg[slot * NACC + i] = a[i];
            }
#ifdef PREDICT
            out[2u * s] = r.x;
            out[2u * s + 1u] = r.y;
#endif
        }
        dl_wg[slot] = dl;
        loss_wg[slot] = l;
    }
    workgroupBarrier();

#ifndef PREDICT
    // Apply: one global add per (distinct feature of the chunk, parameter).
#ifdef ASYNC
    let step = -cfg.lr;
#else
    let step = 1.0;
#endif
#ifdef DIAG_SKIP_APPLY
    let work = 0u;
#else
    let work = (g_seg - g0) * NPARAM;
#endif
#ifdef APPLY_WHOLE
    // One invocation per segment, all its parameters (the segment's edges walked once).
    let segs = select(0u, g_seg - g0, work > 0u);
    for (var t = lid; t < segs; t += WG) {
        let g = g0 + t;
        let j = idx[cfg.seg_feat_off + g];
        let e = vec2<u32>(idx[cfg.seg_edge_off + g], idx[cfg.seg_edge_off + g + 1u]);
        apply_segment(j, e, vec2<u32>(ef0, tile), inv_b, item_step(step, j));
    }
#else
#ifdef APPLY_ILP
    // APPLY_ILP work items per invocation at once: their segments' bounds, features and
    // step scales loaded together (indices clamped into range), then their sums.
    for (var t0 = lid; t0 < work; t0 += APPLY_ILP_N * WG) {
        var js: array<u32, APPLY_ILP_N>;
        var e0s: array<u32, APPLY_ILP_N>;
        var e1s: array<u32, APPLY_ILP_N>;
        for (var u = 0u; u < APPLY_ILP_N; u++) {
            let g = g0 + min(t0 + u * WG, work - 1u) / NPARAM;
            js[u] = idx[cfg.seg_feat_off + g];
            e0s[u] = idx[cfg.seg_edge_off + g];
            e1s[u] = idx[cfg.seg_edge_off + g + 1u];
        }
        var fs: array<f32, APPLY_ILP_N>;
        for (var u = 0u; u < APPLY_ILP_N; u++) {
            fs[u] = item_step(step, js[u]);
        }
        for (var u = 0u; u < APPLY_ILP_N; u++) {
            let t = t0 + u * WG;
            if t < work {
                apply_item(js[u], t % NPARAM, vec2<u32>(e0s[u], e1s[u]), vec2<u32>(ef0, tile), inv_b, fs[u]);
            }
        }
    }
#else
    for (var t = lid; t < work; t += WG) {
        let g = g0 + t / NPARAM;
        let j = idx[cfg.seg_feat_off + g];
        let e = vec2<u32>(idx[cfg.seg_edge_off + g], idx[cfg.seg_edge_off + g + 1u]);
        apply_item(j, t % NPARAM, e, vec2<u32>(ef0, tile), inv_b, item_step(step, j));
    }
#endif
#endif
#ifdef EDGE_APPLY
#ifndef DIAG_SKIP_APPLY
    // The features from SEG_HOT on, edge by edge (the sample's edges read again, now in
    // cache), one global add per (edge, parameter). Fewer parameters per feature than lanes
    // (LR): each lane its own edges of Aggregate. Otherwise (FM) every lane walks the
    // sample's edges and takes parameters lane, lane + LANES …, so a subgroup's adds fall on
    // a few features' consecutive parameters (few cache sectors), as Apply's work items do.
    if slot < n {
        let dl = dl_wg[slot];
        let e1 = idx[cfg.row_off + s0 + slot + 1u];
        var e = idx[cfg.row_off + s0 + slot];
        var de = 1u;
        var ip = vec2<u32>(lane, LANES);
        if NPARAM < LANES {
            e += lane;
            de = LANES;
            ip = vec2<u32>(0u, 1u);
        }
        for (; e < e1; e += de) {
            let edge = s_edge(e);
            if edge.x >= SEG_HOT {
                apply_edge(slot, edge.x, bitcast<f32>(edge.y), dl, inv_b, item_step(step, edge.x), ip);
            }
        }
    }
#endif
#endif
#ifdef DIAG_SKIP_TAIL
    if lid == 0u {
        out[c] = 0.0;
    }
#else
#ifdef TAIL_SPREAD
    // The bias's sum on the last invocation, the loss's on the one before (both on 0 when
    // the workgroup is one invocation), four partial sums each.
    let tail_bias = WG - 1u;
    let tail_loss = select(WG - 2u, 0u, WG < 2u);
    if lid == tail_bias {
        accum_add(cfg.bias_index, step * bias_scale() * tail_sum(n, true));
    }
    if lid == tail_loss {
        out[c] = tail_sum(n, false);
    }
#else
    if lid == 0u {
        var db = 0.0;
        var l = 0.0;
        for (var s = 0u; s < n; s++) {
            db += dl_wg[s];
            l += loss_wg[s];
        }
        accum_add(cfg.bias_index, step * bias_scale() * db);
        out[c] = l;
    }
#endif
#endif
#endif
}

#import wide/flow_apply

fn param_bias() -> f32 {
    return param_global(cfg.bias_index);
}
