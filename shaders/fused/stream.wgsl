// The fused sparse pattern over row tiles streamed in CSR order (src/fused/stream.rs):
// w += α·Xᵀ(v ⊙ (X·y)) with X copied into tiles of consecutive rows (at most EPL·WG entries
// and RMAX rows each), every tile starting at a multiple of 4 entries and padded to one; an
// entry is a key (its column, | START on its row's first entry; PAD past the tile's end) and a
// value (KEY16: keys of 16 bits, two per word). A workgroup takes tiles wid, wid + G, …;
// invocation t takes the tile's entries t·EPL .. t·EPL + EPL (whole vec4 loads: every lane
// of the workgroup streams X) and `lead`, the tile row of its first entry, and knows each
// entry's row by counting START bits:
// 1. the products x·y[col] summed per row segment: a row that starts and ends in the
//    invocation is stored to rsum[row]; the part before its first START (a row begun
//    earlier) goes to head[t], and whether it holds a START to open[t];
// 2. a barrier; the invocation where a row starts and does not end (its last START) adds
//    head[t + 1], head[t + 2], … up to the first invocation with a START and stores the
//    row's sum (one writer a row: no atomics). SEGMENTED (subgroups of any size, slots
//    numbered subgroup by subgroup): those chains of heads are summed across each subgroup
//    by shuffles before the barrier (log₂ of the subgroup size rounds at most), each
//    subgroup's chain from its first lane goes to chain[subgroup], and a chain that leaves
//    its subgroup continues subgroup by subgroup (a row over many subgroups);
// 3. a barrier; each entry scaled by rsum[row]·fac[row] (fac: v[row], times y[row] under
//    XTY) and added to the workgroup copy of w (compare-exchange).
// rsum and fac alternate between two buffers (a tile's step 1 may run while another
// invocation still scatters the tile before; the next tile's factors are loaded in step 3);
// head and open are read between a tile's two barriers, so the next tile's step 1 may
// rewrite them.
// PIPE: the next tile's entries and row factors are loaded at the top of the tile before
// (into registers: at most EPL factors an invocation, since a tile has at most EPL·WG rows),
// in flight during that tile's row sums and scatter, and the descriptor of the tile after
// (so no load waits on another but the factors' on their rows); the factors are stored
// after the barrier that ends the tile's step 2 (when no invocation still reads the buffer
// they fill).
// XTY: Algorithm 1, no dot product (steps 1 and 2 skipped): an entry's scale is fac alone.
// Each workgroup ends by adding α·its copy to `accum`: w itself, which already holds β·z
// (fused/axpy), or under FINISH the plan's accumulator (all zero before the dispatch), the last
// workgroup to flush writing w = β·z + accum (fused/finish: one dispatch in all).
// Rows longer than the long-row threshold (at most a tile) are in no tile: the items after
// the tiles (`params.nlong` of them, longest first) each hold one, and the workgroups take
// them first, each whole: its dot product summed over the workgroup, then its entries read
// again (from cache) and added to the copy of w by plain adds (a row's columns are distinct,
// and barriers keep the workgroup's other adds apart). No other pass is needed.
// WCOPIES > 1: the scatter of slot s adds to copy s % WCOPIES (words (s % WCOPIES)·NCOLS ..),
// so fewer invocations contend for a word where X has few columns (a subgroup's lanes spread
// over the copies); long rows add to copy 0; the flush sums the copies.
// UNITS: the tiles are taken by units of UNIT lanes with no barrier (fused/stream_units);
// the workgroup only shares the copy of w (and y), and takes the long rows as above.
// WG_FIXED: the copy of w holds exact integer sums (shared/fixed_wg): each tile's maxima —
// of |x| over its entries, |rsum| and |fac| over its rows — are noted before the barrier that
// ends its step 2 and settled after it (a long row: |x| noted before its dot product's
// barrier, settled with its factor).
#import shared/atomic_f32
#ifdef SEGMENTED
#import fused/chain_sum
#endif
#ifdef UNITS
#import fused/chain_sum
#import fused/stream_units
#endif
#ifdef WG_FIXED
#import shared/fixed_wg
#else
#import shared/atomic_f32_wg
#endif

override WG: u32 = 256u;
// Entries per invocation: 4 or 8.
override EPL: u32 = 8u;
// Rows per tile at most.
override RMAX: u32 = 1024u;
override NCOLS: u32 = 1u;
// Subgroups a workgroup holds at most (WG over the adapter's least subgroup size). The
// overrides stay together above every array they size: naga 30's pipeline-constant pass
// panicked on this one declared below such arrays.
override NSG: u32 = 32u;
// Copies of w in workgroup memory (WG_FIXED: one), and their words NCOLS · WCOPIES, passed
// as its own override: naga 30's pipeline-constant pass panicked on that product as an
// array size.
override WCOPIES: u32 = 1u;
override WWORDS: u32 = 1u;
// UNITS: lanes a tile (a power of two dividing the subgroup size).
override UNIT: u32 = 32u;

const START: u32 = 0x80000000u;
const PAD: u32 = 0xffffffffu;

struct Params {
    ntiles: u32,
    n: u32,
    // Bit 0: multiply by v.
    flags: u32,
    alpha: f32,
    // FINISH: β.
    beta: f32,
    // Long rows: tiles[ntiles ..] = (first entry, padded entries, X's row, entries).
    nlong: u32,
    // WG_FIXED: ceil(log₂(N + 1)), N the most rows a workgroup takes.
    ln_rows: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// Per tile: first entry, entries (padded), first index into rows, rows.
@group(0) @binding(1) var<storage, read> tiles: array<vec4<u32>>;
#ifdef KEY16
// 16 bits a key (column | 0x8000 on a row's first entry; 0xffff: padding), two per word:
// an entry is 6 bytes of X instead of 8.
@group(0) @binding(2) var<storage, read> keys: array<vec2<u32>>;
fn widen_key(h: u32) -> u32 {
    if h == 0xffffu {
        return PAD;
    }
    return (h & 0x7fffu) | ((h & 0x8000u) << 16u);
}
#else
@group(0) @binding(2) var<storage, read> keys: array<vec4<u32>>;
#endif
// Keys 4q .. 4q + 3 in the 32-bit form (column | START, or PAD).
fn key_quad(q: u32) -> vec4<u32> {
#ifdef KEY16
    let p = keys[q];
    return vec4<u32>(
        widen_key(p.x & 0xffffu),
        widen_key(p.x >> 16u),
        widen_key(p.y & 0xffffu),
        widen_key(p.y >> 16u),
    );
#else
    return keys[q];
#endif
}
@group(0) @binding(3) var<storage, read> vals: array<vec4<f32>>;
// Per tile, WG / 2 words: the tile row of each invocation's first entry, 16 bits each
// (UNITS: unused; unit_tile counts it).
@group(0) @binding(4) var<storage, read> lead: array<u32>;
// X's row of each tile row.
@group(0) @binding(5) var<storage, read> rows: array<u32>;
@group(0) @binding(6) var<storage, read> y: array<f32>;
@group(0) @binding(7) var<storage, read> v: array<f32>;
@group(0) @binding(8) var<storage, read_write> accum: array<AtomicF32>;
#ifdef FINISH
@group(0) @binding(9) var<storage, read_write> counter: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read> z: array<f32>;
@group(0) @binding(11) var<storage, read_write> w: array<f32>;
var<workgroup> finish_last: u32;
#import fused/finish
#endif

#ifdef WG_FIXED
fn w_add(i: u32, c: f32) {
    fx_add(i, c);
}
fn w_add_alone(i: u32, c: f32) {
    fx_add(i, c);
}
fn w_load(i: u32) -> f32 {
    return fx_load(i);
}
#else
var<workgroup> wg_accum: array<atomic<u32>, WWORDS>;
// The first word of this invocation's copy of w: (slot % WCOPIES) · NCOLS.
var<private> w_copy: u32;
fn w_add(i: u32, c: f32) {
    wg_accum_add(w_copy + i, c);
}
fn w_add_alone(i: u32, c: f32) {
    wg_accum_add_alone(i, c);
}
fn w_load(i: u32) -> f32 {
    var t = 0.0;
    for (var j = 0u; j < WCOPIES; j++) {
        t += wg_accum_load(j * NCOLS + i);
    }
    return t;
}
#endif
#ifdef Y_SHARED
// y copied in at the start: the dot products' gathers read workgroup memory.
var<workgroup> y_wg: array<f32, NCOLS>;
fn y_col(c: u32) -> f32 {
    return y_wg[c];
}
#else
fn y_col(c: u32) -> f32 {
    return y[c];
}
#endif
#ifndef UNITS
var<workgroup> rsum: array<f32, 2u * RMAX>;
var<workgroup> fac: array<f32, 2u * RMAX>;
#endif
#ifdef SEGMENTED
// Per subgroup: the chain of heads from its first lane, and whether it ends in the subgroup.
var<workgroup> chain: array<f32, NSG>;
var<workgroup> chain_ends: array<u32, NSG>;
#else
var<workgroup> head: array<f32, WG>;
var<workgroup> open: array<u32, WG>;
#endif

// An invocation's entries of a tile: keys, values and the tile row of the first.
struct Entries {
    k: array<vec4<u32>, 2>,
    x: array<vec4<f32>, 2>,
    lead: u32,
}

#ifdef WG_FIXED
// Notes the maxima (shared/fixed_wg) of this invocation, or with subgroups of its subgroup.
// Call in uniform control flow.
fn note_maxima(x: f32, s: f32, f: f32, sg_lane: u32) {
#ifdef SEGMENTED
    fx_note(subgroupMax(x), subgroupMax(s), subgroupMax(f), sg_lane == 0u);
#else
    fx_note(x, s, f, true);
#endif
}

// The largest |x| of an invocation's entries (padding holds 0).
fn entries_max(e: Entries) -> f32 {
    var m = 0.0;
    for (var q = 0u; q < EPL / 4u; q++) {
        let a = abs(e.x[q]);
        m = max(m, max(max(a.x, a.y), max(a.z, a.w)));
    }
    return m;
}
#endif

// Slot `slot`'s entries of tile `tile`, whose descriptor is `t` (tiles[tile]); UNITS: no
// lead row (unit_tile counts it).
fn load_entries(tile: u32, t: vec4<u32>, slot: u32) -> Entries {
    var e: Entries;
#ifdef UNITS
    e.lead = 0u;
#else
    let w = lead[tile * (WG / 2u) + slot / 2u];
    e.lead = (w >> (16u * (slot % 2u))) & 0xffffu;
#endif
    for (var q = 0u; q < EPL / 4u; q++) {
        let at = slot * EPL + 4u * q;
        e.k[q] = vec4<u32>(PAD);
        e.x[q] = vec4<f32>(0.0);
        if at < t.y {
            e.k[q] = key_quad((t.x + at) / 4u);
            e.x[q] = vals[(t.x + at) / 4u];
        }
    }
    return e;
}

#ifndef XTY
// The sum of every invocation's d, returned to all. Call in uniform control flow; the caller
// keeps a barrier before the scratch (chain / head) is written again.
fn workgroup_total(d: f32, tid: u32, sg_lane: u32, sg_size: u32, sg_id: u32) -> f32 {
#ifdef SEGMENTED
    let s = subgroupAdd(d);
    if sg_lane == 0u {
        chain[sg_id] = s;
    }
    workgroupBarrier();
    // Every subgroup sums the subgroup sums alike.
    let nsg = (WG + sg_size - 1u) / sg_size;
    var t = 0.0;
    for (var g = sg_lane; g < nsg; g += sg_size) {
        t += chain[g];
    }
    return subgroupAdd(t);
#else
    head[tid] = d;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if tid < h {
            head[tid] += head[tid + h];
        }
        workgroupBarrier();
    }
    return head[0];
#endif
}
#endif

// Long row `item` (tiles[item]) by the whole workgroup: its products summed, then scaled and
// added to the copy of w. Call in uniform control flow; ends with a barrier.
fn long_row(item: u32, tid: u32, sg_lane: u32, sg_size: u32, sg_id: u32) {
    let t = tiles[item];
    let base = t.x / 4u;
    let quads = t.y / 4u;
    var s = 1.0;
    if (params.flags & 1u) != 0u {
        s = v[t.z];
    }
#ifdef WG_FIXED
    var xm = 0.0;
#endif
#ifdef XTY
    s *= y[t.z];
#ifdef WG_FIXED
    for (var i = tid; i < quads; i += WG) {
        let a = abs(vals[base + i]);
        xm = max(xm, max(max(a.x, a.y), max(a.z, a.w)));
    }
    note_maxima(xm, 0.0, 0.0, sg_lane);
    workgroupBarrier();
#endif
#else
    var d = 0.0;
    for (var i = tid; i < quads; i += WG) {
        let k = key_quad(base + i);
        let x = vals[base + i];
#ifdef WG_FIXED
        let a = abs(x);
        xm = max(xm, max(max(a.x, a.y), max(a.z, a.w)));
#endif
        for (var c = 0u; c < 4u; c++) {
            if k[c] != PAD {
                d += x[c] * y_col(k[c]);
            }
        }
    }
#ifdef WG_FIXED
    note_maxima(xm, 0.0, 0.0, sg_lane);
#endif
    s *= workgroup_total(d, tid, sg_lane, sg_size, sg_id);
#endif
#ifdef WG_FIXED
    fx_settle(tid, params.n, fx_noted().x * abs(s));
#endif
    for (var i = tid; i < quads; i += WG) {
        let k = key_quad(base + i);
        let x = vals[base + i];
        for (var c = 0u; c < 4u; c++) {
            if k[c] != PAD {
                // A row's columns are distinct; the barriers keep other adds apart.
                w_add_alone(k[c], x[c] * s);
            }
        }
    }
    workgroupBarrier();
}

// X's row `row`'s factor: v[row] (1 without v), times y[row] under XTY.
fn row_factor(row: u32) -> f32 {
    var f = 1.0;
    if (params.flags & 1u) != 0u {
        f = v[row];
    }
#ifdef XTY
    f *= y[row];
#endif
    return f;
}

// The factor of tile row i of the tile whose rows start at rows[first].
// Timing only (src/fused/diag.rs): DIAG_SKIP_FACTORS makes every factor 1 with no loads;
// DIAG_DIRECT_ROWS reads the factor at first + i, without loading X's row number.
fn tile_factor(first: u32, i: u32) -> f32 {
#ifdef DIAG_SKIP_FACTORS
    return 1.0;
#else
#ifdef DIAG_DIRECT_ROWS
    return row_factor(first + i);
#else
    return row_factor(rows[first + i]);
#endif
#endif
}

#ifndef UNITS
// The tile's row factors into fac[base ..]; returns the largest |factor| stored.
fn load_fac(tile: u32, base: u32, tid: u32) -> f32 {
    let t = tiles[tile];
    var m = 0.0;
    for (var i = tid; i < t.w; i += WG) {
        let f = tile_factor(t.z, i);
        fac[base + i] = f;
        m = max(m, abs(f));
    }
    return m;
}
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
#ifdef SEGMENTED
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
#else
#ifdef UNITS
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
#endif
#endif
) {
#ifdef SEGMENTED
    // Consecutive slots in the lanes of one subgroup, whatever the lane layout.
    let slot = sg_id * sg_size + sg_lane;
    let nsg = (WG + sg_size - 1u) / sg_size;
#else
    let slot = tid;
#endif
#ifdef WG_FIXED
    fx_init(tid, params.ln_rows, params.alpha);
#endif
#ifndef WG_FIXED
    w_copy = (slot % WCOPIES) * NCOLS;
    for (var i = tid; i < WWORDS; i += WG) {
        atomicStore(&wg_accum[i], 0u);
    }
#endif
    for (var i = tid; i < params.n; i += WG) {
#ifdef Y_SHARED
        y_wg[i] = y[i];
#endif
    }
    workgroupBarrier();
    // Items are strided over the grid: the long rows first, then the tiles. item and tile
    // are uniform across the workgroup: every barrier below is reached by all.
#ifndef SEGMENTED
#ifndef UNITS
    let sg_lane = 0u;
    let sg_size = 1u;
    let sg_id = 0u;
#endif
#endif
    var item = wid.x;
    for (; item < params.nlong; item += nwg.x) {
        long_row(params.ntiles + item, tid, sg_lane, sg_size, sg_id);
    }
#ifdef UNITS
    unit_tiles(wid.x, nwg.x, sg_lane, sg_size, sg_id);
#else
    var tile = item - params.nlong;
    var cur: Entries;
    // The largest |factor| this invocation stored for the tile (WG_FIXED's notes).
    var fm = 0.0;
    if tile < params.ntiles {
        fm = load_fac(tile, 0u, tid);
        cur = load_entries(tile, tiles[tile], slot);
    }
#ifdef PIPE
    // The next tile's descriptor, loaded a tile ahead of its entries.
    var tn = vec4<u32>(0u);
    if tile + nwg.x < params.ntiles {
        tn = tiles[tile + nwg.x];
    }
#endif
    workgroupBarrier();
    for (var k = 0u; tile < params.ntiles; k++) {
        let fb = (k % 2u) * RMAX;
        let next = tile + nwg.x;
#ifdef PIPE
        // The next tile's loads, issued before this tile's work (consumed after it).
        var nxt: Entries;
        var nfac: array<f32, 8>;
        var nrows = 0u;
        if next < params.ntiles {
            nxt = load_entries(next, tn, slot);
            nrows = tn.w;
            for (var q = 0u; q < EPL; q++) {
                let i = tid + q * WG;
                if i < nrows {
                    nfac[q] = tile_factor(tn.z, i);
                }
            }
            if next + nwg.x < params.ntiles {
                tn = tiles[next + nwg.x];
            }
        }
#else
        if k > 0u {
            cur = load_entries(tile, tiles[tile], slot);
        }
#endif
#ifndef XTY
        // 1. Row segment sums (padding is last: an invocation of padding alone holds no row).
        let first = cur.k[0].x;
        var lr = cur.lead;
        var seg = 0.0;
        // Whether a row starts here yet; h: the part of a row begun before.
        var started = first != PAD && (first & START) != 0u;
        var h = 0.0;
        // The largest |row sum| this invocation stores (WG_FIXED's notes).
        var rm = 0.0;
        for (var j = 0u; j < EPL; j++) {
            let key = cur.k[j / 4u][j % 4u];
            if key != PAD {
                if (key & START) != 0u && j > 0u {
                    if started {
                        rsum[fb + lr] = seg;
                        rm = max(rm, abs(seg));
                    } else {
                        h = seg;
                    }
                    lr += 1u;
                    started = true;
                    seg = 0.0;
                }
                seg += cur.x[j / 4u][j % 4u] * y_col(key & ~START);
            }
        }
        if !started {
            h = seg;
        }
        // A START ends the chain of heads before it; so does padding alone.
        let ends = started || first == PAD;
#ifdef SEGMENTED
        let c = chain_sum(h, ends, sg_lane, sg_size);
        // The chain after this lane, within the subgroup.
        let after = subgroupShuffleDown(c, 1u);
        if sg_lane == 0u {
            chain[sg_id] = c.x;
            chain_ends[sg_id] = u32(c.y != 0.0);
        }
        workgroupBarrier();
        // 2. The row this invocation starts last, completed by the chain after it.
        if started {
            var sum = seg;
            var done = false;
            if sg_lane + 1u < sg_size {
                sum += after.x;
                done = after.y != 0.0;
            }
            for (var g = sg_id + 1u; g < nsg && !done; g++) {
                sum += chain[g];
                done = chain_ends[g] != 0u;
            }
            rsum[fb + lr] = sum;
            rm = max(rm, abs(sum));
        }
#else
        head[tid] = h;
        open[tid] = u32(ends);
        workgroupBarrier();
        // 2. The row this invocation starts last, completed by the heads after it.
        if started {
            var sum = seg;
            for (var t = tid + 1u; t < WG; t++) {
                sum += head[t];
                if open[t] != 0u {
                    break;
                }
            }
            rsum[fb + lr] = sum;
            rm = max(rm, abs(sum));
        }
#endif
#endif
#ifdef WG_FIXED
#ifdef XTY
        note_maxima(entries_max(cur), 0.0, fm, sg_lane);
#else
        note_maxima(entries_max(cur), rm, fm, sg_lane);
#endif
#endif
        workgroupBarrier();
#ifdef WG_FIXED
        // Every |x · rsum · fac| (XTY: |x · fac|) of the tile is at most the bound.
        let mx = fx_noted();
#ifdef XTY
        fx_settle(tid, params.n, mx.x * mx.z);
#else
        fx_settle(tid, params.n, mx.x * (mx.y * mx.z));
#endif
        fm = 0.0;
#endif
#ifdef PIPE
        for (var q = 0u; q < EPL; q++) {
            let i = tid + q * WG;
            if i < nrows {
                fac[(1u - k % 2u) * RMAX + i] = nfac[q];
                fm = max(fm, abs(nfac[q]));
            }
        }
#else
        if next < params.ntiles {
            fm = load_fac(next, ((k + 1u) % 2u) * RMAX, tid);
        }
#endif
        // 3. The scatter.
        var row = cur.lead;
#ifdef XTY
        var s = fac[fb + row];
#else
        var s = rsum[fb + row] * fac[fb + row];
#endif
        for (var j = 0u; j < EPL; j++) {
            let key = cur.k[j / 4u][j % 4u];
            if key != PAD {
                if (key & START) != 0u && j > 0u {
                    row += 1u;
#ifdef XTY
                    s = fac[fb + row];
#else
                    s = rsum[fb + row] * fac[fb + row];
#endif
                }
                w_add(key & ~START, cur.x[j / 4u][j % 4u] * s);
            }
        }
#ifdef PIPE
        cur = nxt;
#endif
        tile = next;
    }
#endif
    workgroupBarrier();
#ifndef DIAG_SKIP_FLUSH
    for (var i = tid; i < params.n; i += WG) {
        let t = w_load(i);
        if t != 0.0 {
            accum_add(i, params.alpha * t);
        }
    }
#endif
#ifdef FINISH
    finish(tid, nwg.x);
#endif
}
