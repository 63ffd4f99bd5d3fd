// The flow engine's Apply work items (`wide/flow`): a chunk's segment sums of the gradient
// added to global memory, and the bias's and loss's tail sums. The importing kernel declares
// `cfg`, `f_edge`, `f_edge_tile`, `dl_wg`, ILP, `loss_wg`, `hot_wg`, `param`, `accum_add`, the
// model's `ala_apply` and NPARAM, `step_scale` and `scale` (ASYNC), `params_plain` (ASYNC
// with PLAIN_READS), and the overrides HOT and ADD_SPLIT.
#ifndef PREDICT
// Work items per invocation in flight in Apply (APPLY_ILP).
const APPLY_ILP_N: u32 = 4u;

// The factor of feature j's segment sum: −lr times its step scale (async), or 1 (sync).
fn item_step(step: f32, j: u32) -> f32 {
#ifdef ASYNC
    return step * step_scale(j);
#else
    return step;
#endif
}

// The diagnostics' split between hot and cold adds: ADD_SPLIT, or the cache's size.
fn add_split() -> u32 {
    return select(HOT, ADD_SPLIT, ADD_SPLIT > 0u);
}

// Feature j's update d of parameter word k (j · NPARAM + i) into global memory: an atomic
// add, or with PLAIN_WRITES (async, through the plain-reads binding) a plain read-modify-write
// for a cold feature, j ≥ cfg.cold: every feature there is expected in at most one of the
// S · B samples in flight (`wide::plan::cold_from`; the step scale's bound cfg.scaled, p_j ·
// S ≤ 1, allows B of them, in nearly every chunk in flight), so at most about one writer has
// it at a time (two in one chunk, split segments or EDGE_APPLY's edges, are rarer still).
// Two writers overlapping lose one update, the race Hogwild! accepts for sparse updates (as
// a plain read without COHERENT_READS may be stale, so may the value written back). The
// other features (contended) and the bias (its own `accum_add`) stay atomic; no word is
// written both ways, as a feature stays on one side of cfg.cold for the whole dispatch.
fn param_add(j: u32, k: u32, d: f32) {
    // Timing only: the adds of the features below the split, or from it on, dropped (a NaN
    // sum still lands, so the sums stay live).
#ifdef DIAG_SKIP_HOT_ADDS
    if j < add_split() && d == d {
        return;
    }
#endif
#ifdef DIAG_SKIP_COLD_ADDS
    if j >= add_split() && d == d {
        return;
    }
#endif
#ifdef ASYNC
#ifndef SNAPSHOT_READS
#ifdef PLAIN_READS
#ifdef PLAIN_WRITES
    if j >= cfg.cold {
        params_plain[k] = params_plain[k] + d;
        return;
    }
#endif
#endif
#endif
#endif
    accum_add(k, d);
}

// One Apply work item: parameter i of feature j, whose segment holds the feature-sorted
// edges e.x .. e.y (those before tile.x + tile.y read from the tile, which starts at edge
// tile.x); its sum times f added to global memory once.
fn apply_item(j: u32, i: u32, e: vec2<u32>, tile: vec2<u32>, inv_b: f32, f: f32) {
    var sum = 0.0;
    if cfg.l2 > 0.0 {
        // λ·θ for each of the segment's samples, scaled by 1/B as their dℓ/dŷ.
        sum = cfg.l2 * param(j, i) * f32(e.y - e.x) * inv_b;
    }
    // The tile's part of the segment, then the rest from global memory (segments start at
    // or after the tile's first edge): two branch-free loops the compiler can unroll.
    let mid = min(e.y, max(e.x, tile.x + tile.y));
    for (var k = e.x; k < mid; k++) {
        let edge = f_edge_tile(k - tile.x);
        sum += dl_wg[edge.x] * ala_apply(edge.x, j, bitcast<f32>(edge.y), i);
    }
    var k = mid;
#ifdef WALK_ILP
    // WALK_ILP: ILP edges' loads issued before their sums, which keep the order.
    for (; k + ILP <= e.y; k += ILP) {
        var f8: array<vec2<u32>, ILP>;
        for (var u = 0u; u < ILP; u++) {
            f8[u] = f_edge(k + u);
        }
        for (var u = 0u; u < ILP; u++) {
            sum += dl_wg[f8[u].x] * ala_apply(f8[u].x, j, bitcast<f32>(f8[u].y), i);
        }
    }
#endif
    for (; k < e.y; k++) {
        let edge = f_edge(k);
        sum += dl_wg[edge.x] * ala_apply(edge.x, j, bitcast<f32>(edge.y), i);
    }
    let d = f * sum;
    param_add(j, j * NPARAM + i, d);
#ifdef HOT_LOCAL
    // The workgroup's own step into its copy (each (feature, parameter) has one work item
    // per chunk: segments are whole with HOT_LOCAL), whichever way `param_add` wrote it.
    if j < HOT {
        hot_wg[j * NPARAM + i] += d;
    }
#endif
}

#ifdef EDGE_APPLY
// EDGE_APPLY's work for one edge: feature j with value x in sample slot s (dℓ/dŷ dl, already
// times 1/B): parameters ip.x, ip.x + ip.y … each gradient times f added to global memory,
// as `apply_item`'s segment of one edge. In async mode a later edge of j in the chunk may
// read (FM's v_jf, the L2 term) what this one has just moved, as it may read another
// workgroup's update.
fn apply_edge(s: u32, j: u32, x: f32, dl: f32, inv_b: f32, f: f32, ip: vec2<u32>) {
    for (var i = ip.x; i < NPARAM; i += ip.y) {
        var g = 0.0;
        if cfg.l2 > 0.0 {
            g = cfg.l2 * param(j, i) * inv_b;
        }
        g += dl * ala_apply(s, j, x, i);
        param_add(j, j * NPARAM + i, f * g);
    }
}
#endif

#ifdef APPLY_WHOLE
// Every parameter of feature j from its segment (edges e.x .. e.y, the tile as in
// `apply_item`), each summed in `apply_item`'s order and added once: the same adds, the
// segment's edges and step scale read once instead of once per parameter.
fn apply_segment(j: u32, e: vec2<u32>, tile: vec2<u32>, inv_b: f32, f: f32) {
    var sum: array<f32, NPARAM>;
    for (var i = 0u; i < NPARAM; i++) {
        sum[i] = 0.0;
        if cfg.l2 > 0.0 {
            sum[i] = cfg.l2 * param(j, i) * f32(e.y - e.x) * inv_b;
        }
    }
    for (var k = e.x; k < e.y; k++) {
        var edge: vec2<u32>;
        if k - tile.x < tile.y {
            edge = f_edge_tile(k - tile.x);
        } else {
            edge = f_edge(k);
        }
        let dl = dl_wg[edge.x];
        let x = bitcast<f32>(edge.y);
        for (var i = 0u; i < NPARAM; i++) {
            sum[i] += dl * ala_apply(edge.x, j, x, i);
        }
    }
    for (var i = 0u; i < NPARAM; i++) {
        let d = f * sum[i];
        param_add(j, j * NPARAM + i, d);
#ifdef HOT_LOCAL
        if j < HOT {
            hot_wg[j * NPARAM + i] += d;
        }
#endif
    }
}
#endif

// The bias's step scale (async), 1 in sync mode.
fn bias_scale() -> f32 {
#ifdef ASYNC
    return scale[cfg.scaled];
#else
    return 1.0;
#endif
}

// Σ dl_wg (bias) or Σ loss_wg over the chunk's n samples, in four partial sums.
fn tail_sum(n: u32, bias: bool) -> f32 {
    var p = vec4<f32>(0.0);
    var s = 0u;
    for (; s + 4u <= n; s += 4u) {
        if bias {
            p += vec4<f32>(dl_wg[s], dl_wg[s + 1u], dl_wg[s + 2u], dl_wg[s + 3u]);
        } else {
            p += vec4<f32>(loss_wg[s], loss_wg[s + 1u], loss_wg[s + 2u], loss_wg[s + 3u]);
        }
    }
    for (; s < n; s++) {
        p.x += select(loss_wg[s], dl_wg[s], bias);
    }
    return (p.x + p.y) + (p.z + p.w);
}
#endif
