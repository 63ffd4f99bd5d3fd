// The fused sparse pattern (Ashari et al., Algorithm 2): w += α·Xᵀ(v ⊙ (X·y)) with X in CSR.
// A vector of VS consecutive lanes takes a row; each vector takes up to C rows (params.c, a
// uniform trip count: rows past m contribute nothing, but every lane still reaches the
// reduction). The row dot product is reduced across the vector (shared/reduce: subgroup
// shuffles, or workgroup memory without SUBGROUP), scaled by v[row], and the row is scattered
// back into w while it is still in cache.
//
// Aggregation of w (defines):
// - SHARED_W: a workgroup copy of w (NCOLS ≥ n floats) takes the scatter with f32 adds by
//   compare-exchange; then one global add per (workgroup, column).
// - neither SHARED_W nor TWO_PASS: the large-n variant, every product added straight to w.
// - HOT (large n): a hot-column cache (src/fused/hot.rs). col_idx is the plan's rewritten copy:
//   an entry of hot slot s holds HOT_BIT | s, and hot_cols[s] is its column. Hot products go
//   to a workgroup array of NCOLS slots, then one global add per (workgroup, slot); cold
//   products go straight to w.
// - SHARED_W with HOT (hot copies): the same rewritten col_idx, and HOT_R copies of the HOT_N
//   hot columns, vector vid adding to copy vid % HOT_R at wg_accum[n + copy·HOT_N + slot]
//   (NCOLS = n + HOT_R·HOT_N), so the vectors no longer all compare-exchange the same few
//   words of the w copy (on power-law X the hot columns are in nearly every row); the copies
//   are summed at the flush, one global add per (workgroup, hot column).
// - SHARED_W with HOT_PREFIX (hot prefix copies; columns re-indexed by entry count, so the
//   hot columns are 0 .. HOT_N): as the hot copies, by plain index, with no rewritten col_idx
//   (column c < HOT_N of vector vid adds at wg_accum[n + copy·HOT_N + c]).
// - TWO_PASS (implies a workgroup copy): the vectors of a workgroup take turns scattering, so
//   the order of every addition is fixed, and the workgroup writes its partial w to
//   part[group · n + i] (flags bit 1, a later band of X: adds it to the earlier bands' there,
//   dispatches in band order); fused/reduce_parts sums the partials in group order. The
//   result is bit-identical run to run.
// X beyond one storage binding runs band by band (src/fused/bands.rs): row_ptr is the band's,
// rebased to the bound window of col_idx / vals; rows are the band's (0 .. params.m), X's row
// params.row_base + row.
// Rows longer than params.long_len are skipped: fused/long_rows spreads them over workgroups.
// XTY: Algorithm 1, w += α·Xᵀ(v ⊙ y) with y ∈ ℝᵐ (no dot product).
// LONG (not with TWO_PASS; the folded sequence): after its rows, each workgroup takes the
// long-row chunks k = group, group + G, … (records of fused/long_rows: X's row, the band-window
// range, and the row's first chunk | (chunks − 1) << 26) and scatters them like a row, its
// row's dot product the sum of the row's chunk partials (fused/long_rows with PARTIAL), summed
// in chunk order by every invocation: the same bits in every chunk of a row. XTY: y[row].
// FINISH (with SHARED_W, not with LONG or TWO_PASS; one dispatch in all): `accum` is the
// plan's accumulator, all zero before the dispatch; the last workgroup to flush writes
// w = β·z + accum and leaves accum and the counter zero (fused/finish).
// DIAG_* (timing only, src/fused/diag.rs; shared/atomic_f32_wg): DIAG_SKIP_FLUSH leaves the
// workgroup copy of w unflushed.
// REGS: each lane holds its first RK (≤ 4) entries of the row in registers from the dot
// product to the scatter (their loads issued together, not re-read for the scatter; TWO_PASS
// re-reads them in its turns); entries beyond RK·VS are read twice as without it.
// PREFETCH (with REGS, not TWO_PASS): a software pipeline over a vector's rows: the next
// row's RK entries per lane and its factor (v[row], y[row] under XTY), and the bounds of the
// row after it, are loaded before this row's reduction and scatter, so a row's loads wait on
// no earlier step of it (the kernel is bound by loads in flight: at 500k × 4,096 reading X
// alone ran at 44% of the copy roofline, fused.diag).
// Otherwise w already holds β·z (fused/axpy or fused/long_rows pre-pass) unless TWO_PASS,
// where reduce_parts adds it.
#import shared/reduce
#import fused/csr_row
#ifndef TWO_PASS
#import shared/atomic_f32
#ifdef SHARED_W
#import shared/atomic_f32_wg
#endif
#ifdef HOT
#ifndef SHARED_W
#import shared/atomic_f32_wg
#endif
#endif
#endif

const HOT_BIT: u32 = 0x80000000u;

override WG: u32 = 256u;
override VS: u32 = 8u;
override NCOLS: u32 = 1u;
// SHARED_W with HOT: hot columns (slots) per copy, and copies.
override HOT_N: u32 = 0u;
override HOT_R: u32 = 1u;
// REGS: entries per lane held in registers (1 to 4).
override RK: u32 = 4u;

struct Params {
    m: u32,
    n: u32,
    // Rows per vector.
    c: u32,
    // Bit 0: multiply by v. Bit 1 (TWO_PASS): add to the partials (a band after the first).
    flags: u32,
    alpha: f32,
    // Rows with more entries are skipped (the long-row path, fused/long_rows, takes them).
    long_len: u32,
    // LONG: this band's long-row chunks.
    nlong: u32,
    // X's row of local row 0 (v and y under XTY are indexed by X's rows).
    row_base: u32,
    // FINISH: β.
    beta: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(2) var<storage, read> col_idx: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> y: array<f32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;
#ifdef TWO_PASS
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
var<workgroup> wg_w: array<f32, NCOLS>;
#else
@group(0) @binding(6) var<storage, read_write> accum: array<AtomicF32>;
#ifdef SHARED_W
var<workgroup> wg_accum: array<atomic<u32>, NCOLS>;
#else
#ifdef HOT
var<workgroup> wg_accum: array<atomic<u32>, NCOLS>;
#endif
#endif
#endif
#ifndef TWO_PASS
#ifdef SHARED_W
#ifdef FINISH
#ifndef LONG
// Binding 7 is an unread stand-in.
@group(0) @binding(8) var<storage, read_write> counter: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read> z: array<f32>;
@group(0) @binding(10) var<storage, read_write> w: array<f32>;
var<workgroup> finish_last: u32;
#import fused/finish
#endif
#endif
#endif
#ifdef LONG
// Binding 7 is the hot columns (HOT) or an unread stand-in.
@group(0) @binding(8) var<storage, read> lchunks: array<vec4<u32>>;
@group(0) @binding(9) var<storage, read> ldots: array<f32>;
#import fused/long_dot
#endif
#endif
#ifdef HOT
@group(0) @binding(7) var<storage, read> hot_cols: array<u32>;

// The column of a (possibly rewritten) column index.
fn column(c: u32) -> u32 {
    if c >= HOT_BIT {
        return hot_cols[c & ~HOT_BIT];
    }
    return c;
}

#ifdef SHARED_W
// Where vector `vid` adds an entry of (rewritten) column index c in wg_accum: the slot in its
// copy for a hot column, else the column's word of the w copy.
fn shared_slot(c: u32, vid: u32) -> u32 {
    if c >= HOT_BIT {
        return params.n + (vid % HOT_R) * HOT_N + (c & ~HOT_BIT);
    }
    return c;
}
#endif

// csr_row_partial through the rewritten indices.
fn hot_row_partial(row: u32, lane: u32, ok: bool) -> f32 {
    var s = 0.0;
    if ok {
        for (var i = row_ptr[row] + lane; i < row_ptr[row + 1u]; i += VS) {
            s += vals[i] * y[column(col_idx[i])];
        }
    }
    return s;
}
#endif

#ifdef SHARED_W
#ifndef TWO_PASS
// The column of hot copy slot h: the hot-column list's (HOT), else h itself (HOT_PREFIX).
fn hot_copy_column(h: u32) -> u32 {
#ifdef HOT
    return hot_cols[h];
#else
    return h;
#endif
}

// Where vector `vid` adds an entry of (possibly rewritten) column index c in wg_accum.
fn wg_slot(c: u32, vid: u32) -> u32 {
#ifdef HOT
    return shared_slot(c, vid);
#else
#ifdef HOT_PREFIX
    if c < HOT_N {
        return params.n + (vid % HOT_R) * HOT_N + c;
    }
#endif
    return c;
#endif
}
#endif
#endif

#ifdef PREFETCH
// Row `row`'s entry range and whether it runs here: (b, e, 1), or (b, b, 0) for a long row
// (fused/long_rows takes it) and (0, 0, 0) past m.
fn row_bounds(row: u32) -> vec3<u32> {
    if row >= params.m {
        return vec3<u32>(0u, 0u, 0u);
    }
    let b = row_ptr[row];
    let e = row_ptr[row + 1u];
    if e - b > params.long_len {
        return vec3<u32>(b, b, 0u);
    }
    return vec3<u32>(b, e, 1u);
}

// The lane's first RK entries of the row with bounds r (zero past its end).
fn load_regs(r: vec3<u32>, lane: u32, rc: ptr<function, array<u32, 4>>,
             rv: ptr<function, array<f32, 4>>) {
    for (var j = 0u; j < RK; j++) {
        let i = r.x + lane + j * VS;
        (*rc)[j] = 0u;
        (*rv)[j] = 0.0;
        if i < r.y {
            (*rc)[j] = col_idx[i];
            (*rv)[j] = vals[i];
        }
    }
}

// What a row's dot product is scaled by before α: v[row] (flags bit 0), times y[row] under
// XTY (where it is the whole scale); 1 for a row that does not run here.
fn row_factor(row: u32, ok: u32) -> f32 {
    var f = 1.0;
    if ok != 0u {
        if (params.flags & 1u) != 0u {
            f = v[params.row_base + row];
        }
#ifdef XTY
        f *= y[params.row_base + row];
#endif
    }
    return f;
}
#endif

#ifdef REGS
// The column y is read at for a (possibly rewritten) column index.
fn ycol(c: u32) -> u32 {
#ifdef HOT
    return column(c);
#else
    return c;
#endif
}

#ifndef TWO_PASS
// Adds entry (c, x) of a row whose dot product (times v) is s, from vector vid: as the row
// loop below does without REGS.
fn add_entry(c: u32, x: f32, s: f32, vid: u32) {
#ifdef SHARED_W
    wg_accum_add(wg_slot(c, vid), x * s);
#else
#ifdef HOT
    if c >= HOT_BIT {
        wg_accum_add(c & ~HOT_BIT, x * s);
    } else {
        accum_add(c, x * (params.alpha * s));
    }
#else
    accum_add(c, x * (params.alpha * s));
#endif
#endif
}
#endif
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lane = tid % VS;
    let vid = tid / VS;
    let nv = WG / VS;
    let group = wid.x;
#ifdef TWO_PASS
    for (var i = tid; i < params.n; i += WG) {
        wg_w[i] = 0.0;
    }
    workgroupBarrier();
#else
#ifdef SHARED_W
    // The hot (prefix) copies after w's n words, or n alone.
    let wlen = max(NCOLS, params.n);
    for (var i = tid; i < wlen; i += WG) {
        atomicStore(&wg_accum[i], 0u);
    }
    workgroupBarrier();
#else
#ifdef HOT
    for (var i = tid; i < NCOLS; i += WG) {
        atomicStore(&wg_accum[i], 0u);
    }
    workgroupBarrier();
#endif
#endif
#endif
    var row = group * nv + vid;
    let stride = nwg.x * nv;
#ifdef PREFETCH
    // The pipeline's first row: bounds, entries and factor; the next row's bounds.
    var cur = row_bounds(row);
    var nxt = row_bounds(row + stride);
    var pc: array<u32, 4>;
    var pv: array<f32, 4>;
    load_regs(cur, lane, &pc, &pv);
    var pf = row_factor(row, cur.z);
#endif
    for (var c = 0u; c < params.c; c++) {
#ifdef PREFETCH
        let ok = cur.z != 0u;
        let b = cur.x;
        let e = cur.y;
        var rc = pc;
        var rv = pv;
        let f = pf;
        // In flight while this row is reduced and scattered: the next row's entries and
        // factor, the bounds of the row after it.
        load_regs(nxt, lane, &pc, &pv);
        pf = row_factor(row + stride, nxt.z);
        cur = nxt;
        nxt = row_bounds(row + 2u * stride);
#else
        var ok = row < params.m;
        var b = 0u;
        var e = 0u;
        if ok {
            b = row_ptr[row];
            e = row_ptr[row + 1u];
            if e - b > params.long_len {
                ok = false;
                e = b;
            }
        }
#ifdef REGS
        // The lane's first RK entries: loaded together, kept for the scatter.
        var rc: array<u32, 4>;
        var rv: array<f32, 4>;
        for (var j = 0u; j < RK; j++) {
            let i = b + lane + j * VS;
            rc[j] = 0u;
            rv[j] = 0.0;
            if i < e {
                rc[j] = col_idx[i];
                rv[j] = vals[i];
            }
        }
#endif
#endif
#ifdef XTY
#ifdef PREFETCH
        var s = f;
#else
        var s = 0.0;
        if ok {
            s = y[params.row_base + row];
        }
#endif
#else
#ifdef REGS
        var part = 0.0;
        for (var j = 0u; j < RK; j++) {
            if b + lane + j * VS < e {
                part += rv[j] * y[ycol(rc[j])];
            }
        }
        for (var i = b + lane + RK * VS; i < e; i += VS) {
            part += vals[i] * y[ycol(col_idx[i])];
        }
        var s = vsg_sum(part, VS, tid);
#else
#ifdef HOT
        var s = vsg_sum(hot_row_partial(row, lane, ok), VS, tid);
#else
        var s = vsg_sum(csr_row_partial(row, lane, ok), VS, tid);
#endif
#endif
#endif
#ifdef PREFETCH
#ifndef XTY
        s *= f;
#endif
#else
        if ok && (params.flags & 1u) != 0u {
            s *= v[params.row_base + row];
        }
#endif
#ifdef TWO_PASS
        // Vectors take turns, so every column's additions come in row order.
        for (var turn = 0u; turn < nv; turn++) {
            if turn == vid {
                for (var i = b + lane; i < e; i += VS) {
                    wg_w[col_idx[i]] += vals[i] * s;
                }
            }
            workgroupBarrier();
        }
#else
#ifdef REGS
        for (var j = 0u; j < RK; j++) {
            if b + lane + j * VS < e {
                add_entry(rc[j], rv[j], s, vid);
            }
        }
        for (var i = b + lane + RK * VS; i < e; i += VS) {
            add_entry(col_idx[i], vals[i], s, vid);
        }
#else
#ifdef SHARED_W
        for (var i = b + lane; i < e; i += VS) {
            wg_accum_add(wg_slot(col_idx[i], vid), vals[i] * s);
        }
#else
#ifdef HOT
        let a = params.alpha * s;
        for (var i = b + lane; i < e; i += VS) {
            let c = col_idx[i];
            if c >= HOT_BIT {
                wg_accum_add(c & ~HOT_BIT, vals[i] * s);
            } else {
                accum_add(c, vals[i] * a);
            }
        }
#else
        let a = params.alpha * s;
        for (var i = b + lane; i < e; i += VS) {
            accum_add(col_idx[i], vals[i] * a);
        }
#endif
#endif
#endif
#endif
        row += stride;
    }
#ifndef TWO_PASS
#ifdef LONG
    // Long-row chunks, a whole workgroup each (k is uniform across the workgroup).
    for (var k = group; k < params.nlong; k += nwg.x) {
        let ch = lchunks[k];
#ifdef XTY
        var s = y[ch.x];
#else
        var s = long_dot(ch.w);
#endif
        if (params.flags & 1u) != 0u {
            s *= v[ch.x];
        }
        let a = params.alpha * s;
        for (var i = ch.y + tid; i < ch.z; i += WG) {
#ifdef SHARED_W
            wg_accum_add(wg_slot(col_idx[i], vid), vals[i] * s);
#else
#ifdef HOT
            let c = col_idx[i];
            if c >= HOT_BIT {
                wg_accum_add(c & ~HOT_BIT, vals[i] * s);
            } else {
                accum_add(c, vals[i] * a);
            }
#else
            accum_add(col_idx[i], vals[i] * a);
#endif
#endif
        }
    }
#endif
#endif
#ifdef TWO_PASS
    for (var i = tid; i < params.n; i += WG) {
        let at = group * params.n + i;
        var t = params.alpha * wg_w[i];
        if (params.flags & 2u) != 0u {
            t = part[at] + t;
        }
        part[at] = t;
    }
#else
#ifdef SHARED_W
    workgroupBarrier();
#ifndef DIAG_SKIP_FLUSH
    // Hot columns' words here stay zero (their entries went to the copies).
    for (var i = tid; i < params.n; i += WG) {
        let t = wg_accum_load(i);
        if t != 0.0 {
            accum_add(i, params.alpha * t);
        }
    }
    // The hot (prefix) copies, slot by slot (HOT_N = 0 without them).
    for (var h = tid; h < HOT_N; h += WG) {
        var t = 0.0;
        for (var k = 0u; k < HOT_R; k++) {
            t += wg_accum_load(params.n + k * HOT_N + h);
        }
        if t != 0.0 {
            accum_add(hot_copy_column(h), params.alpha * t);
        }
    }
#endif
#ifdef FINISH
#ifndef LONG
    finish(tid, nwg.x);
#endif
#endif
#else
#ifdef HOT
    workgroupBarrier();
    for (var i = tid; i < NCOLS; i += WG) {
        let t = wg_accum_load(i);
        if t != 0.0 {
            accum_add(hot_cols[i], params.alpha * t);
        }
    }
#endif
#endif
#endif
}
