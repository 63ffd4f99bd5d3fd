// The `transpose` variant's row pass in row tiles (src/fused/gather_tiles.rs): out = s·(A·y)
// by CSR rows of A, as fused/gather_rows, with every load of A coalesced whatever its rows'
// lengths. tiles[t] = (first row, its first entry) of tile t, tiles[t + 1] the next tile's
// (band-local), so a tile's bounds take one load: at most WG rows holding at most WG·EPL
// entries, cut at plan time so that no row's lanes (TPR, below) take more than a bounded
// share. A workgroup loads the tile's entries at consecutive positions
// (EPL per invocation, their gathers of y in flight together) and keeps their products in
// workgroup memory; then TPR lanes sum each row there, TPR = the largest power of two at most
// WG / rows, capped at TPR_MAX (what shared/reduce's shuffles reach). A tile of one row
// longer than params.long_len is a long row left to fused/gather_chunks: without ACCUM its out
// is zeroed here, for the chunks to add onto. s = α, times v[row] with ROW_V; ACCUM adds onto
// out (w = β·z first). Row indices are the band's; out and v are indexed from params.row_base.
// PIPE (a grid of resident workgroups, each taking many tiles): the next tile's bounds, row
// offsets, columns and values are loaded into registers (EPL ≤ 8 entries an invocation)
// while this tile's gathers of y are in flight, so a tile waits on one load (the gathers)
// instead of three in a row (bounds, then entries, then gathers).
#import shared/reduce

override WG: u32 = 256u;
override EPL: u32 = 4u;
override TPR_MAX: u32 = 32u;

struct Params {
    ntiles: u32,
    row_base: u32,
    long_len: u32,
    alpha: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> tiles: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(3) var<storage, read> col_idx: array<u32>;
@group(0) @binding(4) var<storage, read> vals: array<f32>;
@group(0) @binding(5) var<storage, read> y: array<f32>;
// ROW_V: v ∈ ℝᵐ (else a stand-in, never read).
@group(0) @binding(6) var<storage, read> v: array<f32>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;

// The tile's products in CSR order, and its rows' offsets into them (rows + 1 of them).
var<workgroup> prods: array<f32, WG * EPL>;
var<workgroup> offsets: array<u32, WG + 1u>;

// Whether tile (first, next) is a long row left to the chunks.
fn is_long(first: vec2<u32>, next: vec2<u32>) -> bool {
    return next.x - first.x == 1u && next.y - first.y > params.long_len;
}

#ifdef PIPE
// An invocation's share of a tile, loaded ahead: the tile's bounds, its row offsets
// `lid` (and `WG`, invocation 0 of a tile of WG rows), its entries lid + k·WG.
struct Ahead {
    first: vec2<u32>,
    next: vec2<u32>,
    off: u32,
    off_last: u32,
    col: array<u32, 8>,
    val: array<f32, 8>,
}

fn load_ahead(t: u32, lid: u32) -> Ahead {
    var a: Ahead;
    a.first = tiles[t];
    a.next = tiles[t + 1u];
    if is_long(a.first, a.next) {
        return a;
    }
    let r0 = a.first.x;
    let rows = a.next.x - r0;
    let e0 = a.first.y;
    let len = a.next.y - e0;
    if lid <= rows {
        a.off = row_ptr[r0 + lid] - e0;
    }
    if lid == 0u && rows == WG {
        a.off_last = row_ptr[r0 + WG] - e0;
    }
    for (var k = 0u; k < EPL; k++) {
        let p = lid + k * WG;
        if p < len {
            a.col[k] = col_idx[e0 + p];
            a.val[k] = vals[e0 + p];
        }
    }
    return a;
}
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
#ifdef PIPE
    var ahead: Ahead;
    if wid.x < params.ntiles {
        ahead = load_ahead(wid.x, lid);
    }
#endif
    // t is uniform over the workgroup, so every barrier below is reached by all.
    for (var t = wid.x; t < params.ntiles; t += nwg.x) {
        // The previous tile's sums have read prods and offsets.
        workgroupBarrier();
#ifdef PIPE
        let cur = ahead;
        let first = cur.first;
        let next = cur.next;
#else
        let first = tiles[t];
        let next = tiles[t + 1u];
#endif
        let r0 = first.x;
        let rows = next.x - r0;
        let e0 = first.y;
        let len = next.y - e0;
        if is_long(first, next) {
#ifndef ACCUM
            if lid == 0u {
                out[params.row_base + r0] = 0.0;
            }
#endif
#ifdef PIPE
            if t + nwg.x < params.ntiles {
                ahead = load_ahead(t + nwg.x, lid);
            }
#endif
            continue;
        }
#ifdef PIPE
        // This tile's gathers first, then the next tile's loads (in flight together).
        var x: array<f32, 8>;
        for (var k = 0u; k < EPL; k++) {
            x[k] = 0.0;
            if lid + k * WG < len {
                x[k] = cur.val[k] * y[cur.col[k]];
            }
        }
        if t + nwg.x < params.ntiles {
            ahead = load_ahead(t + nwg.x, lid);
        }
        if lid <= rows {
            offsets[lid] = cur.off;
        }
        if lid == 0u && rows == WG {
            offsets[WG] = cur.off_last;
        }
        for (var k = 0u; k < EPL; k++) {
            prods[lid + k * WG] = x[k];
        }
#else
        for (var j = lid; j <= rows; j += WG) {
            offsets[j] = row_ptr[r0 + j] - e0;
        }
        for (var k = 0u; k < EPL; k++) {
            let p = lid + k * WG;
            var x = 0.0;
            if p < len {
                x = vals[e0 + p] * y[col_idx[e0 + p]];
            }
            prods[p] = x;
        }
#endif
        workgroupBarrier();
        let tpr = min(TPR_MAX, 1u << (31u - countLeadingZeros(WG / rows)));
        let lane = lid % tpr;
        let row = lid / tpr;
        var s = 0.0;
        if row < rows {
            let end = offsets[row + 1u];
            for (var q = offsets[row] + lane; q < end; q += tpr) {
                s += prods[q];
            }
        }
        let total = vsg_sum(s, tpr, lid);
        if row < rows && lane == 0u {
            let r = params.row_base + r0 + row;
            var f = params.alpha;
#ifdef ROW_V
            f *= v[r];
#endif
#ifdef ACCUM
            out[r] += f * total;
#else
            out[r] = f * total;
#endif
        }
    }
}
