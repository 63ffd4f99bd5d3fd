// The fused sparse pattern over column-sorted tiles (src/fused/tiles.rs): w += α·Xᵀ(v ⊙ (X·y))
// with each tile of consecutive rows (at most EPL·WG entries) stored sorted by column, every
// entry packed as key = column << POS_BITS | pos, pos its place in the tile's row-major (CSR)
// order. A workgroup takes whole tiles, one at a time (tiles strided over the grid):
// 1. each invocation loads its EPL entries (entry j·WG + its place in the workgroup, so a
//    subgroup holds consecutive entries) into registers and stores x·y[col] at prod[pos]
//    (distinct positions: plain stores);
// 2. VS lanes per row sum their row's prod range (CSR order, from row_ptr), then overwrite it
//    with the row's scale α·v[row]·dot, so every position knows its row's scale;
// 3. the entries in registers are scaled by prod[pos] and reduced over equal columns by a
//    segmented suffix sum across the subgroup (shuffles on the sorted keys); the first lane
//    of each run adds the run's sum once — to the workgroup copy of w (SHARED_W; compare-
//    exchange, though at most two runs of a column meet: the subgroups a run straddles) or to
//    global w. Without SEGMENTED (no subgroup operations) every entry adds its own product.
// SUBGROUP (VS within the subgroup size) reduces the row sums of step 2 by shuffles, else
// through workgroup memory (shared/reduce); SEGMENTED needs subgroups of any size.
// X is read from global memory once; its entries stay in registers between 1 and 3.
// Tiles never hold rows longer than the long-row threshold (fused/long_rows takes those).
// XTY: Algorithm 1, the scale is α·v[row]·y[row] (no dot product, step 1 skipped).
// WIDE (X's columns beyond a packed key): keys hold positions alone, cols each entry's column.
// LONG (the folded sequence): after its tiles, each workgroup takes the long-row chunks
// k = wid, wid + G, … (fused/long_rows's records: X's row, the band-window range, the row's
// first chunk | (chunks − 1) << 26), their entries read in X's order (long rows keep their
// place: column = key >> POS_BITS, or cols under WIDE), each scaled by α·v[row]·dot with the
// dot the sum of the row's chunk partials in chunk order (the same bits in every chunk of a
// row; XTY: y[row]), and added one by one.
// FINISH (with SHARED_W, not with LONG; one dispatch in all): `accum` is the plan's
// accumulator, all zero before the dispatch; the workgroups flush into it, and the last to
// finish (a counter, after a device-scope storage barrier) writes w = β·z + accum, taking
// accum back to zero by exchange, and zeroes the counter. No pre-pass initialises w.
// Otherwise w already holds β·z (fused/axpy or fused/long_rows pre-pass).
// DIAG_* (timing only, src/fused/diag.rs; shared/atomic_f32_wg): DIAG_SKIP_FLUSH leaves the
// workgroup copy of w unflushed.
#import shared/reduce
#import shared/atomic_f32
#ifdef SHARED_W
#import shared/atomic_f32_wg
#endif
#ifdef SEGMENTED
#import fused/run_sum
#endif

override WG: u32 = 256u;
override VS: u32 = 8u;
// Entries per invocation (at most 8): tiles hold at most EPL·WG entries.
override EPL: u32 = 8u;
override POS_BITS: u32 = 11u;
// Length of prod: EPL·WG.
override TILE: u32 = 2048u;
override NCOLS: u32 = 1u;

// Key of an absent entry (past the tile's end): never a column's key.
const NONE: u32 = 0xffffffffu;

struct Params {
    ntiles: u32,
    n: u32,
    // Bit 0: multiply by v.
    flags: u32,
    alpha: f32,
    // X's row of the band's local row 0 (tiles and row_ptr are the band's; src/fused/bands.rs).
    row_base: u32,
    // LONG: this band's long-row chunks.
    nlong: u32,
    // FINISH: β.
    beta: f32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
// Per tile: first row and one past its last row.
@group(0) @binding(2) var<storage, read> tiles: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> keys: array<u32>;
@group(0) @binding(4) var<storage, read> vals: array<f32>;
@group(0) @binding(5) var<storage, read> y: array<f32>;
@group(0) @binding(6) var<storage, read> v: array<f32>;
@group(0) @binding(7) var<storage, read_write> accum: array<AtomicF32>;
#ifdef WIDE
@group(0) @binding(8) var<storage, read> cols: array<u32>;
#endif
#ifdef FINISH
#ifndef LONG
// Binding 8 is the columns (WIDE) or an unread stand-in.
@group(0) @binding(9) var<storage, read_write> counter: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read> z: array<f32>;
@group(0) @binding(11) var<storage, read_write> w: array<f32>;
var<workgroup> finish_last: u32;
#endif
#endif
#ifdef LONG
// Binding 8 is the columns (WIDE) or an unread stand-in.
@group(0) @binding(9) var<storage, read> lchunks: array<vec4<u32>>;
@group(0) @binding(10) var<storage, read> ldots: array<f32>;
#import fused/long_dot
#endif

var<workgroup> prod: array<f32, TILE>;
#ifdef SHARED_W
var<workgroup> wg_accum: array<atomic<u32>, NCOLS>;
#endif

fn add_w(col: u32, t: f32) {
#ifdef SHARED_W
    wg_accum_add(col, t);
#else
    accum_add(col, t);
#endif
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
#ifdef SEGMENTED
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
#endif
) {
    let lane = tid % VS;
    let vid = tid / VS;
    let nv = WG / VS;
#ifdef SEGMENTED
    // Consecutive entries in the lanes of one subgroup, whatever the lane layout.
    let slot = sg_id * sg_size + sg_lane;
#else
    let slot = tid;
#endif
#ifdef SHARED_W
    for (var i = tid; i < params.n; i += WG) {
        atomicStore(&wg_accum[i], 0u);
    }
#endif
    let mask = (1u << POS_BITS) - 1u;
    // tile is uniform across the workgroup: every barrier below is reached by all.
    for (var tile = wid.x; tile < params.ntiles; tile += nwg.x) {
        let rows = tiles[tile];
        let base = row_ptr[rows.x];
        let len = row_ptr[rows.y] - base;
        // Per entry in registers: its CSR position (NONE when absent), column and value.
        var key: array<u32, 8>;
        var kcol: array<u32, 8>;
        var val: array<f32, 8>;
        // 1. Entries into registers, their products with y to prod (CSR positions).
        for (var j = 0u; j < EPL; j++) {
            let i = j * WG + slot;
            key[j] = NONE;
            kcol[j] = NONE;
            val[j] = 0.0;
            if j * WG < len && i < len {
                let k = keys[base + i];
#ifdef WIDE
                key[j] = k;
                kcol[j] = cols[base + i];
#else
                key[j] = k & mask;
                kcol[j] = k >> POS_BITS;
#endif
                val[j] = vals[base + i];
#ifndef XTY
                prod[key[j]] = val[j] * y[kcol[j]];
#endif
            }
        }
        workgroupBarrier();
        // 2. Row scales over CSR positions (a uniform trip count for the reduction).
        let nrows = rows.y - rows.x;
        let trips = (nrows + nv - 1u) / nv;
        for (var t = 0u; t < trips; t++) {
            let r = t * nv + vid;
            let ok = r < nrows;
            var b = 0u;
            var e = 0u;
            if ok {
                b = row_ptr[rows.x + r] - base;
                e = row_ptr[rows.x + r + 1u] - base;
            }
#ifdef XTY
            var s = 0.0;
            if ok {
                s = y[params.row_base + rows.x + r];
            }
#else
            var part = 0.0;
            for (var i = b + lane; i < e; i += VS) {
                part += prod[i];
            }
            var s = vsg_sum(part, VS, tid);
#endif
            if ok && (params.flags & 1u) != 0u {
                s *= v[params.row_base + rows.x + r];
            }
            s *= params.alpha;
            // Every lane has read its share (the sum is complete), so the row's range is free.
            for (var i = b + lane; i < e; i += VS) {
                prod[i] = s;
            }
        }
        workgroupBarrier();
        // 3. Scaled entries reduced over equal columns, one add per run.
        for (var j = 0u; j < EPL; j++) {
            // Past the tile's end (uniform across the workgroup).
            if j * WG >= len {
                break;
            }
            let k = key[j];
            var p = 0.0;
            if k != NONE {
                p = val[j] * prod[k];
            }
            let col = kcol[j];
#ifdef SEGMENTED
            // Lane i: the sum of its run from i on (keys are sorted).
            p = run_suffix_sum(col, p, k != NONE, sg_lane, sg_size);
            let prev = subgroupShuffleUp(col, 1u);
            let head = sg_lane == 0u || prev != col;
            if k != NONE && head {
                add_w(col, p);
            }
#else
            if k != NONE {
                add_w(col, p);
            }
#endif
        }
        // prod is rewritten by the next tile.
        workgroupBarrier();
    }
#ifdef LONG
    for (var k = wid.x; k < params.nlong; k += nwg.x) {
        let ch = lchunks[k];
#ifdef XTY
        var s = y[ch.x];
#else
        var s = long_dot(ch.w);
#endif
        if (params.flags & 1u) != 0u {
            s *= v[ch.x];
        }
        s *= params.alpha;
        for (var i = ch.y + tid; i < ch.z; i += WG) {
#ifdef WIDE
            let col = cols[i];
#else
            let col = keys[i] >> POS_BITS;
#endif
            add_w(col, vals[i] * s);
        }
    }
#endif
#ifdef SHARED_W
    workgroupBarrier();
#ifndef DIAG_SKIP_FLUSH
    for (var i = tid; i < params.n; i += WG) {
        let t = wg_accum_load(i);
        if t != 0.0 {
            accum_add(i, t);
        }
    }
#endif
#ifdef FINISH
#ifndef LONG
    finish(tid, nwg.x);
#endif
#endif
#endif
}

#ifdef SHARED_W
#ifdef FINISH
#ifndef LONG
#import fused/finish
#endif
#endif
#endif
