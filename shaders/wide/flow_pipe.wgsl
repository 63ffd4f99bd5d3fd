// The pipelined flow kernel (PIPE, training only): the same Aggregate → Loss → Apply per
// chunk as `run_chunk` in `wide/flow`, with a shorter chain of dependent memory latencies per
// chunk, for the persistent workgroups of async mode (sync runs it once per workgroup):
// - the next chunk's metadata (its id, segment and edge ranges, this invocation's row range
//   and label) and the first round of its sample-sorted edges are loaded before this
//   chunk's Apply, so their latency hides behind the Apply;
// - Aggregate has up to PIPE_U edges per lane loaded before it gathers their parameters, and
//   the loads are branch-free (an edge past the row reads the row's last edge with value 0), so
//   the loads of one round are in flight together; Apply loads the segment metadata of up
//   to PIPE_U (segment, parameter) items, and their parameters when a feature has several
//   (FM's Apply reads θ_ji), before it walks them;
// - the edge tile, the Accums and dℓ/dŷ are double-buffered (chunk parity; the host sizes
//   EDGE_WG, ACC_WG and CHUNK_WG for two buffers), so one barrier per chunk suffices: chunk
//   i + 1's Loss writes the other buffer while slower invocations still run chunk i's Apply,
//   and the buffer of chunk i is written again only after the barrier of chunk i + 1, which
//   every invocation passes after its Apply of chunk i. No storageBarrier (but with a single
//   workgroup): the updates are atomics, and async steps read whatever parameters are
//   there, as other workgroups' updates race with them anyway (Hogwild-like);
// - with the importance cache on (HOT > 0) its refill needs two barriers more per chunk.
// Within each lane Aggregate sums the same edges in the same order as `run_chunk`, and each
// Apply item sums its segment in the same order, so sync mode gives the same result.
#ifndef PREDICT
const PIPE_U: u32 = 8u;

// Features ≥ SPLIT (the host keeps it ≥ the step-scaled features, so their step is whole)
// skip the segments: each lane adds its own edges' gradients straight after the Loss, from
// the sample's dℓ/dŷ in registers, one atomic per (edge, parameter); only the hotter
// features' segments run through Apply. The default leaves every feature to the segments.
// In async mode a per-edge read of θ (FM's v_jf, the L2 term) may see the update of another
// sample of the same chunk (Hogwild inside the chunk); sync mode reads the fixed θ.
override SPLIT: u32 = 0xffffffffu;

// With the importance cache on: the cached (hot) features' updates and the bias's are kept
// per workgroup for FLUSH_EVERY chunks (local SGD on the cached copy, `hot_delta` holding
// what is not yet global) and added to global memory once per FLUSH_EVERY chunks, when the
// cache is refilled from global; same-address global atomics on the hottest features and the
// bias fall FLUSH_EVERY-fold. 1: every chunk adds and refills (the host keeps SPLIT ≥ HOT and
// scales the steps for FLUSH_EVERY times the chunks in flight).
override FLUSH_EVERY: u32 = 1u;
var<workgroup> hot_delta: array<f32, HOT_WG>;
// The bias's pending delta, for the workgroup's reads of the bias (local SGD).
var<workgroup> bias_wg_pending: f32;

// Adds the workgroup's pending hot-feature deltas to global memory (uniform control flow).
fn flush_hot(lid: u32) {
    for (var t = lid; t < HOT * NPARAM; t += WG) {
        let d = hot_delta[t];
        hot_delta[t] = 0.0;
        if d != 0.0 {
            accum_add(t, d);
        }
    }
}

// What a chunk needs before its Aggregate: its id, segment range and feature-sorted edge
// range, this invocation's sample row range and label, and the first PIPE_U of the lane's
// sample-sorted edges (Aggregate's first round).
struct PipeMeta {
    c: u32,
    g0: u32,
    g1: u32,
    ef0: u32,
    ef1: u32,
    r0: u32,
    r1: u32,
    y: f32,
    ed: array<vec2<u32>, PIPE_U>,
}

fn pipe_meta(w: u32, slot: u32, lane: u32) -> PipeMeta {
    var m: PipeMeta;
    if w < sched[0] {
        let c = sched[4u + w];
        m.c = c;
        m.g0 = idx[cfg.seg_ptr_off + c];
        m.g1 = idx[cfg.seg_ptr_off + c + 1u];
        let s0 = c * cfg.chunk;
        if slot < min(cfg.chunk, cfg.n_samples - s0) {
            m.r0 = idx[cfg.row_off + s0 + slot];
            m.r1 = idx[cfg.row_off + s0 + slot + 1u];
            m.y = bitcast<f32>(idx[cfg.label_off + s0 + slot]);
        }
        m.ef0 = idx[cfg.seg_edge_off + m.g0];
        m.ef1 = idx[cfg.seg_edge_off + m.g1];
        if m.r0 + lane < m.r1 {
            for (var k = 0u; k < PIPE_U; k++) {
                m.ed[k] = s_edge(min(m.r0 + lane + k * LANES, m.r1 - 1u));
            }
        }
    }
    return m;
}

fn run_pipe(w0: u32, groups: u32, lid: u32) {
    let slot = lid / LANES;
    let lane = lid % LANES;
    // One buffer's share of the double-buffered workgroup arrays.
    let tile_cap = EDGE_WG / 2u;
    let chunk_cap = CHUNK_WG / 2u;
    let acc_cap = ACC_WG / 2u;
    // 1/B of this mini-batch (sync), or the configured 1/batch (async: sched[1] = 0).
    let inv_b = select(cfg.inv_batch, 1.0 / f32(sched[1]), sched[1] > 0u);
#ifdef ASYNC
    let step = -cfg.lr;
#else
    let step = 1.0;
#endif
    var m = pipe_meta(w0, slot, lane);
    var parity = 0u;
#ifdef ASYNC
    let local_sgd = FLUSH_EVERY > 1u && HOT > 0u;
#else
    let local_sgd = false;
#endif
    // The bias's pending delta (local SGD; the last invocation's alone).
    var bias_pending = 0.0;
    if local_sgd {
        // Workgroup memory is not assumed zeroed; the first chunk's barriers order these
        // writes before any use.
        for (var t = lid; t < HOT * NPARAM; t += WG) {
            hot_delta[t] = 0.0;
        }
        if lid == 0u {
            bias_wg_pending = 0.0;
        }
    }
    var it = 0u;
    for (var w = w0; w < sched[0]; w += groups) {
        let c = m.c;
        let s0 = c * cfg.chunk;
        let n = min(cfg.chunk, cfg.n_samples - s0);
        if local_sgd && it % FLUSH_EVERY != 0u {
            // The previous chunk's Apply moved the cached copy this chunk reads.
            workgroupBarrier();
        }
        if HOT > 0u && it % FLUSH_EVERY == 0u {
            // Every invocation has left the previous chunk's Apply, which reads the cache.
            workgroupBarrier();
            if local_sgd {
                flush_hot(lid);
            }
            // PIPE_U loads in flight per invocation before their stores.
            let hot_words = HOT * NPARAM;
            for (var t0 = lid; t0 < hot_words; t0 += WG * PIPE_U) {
                var v: array<f32, PIPE_U>;
                for (var k = 0u; k < PIPE_U; k++) {
                    v[k] = param_global(min(t0 + k * WG, hot_words - 1u));
                }
                for (var k = 0u; k < PIPE_U; k++) {
                    if t0 + k * WG < hot_words {
                        hot_wg[t0 + k * WG] = v[k];
                    }
                }
            }
            workgroupBarrier();
        }
        let tb = parity * tile_cap;
        let cb = parity * chunk_cap;
        acc_base = parity * acc_cap;
        let ef0 = m.ef0;
        let ef1 = m.ef1;
        // Local SGD: the start barrier above orders the last invocation's write of the
        // pending bias delta before this read.
        let bias = param_bias() + select(0.0, bias_wg_pending, local_sgd);

        // Aggregate, PIPE_U edges per lane per round, all loaded before they are used.
        var a: array<f32, NACC>;
        for (var i = 0u; i < NACC; i++) {
            a[i] = 0.0;
        }
        var ed = m.ed;
        for (var e0 = m.r0 + lane; e0 < m.r1; e0 += LANES * PIPE_U) {
            if e0 != m.r0 + lane {
                for (var k = 0u; k < PIPE_U; k++) {
                    ed[k] = s_edge(min(e0 + k * LANES, m.r1 - 1u));
                }
            }
            for (var k = 0u; k < PIPE_U; k++) {
                let x = select(0.0, bitcast<f32>(ed[k].y), e0 + k * LANES < m.r1);
                ala_aggregate(&a, ed[k].x, x);
            }
        }

        // The feature-sorted edge tile of this chunk, PIPE_U loads in flight per invocation.
        let tile = min(ef1 - ef0, tile_cap);
        for (var t0 = lid; t0 < tile; t0 += WG * PIPE_U) {
            var v: array<vec2<u32>, PIPE_U>;
            for (var k = 0u; k < PIPE_U; k++) {
                v[k] = f_edge(ef0 + min(t0 + k * WG, tile - 1u));
            }
            for (var k = 0u; k < PIPE_U; k++) {
                if t0 + k * WG < tile {
                    f_edge_store(tb + t0 + k * WG, v[k]);
                }
            }
        }

        for (var i = 0u; i < NACC; i++) {
            a[i] = vsg_sum(a[i], LANES, lid);
        }

        // Loss (by every lane when the cold features are applied per edge: each needs dℓ/dŷ).
        var dl_mine = 0.0;
        if SPLIT != 0xffffffffu && slot < n {
            dl_mine = ala_loss(&a, bias, m.y).z * inv_b;
        }
        if lane == 0u {
            var dl = 0.0;
            var l = 0.0;
            if slot < n {
                let r = ala_loss(&a, bias, m.y);
                dl = r.z * inv_b;
                l = r.y;
                for (var i = 0u; i < NACC; i++) {
                    acc_wg[acc_base + slot * NACC + i] = a[i];
                }
            }
            dl_wg[cb + slot] = dl;
            loss_wg[cb + slot] = l;
        }
        workgroupBarrier();

        // The next chunk's metadata, in flight during this chunk's Apply.
        let next = pipe_meta(w + groups, slot, lane);

        // Bias and the chunk's loss sum (workgroup memory only), by the last invocation: its
        // share of the Apply items below is never larger than any other's.
        if lid == WG - 1u {
            var db = 0.0;
            var l = 0.0;
            for (var s = 0u; s < n; s++) {
                db += dl_wg[cb + s];
                l += loss_wg[cb + s];
            }
#ifdef ASYNC
            let bias_step = step * scale[cfg.scaled] * db;
#else
            let bias_step = step * db;
#endif
            if local_sgd {
                bias_pending += bias_step;
                if (it + 1u) % FLUSH_EVERY == 0u {
                    accum_add(cfg.bias_index, bias_pending);
                    bias_pending = 0.0;
                }
                bias_wg_pending = bias_pending;
            } else {
                accum_add(cfg.bias_index, bias_step);
            }
            out[c] = l;
        }

        // The cold features (≥ SPLIT), per edge: the lane's edges again (just read, so
        // cached), PIPE_U loaded per round; the Accums from workgroup memory (written before
        // the barrier); a feature's parameters, when Apply reads them (FM's v_jf, the L2
        // term), loaded together before its atomics.
        if SPLIT != 0xffffffffu && slot < n {
            for (var e0 = m.r0 + lane; e0 < m.r1; e0 += LANES * PIPE_U) {
                var de: array<vec2<u32>, PIPE_U>;
                for (var k = 0u; k < PIPE_U; k++) {
                    de[k] = s_edge(min(e0 + k * LANES, m.r1 - 1u));
                }
                for (var k = 0u; k < PIPE_U; k++) {
                    let j = de[k].x;
                    if e0 + k * LANES >= m.r1 || j < SPLIT {
                        continue;
                    }
                    let x = bitcast<f32>(de[k].y);
                    if NPARAM > 1u || cfg.l2 > 0.0 {
                        for (var i = 0u; i < NPARAM; i++) {
                            pre_vals[i] = param_global(j * NPARAM + i);
                        }
                        pre_feat = j;
                    }
                    for (var i = 0u; i < NPARAM; i++) {
                        var g = dl_mine * ala_apply(slot, j, x, i);
                        if cfg.l2 > 0.0 {
                            g += cfg.l2 * param(j, i) * inv_b;
                        }
                        accum_add(j * NPARAM + i, step * g);
                    }
                }
            }
            pre_feat = 0xffffffffu;
        }

        // Apply: one global add per (distinct feature of the chunk, parameter), the
        // metadata of PIPE_U items loaded before any of them is walked; features ≥ SPLIT
        // were applied above.
        let work = (m.g1 - m.g0) * NPARAM;
        for (var t0 = lid; t0 < work; t0 += WG * PIPE_U) {
            var feat: array<u32, PIPE_U>;
            var ea: array<u32, PIPE_U>;
            var eb: array<u32, PIPE_U>;
            var pv: array<f32, PIPE_U>;
            for (var k = 0u; k < PIPE_U; k++) {
                let tk = min(t0 + k * WG, work - 1u);
                let g = m.g0 + tk / NPARAM;
                feat[k] = idx[cfg.seg_feat_off + g];
                ea[k] = idx[cfg.seg_edge_off + g];
                eb[k] = idx[cfg.seg_edge_off + g + 1u];
            }
#ifdef ASYNC
            // The items' step scales, gathered before the walks (hot features only).
            var sc: array<f32, PIPE_U>;
            for (var k = 0u; k < PIPE_U; k++) {
                sc[k] = step_scale(feat[k]);
            }
#endif
            if NPARAM > 1u {
                // Models with several parameters per feature (FM) read θ_ji in Apply: the
                // items' parameters are gathered together too.
                for (var k = 0u; k < PIPE_U; k++) {
                    let tk = min(t0 + k * WG, work - 1u);
                    pv[k] = param_global(feat[k] * NPARAM + tk % NPARAM);
                }
            }
            for (var k = 0u; k < PIPE_U; k++) {
                let t = t0 + k * WG;
                if t >= work {
                    break;
                }
                let i = t % NPARAM;
                let j = feat[k];
                if j >= SPLIT {
                    continue;
                }
                if NPARAM > 1u {
                    pre_key = j * NPARAM + i;
                    pre_val = pv[k];
                }
                var sum = 0.0;
                if cfg.l2 > 0.0 {
                    // λ·θ for each of the segment's samples, scaled by 1/B as their dℓ/dŷ.
                    sum = cfg.l2 * param(j, i) * f32(eb[k] - ea[k]) * inv_b;
                }
                for (var e = ea[k]; e < eb[k]; e++) {
                    var edge: vec2<u32>;
                    if e - ef0 < tile {
                        edge = f_edge_tile(tb + e - ef0);
                    } else {
                        edge = f_edge(e);
                    }
                    sum += dl_wg[cb + edge.x] * ala_apply(edge.x, j, bitcast<f32>(edge.y), i);
                }
#ifdef ASYNC
                let v = step * sc[k] * sum;
#else
                let v = step * sum;
#endif
                if local_sgd && j < HOT {
                    // One invocation per (feature, parameter) of the chunk: no race.
                    hot_delta[j * NPARAM + i] += v;
                    hot_wg[j * NPARAM + i] += v;
                } else {
                    accum_add(j * NPARAM + i, v);
                }
            }
        }
        pre_key = 0xffffffffu;
        m = next;
        parity ^= 1u;
        it += 1u;
        if groups == 1u {
            // One workgroup (the tests' exact async steps): its next chunk reads this
            // chunk's updates. With more, other workgroups' updates race anyway.
            storageBarrier();
        }
    }
    if local_sgd {
        // What the last chunks left pending.
        workgroupBarrier();
        flush_hot(lid);
        if lid == WG - 1u && bias_pending != 0.0 {
            accum_add(cfg.bias_index, bias_pending);
        }
    }
}
#endif
